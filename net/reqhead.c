#include "net/reqhead.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"

#define RH_MAX_TOKENS 32
#define RH_MAX_CODINGS 8

struct rh_field {
	const char *name, *val;
	size_t nlen, vlen;
};

struct rh {
	struct net_reqhead *h;
	struct err *e;
	const char *target;	/* the origin-form part of an absolute target */
	size_t target_len;
	char version[9];
	struct rh_field f[NET_REQHEAD_MAX_LINES];
	size_t nf;
};

/* Hop-by-hop: never forwarded (RFC 9110 7.6.1), Proxy-Authorization being
 * this proxy's own. Trailer goes because trailers are dropped on the way. */
static const char *const rh_hop[] = {
	"connection", "proxy-connection", "proxy-authorization", "keep-alive", "te", "trailer", "upgrade",
};

static bool rh_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool rh_token(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!rh_tchar((unsigned char)s[i]))
			return false;
	return true;
}

static bool rh_is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !strncasecmp(s, lit, n);
}

static int rh_bad(struct rh *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rh_bad(struct rh *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (r->e) {
		vsnprintf(r->e->msg, sizeof(r->e->msg), fmt, ap);
		r->e->code = -EBADMSG;
	}
	va_end(ap);
	return -EBADMSG;
}

/* Untrusted bytes for a message: printable ASCII, at most 60. */
static const char *rh_show(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < n && i < 60 && o + 1 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[o] = 0;
	return out;
}

static void rh_trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* Split a comma-separated list: the next element (trimmed), *s and *n
 * advanced past it; true when a comma followed it (another element). */
static bool rh_next_elem(const char **s, size_t *n, const char **el, size_t *el_len)
{
	const char *comma = memchr(*s, ',', *n);
	size_t len = comma ? (size_t)(comma - *s) : *n;
	*el = *s;
	*el_len = len;
	rh_trim(el, el_len);
	*s += comma ? len + 1 : len;
	*n -= comma ? len + 1 : len;
	return comma != NULL;
}

static int rh_port(struct rh *r, const char *s, size_t n, uint16_t *ret)
{
	unsigned v = 0;
	if (n == 0 || n > 5)
		return rh_bad(r, "the port in the request target is %s", n ? "too long" : "empty");
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return rh_bad(r, "the port in the request target is not a number");
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return rh_bad(r, "the port in the request target is not from 1 to 65535");
	*ret = (uint16_t)v;
	return 0;
}

/* host[:port] or [v6][:port]; no userinfo. */
static int rh_authority(struct rh *r, const char *a, size_t n, bool need_port, uint16_t dflt)
{
	if (n == 0)
		return rh_bad(r, "the request target has no host");
	if (memchr(a, '@', n))
		return rh_bad(r, "userinfo (user@ or user:password@) in the request target is not accepted");
	size_t hl = n;
	const char *port = NULL;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', n);
		if (!close)
			return rh_bad(r, "an IPv6 address in the request target has no closing ']'");
		hl = (size_t)(close - a) + 1;
		if (hl < n && a[hl] != ':')
			return rh_bad(r, "after ']' in the request target only :port may follow");
		if (hl < n)
			port = a + hl + 1;
	} else {
		const char *colon = memchr(a, ':', n);
		if (colon) {
			hl = (size_t)(colon - a);
			port = colon + 1;
		}
	}
	struct err e2 = { 0 };
	if (net_allow_host(a, hl, &r->h->host, &e2) < 0)
		return rh_bad(r, "%s", e2.msg);
	if (port)
		return rh_port(r, port, (size_t)(a + n - port), &r->h->port);
	if (need_port)
		return rh_bad(r, "CONNECT takes host:port, with the port");
	r->h->port = dflt;
	return 0;
}

static int rh_target(struct rh *r, const char *t, size_t n)
{
	char show[80];
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)t[i] >= 0x80)
			return rh_bad(r, "the request target is not ASCII; a host name goes in its punycode form (xn--...)");
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] == 0x7f)
			return rh_bad(r, "the request target has a byte a URL cannot have");
	}
	if (!strcmp(r->h->method, "CONNECT")) {
		r->h->kind = NET_REQ_CONNECT;
		if (memchr(t, '/', n) || memchr(t, '?', n) || memchr(t, '#', n))
			return rh_bad(r, "CONNECT takes host:port, not a URL");
		return rh_authority(r, t, n, true, 0);
	}
	r->h->kind = NET_REQ_FORWARD;
	if (t[0] == '/')
		return rh_bad(r, "the request target is a path (%s); a proxy is sent the whole URL, http://host/path",
			      rh_show(t, n, show, sizeof(show)));
	if (memchr(t, '#', n))
		return rh_bad(r, "a fragment (#) in the request target is not sent to a server");
	const char *colon = memchr(t, ':', n);
	if (!colon || (size_t)(t + n - colon) < 3 || memcmp(colon, "://", 3))
		return rh_bad(r, "the request target is not a URL; send http://host/path, or CONNECT host:port");
	size_t sl = (size_t)(colon - t);
	if (rh_is(t, sl, "https"))
		return rh_bad(r, "https:// URLs go through CONNECT; set HTTPS_PROXY to this proxy (an http:// URL)");
	if (!rh_is(t, sl, "http"))
		return rh_bad(r, "only http:// URLs are forwarded; other protocols go through CONNECT");
	const char *a = colon + 3;
	size_t rest = (size_t)(t + n - a), al = 0;
	while (al < rest && a[al] != '/' && a[al] != '?')
		al++;
	int rc = rh_authority(r, a, al, false, 80);
	if (rc < 0)
		return rc;
	r->target = a + al;
	r->target_len = rest - al;
	return 0;
}

static int rh_request_line(struct rh *r, const char *l, size_t n)
{
	const char *sp1 = memchr(l, ' ', n);
	if (!sp1)
		return rh_bad(r, "the request line is not METHOD TARGET HTTP/1.1");
	const char *t = sp1 + 1;
	const char *sp2 = memchr(t, ' ', (size_t)(l + n - t));
	if (!sp2 || memchr(sp2 + 1, ' ', (size_t)(l + n - sp2 - 1)))
		return rh_bad(r, "the request line is not METHOD TARGET HTTP/1.1 (one space between each)");
	size_t ml = (size_t)(sp1 - l), tl = (size_t)(sp2 - t), vl = (size_t)(l + n - sp2 - 1);
	if (!rh_token(l, ml) || ml >= sizeof(r->h->method))
		return rh_bad(r, "the request method is not a token of at most %zu characters",
			      sizeof(r->h->method) - 1);
	memcpy(r->h->method, l, ml);
	r->h->method[ml] = 0;
	if (vl != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) || (sp2[8] != '0' && sp2[8] != '1')) {
		if (vl >= 6 && !memcmp(sp2 + 1, "HTTP/2", 6))
			return rh_bad(r, "HTTP/2 is not spoken here; send HTTP/1.1 (https:// goes through CONNECT)");
		return rh_bad(r, "the request is not HTTP/1.0 or HTTP/1.1");
	}
	memcpy(r->version, sp2 + 1, 8);
	r->version[8] = 0;
	if (tl == 0)
		return rh_bad(r, "the request target is empty");
	return rh_target(r, t, tl);
}

static int rh_field_line(struct rh *r, const char *l, size_t n)
{
	char show[80];
	if (l[0] == ' ' || l[0] == '\t')
		return rh_bad(r, "a header line folded onto the next (obs-fold) is not accepted");
	const char *colon = memchr(l, ':', n);
	if (!colon)
		return rh_bad(r, "a header line without a colon");
	size_t nl = (size_t)(colon - l);
	if (nl && (l[nl - 1] == ' ' || l[nl - 1] == '\t'))
		return rh_bad(r, "whitespace between a header name and its colon (RFC 9112 5.1)");
	if (!rh_token(l, nl))
		return rh_bad(r, "a header name that is not a token");
	const char *v = colon + 1;
	size_t vl = (size_t)(l + n - v);
	rh_trim(&v, &vl);
	for (size_t i = 0; i < vl; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return rh_bad(r, "a control character in header %s", rh_show(l, nl, show, sizeof(show)));
	}
	if (r->nf == NET_REQHEAD_MAX_LINES)
		return -EMSGSIZE;
	r->f[r->nf++] = (struct rh_field){ .name = l, .nlen = nl, .val = v, .vlen = vl };
	return 0;
}

static int rh_content_length(struct rh *r, const struct rh_field *f, bool *seen)
{
	const char *s = f->val;
	size_t n = f->vlen;
	bool more;
	do {
		const char *el;
		size_t el_len;
		more = rh_next_elem(&s, &n, &el, &el_len);
		uint64_t v = 0;
		if (el_len == 0 || el_len > 18)
			return rh_bad(r, "a Content-Length that is not a number of at most 18 digits");
		for (size_t i = 0; i < el_len; i++) {
			if (el[i] < '0' || el[i] > '9')
				return rh_bad(r, "a Content-Length that is not a number");
			v = v * 10 + (uint64_t)(el[i] - '0');
		}
		if (*seen && v != r->h->length)
			return rh_bad(r, "several Content-Length values that differ");
		*seen = true;
		r->h->length = v;
	} while (more);
	return 0;
}

struct rh_framing {
	bool cl, te, host;
	char codings[RH_MAX_CODINGS][64];
	size_t ncodings;
	char tokens[RH_MAX_TOKENS][64];	/* Connection's, lowercased */
	size_t ntokens;
};

static int rh_list(struct rh *r, const struct rh_field *f, char (*out)[64], size_t *nout, size_t max,
		   const char *what)
{
	const char *s = f->val;
	size_t n = f->vlen;
	while (n) {
		const char *el;
		size_t el_len;
		rh_next_elem(&s, &n, &el, &el_len);
		if (el_len == 0)
			continue;
		if (!rh_token(el, el_len) || el_len >= sizeof(out[0]))
			return rh_bad(r, "%s has an element that is not a short token", what);
		if (*nout == max)
			return rh_bad(r, "%s lists more than %zu elements", what, max);
		char *d = out[*nout];
		for (size_t i = 0; i < el_len; i++)
			d[i] = (el[i] >= 'A' && el[i] <= 'Z') ? (char)(el[i] - 'A' + 'a') : el[i];
		d[el_len] = 0;
		(*nout)++;
	}
	return 0;
}

static int rh_framing(struct rh *r, struct rh_framing *fr)
{
	int rc = 0;
	for (size_t i = 0; i < r->nf && rc >= 0; i++) {
		const struct rh_field *f = &r->f[i];
		if (rh_is(f->name, f->nlen, "content-length"))
			rc = rh_content_length(r, f, &fr->cl);
		else if (rh_is(f->name, f->nlen, "transfer-encoding")) {
			fr->te = true;
			rc = rh_list(r, f, fr->codings, &fr->ncodings, RH_MAX_CODINGS, "Transfer-Encoding");
		} else if (rh_is(f->name, f->nlen, "connection"))
			rc = rh_list(r, f, fr->tokens, &fr->ntokens, RH_MAX_TOKENS, "Connection");
		else if (rh_is(f->name, f->nlen, "host")) {
			if (fr->host)
				return rh_bad(r, "several Host headers");
			fr->host = true;
		}
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < fr->ntokens; i++) {
		const char *t = fr->tokens[i];
		if (!strcmp(t, "host") || !strcmp(t, "content-length") || !strcmp(t, "transfer-encoding"))
			return rh_bad(r, "Connection names %s, which a proxy cannot drop", t);
	}
	if (fr->cl && fr->te)
		return rh_bad(r, "both Content-Length and Transfer-Encoding (a request smuggling pattern)");
	if (fr->te) {
		if (!strcmp(r->version, "HTTP/1.0"))
			return rh_bad(r, "Transfer-Encoding in an HTTP/1.0 request");
		if (fr->ncodings == 0 || strcmp(fr->codings[fr->ncodings - 1], "chunked"))
			return rh_bad(r, "a Transfer-Encoding that does not end in chunked");
		for (size_t i = 0; i + 1 < fr->ncodings; i++)
			if (!strcmp(fr->codings[i], "chunked"))
				return rh_bad(r, "chunked applied more than once in Transfer-Encoding");
		r->h->body = NET_BODY_CHUNKED;
	}
	if (r->h->kind == NET_REQ_CONNECT) {
		if (fr->te || r->h->length > 0)
			return rh_bad(r, "a CONNECT request has no body");
		r->h->body = NET_BODY_NONE;
	} else if (fr->cl) {
		/* Content-Length: 0 too: some servers want it on every POST. */
		r->h->body = NET_BODY_LENGTH;
	}
	return 0;
}

static bool rh_dropped(const struct rh_framing *fr, const struct rh_field *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(rh_hop); i++)
		if (rh_is(f->name, f->nlen, rh_hop[i]))
			return true;
	if (rh_is(f->name, f->nlen, "host") || rh_is(f->name, f->nlen, "content-length") ||
	    rh_is(f->name, f->nlen, "transfer-encoding"))
		return true;	/* written afresh */
	for (size_t i = 0; i < fr->ntokens; i++)
		if (rh_is(f->name, f->nlen, fr->tokens[i]))
			return true;
	return false;
}

static int rh_upstream(struct rh *r, const struct rh_framing *fr)
{
	struct net_reqhead *h = r->h;
	struct buf *b = &h->upstream;
	char host[NET_HOST_MAX + 3];
	net_allow_host_text(&h->host, host, sizeof(host));
	int rc = buf_printf(b, "%s %s%.*s %s\r\nHost: %s", h->method, r->target_len && r->target[0] == '/' ? "" : "/",
			    (int)r->target_len, r->target, r->version, host);
	if (rc >= 0 && h->port != 80)
		rc = buf_printf(b, ":%u", h->port);
	if (rc >= 0)
		rc = buf_append(b, "\r\n", 2);
	for (size_t i = 0; i < r->nf && rc >= 0; i++) {
		const struct rh_field *f = &r->f[i];
		if (!rh_dropped(fr, f))
			rc = buf_printf(b, "%.*s: %.*s\r\n", (int)f->nlen, f->name, (int)f->vlen, f->val);
	}
	if (rc >= 0 && h->body == NET_BODY_LENGTH)
		rc = buf_printf(b, "Content-Length: %llu\r\n", (unsigned long long)h->length);
	if (rc >= 0 && h->body == NET_BODY_CHUNKED) {
		rc = buf_append(b, "Transfer-Encoding: ", 19);
		for (size_t i = 0; i < fr->ncodings && rc >= 0; i++)
			rc = buf_printf(b, "%s%s", i ? ", " : "", fr->codings[i]);
		if (rc >= 0)
			rc = buf_append(b, "\r\n", 2);
	}
	if (rc >= 0)
		rc = buf_append(b, "Connection: close\r\n\r\n", 21);
	return rc < 0 ? -EMSGSIZE : 0;
}

/* Refuse what is plainly not an HTTP/1 request at its first bytes, so such a
 * client is not left waiting for a head that will never end. */
static int rh_first_bytes(struct rh *r, const char *p, size_t n)
{
	static const char h2[] = "PRI * HTTP/2.0\r\n";
	if (n && (unsigned char)p[0] == 0x16)
		return rh_bad(r, "this is TLS, and the proxy speaks plain HTTP: its URL is http://, not https://");
	if (n && !rh_tchar((unsigned char)p[0]))
		return rh_bad(r, "this is not an HTTP request");
	if (!memcmp(p, h2, MIN(n, sizeof(h2) - 1)))
		return n >= sizeof(h2) - 1
			       ? rh_bad(r, "HTTP/2 is not spoken here; send HTTP/1.1 (https:// goes through CONNECT)")
			       : -EAGAIN;
	return 0;
}

int net_reqhead_parse(const char *p, size_t n, struct net_reqhead *ret, struct err *e)
{
	struct net_reqhead h = { 0 };
	struct rh r = { .h = &h, .e = e };
	int rc = rh_first_bytes(&r, p, n);
	if (rc < 0)
		return rc;
	size_t lim = MIN(n, (size_t)NET_REQHEAD_MAX), pos = 0, lines = 0;
	for (;;) {
		const char *lf = memchr(p + pos, '\n', lim - pos);
		if (!lf)
			break;
		size_t end = (size_t)(lf - p);
		if (end == pos || p[end - 1] != '\r')
			return rh_bad(&r, "a line that ends in a bare LF; lines end in CRLF");
		size_t ll = end - 1 - pos;
		if (memchr(p + pos, '\r', ll))
			return rh_bad(&r, "a bare CR inside a line");
		if (memchr(p + pos, 0, ll))
			return rh_bad(&r, "a NUL byte in the request head");
		if (ll == 0) {
			if (lines == 0)
				return rh_bad(&r, "an empty line where the request line should be");
			h.head_len = end + 1;
			break;
		}
		if (lines == 0)
			rc = rh_request_line(&r, p + pos, ll);
		else if (lines > NET_REQHEAD_MAX_LINES)
			rc = -EMSGSIZE;
		else
			rc = rh_field_line(&r, p + pos, ll);
		if (rc == -EMSGSIZE)
			return err_set(e, rc, "the request head has more than %d header lines", NET_REQHEAD_MAX_LINES);
		if (rc < 0)
			return rc;
		lines++;
		pos = end + 1;
	}
	if (!h.head_len) {
		if (n >= NET_REQHEAD_MAX)
			return err_set(e, -EMSGSIZE, "the request head is over %d KiB", NET_REQHEAD_MAX / 1024);
		return -EAGAIN;
	}
	struct rh_framing fr = { 0 };
	rc = rh_framing(&r, &fr);
	if (rc < 0)
		return rc;
	buf_init(&h.upstream, NET_REQHEAD_MAX + 1024);
	if (h.kind == NET_REQ_FORWARD) {
		rc = rh_upstream(&r, &fr);
		if (rc < 0) {
			buf_free(&h.upstream);
			return err_set(e, rc, "the request head would be over its cap when rewritten");
		}
	}
	*ret = h;
	return 0;
}

void net_reqhead_free(struct net_reqhead *h)
{
	buf_free(&h->upstream);
}
