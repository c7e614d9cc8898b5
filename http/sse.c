#include "http/sse.h"
#include "base/cleanup.h"

#include <errno.h>
#include <string.h>

static const unsigned char sse_bom[3] = { 0xEF, 0xBB, 0xBF };

void sse_init(struct sse *p, size_t max_event, sse_event_cb *cb, void *ud)
{
	*p = (struct sse){ .cb = cb, .ud = ud, .retry_ms = -1 };
	buf_init(&p->line, max_event);
	buf_init(&p->data, max_event);
	buf_init(&p->type, 255);
}

void sse_free(struct sse *p)
{
	buf_free(&p->line);
	buf_free(&p->data);
	buf_free(&p->type);
}

static int sse_dispatch(struct sse *p)
{
	p->pending = false;
	if (p->data.len == 0) {
		p->type.len = 0;
		return 0;
	}
	/* The last data line's LF is not part of the data. */
	p->data.data[--p->data.len] = 0;
	struct sse_event ev = {
		.type = p->type.len ? p->type.data : "message",
		.type_len = p->type.len ? p->type.len : 7,
		.data = p->data.data,
		.data_len = p->data.len,
		.id = p->id,
	};
	if (p->type.len)
		p->type.data[p->type.len] = 0;
	int r = p->cb ? p->cb(p->ud, &ev) : 0;
	p->data.len = 0;
	p->data.data[0] = 0;
	p->type.len = 0;
	return r < 0 ? r : 0;
}

static bool field_is(const char *f, size_t n, const char *name)
{
	return strlen(name) == n && !memcmp(f, name, n);
}

static int sse_line(struct sse *p, const char *s, size_t len)
{
	if (len == 0)
		return sse_dispatch(p);
	if (s[0] == ':')
		return 0;
	const char *colon = memchr(s, ':', len);
	size_t flen = colon ? (size_t)(colon - s) : len;
	const char *v = colon ? colon + 1 : s + len;
	size_t vlen = (size_t)(s + len - v);
	if (vlen && *v == ' ')
		v++, vlen--;
	if (field_is(s, flen, "data")) {
		p->pending = true;
		if (buf_append(&p->data, v, vlen) < 0 || buf_append(&p->data, "\n", 1) < 0)
			return -EMSGSIZE;
	} else if (field_is(s, flen, "event")) {
		p->pending = true;
		p->type.len = 0;
		if (buf_append(&p->type, v, vlen) < 0)
			return -EMSGSIZE;
	} else if (field_is(s, flen, "id")) {
		if (!memchr(v, 0, vlen)) {
			size_t n = MIN(vlen, sizeof(p->id) - 1);
			memcpy(p->id, v, n);
			p->id[n] = 0;
		}
	} else if (field_is(s, flen, "retry")) {
		int64_t ms = 0;
		bool digits = vlen > 0 && vlen < 12;
		for (size_t i = 0; i < vlen && digits; i++) {
			if (v[i] < '0' || v[i] > '9')
				digits = false;
			else
				ms = ms * 10 + (v[i] - '0');
		}
		if (digits)
			p->retry_ms = ms;
	}
	return 0;
}

/* Bytes after the BOM check. Lines are found with memchr; the next CR and
 * the next LF are each searched once per read, not once per line. */
static int sse_bytes(struct sse *p, const char *b, size_t n)
{
	size_t i = 0;
	if (p->cr && n) {
		p->cr = false;
		if (b[0] == '\n')
			i = 1;
	}
	const char *end = b + n;
	const char *next_cr = NULL, *next_lf = NULL;
	bool cr_done = false, lf_done = false;
	while (i < n) {
		const char *s = b + i;
		if (!cr_done && (!next_cr || next_cr < s)) {
			next_cr = memchr(s, '\r', (size_t)(end - s));
			cr_done = !next_cr;
		}
		if (!lf_done && (!next_lf || next_lf < s)) {
			next_lf = memchr(s, '\n', (size_t)(end - s));
			lf_done = !next_lf;
		}
		const char *eol = cr_done ? next_lf : lf_done ? next_cr : MIN(next_cr, next_lf);
		if (!eol) {
			if (buf_append(&p->line, s, (size_t)(end - s)) < 0)
				return -EMSGSIZE;
			return 0;
		}
		int r;
		if (p->line.len) {
			if (buf_append(&p->line, s, (size_t)(eol - s)) < 0)
				return -EMSGSIZE;
			r = sse_line(p, p->line.data, p->line.len);
			p->line.len = 0;
		} else {
			if ((size_t)(eol - s) > p->line.cap)
				return -EMSGSIZE;
			r = sse_line(p, s, (size_t)(eol - s));
		}
		if (r < 0)
			return r;
		i = (size_t)(eol - b) + 1;
		if (*eol == '\r') {
			if (i < n && b[i] == '\n')
				i++;
			else if (i == n)
				p->cr = true;
		}
	}
	return 0;
}

int sse_feed(struct sse *p, const void *bytes, size_t n)
{
	const unsigned char *b = bytes;
	p->seen += n;
	/* A BOM may itself arrive split. */
	while (p->bom < 3 && n) {
		if (*b == sse_bom[p->bom]) {
			p->bom_held[p->bom++] = (char)*b++;
			n--;
			if (p->bom == 3)
				break;	/* a whole BOM: dropped */
			continue;
		}
		uint8_t held = p->bom;
		p->bom = 3;
		if (held) {
			int r = sse_bytes(p, p->bom_held, held);
			if (r < 0)
				return r;
		}
	}
	return n ? sse_bytes(p, (const char *)b, n) : 0;
}

int sse_finish(struct sse *p)
{
	if (p->bom < 3) {
		uint8_t held = p->bom;
		p->bom = 3;
		if (held && sse_bytes(p, p->bom_held, held) < 0)
			return -EMSGSIZE;
	}
	bool cut = p->line.len > 0 || p->data.len > 0;
	p->line.len = 0;
	p->data.len = 0;
	p->type.len = 0;
	p->pending = false;
	return cut ? -ENODATA : 0;
}
