/* The SNI of a ClientHello: real ones captured from openssl s_client, and
 * built ones; whole, cut at every byte (need more), fragmented into records
 * down to one byte each, and broken in each way a length can be broken. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/sni.h"
#include "tap.h"
#include "tls-hello.h"

struct hb {
	uint8_t *b;
	size_t n;
};

static void put(struct hb *h, const void *p, size_t n)
{
	memcpy(h->b + h->n, p, n);
	h->n += n;
}
static void put8(struct hb *h, unsigned v) { h->b[h->n++] = (uint8_t)v; }
static void put16(struct hb *h, unsigned v) { put8(h, v >> 8); put8(h, v & 0xff); }
static void put24(struct hb *h, unsigned v) { put8(h, v >> 16); put16(h, v & 0xffff); }
static void set16(struct hb *h, size_t at, unsigned v) { h->b[at] = (uint8_t)(v >> 8); h->b[at + 1] = (uint8_t)v; }
static void set24(struct hb *h, size_t at, unsigned v) { h->b[at] = (uint8_t)(v >> 16); set16(h, at + 1, v & 0xffff); }

struct opts {
	const char *names[3];	/* host_names in one server_name extension */
	int sni_exts;		/* how many server_name extensions (default 1 when names given) */
	size_t pad;		/* a padding extension of this size */
	int ext_len_delta;	/* added to the extensions' total length */
	unsigned hs_type;	/* 1 unless set */
	unsigned sid_len;	/* session id length */
	unsigned cs_len;	/* cipher suites length, 2 unless set */
	bool no_ext;		/* no extensions block at all */
	bool empty_sni_ext;	/* a server_name extension with no body */
};

/* A ClientHello handshake message (not yet in records). */
static void build(struct hb *h, const struct opts *o)
{
	h->n = 0;
	put8(h, o->hs_type ? o->hs_type : 1);
	size_t len_at = h->n;
	put24(h, 0);
	put16(h, 0x0303);
	uint8_t random[32] = { 1, 2, 3 };
	put(h, random, 32);
	put8(h, o->sid_len);
	for (unsigned i = 0; i < o->sid_len; i++)
		put8(h, 0xaa);
	unsigned cs = o->cs_len ? o->cs_len : 2;
	put16(h, cs);
	for (unsigned i = 0; i < cs; i++)
		put8(h, i & 1 ? 0x01 : 0x13);
	put8(h, 1);
	put8(h, 0);
	if (!o->no_ext) {
		size_t ext_at = h->n;
		put16(h, 0);
		put16(h, 0x002b);	/* supported_versions */
		put16(h, 3);
		put8(h, 2);
		put16(h, 0x0304);
		int nexts = o->sni_exts ? o->sni_exts : (o->names[0] ? 1 : 0);
		for (int k = 0; k < nexts; k++) {
			put16(h, 0);	/* server_name */
			size_t el_at = h->n;
			put16(h, 0);
			if (!o->empty_sni_ext) {
				size_t list_at = h->n;
				put16(h, 0);
				for (int i = 0; i < 3 && o->names[i]; i++) {
					put8(h, 0);
					put16(h, (unsigned)strlen(o->names[i]));
					put(h, o->names[i], strlen(o->names[i]));
				}
				set16(h, list_at, (unsigned)(h->n - list_at - 2));
			}
			set16(h, el_at, (unsigned)(h->n - el_at - 2));
		}
		if (o->pad) {
			put16(h, 0x0015);
			put16(h, (unsigned)o->pad);
			memset(h->b + h->n, 0, o->pad);
			h->n += o->pad;
		}
		set16(h, ext_at, (unsigned)((int)(h->n - ext_at - 2) + o->ext_len_delta));
	}
	set24(h, len_at, (unsigned)(h->n - 4));
}

/* The handshake bytes in records of at most rec bytes each. */
static size_t wrap(const uint8_t *hs, size_t n, size_t rec, uint8_t *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += rec) {
		size_t k = n - i < rec ? n - i : rec;
		out[o++] = 22;
		out[o++] = 3;
		out[o++] = 1;
		out[o++] = (uint8_t)(k >> 8);
		out[o++] = (uint8_t)k;
		memcpy(out + o, hs + i, k);
		o += k;
	}
	return o;
}

static uint8_t hsbuf[200000], recbuf[1200000];

static enum net_sni_result parse_built(const struct opts *o, size_t rec, char *name)
{
	struct hb h = { hsbuf, 0 };
	build(&h, o);
	size_t n = wrap(hsbuf, h.n, rec, recbuf);
	return net_sni_parse(recbuf, n, name);
}

/* Every strict prefix needs more; the whole gives want. Each parse reads a
 * copy of exactly that many bytes on the heap, so ASan sees any overread. */
static bool prefixes(const uint8_t *b, size_t n, enum net_sni_result want, const char *want_name)
{
	char name[NET_SNI_NAME_MAX + 1];
	for (size_t i = 0; i < n; i++) {
		uint8_t *cp = malloc(i ? i : 1);
		memcpy(cp, b, i);
		enum net_sni_result r = net_sni_parse(cp, i, name);
		free(cp);
		if (r != NET_SNI_MORE) {
			printf("#   prefix %zu of %zu: %s\n", i, n, net_sni_result_name(r));
			return false;
		}
	}
	uint8_t *cp = malloc(n);
	memcpy(cp, b, n);
	enum net_sni_result r = net_sni_parse(cp, n, name);
	free(cp);
	return r == want && (!want_name || !strcmp(name, want_name));
}

int main(void)
{
	char name[NET_SNI_NAME_MAX + 1];

	/* Real ClientHellos. */
	is_int(net_sni_parse(hello_tls13_sni, sizeof(hello_tls13_sni), name), NET_SNI_FOUND, "openssl TLS 1.3 hello");
	is_str(name, "allowed.test", "its server name");
	is_int(net_sni_parse(hello_tls12_sni, sizeof(hello_tls12_sni), name), NET_SNI_FOUND, "openssl TLS 1.2 hello");
	is_str(name, "allowed.test", "its server name");
	is_int(net_sni_parse(hello_tls13_nosni, sizeof(hello_tls13_nosni), name), NET_SNI_NONE,
	       "openssl -noservername: no SNI");
	ok(prefixes(hello_tls13_sni, sizeof(hello_tls13_sni), NET_SNI_FOUND, "allowed.test"),
	   "every prefix of a real hello needs more bytes; the whole is found");
	ok(prefixes(hello_tls13_nosni, sizeof(hello_tls13_nosni), NET_SNI_NONE, NULL),
	   "likewise for one without SNI");

	/* The real one re-fragmented: records of 1, 2, 7 and 100 bytes. */
	size_t hs_len = sizeof(hello_tls13_sni) - 5;
	size_t sizes[] = { 1, 2, 7, 100 };
	for (size_t i = 0; i < 4; i++) {
		size_t n = wrap(hello_tls13_sni + 5, hs_len, sizes[i], recbuf);
		ok(prefixes(recbuf, n, NET_SNI_FOUND, "allowed.test"),
		   "the hello in records of %zu bytes, at every cut", sizes[i]);
	}
	/* And with application bytes after it: still found. */
	memcpy(recbuf, hello_tls13_sni, sizeof(hello_tls13_sni));
	memcpy(recbuf + sizeof(hello_tls13_sni), "\x17\x03\x03\x00\x01x", 6);
	is_int(net_sni_parse(recbuf, sizeof(hello_tls13_sni) + 6, name), NET_SNI_FOUND, "bytes after the hello are not its");

	/* Built ones. */
	struct opts o = { .names = { "Example.ORG" } };
	is_int(parse_built(&o, 16384, name), NET_SNI_FOUND, "a built hello");
	is_str(name, "Example.ORG", "the name as sent (the caller canonicalises)");
	o = (struct opts){ .no_ext = true };
	is_int(parse_built(&o, 16384, name), NET_SNI_NONE, "a hello with no extensions at all has no SNI");
	o = (struct opts){ 0 };
	is_int(parse_built(&o, 16384, name), NET_SNI_NONE, "a hello with extensions but no server_name");
	o = (struct opts){ .names = { "a.example" }, .pad = 40000 };
	is_int(parse_built(&o, 16384, name), NET_SNI_FOUND, "a 40 KB hello across three records");
	o = (struct opts){ .names = { "a.example" }, .pad = 65500 };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "a hello over 64 KiB");
	{
		/* A stream that would go on past 64 KiB, cut there: malformed,
		 * not "more" forever. */
		struct hb h = { hsbuf, 0 };
		o = (struct opts){ .names = { "a.example" }, .pad = 60000 };
		build(&h, &o);
		size_t n = wrap(hsbuf, h.n, 10, recbuf);
		ok(n > NET_SNI_MAX_HELLO, "(60 KB in 10-byte records is %zu bytes)", n);
		is_int(net_sni_parse(recbuf, NET_SNI_MAX_HELLO, name), NET_SNI_MALFORMED, "64 KiB without an end");
		is_int(net_sni_parse(recbuf, NET_SNI_MAX_HELLO - 1, name), NET_SNI_MORE, "a byte short of it: more");
	}

	/* Not TLS, at the first byte that shows it. */
	is_int(net_sni_parse((const uint8_t *)"G", 1, name), NET_SNI_NOT_TLS, "'G': not TLS at once");
	is_int(net_sni_parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, name), NET_SNI_NOT_TLS, "HTTP is not TLS");
	is_int(net_sni_parse((const uint8_t *)"\x80\x2e\x01", 3, name), NET_SNI_NOT_TLS, "an SSLv2 hello is not TLS");
	is_int(net_sni_parse((const uint8_t *)"\x16\x02", 2, name), NET_SNI_NOT_TLS, "a record version 2.x is not TLS");
	is_int(net_sni_parse((const uint8_t *)"\x16\x03\x07", 3, name), NET_SNI_NOT_TLS, "nor 3.7");
	is_int(net_sni_parse((const uint8_t *)"\x16", 1, name), NET_SNI_MORE, "a lone 0x16 may be TLS: more");
	is_int(net_sni_parse(NULL, 0, name), NET_SNI_MORE, "nothing yet: more");

	/* Malformed. */
	o = (struct opts){ .names = { "a.example" }, .sni_exts = 2 };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "two server_name extensions");
	o = (struct opts){ .names = { "a.example", "b.example" } };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "two host_names in one extension");
	o = (struct opts){ .names = { "a.example" }, .ext_len_delta = 1 };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "extensions' length one more than there is");
	o = (struct opts){ .names = { "a.example" }, .ext_len_delta = -1 };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "one less");
	o = (struct opts){ .names = { "a.example" }, .hs_type = 2 };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "a ServerHello is not a ClientHello");
	o = (struct opts){ .names = { "a.example" }, .sid_len = 33 };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "a session id of 33 bytes");
	o = (struct opts){ .names = { "a.example" }, .cs_len = 3 };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "an odd cipher-suites length");
	o = (struct opts){ .names = { "a.example" }, .empty_sni_ext = true };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "an empty server_name extension in a ClientHello");
	o = (struct opts){ .names = { "" } };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "an empty host_name");
	char longname[300];
	memset(longname, 'a', 256);
	longname[256] = 0;
	o = (struct opts){ .names = { longname } };
	is_int(parse_built(&o, 16384, name), NET_SNI_MALFORMED, "a host_name of 256 bytes");
	longname[255] = 0;
	is_int(parse_built(&o, 16384, name), NET_SNI_FOUND, "255 bytes is the most kept");
	{
		struct hb h = { hsbuf, 0 };
		o = (struct opts){ .names = { "ab.example" } };
		build(&h, &o);
		uint8_t *nm = memmem(hsbuf, h.n, "ab.example", 10);
		nm[1] = 0;
		size_t n = wrap(hsbuf, h.n, 16384, recbuf);
		is_int(net_sni_parse(recbuf, n, name), NET_SNI_MALFORMED, "a NUL inside the host_name");
	}
	{
		/* Records: zero length, over 2^14, another type mid-hello. */
		uint8_t b[32] = { 22, 3, 1, 0, 0 };
		is_int(net_sni_parse(b, 5, name), NET_SNI_MALFORMED, "a record of zero bytes");
		uint8_t c[5] = { 22, 3, 1, 0x40, 0x01 };
		is_int(net_sni_parse(c, 5, name), NET_SNI_MALFORMED, "a record of 16385 bytes");
		size_t n = wrap(hello_tls13_sni + 5, hs_len, 50, recbuf);
		recbuf[55] = 21;	/* the second record's type: alert */
		is_int(net_sni_parse(recbuf, n, name), NET_SNI_MALFORMED, "an alert record in the middle of the hello");
	}
	/* Each byte of a real hello flipped: never a crash, never a name that
	 * was not there (a flipped length may still parse; its name is then
	 * the one sent, or nothing). */
	bool sane = true;
	for (size_t i = 0; i < sizeof(hello_tls13_sni); i++) {
		uint8_t *cp = malloc(sizeof(hello_tls13_sni));
		memcpy(cp, hello_tls13_sni, sizeof(hello_tls13_sni));
		cp[i] ^= 0xff;
		enum net_sni_result r = net_sni_parse(cp, sizeof(hello_tls13_sni), name);
		if (r == NET_SNI_FOUND && strlen(name) != strlen("allowed.test"))
			sane = false;
		free(cp);
	}
	ok(sane, "each byte of a real hello flipped: parsed within bounds");
	return tap_done();
}
