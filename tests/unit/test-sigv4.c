/* net/sigv4.h against AWS's published vectors (the SigV4 test suite's
 * get-vanilla, get-vanilla-query-order-key-case, post-vanilla, get-utf8;
 * S3's GET Object example), and the proxy's re-signing: a placeholder's
 * signature made again with the real keys is the published one; each
 * refusal (another key, another token, a presigned URL, another kind of
 * Authorization, a head changed after signing) with its accepted twin. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/sigv4.h"
#include "tap.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_AUTH NET_SIGV4_ALGO " Credential=" AKID "/20150830/us-east-1/service/aws4_request, " \
	"SignedHeaders=host;x-amz-date, Signature="
#define SUITE_HEADERS "Host:example.amazonaws.com\r\nX-Amz-Date:20150830T123600Z\r\n"

static const char *sign(const char *head, const char *auth, const char *secret, enum net_sigv4_path pm)
{
	static char sig[65];
	struct net_sigv4_auth a;
	static char why[200];
	if (net_sigv4_auth_parse(auth, strlen(auth), &a, why, sizeof(why)) < 0)
		return why;
	if (net_sigv4_signature(head, strlen(head), &a, secret, NET_SIGV4_EMPTY_HASH, pm, sig, why, sizeof(why)) < 0)
		return why;
	return sig;
}

static const char *suite(const char *reqline)
{
	static char head[512];
	snprintf(head, sizeof(head), "%s\r\n" SUITE_HEADERS "\r\n", reqline);
	return sign(head, SUITE_AUTH "0000000000000000000000000000000000000000000000000000000000000000", SECRET,
		    NET_SIGV4_PATH_NORMALISED);
}

/* A head signed by the box (the placeholder keys) as a client would. */
#define PH_KEY "ward-secret-0123456789abcdef0123456789abcdef"
#define PH_SECRET PH_KEY
static struct buf box_signed(const char *reqline, const char *extra, const char *signed_headers)
{
	char auth[512], head[2048];
	snprintf(auth, sizeof(auth), NET_SIGV4_ALGO " Credential=" PH_KEY "/20150830/us-east-1/service/aws4_request, "
		 "SignedHeaders=%s, Signature=%064d", signed_headers, 0);
	snprintf(head, sizeof(head), "%s\r\n" SUITE_HEADERS "%s\r\n", reqline, extra);
	const char *sig = sign(head, auth, PH_SECRET, NET_SIGV4_PATH_S3);
	if (strlen(sig) == 64)	/* (else it cannot be signed: zeros stay) */
		snprintf(auth + strlen(auth) - 64, 65, "%s", sig);
	snprintf(head, sizeof(head), "%s\r\n" SUITE_HEADERS "%sAuthorization: %s\r\n\r\n", reqline, extra, auth);
	struct buf b;
	buf_init(&b, 8192);
	buf_append(&b, head, strlen(head));
	return b;
}

static int resign(struct buf *b, const char *token, char *why, size_t wn)
{
	struct net_sigv4_keys k = { .ph_key = PH_KEY, .ph_secret = PH_SECRET, .ph_token = token ? PH_KEY : NULL,
				    .key = AKID, .secret = SECRET, .token = token };
	int r = net_sigv4_resign(b, &k, NET_SIGV4_EMPTY_HASH, NULL, why, wn);
	buf_cstr(b);
	return r;
}

int main(void)
{
	is_str(suite("GET / HTTP/1.1"), "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	       "get-vanilla");
	is_str(suite("GET /?Param2=value2&Param1=value1 HTTP/1.1"),
	       "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
	       "get-vanilla-query-order-key-case: the query sorted");
	is_str(suite("POST / HTTP/1.1"), "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
	       "post-vanilla");
	is_str(suite("GET /\xe1\x88\xb4 HTTP/1.1"), "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
	       "get-utf8: the path's bytes encoded");
	is_str(suite("GET /./ HTTP/1.1"), "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	       "get-slash-dot-slash: a normalised path is get-vanilla's");
	is_str(suite("GET /example/.. HTTP/1.1"), "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
	       "get-relative: .. resolved");
	const char *s3head = "GET /test.txt HTTP/1.1\r\nHost: examplebucket.s3.amazonaws.com\r\nRange: bytes=0-9 \r\n"
			     "x-amz-content-sha256:" NET_SIGV4_EMPTY_HASH "\r\nx-amz-date: 20130524T000000Z \r\n\r\n";
	is_str(sign(s3head,
		    NET_SIGV4_ALGO " Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
				   "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature="
				   "0000000000000000000000000000000000000000000000000000000000000000",
		    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", NET_SIGV4_PATH_S3),
	       "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	       "S3's GET Object example: x-amz-content-sha256, values trimmed");

	struct net_sigv4_auth a;
	char why[320];
	const char *bad[] = {
		NET_SIGV4_ALGO " Credential=K/2015083/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" "00",
		NET_SIGV4_ALGO " Credential=K/20150830/us-east-1/s3, SignedHeaders=host, Signature=%064d",
		NET_SIGV4_ALGO " Credential=K/20150830/us-east-1/s3/aws4_request, SignedHeaders=Host, Signature=",
		NET_SIGV4_ALGO " Credential=K/20150830/us-east-1/s3/aws4_request, Credential=K/20150830/us-east-1/s3/aws4_request",
		"AWS K:sig",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(net_sigv4_auth_parse(bad[i], strlen(bad[i]), &a, why, sizeof(why)) == -EBADMSG, "malformed: %s", why);

	/* Re-signed: exactly AWS's get-vanilla Authorization. */
	struct buf b = box_signed("GET / HTTP/1.1", "", "host;x-amz-date");
	is_int(resign(&b, NULL, why, sizeof(why)), 1, "the placeholder's signature is re-signed");
	like(b.data, "\r\nAuthorization: " SUITE_AUTH "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31\r\n",
	     "with the real key: get-vanilla's published Authorization");
	unlike(b.data, PH_KEY, "no placeholder left");
	ok(b.len >= 4 && !memcmp(b.data + b.len - 4, "\r\n\r\n", 4), "the head still ends in its blank line");
	buf_free(&b);

	/* The session token: the placeholder's replaced, and signed over. */
	b = box_signed("GET / HTTP/1.1", "X-Amz-Security-Token: " PH_KEY "\r\n", "host;x-amz-date;x-amz-security-token");
	is_int(resign(&b, "REAL-TOKEN", why, sizeof(why)), 1, "with a session token: re-signed");
	like(b.data, "\r\nX-Amz-Security-Token: REAL-TOKEN\r\n", "the real token in the placeholder's place");
	unlike(b.data, PH_KEY, "no placeholder left");
	buf_free(&b);
	b = box_signed("GET / HTTP/1.1", "X-Amz-Security-Token: someone-elses\r\n", "host;x-amz-date;x-amz-security-token");
	is_int(resign(&b, "REAL-TOKEN", why, sizeof(why)), -EPERM, "another token: refused (%s)", why);
	buf_free(&b);

	/* Another key id: the attacker's own key, to the secret's host. */
	const char *atk = "GET / HTTP/1.1\r\n" SUITE_HEADERS "Authorization: " SUITE_AUTH
			  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31\r\n\r\n";
	buf_init(&b, 8192);
	buf_append(&b, atk, strlen(atk));
	is_int(resign(&b, NULL, why, sizeof(why)), -EPERM, "a signature by another key: refused");
	like(why, "another key (" AKID ")", "named as another key: %s", why);
	like(b.data, "Signature=5fa00fa3", "the head unchanged");
	buf_free(&b);
	const char *bearer = "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer xyz\r\n\r\n";
	buf_init(&b, 8192);
	buf_append(&b, bearer, strlen(bearer));
	is_int(resign(&b, NULL, why, sizeof(why)), -EPERM, "another kind of Authorization: refused");
	buf_free(&b);
	const char *pre = "GET /k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20150830 HTTP/1.1\r\nHost: h\r\n\r\n";
	buf_init(&b, 8192);
	buf_append(&b, pre, strlen(pre));
	is_int(resign(&b, NULL, why, sizeof(why)), -EPERM, "a presigned URL of another key: refused");
	buf_free(&b);
	const char *none = "GET /k?list-type=2 HTTP/1.1\r\nHost: h\r\n\r\n";
	buf_init(&b, 8192);
	buf_append(&b, none, strlen(none));
	is_int(resign(&b, NULL, why, sizeof(why)), 0, "twin: no credential at all is left as it is");
	buf_free(&b);

	/* A head changed after the box signed it. */
	b = box_signed("GET / HTTP/1.1", "", "host;x-amz-date");
	memcpy(strstr(b.data, "example.amazonaws.com"), "exampl3", 7);
	is_int(resign(&b, NULL, why, sizeof(why)), -EBADMSG, "a signed header changed: not re-signed");
	like(why, "does not hold with the placeholder keys", "said so: %s", why);
	buf_free(&b);
	b = box_signed("GET / HTTP/1.1", "", "host;x-amz-date;x-missing");
	is_int(resign(&b, NULL, why, sizeof(why)), -EBADMSG, "a signed header that is not there: refused");
	like(why, "x-missing", "named: %s", why);
	buf_free(&b);
	b = box_signed("PUT /a%2fb/c%20d?b=2&a=1&a=0 HTTP/1.1", "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n",
		       "host;x-amz-content-sha256;x-amz-date");
	is_int(resign(&b, NULL, why, sizeof(why)), 1, "twin: an S3 PUT with an encoded path and a query, re-signed");
	buf_free(&b);
	b = box_signed("PUT /k HTTP/1.1", "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\r\n",
		       "host;x-amz-content-sha256;x-amz-date");
	is_int(resign(&b, NULL, why, sizeof(why)), -EBADMSG,
	       "a streaming payload where no stream can follow (plain HTTP): not re-signed (%s)", why);
	like(why, "re-signed over HTTPS only", "and it says where it is");
	buf_free(&b);
	return tap_done();
}
