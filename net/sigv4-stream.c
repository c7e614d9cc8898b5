#include "net/sigv4-stream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/osslso.h"
#include "base/cleanup.h"
#include "net/sigv4-int.h"

enum {
	ST_LINE,	/* a chunk's size line */
	ST_DATA,
	ST_DATA_CR,
	ST_DATA_LF,
	ST_TRAILER,	/* after the chunk of no data: trailer lines, then the blank one */
	ST_DONE,
};

#define CHUNK_SIG_EXT ";chunk-signature="
#define TRAILER_SIG "x-amz-trailer-signature"

int net_sigv4_stream_init(struct net_sigv4_stream *s, const struct net_sigv4_seed *seed)
{
	*s = (struct net_sigv4_stream){ .seed = *seed, .state = ST_LINE };
	s->md = EVP_MD_CTX_new();
	if (!s->md) {
		net_sigv4_seed_wipe(&s->seed);
		return -ENOMEM;
	}
	return 0;
}

void net_sigv4_stream_free(struct net_sigv4_stream *s)
{
	EVP_MD_CTX_free(s->md);
	s->md = NULL;
	net_sigv4_seed_wipe(&s->seed);
}

static bool is_signed(const struct net_sigv4_stream *s)
{
	return s->seed.kind == NET_SIGV4_STREAM_SIGNED || s->seed.kind == NET_SIGV4_STREAM_SIGNED_TRAILER;
}

/* A signature of algo's string to sign for the last link: the
 * placeholder's chain checked against box_sig, then the real chain's
 * link written at out (64 bytes); both chains move on. */
static int relink(struct net_sigv4_stream *s, const char *algo, const char *tail, const char *box_sig, char *at,
		  char *why, size_t wn, const char *what)
{
	char sts[512], sig[65];
	int n = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s", algo, s->seed.amzdate, s->seed.scope, s->seed.sig_ph,
			 tail);
	if (n < 0 || (size_t)n >= sizeof(sts) || net_sigv4_hmac_hex(s->seed.key_ph, sts, (size_t)n, sig) < 0)
		return sigv4_why(why, wn, -EBADMSG, "cannot sign %s", what);
	if (CRYPTO_memcmp(sig, box_sig, 64))
		return sigv4_why(why, wn, -EBADMSG, "%s's signature does not hold with the placeholder keys "
			    "(its bytes changed, or it was signed for another request)", what);
	memcpy(s->seed.sig_ph, sig, 65);
	n = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s", algo, s->seed.amzdate, s->seed.scope, s->seed.sig, tail);
	if (n < 0 || (size_t)n >= sizeof(sts) || net_sigv4_hmac_hex(s->seed.key, sts, (size_t)n, sig) < 0)
		return sigv4_why(why, wn, -EBADMSG, "cannot sign %s", what);
	memcpy(s->seed.sig, sig, 65);
	memcpy(at, sig, 64);
	OPENSSL_cleanse(sts, sizeof(sts));
	return 0;
}

/* The held chunk's data all in: its signature checked and made again. */
static int chunk_done(struct net_sigv4_stream *s, struct buf *out, char *why, size_t wn)
{
	unsigned char md[32];
	unsigned int ml = 0;
	char tail[160], hex[65], what[48];
	if (EVP_DigestFinal_ex(s->md, md, &ml) != 1 || ml != 32)
		return sigv4_why(why, wn, -EBADMSG, "SHA-256 failed");
	sigv4_hex(md, 32, hex);
	snprintf(tail, sizeof(tail), "%s\n%s", NET_SIGV4_EMPTY_HASH, hex);
	snprintf(what, sizeof(what), "aws-chunked chunk %u", s->nchunk);
	int r = relink(s, "AWS4-HMAC-SHA256-PAYLOAD", tail, s->sig_in, out->data + s->sig_at, why, wn, what);
	if (r < 0)
		return r;
	s->holding = false;
	s->ready = out->len;
	return 0;
}

/* A chunk's size line (l[0..n), without its CRLF). */
static int size_line(struct net_sigv4_stream *s, const char *l, size_t n, struct buf *out, char *why, size_t wn)
{
	uint64_t size = 0;
	size_t i = 0;
	for (; i < n && i < 16; i++) {
		int v = l[i] >= '0' && l[i] <= '9' ? l[i] - '0' : l[i] >= 'a' && l[i] <= 'f' ? l[i] - 'a' + 10 :
			l[i] >= 'A' && l[i] <= 'F' ? l[i] - 'A' + 10 : -1;
		if (v < 0)
			break;
		size = size << 4 | (uint64_t)v;
	}
	size_t el = strlen(CHUNK_SIG_EXT);
	bool sig = is_signed(s);
	if (!i || (sig ? n != i + el + 64 || memcmp(l + i, CHUNK_SIG_EXT, el) || !sigv4_lower_hex(l + i + el, 64) : n != i))
		return sigv4_why(why, wn, -EBADMSG, sig ? "an aws-chunked chunk's line is not HEX;chunk-signature=SIGNATURE" :
			    "an unsigned aws-chunked chunk's line is not its size in hex alone");
	s->nchunk++;
	s->left = size;
	if (sig) {
		if (size > NET_SIGV4_CHUNK_MAX)
			return sigv4_why(why, wn, -EMSGSIZE, "an aws-chunked chunk of %llu bytes: a signed chunk is held whole "
				    "to be re-signed, at most %u bytes; send smaller chunks",
				    (unsigned long long)size, NET_SIGV4_CHUNK_MAX);
		memcpy(s->sig_in, l + i + el, 64);
		s->sig_in[64] = 0;
		s->sig_at = out->len + i + el;
		s->holding = true;
		if (EVP_DigestInit_ex(s->md, EVP_sha256(), NULL) != 1)
			return sigv4_why(why, wn, -EBADMSG, "SHA-256 failed");
	}
	if (buf_append(out, l, n) < 0 || buf_append(out, "\r\n", 2) < 0)
		return sigv4_why(why, wn, -ENOBUFS, "no room for the chunk");
	if (!s->holding)
		s->ready = out->len;
	if (size)
		s->state = ST_DATA;
	else {
		s->last = true;
		s->state = ST_TRAILER;
		if (sig)
			return chunk_done(s, out, why, wn);
	}
	return 0;
}

/* A trailer's line: kept as signed ("name:value\n", the name lowercase,
 * the value trimmed); x-amz-trailer-signature checked and made again. */
static int trailer_line(struct net_sigv4_stream *s, const char *l, size_t n, struct buf *out, char *why, size_t wn)
{
	const char *colon = memchr(l, ':', n);
	size_t nl = colon ? (size_t)(colon - l) : 0;
	if (!nl || s->trailer_signed || s->seed.kind == NET_SIGV4_STREAM_SIGNED)
		return sigv4_why(why, wn, -EBADMSG, s->trailer_signed ? "a trailer line after x-amz-trailer-signature" :
			    nl ? "a trailer in an aws-chunked payload that declared none" :
			    "an aws-chunked trailer line is not NAME:VALUE");
	for (size_t i = 0; i < nl; i++)
		if (!((l[i] >= 'a' && l[i] <= 'z') || (l[i] >= 'A' && l[i] <= 'Z') || (l[i] >= '0' && l[i] <= '9') ||
		      l[i] == '-' || l[i] == '_'))
			return sigv4_why(why, wn, -EBADMSG, "an aws-chunked trailer's name is not a header name");
	const char *v = colon + 1, *ve = l + n;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	size_t vl = (size_t)(ve - v), at = out->len;
	if (buf_append(out, l, n) < 0 || buf_append(out, "\r\n", 2) < 0)
		return sigv4_why(why, wn, -ENOBUFS, "no room for the trailer");
	if (nl == strlen(TRAILER_SIG) && !strncasecmp(l, TRAILER_SIG, nl)) {
		if (s->seed.kind != NET_SIGV4_STREAM_SIGNED_TRAILER || vl != 64 || !sigv4_lower_hex(v, 64))
			return sigv4_why(why, wn, -EBADMSG, s->seed.kind != NET_SIGV4_STREAM_SIGNED_TRAILER ?
				    "x-amz-trailer-signature in an unsigned aws-chunked payload" :
				    "x-amz-trailer-signature is not 64 hex digits");
		char hex[65], box[65];
		memcpy(box, v, 64);
		box[64] = 0;
		if (net_sigv4_hash_hex(s->trailer, s->trailer_len, hex) < 0)
			return sigv4_why(why, wn, -EBADMSG, "SHA-256 failed");
		int r = relink(s, "AWS4-HMAC-SHA256-TRAILER", hex, box, out->data + at + (size_t)(v - l), why, wn,
			       "the aws-chunked trailer");
		if (r < 0)
			return r;
		s->trailer_signed = true;
	} else {
		if (s->trailer_len + nl + vl + 2 > sizeof(s->trailer))
			return sigv4_why(why, wn, -EBADMSG, "the aws-chunked trailer is over %d bytes", NET_SIGV4_TRAILER_MAX);
		for (size_t i = 0; i < nl; i++)
			s->trailer[s->trailer_len++] = (char)(l[i] >= 'A' && l[i] <= 'Z' ? l[i] + 32 : l[i]);
		s->trailer[s->trailer_len++] = ':';
		memcpy(s->trailer + s->trailer_len, v, vl);
		s->trailer_len += vl;
		s->trailer[s->trailer_len++] = '\n';
	}
	s->ready = out->len;
	return 0;
}

/* A whole line in s->line: what it is depends on where the stream is. */
static int line_done(struct net_sigv4_stream *s, struct buf *out, char *why, size_t wn)
{
	size_t n = s->line_len - 2;
	s->line_len = 0;
	if (s->state == ST_LINE)
		return size_line(s, s->line, n, out, why, wn);
	if (n)
		return trailer_line(s, s->line, n, out, why, wn);
	if (s->seed.kind == NET_SIGV4_STREAM_SIGNED_TRAILER && !s->trailer_signed)
		return sigv4_why(why, wn, -EBADMSG, "the aws-chunked trailer has no x-amz-trailer-signature");
	if (buf_append(out, "\r\n", 2) < 0)
		return sigv4_why(why, wn, -ENOBUFS, "no room for the end");
	s->ready = out->len;
	s->state = ST_DONE;
	return 1;
}

int net_sigv4_stream_feed(struct net_sigv4_stream *s, const char *in, size_t n, struct buf *out, char *why,
			  size_t wn)
{
	/* Each byte in is one out (a signature is as long as the one it
	 * replaces): out has room for n more, what it holds the chunk held. */
	if (out->cap - out->len < n)
		return sigv4_why(why, wn, -ENOBUFS, "no room to re-sign the aws-chunked payload");
	for (size_t i = 0; i < n;) {
		switch (s->state) {
		case ST_LINE:
		case ST_TRAILER: {
			char c = in[i++];
			if (s->line_len == sizeof(s->line) || (s->line_len && s->line[s->line_len - 1] == '\r' && c != '\n') ||
			    (c == '\n' && (!s->line_len || s->line[s->line_len - 1] != '\r')) || (!c && s->state == ST_TRAILER))
				return sigv4_why(why, wn, -EBADMSG, s->line_len == sizeof(s->line) ?
					    "an aws-chunked line is over %d bytes" : "an aws-chunked line does not end in CRLF",
					    NET_SIGV4_CHUNK_LINE_MAX);
			s->line[s->line_len++] = c;
			if (c == '\n') {
				int r = line_done(s, out, why, wn);
				if (r < 0)
					return r;
			}
			break;
		}
		case ST_DATA: {
			size_t k = n - i < s->left ? n - i : (size_t)s->left;
			if (buf_append(out, in + i, k) < 0)
				return sigv4_why(why, wn, -ENOBUFS, "no room for the chunk");
			if (s->holding && EVP_DigestUpdate(s->md, in + i, k) != 1)
				return sigv4_why(why, wn, -EBADMSG, "SHA-256 failed");
			i += k;
			s->left -= k;
			s->data += k;
			if (!s->holding)
				s->ready = out->len;
			if (!s->left)
				s->state = ST_DATA_CR;
			break;
		}
		case ST_DATA_CR:
		case ST_DATA_LF:
			if (in[i] != (s->state == ST_DATA_CR ? '\r' : '\n'))
				return sigv4_why(why, wn, -EBADMSG, "an aws-chunked chunk's data is not followed by CRLF");
			if (buf_append(out, in + i++, 1) < 0)
				return sigv4_why(why, wn, -ENOBUFS, "no room for the chunk");
			if (s->state == ST_DATA_CR) {
				s->state = ST_DATA_LF;
				if (!s->holding)
					s->ready = out->len;
				break;
			}
			s->state = ST_LINE;
			if (s->holding) {
				int r = chunk_done(s, out, why, wn);
				if (r < 0)
					return r;
			} else {
				s->ready = out->len;
			}
			break;
		case ST_DONE:
			return sigv4_why(why, wn, -EBADMSG, "bytes after the aws-chunked payload's end");
		}
	}
	return s->state == ST_DONE ? 1 : 0;
}

void net_sigv4_stream_sent(struct net_sigv4_stream *s, struct buf *out)
{
	size_t k = s->ready;
	if (!k)
		return;
	memmove(out->data, out->data + k, out->len - k);
	out->len -= k;
	if (s->holding)
		s->sig_at -= k;
	s->ready = 0;
}
