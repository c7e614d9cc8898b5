/* net/sigv4-stream.h against AWS's published streaming example (S3's
 * "Transferring Payload in Multiple Chunks": PUT chunkObject.txt, 66560
 * bytes of 'a' in chunks of 65536 and 1024, its seed and three chunk
 * signatures) and the trailer vector of AWS's own signer (aws-crt's
 * ChunkSignerTests: trailing headers first, second, third after the same
 * chunks). Re-signed with the same key the stream comes out byte for byte
 * as AWS signed it; with another key its chain holds under that key and
 * no longer under the first. Each refusal (a changed byte, a chunk over the
 * bound, bytes after the end, a trailer where none was declared, a signed
 * trailer without its signature, a signature in an unsigned stream, a
 * streaming head where no stream can be re-signed) with its twin. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/sigv4-stream.h"
#include "tap.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
#define TRAILER_SIG "df5735bd9f3295cd9386572292562fefc93ba94e80a0a1ddcbd652c4e0a75e6c"

#define HEAD_OF(sha) \
	"PUT /examplebucket/chunkObject.txt HTTP/1.1\r\n" \
	"Host: s3.amazonaws.com\r\n" \
	"x-amz-date: 20130524T000000Z\r\n" \
	"x-amz-storage-class: REDUCED_REDUNDANCY\r\n" \
	"Authorization: AWS4-HMAC-SHA256 Credential=" AKID "/20130524/us-east-1/s3/aws4_request," \
	"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;" \
	"x-amz-decoded-content-length;x-amz-storage-class,Signature=" SEED "\r\n" \
	"x-amz-content-sha256: " sha "\r\n" \
	"Content-Encoding: aws-chunked\r\n" \
	"x-amz-decoded-content-length: 66560\r\n" \
	"Content-Length: 66824\r\n\r\n"
#define HEAD HEAD_OF("STREAMING-AWS4-HMAC-SHA256-PAYLOAD")

/* The example's body: its chunks, then trailer (NULL: the plain end). */
static struct buf body_of(const char *last_sig, const char *trailer)
{
	struct buf b;
	buf_init(&b, 128 * 1024);
	char *a = malloc(65536);
	memset(a, 'a', 65536);
	buf_printf(&b, "10000;chunk-signature=" SIG1 "\r\n");
	buf_append(&b, a, 65536);
	buf_printf(&b, "\r\n400;chunk-signature=" SIG2 "\r\n");
	buf_append(&b, a, 1024);
	buf_printf(&b, "\r\n0;chunk-signature=%s\r\n%s\r\n", last_sig, trailer ? trailer : "");
	free(a);
	return b;
}

/* The whole body through a stream step bytes at a time: its result, the
 * bytes out in *ret. */
static int run(const struct net_sigv4_seed *seed, const struct buf *in, size_t step, struct buf *ret, char *why,
	       size_t wn)
{
	struct net_sigv4_stream s;
	struct buf out;
	buf_init(ret, in->len + 1);
	buf_init(&out, NET_SIGV4_STREAM_ROOM(step));
	if (net_sigv4_stream_init(&s, seed) < 0)
		return -ENOMEM;
	int r = 0;
	for (size_t i = 0; i < in->len && r == 0; i += step) {
		size_t k = in->len - i < step ? in->len - i : step;
		r = net_sigv4_stream_feed(&s, in->data + i, k, &out, why, wn);
		if (r >= 0) {
			buf_append(ret, out.data, s.ready);
			net_sigv4_stream_sent(&s, &out);
		}
	}
	if (r == 1 && out.len)
		r = -EIO;	/* (nothing may stay held at the end) */
	net_sigv4_stream_free(&s);
	buf_free(&out);
	return r;
}

static int resign(const char *head, const char *secret, const char *key, struct net_sigv4_seed *seed,
		  struct buf *ret_head, char *why, size_t wn)
{
	struct net_sigv4_keys k = { .ph_key = AKID, .ph_secret = SECRET, .key = key, .secret = secret };
	buf_init(ret_head, 8192);
	buf_append(ret_head, head, strlen(head));
	int r = net_sigv4_resign(ret_head, &k, NULL, seed, why, wn);
	buf_cstr(ret_head);
	return r;
}

static bool same(const struct buf *a, const struct buf *b)
{
	return a->len == b->len && !memcmp(a->data, b->data, a->len);
}

int main(void)
{
	char why[320] = "";
	struct net_sigv4_seed seed;
	struct buf head, out;

	/* The seed: AWS's, checked with its key and made again with it. */
	int r = resign(HEAD, SECRET, AKID, &seed, &head, why, sizeof(why));
	is_int(r, 1, "AWS's streaming PUT head: re-signed (%s)", why);
	is_int(seed.kind, NET_SIGV4_STREAM_SIGNED, "its payload is STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
	is_str(seed.sig_ph, SEED, "the seed by the placeholder's key is AWS's");
	is_str(seed.sig, SEED, "made again with the same key: AWS's seed");
	is_str(seed.scope, "20130524/us-east-1/s3/aws4_request", "the scope");
	buf_free(&head);

	struct buf body = body_of(SIG3, NULL);
	is_int((int)body.len, 66824, "(the example's body is its Content-Length, 66824 bytes)");
	size_t steps[] = { body.len, 65536, 4096, 7, 1 };
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		r = run(&seed, &body, steps[i], &out, why, sizeof(why));
		is_int(r, 1, "AWS's chunks, %zu bytes a feed: each signature holds (%s)", steps[i], r < 0 ? why : "");
		ok(same(&out, &body), "and made again with the same key they are AWS's, byte for byte");
		buf_free(&out);
	}

	/* Another real key: the chain is that key's, and only that key's. */
	r = resign(HEAD, "real/secret", "AKIDREAL", &seed, &head, why, sizeof(why));
	is_int(r, 1, "re-signed with another key (%s)", why);
	like(head.data, "Credential=AKIDREAL/20130524/us-east-1/s3/aws4_request", "the head names the real key");
	unlike(head.data, SEED, "and its seed is not AWS's");
	r = run(&seed, &body, 4096, &out, why, sizeof(why));
	is_int(r, 1, "the body through it (%s)", r < 0 ? why : "");
	is_int((int)out.len, (int)body.len, "as long as it came (Content-Length stays true)");
	buf_cstr(&out);
	unlike(out.data, SIG1, "no signature of AWS's is left in it");
	struct net_sigv4_seed real = seed;
	memcpy(real.key_ph, seed.key, 32);
	memcpy(real.sig_ph, seed.sig, 65);
	struct buf back;
	r = run(&real, &out, 4096, &back, why, sizeof(why));
	is_int(r, 1, "its chain holds under the real key (%s)", r < 0 ? why : "");
	buf_free(&back);
	r = run(&seed, &out, 4096, &back, why, sizeof(why));
	is_int(r, -EBADMSG, "and not under the placeholder's: refused");
	like(why, "chunk 1's signature does not hold with the placeholder keys", "saying which chunk (%s)", why);
	buf_free(&back);
	buf_free(&out);
	buf_free(&head);

	/* Refusals, each beside its twin above. */
	resign(HEAD, SECRET, AKID, &seed, &head, why, sizeof(why));
	buf_free(&head);
	body.data[65536 + 200] = 'b';
	r = run(&seed, &body, 4096, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "a byte of chunk 2 changed: refused");
	like(why, "chunk 2's signature does not hold", "chunk 2 named (%s)", why);
	body.data[65536 + 200] = 'a';
	buf_free(&out);
	struct buf extra = body_of(SIG3, NULL);
	buf_append(&extra, "x", 1);
	r = run(&seed, &extra, extra.len, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "a byte after the last chunk: refused");
	like(why, "bytes after the aws-chunked payload's end", "(%s)", why);
	buf_free(&out);
	buf_free(&extra);
	extra = body_of(SIG3, "x-amz-checksum-crc32:AAAAAA==\r\n");
	r = run(&seed, &extra, 512, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "a trailer where the head declared none: refused (%s)", why);
	buf_free(&out);
	buf_free(&extra);

	/* The bound: a signed chunk is held whole, 1 MiB of data at most. */
	is_int(NET_SIGV4_CHUNK_MAX, 1048576, "a signed chunk's bound: 1 MiB");
	struct net_sigv4_stream s;
	struct buf o;
	buf_init(&o, NET_SIGV4_STREAM_ROOM(4096));
	static const char big[] = "100001;chunk-signature=" SIG1 "\r\n";
	static const char max[] = "100000;chunk-signature=" SIG1 "\r\n";
	net_sigv4_stream_init(&s, &seed);
	r = net_sigv4_stream_feed(&s, big, strlen(big), &o, why, sizeof(why));
	is_int(r, -EMSGSIZE, "a chunk of 1 MiB and a byte: refused");
	like(why, "at most 1048576 bytes; send smaller chunks", "the bound said (%s)", why);
	net_sigv4_stream_free(&s);
	o.len = 0;
	net_sigv4_stream_init(&s, &seed);
	r = net_sigv4_stream_feed(&s, max, strlen(max), &o, why, sizeof(why));
	is_int(r, 0, "twin: a chunk of 1 MiB is taken (held: nothing ready yet)");
	is_int((int)s.ready, 0, "(held until its data is in)");
	net_sigv4_stream_free(&s);
	buf_free(&o);

	/* A signed trailer: aws-crt's vector (the chunks' chain as above). */
	struct net_sigv4_seed ts = seed;
	ts.kind = NET_SIGV4_STREAM_SIGNED_TRAILER;
	extra = body_of(SIG3, "first:1st\r\nsecond:2nd\r\nthird:3rd\r\nx-amz-trailer-signature:" TRAILER_SIG "\r\n");
	r = run(&ts, &extra, 1000, &out, why, sizeof(why));
	is_int(r, 1, "a signed trailer: its signature holds (%s)", r < 0 ? why : "");
	ok(same(&out, &extra), "and made again with the same key it is aws-crt's");
	buf_free(&out);
	buf_free(&extra);
	extra = body_of(SIG3, "first:1st\r\nsecond:2nd\r\nthird:3rd\r\n");
	r = run(&ts, &extra, 1000, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "a signed trailer without x-amz-trailer-signature: refused");
	like(why, "has no x-amz-trailer-signature", "(%s)", why);
	buf_free(&out);
	buf_free(&extra);
	extra = body_of(SIG3, "first:1st\r\nsecond:2ND\r\nthird:3rd\r\nx-amz-trailer-signature:" TRAILER_SIG "\r\n");
	r = run(&ts, &extra, 1000, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "a trailer's value changed after signing: refused (%s)", why);
	buf_free(&out);
	buf_free(&extra);

	/* Unsigned chunks with a trailer (boto3's, aws-cli's): carried as they
	 * are, framing checked; nothing held. */
	struct net_sigv4_seed us = seed;
	us.kind = NET_SIGV4_STREAM_UNSIGNED_TRAILER;
	struct buf ub;
	buf_init(&ub, 256);
	buf_printf(&ub, "a\r\n0123456789\r\n3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n");
	r = run(&us, &ub, 3, &out, why, sizeof(why));
	is_int(r, 1, "an unsigned stream with a trailer (%s)", r < 0 ? why : "");
	ok(same(&out, &ub), "passes as it is");
	buf_free(&out);
	ub.len = 0;
	buf_printf(&ub, "a;chunk-signature=" SIG1 "\r\n0123456789\r\n0\r\n\r\n");
	r = run(&us, &ub, 3, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "a chunk signature in an unsigned stream: refused (%s)", why);
	buf_free(&out);
	ub.len = 0;
	buf_printf(&ub, "0\r\nx-amz-trailer-signature:" SIG1 "\r\n\r\n");
	r = run(&us, &ub, 3, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "a trailer signature in an unsigned stream: refused (%s)", why);
	buf_free(&out);
	ub.len = 0;
	buf_printf(&ub, "a\r\n0123456789\n0\r\n\r\n");
	r = run(&us, &ub, 3, &out, why, sizeof(why));
	is_int(r, -EBADMSG, "data not followed by CRLF: refused (%s)", why);
	buf_free(&out);
	buf_free(&ub);

	/* The head: streaming taken only where a stream can follow. */
	buf_init(&head, 8192);
	buf_append(&head, HEAD, strlen(HEAD));
	struct net_sigv4_keys k = { .ph_key = AKID, .ph_secret = SECRET, .key = AKID, .secret = SECRET };
	r = net_sigv4_resign(&head, &k, NULL, NULL, why, sizeof(why));
	is_int(r, -EBADMSG, "a streaming head where no stream is re-signed (plain HTTP): refused");
	like(why, "re-signed over HTTPS only", "(%s)", why);
	buf_free(&head);
	r = resign(HEAD_OF("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"), SECRET, AKID, &seed, &head, why, sizeof(why));
	is_int(r, -EBADMSG, "a SigV4a streaming head: refused (%s)", why);
	buf_free(&head);
	r = resign(HEAD_OF("UNSIGNED-PAYLOAD"), SECRET, AKID, &seed, &head, why, sizeof(why));
	ok(r == -EBADMSG && seed.kind == NET_SIGV4_WHOLE,
	   "(a whole payload's head: no seed; this one's signature was made for the stream, so it does not hold)");
	buf_free(&head);
	buf_free(&body);
	net_sigv4_seed_wipe(&seed);
	return tap_done();
}
