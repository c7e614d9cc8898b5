/* The S3 backend: one signed request per verb through libcurl's own AWS
 * SigV4 (CURLOPT_AWS_SIGV4), path-style URLs ENDPOINT/BUCKET/PREFIX/KEY.
 *
 * What libcurl 7.88 (Debian 12) does and does not, read from its source
 * (lib/http_aws_sigv4.c at curl-7_88_1) and seen against a server that
 * checks the signature:
 * - It signs PUT (CURLOPT_UPLOAD), GET and a CURLOPT_CUSTOMREQUEST DELETE
 *   alike, the method taken from the request.
 * - It adds no x-amz-content-sha256 header (8.0 does, for service s3), and
 *   without one it signs the SHA-256 of the POST fields, i.e. of nothing,
 *   which S3 refuses for a PUT with a body. So the header is always set
 *   here, UNSIGNED-PAYLOAD: libcurl then signs that value.
 * - It signs every header in CURLOPT_HTTPHEADER, so a "Name:" entry that
 *   removes one of libcurl's headers would be signed yet not sent (fixed in
 *   8.3): none is used. x-amz-date is libcurl's to add (a second one before
 *   8.3 otherwise).
 * - It puts the URL's path into the signature as it is, unencoded, and the
 *   query unsorted (8.2 canonicalises): the key alphabet (store.h) needs no
 *   encoding, and no query is sent. */
#include "store/backend.h"
#include "base/cleanup.h"
#include "base/curlso.h"
#include "base/fdio.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CONNECT_S 10L
/* A transfer's whole time is bounded: from GRACE_S on, it must have moved
 * MIN_RATE bytes a second on average since it began (a stall or a trickle
 * is cut at GRACE_S; a 1 GiB state may take 68 minutes, no more). */
#define GRACE_S 20
#define MIN_RATE (256 * 1024)
/* One PUT takes at most 5 GiB (S3's limit; multipart upload is not done). */
#define PUT_MAX (5ULL << 30)
#define ERR_BODY_MAX 4096

struct s3 {
	char endpoint[512];
	char bucket[64];
	char prefix[520];	/* "" or "PREFIX/" */
	char sigv4[128];
	char *key_id, *secret;
	struct curl_slist *headers;
};

static void s3_free(void *impl)
{
	struct s3 *s = impl;
	if (!s)
		return;
	if (s->secret)
		explicit_bzero(s->secret, strlen(s->secret));
	free(s->secret);
	free(s->key_id);
	if (s->headers)		/* libcurl is loaded then */
		curl_slist_free_all(s->headers);
	free(s);
}

static void s3_freep(struct s3 **s) { s3_free(*s); }

static bool bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63 || b[0] == '.' || b[0] == '-' || b[n - 1] == '.' || b[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
		      b[i] == '-'))
			return false;
	return true;
}

static bool region_ok(const char *r)
{
	size_t n = strlen(r);
	return n > 0 && n < 40 && strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* The bucket and prefix of "BUCKET[/PREFIX[/]]". */
static int spec_parse(struct s3 *s, const char *bp, struct err *e)
{
	size_t bn = strcspn(bp, "/");
	if (!bucket_ok(bp, bn))
		return err_set(e, -EINVAL,
			       "store s3://%.80s: give s3://BUCKET/PREFIX, BUCKET 3 to 63 of a-z 0-9 . -",
			       bp);
	memcpy(s->bucket, bp, bn);
	const char *p = bp[bn] ? bp + bn + 1 : "";
	char pre[sizeof(s->prefix)];
	size_t pn = strlen(p);
	if (pn >= sizeof(pre) - 1)
		return err_set(e, -EINVAL, "store s3://%.80s: the prefix is too long", bp);
	memcpy(pre, p, pn + 1);
	if (pn && pre[pn - 1] == '/')
		pre[--pn] = 0;
	if (pn) {
		struct err ke = { 0 };
		int r = store_key_check(pre, &ke);
		if (r < 0)
			return err_set(e, r, "store s3://%.80s: the prefix: %s", bp, ke.msg);
		snprintf(s->prefix, sizeof(s->prefix), "%s/", pre);
	}
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

int s3_open(const char *bucket_prefix, void **ret, char *desc, size_t desc_len, struct err *e)
{
	__attribute__((cleanup(s3_freep))) struct s3 *s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, -ENOMEM, "out of memory");
	int r = spec_parse(s, bucket_prefix, e);
	if (r < 0)
		return r;
	const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
	if (!id || !secret)
		return err_set(e, -EINVAL,
			       "an s3 store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
			       "(%s): export both, and AWS_SESSION_TOKEN with temporary credentials",
			       !id && !secret ? "neither is set"
			       : !id	      ? "AWS_ACCESS_KEY_ID is not set"
					      : "AWS_SECRET_ACCESS_KEY is not set");
	const char *region = env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region)
		region = "us-east-1";
	if (!region_ok(region))
		return err_set(e, -EINVAL, "AWS region \"%.40s\": give one such as us-east-1", region);
	const char *ep = env("WARD_S3_ENDPOINT");
	if (ep) {
		size_t n = strlen(ep);
		while (n && ep[n - 1] == '/')
			n--;
		if ((strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) || n > 400 ||
		    strcspn(ep, " \t\r\n") < n)
			return err_set(e, -EINVAL,
				       "WARD_S3_ENDPOINT \"%.80s\": give a URL such as "
				       "http://127.0.0.1:9000 or https://s3.example.com",
				       ep);
		snprintf(s->endpoint, sizeof(s->endpoint), "%.*s", (int)n, ep);
	} else {
		snprintf(s->endpoint, sizeof(s->endpoint), "https://s3.%s.amazonaws.com", region);
	}
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", region);
	r = curlso_load();
	if (r < 0)
		return err_set(e, r, "an s3 store needs libcurl (libcurl.so.4, 7.75 or later): "
				     "install libcurl4");
	s->key_id = strdup(id);
	s->secret = strdup(secret);
	if (!s->key_id || !s->secret)
		return err_set(e, -ENOMEM, "out of memory");
	struct curl_slist *h = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (!h)
		return err_set(e, -ENOMEM, "out of memory");
	s->headers = h;
	const char *token = env("AWS_SESSION_TOKEN");
	if (token) {
		_cleanup_free_ char *line = NULL;
		if (asprintf(&line, "x-amz-security-token: %s", token) < 0 ||
		    !(h = curl_slist_append(s->headers, line)))
			return err_set(e, -ENOMEM, "out of memory");
		s->headers = h;
	}
	snprintf(desc, desc_len, "s3 %s%s%.*s at %s", s->bucket, *s->prefix ? "/" : "",
		 *s->prefix ? (int)strlen(s->prefix) - 1 : 0, s->prefix, s->endpoint);
	*ret = TAKE_PTR(s);
	return 0;
}

struct xfer {
	CURL *c;
	int fd;			/* the file read (PUT) or written (GET); -1 none */
	bool get;
	int io_err;		/* the file's -errno, when it stopped the transfer */
	long status;		/* known at the first byte of the body */
	char body[ERR_BODY_MAX + 1];	/* any body but a good GET's, cut */
	size_t body_len;
	struct timespec t0;
	double slow_s;		/* when the rate bound cut it; 0 not */
	uint64_t slow_bytes;	/* and what had moved by then */
};

/* The rate bound (GRACE_S, MIN_RATE); libcurl calls this at least once a
 * second, moving or not. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	(void)dltotal;
	(void)ultotal;
	struct xfer *x = ud;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	double el = (double)(t.tv_sec - x->t0.tv_sec) + (double)(t.tv_nsec - x->t0.tv_nsec) / 1e9;
	uint64_t moved = (uint64_t)(dlnow > 0 ? dlnow : 0) + (uint64_t)(ulnow > 0 ? ulnow : 0);
	if (el < GRACE_S || (double)moved >= el * MIN_RATE)
		return 0;
	x->slow_s = el;
	x->slow_bytes = moved;
	return 1;
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	if (!x->status)
		curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->get && x->status >= 200 && x->status < 300) {
		int r = fdio_write_full(x->fd, p, len);
		if (r < 0) {
			x->io_err = r;
			return 0;
		}
		return len;
	}
	size_t room = ERR_BODY_MAX - x->body_len;
	memcpy(x->body + x->body_len, p, MIN(room, len));
	x->body_len += MIN(room, len);
	x->body[x->body_len] = 0;
	return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	ssize_t k = fdio_read_some(x->fd, p, size * n);
	if (k < 0) {
		x->io_err = (int)k;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)k;
}

/* What to do about an S3 error code, where there is something. */
static const char *code_hint(const char *code)
{
	static const struct {
		const char *code, *hint;
	} hints[] = {
		{ "SignatureDoesNotMatch", "check AWS_SECRET_ACCESS_KEY" },
		{ "InvalidAccessKeyId", "check AWS_ACCESS_KEY_ID" },
		{ "ExpiredToken", "renew the credentials (AWS_SESSION_TOKEN)" },
		{ "InvalidToken", "check AWS_SESSION_TOKEN" },
		{ "AccessDenied", "the credentials may not use this bucket and prefix" },
		{ "NoSuchBucket", "create the bucket, or name another in the store" },
		{ "RequestTimeTooSkewed", "set this machine's clock right" },
		{ "PermanentRedirect", "set AWS_REGION to the bucket's region" },
		{ "AuthorizationHeaderMalformed", "set AWS_REGION to the bucket's region" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(hints); i++)
		if (!strcmp(code, hints[i].code))
			return hints[i].hint;
	return NULL;
}

/* The <Code> of an S3 error body, printable characters only. */
static void body_code(const char *body, char *code, size_t n)
{
	*code = 0;
	const char *a = strstr(body, "<Code>");
	const char *b = a ? strstr(a, "</Code>") : NULL;
	if (!b)
		return;
	a += 6;
	size_t len = MIN((size_t)(b - a), n - 1);
	for (size_t i = 0; i < len; i++)
		code[i] = a[i] >= 0x21 && a[i] <= 0x7e ? a[i] : '?';
	code[len] = 0;
}

static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* One request. fd: the body to send (PUT, size bytes) or the file the
 * answer goes to (GET); -1 for DELETE. -ENOENT for a 404 of the key (not of
 * the bucket). */
static int s3_request(struct s3 *s, const char *method, const char *key, int fd, uint64_t size,
		      struct err *e)
{
	_cleanup_free_ char *url = NULL;
	if (asprintf(&url, "%s/%s/%s%s", s->endpoint, s->bucket, s->prefix, key) < 0)
		return err_set(e, -ENOMEM, "out of memory");
	/* Names the object in every message. */
	char what[1400];
	snprintf(what, sizeof(what), "s3 store: %s %s/%s%s at %s", method, s->bucket, s->prefix, key,
		 s->endpoint);
	CURL *c = curl_easy_init();
	if (!c)
		return err_set(e, -ENOMEM, "%s: libcurl could not start", what);
	struct xfer *x = calloc(1, sizeof(*x));
	if (!x) {
		curl_easy_cleanup(c);
		return err_set(e, -ENOMEM, "out of memory");
	}
	*x = (struct xfer){ .c = c, .fd = fd, .get = !strcmp(method, "GET") };
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_S);
	clock_gettime(CLOCK_MONOTONIC, &x->t0);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(c, CURLOPT_USERNAME, s->key_id);
	curl_easy_setopt(c, CURLOPT_PASSWORD, s->secret);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, s->headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	if (!strcmp(method, "PUT")) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, x);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
	} else if (!strcmp(method, "DELETE")) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	CURLcode cc = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	int r = 0;
	if (x->io_err)
		r = err_setc(e, x->io_err, "%s: %s the file", what, x->get ? "writing" : "reading");
	else if (x->slow_s > 0)
		r = err_set(e, -ETIMEDOUT,
			    "%s: %llu bytes in %.0f s, under %d KiB/s on average: the store is too slow or stalled "
			    "(a transfer must average %d KiB/s after its first %d s); check the endpoint and the link",
			    what, (unsigned long long)x->slow_bytes, x->slow_s, MIN_RATE / 1024, MIN_RATE / 1024,
			    GRACE_S);
	else if (cc != CURLE_OK)
		r = err_set(e, curl_errno(cc), "%s: %s%s%s: is the endpoint right and up?", what,
			    curl_easy_strerror(cc), *cerr ? ": " : "", cerr);
	else if (status >= 300) {
		char code[64];
		body_code(x->body, code, sizeof(code));
		const char *hint = code_hint(code);
		bool no_key = status == 404 && (!*code || !strcmp(code, "NoSuchKey"));
		r = err_set(e, no_key ? -ENOENT : status == 403 ? -EACCES : -EIO,
			    "%s: HTTP %ld%s%s%s%s", what, status, *code ? " " : "", code,
			    hint ? ": " : "", hint ? hint : "");
	}
	free(x);
	return r;
}

static int s3_put(void *impl, const char *key, int in_fd, uint64_t size, struct err *e)
{
	struct s3 *s = impl;
	if (size > PUT_MAX)
		return err_set(e, -EFBIG,
			       "s3 store: %s is %llu bytes; one PUT takes at most 5 GiB "
			       "(multipart upload is not done): compress it first",
			       key, (unsigned long long)size);
	return s3_request(s, "PUT", key, in_fd, size, e);
}

static int s3_get(void *impl, const char *key, int out_fd, struct err *e)
{
	int r = s3_request(impl, "GET", key, out_fd, 0, e);
	if (r == -ENOENT) {
		struct s3 *s = impl;
		return err_set(e, -ENOENT, "s3 store: no object %s/%s%s at %s", s->bucket, s->prefix,
			       key, s->endpoint);
	}
	return r;
}

static int s3_del(void *impl, const char *key, struct err *e)
{
	/* S3 answers 204 for a missing key too; others may say 404. */
	int r = s3_request(impl, "DELETE", key, -1, 0, e);
	return r == -ENOENT ? 0 : r;
}

const struct store_backend s3_backend = {
	.put = s3_put,
	.get = s3_get,
	.del = s3_del,
	.free = s3_free,
};
