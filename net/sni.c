#include "net/sni.h"

#include <stdbool.h>
#include <string.h>

#include "base/cleanup.h"

#define SNI_OK (-1)
#define SNI_RECORD_MAX 16384	/* a plaintext record's payload, RFC 8446 5.1 */
#define SNI_MAX_EXTENSIONS 256

/* A reader over the handshake bytes as if they were one stream: records are
 * stepped over as they end, each header checked. Every read goes through
 * sni_u8, which stops at the end of the buffer; a failure is sticky. */
struct sni_rd {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	size_t rec_left;	/* payload bytes left in the current record */
	bool first;
	int res;
};

static bool sni_fail(struct sni_rd *r, int res)
{
	r->res = res;
	return false;
}

static bool sni_record(struct sni_rd *r)
{
	size_t have = r->len - r->pos;
	const uint8_t *h = r->buf + r->pos;
	int bad = r->first ? NET_SNI_NOT_TLS : NET_SNI_MALFORMED;
	/* Judge what has come of the header before waiting for the rest, so a
	 * client that is not speaking TLS is told at its first byte. */
	if (have >= 1 && h[0] != 22)	/* handshake */
		return sni_fail(r, bad);
	if (have >= 2 && h[1] != 3)
		return sni_fail(r, bad);
	if (have >= 3 && h[2] > 4)
		return sni_fail(r, bad);
	if (have < 5)
		return sni_fail(r, NET_SNI_MORE);
	size_t n = (size_t)h[3] << 8 | h[4];
	if (n == 0 || n > SNI_RECORD_MAX)
		return sni_fail(r, NET_SNI_MALFORMED);
	r->pos += 5;
	r->rec_left = n;
	r->first = false;
	return true;
}

static bool sni_u8(struct sni_rd *r, uint8_t *v)
{
	if (r->res != SNI_OK)
		return false;
	while (r->rec_left == 0)
		if (!sni_record(r))
			return false;
	if (r->pos >= r->len)
		return sni_fail(r, NET_SNI_MORE);
	*v = r->buf[r->pos++];
	r->rec_left--;
	return true;
}

/* n bytes out of *left (the enclosing length), into out when not NULL. */
static bool sni_take(struct sni_rd *r, size_t *left, size_t n, uint8_t *out)
{
	if (r->res != SNI_OK)
		return false;
	if (n > *left)
		return sni_fail(r, NET_SNI_MALFORMED);
	for (size_t i = 0; i < n; i++) {
		uint8_t b;
		if (!sni_u8(r, &b))
			return false;
		if (out)
			out[i] = b;
	}
	*left -= n;
	return true;
}

static bool sni_u16(struct sni_rd *r, size_t *left, size_t *v)
{
	uint8_t b[2];
	if (!sni_take(r, left, 2, b))
		return false;
	*v = (size_t)b[0] << 8 | b[1];
	return true;
}

static bool sni_vec8(struct sni_rd *r, size_t *left, size_t min, size_t max)
{
	uint8_t n;
	if (!sni_take(r, left, 1, &n))
		return false;
	if (n < min || n > max)
		return sni_fail(r, NET_SNI_MALFORMED);
	return sni_take(r, left, n, NULL);
}

/* The server_name extension's body, el bytes: a list of (type, name), at
 * most one host_name (RFC 6066 section 3). */
static bool sni_names(struct sni_rd *r, size_t el, char *name, bool *found)
{
	size_t list;
	if (!sni_u16(r, &el, &list))
		return false;
	if (list != el || list == 0)
		return sni_fail(r, NET_SNI_MALFORMED);
	while (el > 0) {
		uint8_t type;
		size_t n;
		if (!sni_take(r, &el, 1, &type) || !sni_u16(r, &el, &n))
			return false;
		if (type != 0) {
			if (!sni_take(r, &el, n, NULL))
				return false;
			continue;
		}
		if (*found || n == 0 || n > NET_SNI_NAME_MAX)
			return sni_fail(r, NET_SNI_MALFORMED);
		if (!sni_take(r, &el, n, (uint8_t *)name))
			return false;
		name[n] = 0;
		if (memchr(name, 0, n))
			return sni_fail(r, NET_SNI_MALFORMED);
		*found = true;
	}
	return true;
}

static bool sni_extensions(struct sni_rd *r, size_t body, char *name, bool *found)
{
	size_t total;
	if (!sni_u16(r, &body, &total))
		return false;
	if (total != body)
		return sni_fail(r, NET_SNI_MALFORMED);
	uint16_t seen[SNI_MAX_EXTENSIONS];
	size_t nseen = 0;
	while (body > 0) {
		size_t type, el;
		if (!sni_u16(r, &body, &type) || !sni_u16(r, &body, &el))
			return false;
		if (el > body)
			return sni_fail(r, NET_SNI_MALFORMED);
		/* A repeated extension is refused by TLS itself, and a second
		 * server_name is the one a server might believe. */
		for (size_t i = 0; i < nseen; i++)
			if (seen[i] == type)
				return sni_fail(r, NET_SNI_MALFORMED);
		if (nseen == SNI_MAX_EXTENSIONS)
			return sni_fail(r, NET_SNI_MALFORMED);
		seen[nseen++] = (uint16_t)type;
		body -= el;
		if (type == 0) {
			if (!sni_names(r, el, name, found))
				return false;
		} else {
			size_t skip = el;
			if (!sni_take(r, &skip, el, NULL))
				return false;
		}
	}
	return true;
}

enum net_sni_result net_sni_parse(const uint8_t *buf, size_t len, char *name)
{
	bool over = len >= NET_SNI_MAX_HELLO;
	struct sni_rd r = { .buf = buf, .len = over ? NET_SNI_MAX_HELLO : len, .first = true, .res = SNI_OK };
	size_t hl = 4;
	uint8_t hh[4];
	if (len == 0)
		return NET_SNI_MORE;
	if (!sni_take(&r, &hl, 4, hh))
		goto out;
	if (hh[0] != 1)	/* client_hello */
		return NET_SNI_MALFORMED;
	size_t body = (size_t)hh[1] << 16 | (size_t)hh[2] << 8 | hh[3];
	if (body + 4 > NET_SNI_MAX_HELLO)
		return NET_SNI_MALFORMED;
	size_t cs;
	bool found = false;
	char tmp[NET_SNI_NAME_MAX + 1];
	if (!sni_take(&r, &body, 2 + 32, NULL) ||	/* legacy_version, random */
	    !sni_vec8(&r, &body, 0, 32) ||		/* legacy_session_id */
	    !sni_u16(&r, &body, &cs))
		goto out;
	if (cs < 2 || cs % 2)
		return NET_SNI_MALFORMED;
	if (!sni_take(&r, &body, cs, NULL) || !sni_vec8(&r, &body, 1, 255))	/* compression methods */
		goto out;
	if (body == 0)
		return NET_SNI_NONE;	/* no extensions at all */
	if (!sni_extensions(&r, body, tmp, &found))
		goto out;
	if (!found)
		return NET_SNI_NONE;
	memcpy(name, tmp, strlen(tmp) + 1);
	return NET_SNI_FOUND;
out:
	if (r.res == NET_SNI_MORE && over)
		return NET_SNI_MALFORMED;
	return (enum net_sni_result)r.res;
}

const char *net_sni_result_name(enum net_sni_result r)
{
	switch (r) {
	case NET_SNI_FOUND: return "found";
	case NET_SNI_MORE: return "more bytes needed";
	case NET_SNI_NOT_TLS: return "not TLS";
	case NET_SNI_NONE: return "no server name";
	case NET_SNI_MALFORMED: return "malformed ClientHello";
	}
	return "?";
}

bool net_sni_ready(struct net_sni_scan *s, const uint8_t *buf, size_t len)
{
	if (len >= NET_SNI_MAX_HELLO)
		return true;
	for (;;) {
		if (s->rec_left == 0) {
			if (s->pos == 0 && len < 5)
				return true;	/* a parse of four bytes is cheap and may say "not TLS" */
			if (len - s->pos < 5)
				return false;
			const uint8_t *h = buf + s->pos;
			size_t n = (size_t)h[3] << 8 | h[4];
			if (h[0] != 22 || h[1] != 3 || h[2] > 4 || n == 0 || n > SNI_RECORD_MAX)
				return true;	/* the parse says what is wrong */
			s->pos += 5;
			s->rec_left = n;
		}
		size_t k = MIN(s->rec_left, len - s->pos);
		if (k == 0)
			return false;
		for (size_t i = 0; i < k && s->hs_have + i < 4; i++)
			s->hs_hdr[s->hs_have + i] = buf[s->pos + i];
		s->hs_have += k;
		s->pos += k;
		s->rec_left -= k;
		if (s->hs_have >= 4) {
			size_t body = (size_t)s->hs_hdr[1] << 16 | (size_t)s->hs_hdr[2] << 8 | s->hs_hdr[3];
			if (s->hs_hdr[0] != 1 || body + 4 > NET_SNI_MAX_HELLO || s->hs_have >= body + 4)
				return true;
		}
	}
}
