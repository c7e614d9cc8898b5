/* net/sigv4-query.h against AWS's published presigned URL (S3's
 * "Authenticating Requests: Using Query Parameters": GET test.txt from
 * examplebucket, 20130524T000000Z, 86400 s): re-signed with its own key it
 * is AWS's URL byte for byte; with the real key it names that key and its
 * signature holds under it alone. Each refusal (another key, another
 * token, a URL changed after signing, a part missing, an Authorization
 * beside it) with its twin. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/sigv4-query.h"
#include "tap.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define AWS_SIG "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
#define QUERY(key, extra) "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" key "%2F20130524%2Fus-east-1%2Fs3%2F" \
	"aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400" extra "&X-Amz-SignedHeaders=host"
#define HOST "Host: examplebucket.s3.amazonaws.com\r\n"
#define AWS_HEAD "GET /test.txt?" QUERY(AKID, "") "&X-Amz-Signature=" AWS_SIG " HTTP/1.1\r\n" HOST "\r\n"

static int resign(const char *head, const struct net_sigv4_keys *k, struct buf *ret, char *why, size_t wn)
{
	buf_init(ret, 8192);
	buf_append(ret, head, strlen(head));
	int r = net_sigv4_resign(ret, k, NET_SIGV4_EMPTY_HASH, NULL, why, wn);
	buf_cstr(ret);
	return r;
}

int main(void)
{
	char why[320] = "";
	struct buf b, b2;
	const struct net_sigv4_keys same = { .ph_key = AKID, .ph_secret = SECRET, .key = AKID, .secret = SECRET };
	const struct net_sigv4_keys real = { .ph_key = AKID, .ph_secret = SECRET, .key = "AKIDREAL", .secret = "real/secret" };
	const struct net_sigv4_keys back = { .ph_key = "AKIDREAL", .ph_secret = "real/secret", .key = "AKIDREAL",
					     .secret = "real/secret" };

	ok(net_sigv4_query_is_presigned(QUERY(AKID, ""), strlen(QUERY(AKID, ""))), "AWS's URL is a presigned one");
	ok(!net_sigv4_query_is_presigned("list-type=2&prefix=a", 20), "(a query of no credential is not)");
	is_int(resign(AWS_HEAD, &same, &b, why, sizeof(why)), 1, "AWS's presigned URL: its signature holds (%s)", why);
	is_str(b.data, AWS_HEAD, "re-signed with its own key it is AWS's, byte for byte");
	buf_free(&b);

	is_int(resign(AWS_HEAD, &real, &b, why, sizeof(why)), 1, "re-signed with the real key (%s)", why);
	like(b.data, "X-Amz-Credential=AKIDREAL%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&", "it names the real key");
	unlike(b.data, AWS_SIG, "and its signature is not AWS's");
	unlike(b.data, AKID, "no placeholder key is left in it");
	like(b.data, "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=",
	     "the rest of the URL as it was");
	ok(b.len == strlen(AWS_HEAD) + strlen("AKIDREAL") - strlen(AKID) && !strcmp(b.data + b.len - strlen(HOST) - 13,
											   " HTTP/1.1\r\n" HOST "\r\n"),
	   "and the head's rest as it was, the signature 64 digits");
	is_int(resign(b.data, &back, &b2, why, sizeof(why)), 1, "its signature holds under the real key (%s)", why);
	is_str(b2.data, b.data, "(and made again with it, it is the same)");
	buf_free(&b2);
	is_int(resign(b.data, &same, &b2, why, sizeof(why)), -EPERM, "and is no longer the placeholder's: refused");
	buf_free(&b2);
	buf_free(&b);

	/* Refusals. */
	const char *other = "GET /test.txt?" QUERY("AKIAATTACKER", "") "&X-Amz-Signature=" AWS_SIG " HTTP/1.1\r\n" HOST "\r\n";
	is_int(resign(other, &same, &b, why, sizeof(why)), -EPERM, "a presigned URL of another key: refused");
	like(why, "not the placeholder's", "(%s)", why);
	is_str(b.data, other, "and the head is as it was");
	buf_free(&b);
	const char *moved = "GET /test2.txt?" QUERY(AKID, "") "&X-Amz-Signature=" AWS_SIG " HTTP/1.1\r\n" HOST "\r\n";
	is_int(resign(moved, &same, &b, why, sizeof(why)), -EBADMSG, "signed for one object, sent for another: refused");
	like(why, "presigned URL's signature does not hold with the placeholder keys", "(%s)", why);
	buf_free(&b);
	const char *nosig = "GET /test.txt?" QUERY(AKID, "") " HTTP/1.1\r\n" HOST "\r\n";
	is_int(resign(nosig, &same, &b, why, sizeof(why)), -EBADMSG, "no X-Amz-Signature: refused");
	like(why, "needs one X-Amz-Signature", "(%s)", why);
	buf_free(&b);
	const char *twice = "GET /test.txt?" QUERY(AKID, "&X-Amz-Date=20130525T000000Z") "&X-Amz-Signature=" AWS_SIG
			    " HTTP/1.1\r\n" HOST "\r\n";
	is_int(resign(twice, &same, &b, why, sizeof(why)), -EBADMSG, "two X-Amz-Date: refused (%s)", why);
	buf_free(&b);
	const char *both = "GET /test.txt?" QUERY(AKID, "") "&X-Amz-Signature=" AWS_SIG " HTTP/1.1\r\n" HOST
			   "Authorization: Bearer x\r\n\r\n";
	is_int(resign(both, &same, &b, why, sizeof(why)), -EBADMSG, "an Authorization beside it: refused (%s)", why);
	buf_free(&b);

	/* A token: the placeholder's is made the real one, encoded. */
	const struct net_sigv4_keys tk = { .ph_key = AKID, .ph_secret = SECRET, .ph_token = "PHTOKEN", .key = "AKIDREAL",
					   .secret = "real/secret", .token = "real/tok+en=" };
	const char *tok = "GET /test.txt?" QUERY(AKID, "&X-Amz-Security-Token=PHTOKEN") "&X-Amz-Signature="
			  "0000000000000000000000000000000000000000000000000000000000000000 HTTP/1.1\r\n" HOST "\r\n";
	is_int(resign(tok, &tk, &b, why, sizeof(why)), -EBADMSG, "(a token URL whose signature is not made: refused)");
	buf_free(&b);
	/* Signed by the placeholder: made with the same key and token first. */
	const struct net_sigv4_keys tsame = { .ph_key = AKID, .ph_secret = SECRET, .ph_token = "PHTOKEN", .key = AKID,
					      .secret = SECRET, .token = "PHTOKEN" };
	struct buf signed_tok;
	const char *unsigned_tok = tok;
	/* The placeholder's own signature: found by re-signing with the
	 * placeholder (it holds or not: try the one that holds). */
	buf_init(&signed_tok, 8192);
	{
		struct net_sigv4_auth a;
		const char *auth = NET_SIGV4_ALGO " Credential=" AKID "/20130524/us-east-1/s3/aws4_request, "
				   "SignedHeaders=host, Signature=0000000000000000000000000000000000000000000000000000000000000000";
		net_sigv4_auth_parse(auth, strlen(auth), &a, why, sizeof(why));
		a.query = true;
		char sig[65];
		net_sigv4_signature(unsigned_tok, strlen(unsigned_tok), &a, SECRET, NET_SIGV4_EMPTY_HASH, NET_SIGV4_PATH_S3,
				    sig, why, sizeof(why));
		buf_append(&signed_tok, unsigned_tok, strlen(unsigned_tok));
		buf_cstr(&signed_tok);
		memcpy(strstr(signed_tok.data, "X-Amz-Signature=") + 16, sig, 64);
	}
	is_int(resign(signed_tok.data, &tsame, &b, why, sizeof(why)), 1, "(the token URL signed by the placeholder holds)");
	buf_free(&b);
	is_int(resign(signed_tok.data, &tk, &b, why, sizeof(why)), 1, "a token URL: re-signed (%s)", why);
	like(b.data, "X-Amz-Security-Token=real%2Ftok%2Ben%3D&", "the real token in the placeholder's place, encoded");
	unlike(b.data, "PHTOKEN", "no placeholder token left");
	buf_free(&b);
	const struct net_sigv4_keys tk2 = { .ph_key = AKID, .ph_secret = SECRET, .ph_token = "OTHER", .key = "AKIDREAL",
					    .secret = "real/secret", .token = "real" };
	is_int(resign(signed_tok.data, &tk2, &b, why, sizeof(why)), -EPERM, "a token that is not the placeholder's: refused");
	buf_free(&b);
	buf_free(&signed_tok);
	return tap_done();
}
