#include "net/sigv4-query.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/osslso.h"
#include "net/sigv4-int.h"

/* The query parameters a presigned URL is made of, each once. */
enum { Q_ALGO, Q_CRED, Q_DATE, Q_HEADERS, Q_SIG, Q_TOKEN, Q_N };
static const char *const q_names[Q_N] = { "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
					  "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token" };

bool net_sigv4_query_is_presigned(const char *q, size_t n)
{
	const char *v;
	size_t vn;
	return sigv4_query_param(q, n, q_names[Q_CRED], &v, &vn) > 0;
}

static int hexv(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A query value percent-decoded into out[on] (no NUL, no '&' or ','
 * in it: it goes into an Authorization-like string): its length, or -1. */
static int decode(const char *v, size_t n, char *out, size_t on)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)v[i];
		if (c == '%' && i + 2 < n && hexv(v[i + 1]) >= 0 && hexv(v[i + 2]) >= 0) {
			c = hexv(v[i + 1]) * 16 + hexv(v[i + 2]);
			i += 2;
		}
		if (!c || c == ',' || c == '&' || k + 1 >= on)
			return -1;
		out[k++] = (char)c;
	}
	out[k] = 0;
	return (int)k;
}

/* The head again, its query's credential, token and signature the real
 * keys' (the signature as 64 zeros, its place in *ret_sig_at). */
static int rebuild(const struct sigv4_line *l, size_t nl, const char *t, size_t tl, const struct net_sigv4_keys *k,
		   const struct net_sigv4_auth *a, struct buf *o, size_t *ret_sig_at)
{
	const char *qm = memchr(t, '?', tl), *q = qm + 1, *qe = t + tl;
	int r = buf_append(o, l[0].p, (size_t)(q - l[0].p));
	for (const char *p = q; r == 0 && p < qe;) {
		const char *amp = memchr(p, '&', (size_t)(qe - p));
		const char *e = amp ? amp : qe, *eq = memchr(p, '=', (size_t)(e - p));
		size_t nlen = eq ? (size_t)(eq - p) : (size_t)(e - p);
		int which = -1;
		for (int i = 0; i < Q_N; i++)
			if (nlen == strlen(q_names[i]) && !memcmp(p, q_names[i], nlen))
				which = i;
		if (p > q)
			r = buf_append(o, "&", 1);
		if (which == Q_CRED || which == Q_TOKEN || which == Q_SIG) {
			char cred[400];
			snprintf(cred, sizeof(cred), "%s/%s/%s/%s/aws4_request", k->key, a->date, a->region, a->service);
			r = r ?: buf_printf(o, "%s=", q_names[which]);
			if (which == Q_SIG) {
				*ret_sig_at = o->len;
				r = r ?: buf_printf(o, "%064d", 0);
			} else {
				const char *v = which == Q_CRED ? cred : k->token;
				r = r ?: sigv4_enc_once(o, v, strlen(v), false);
			}
		} else {
			r = r ?: buf_append(o, p, (size_t)(e - p));
		}
		p = amp ? amp + 1 : qe;
	}
	r = r ?: buf_append(o, qe, (size_t)(l[0].p + l[0].n - qe));
	r = r ?: buf_append(o, "\r\n", 2);
	for (size_t i = 1; r == 0 && i < nl; i++) {
		r = buf_append(o, l[i].p, l[i].n);
		r = r ?: buf_append(o, "\r\n", 2);
	}
	return r ?: buf_append(o, "\r\n", 2);
}

int net_sigv4_query_resign(struct buf *head, const struct net_sigv4_keys *k, const char *body_hash, char *why,
			   size_t wn)
{
	struct sigv4_line l[SIGV4_LINES];
	size_t nl = sigv4_lines_of(head->data, head->len, l, SIGV4_LINES);
	const char *m, *t, *v[Q_N] = { 0 };
	size_t ml, tl, vn[Q_N] = { 0 };
	if (!nl || sigv4_request_line(&l[0], &m, &ml, &t, &tl) < 0)
		return sigv4_why(why, wn, -EBADMSG, "the request line is not METHOD TARGET VERSION");
	const char *qm = memchr(t, '?', tl), *ver = t + tl;
	size_t qn = qm ? tl - (size_t)(qm + 1 - t) : 0, vl = (size_t)(l[0].p + l[0].n - ver);
	/* The line is rebuilt around its query: nothing after it but the version. */
	if (vl != 9 || (memcmp(ver, " HTTP/1.1", 9) && memcmp(ver, " HTTP/1.0", 9)))
		return sigv4_why(why, wn, -EBADMSG, "the request line is not METHOD TARGET HTTP/1.x");
	int count[Q_N];
	for (int i = 0; i < Q_N; i++)
		count[i] = qm ? sigv4_query_param(qm + 1, qn, q_names[i], &v[i], &vn[i]) : 0;
	/* Whose key first: another's is refused whatever else the URL is. */
	char cred[400], sh[1024], tok[256];	/* (a placeholder token is 44 bytes) */
	int cl = count[Q_CRED] == 1 ? decode(v[Q_CRED], vn[Q_CRED], cred, sizeof(cred)) : -1;
	size_t pk = strlen(k->ph_key);
	if (cl < 0 || (size_t)cl <= pk || memcmp(cred, k->ph_key, pk) || cred[pk] != '/')
		return sigv4_why(why, wn, -EPERM, "a presigned URL (a credential in its query that is not the placeholder's)");
	int tkl = count[Q_TOKEN] == 1 ? decode(v[Q_TOKEN], vn[Q_TOKEN], tok, sizeof(tok)) : -1;
	if (count[Q_TOKEN] && (!k->ph_token || tkl < 0 || strcmp(tok, k->ph_token)))
		return sigv4_why(why, wn, -EPERM, "a presigned URL's X-Amz-Security-Token that is not the placeholder's");
	for (size_t i = 1; i < nl; i++)
		if (l[i].n > 14 && !strncasecmp(l[i].p, "authorization:", 14))
			return sigv4_why(why, wn, -EBADMSG, "a presigned URL with an Authorization beside it");
	for (int i = 0; i < Q_TOKEN; i++)
		if (count[i] != 1)
			return sigv4_why(why, wn, -EBADMSG, "a presigned URL needs one %s", q_names[i]);
	if (vn[Q_ALGO] != strlen(NET_SIGV4_ALGO) || memcmp(v[Q_ALGO], NET_SIGV4_ALGO, vn[Q_ALGO]))
		return sigv4_why(why, wn, -EBADMSG, "a presigned URL of another algorithm than " NET_SIGV4_ALGO
				 " is not re-signed");
	/* Its parts read as an Authorization's would be. */
	char auth[1600];
	if (decode(v[Q_HEADERS], vn[Q_HEADERS], sh, sizeof(sh)) < 0 || vn[Q_SIG] != 64)
		return sigv4_why(why, wn, -EBADMSG, "a presigned URL's X-Amz-SignedHeaders or X-Amz-Signature is not one");
	snprintf(auth, sizeof(auth), NET_SIGV4_ALGO " Credential=%s, SignedHeaders=%s, Signature=%.64s", cred, sh,
		 v[Q_SIG]);
	struct net_sigv4_auth a;
	int r = net_sigv4_auth_parse(auth, strlen(auth), &a, why, wn);
	if (r < 0)
		return r;
	a.query = true;
	int pm = sigv4_path_match(head->data, head->len, &a, k->ph_secret, body_hash, why, wn);
	if (pm < 0 && pm != -ENOENT)
		return pm;
	if (pm < 0)
		return sigv4_why(why, wn, -EBADMSG, "the presigned URL's signature does not hold with the placeholder keys "
				 "(the URL or a signed header changed, or it was made for another request)");
	char sig[65];
	if (count[Q_TOKEN] == 0 && k->token)
		return sigv4_why(why, wn, -EBADMSG, "a presigned URL without X-Amz-Security-Token, for keys that need one");
	struct buf o;
	buf_init(&o, head->cap);
	size_t sig_at = 0;
	r = rebuild(l, nl, t, tl, k, &a, &o, &sig_at);
	/* The placeholder anywhere else (an unsigned header) would go on as
	 * it is: refused, as the header form's re-signing leaves none. */
	if (r == 0 && ((strcmp(k->key, k->ph_key) && memmem(o.data, o.len, k->ph_key, pk)) ||
		       (k->ph_token && strcmp(k->token, k->ph_token) &&
			memmem(o.data, o.len, k->ph_token, strlen(k->ph_token)))))
		r = sigv4_why(why, wn, -EBADMSG, "the placeholder key elsewhere in a presigned URL's request");
	r = r ?: net_sigv4_signature(o.data, o.len, &a, k->secret, body_hash, pm, sig, why, wn);
	if (r < 0) {
		if (o.data)
			explicit_bzero(o.data, o.len);
		buf_free(&o);
		return r == -ENOBUFS ? sigv4_why(why, wn, -ENOBUFS, "the request head is too long re-signed") : r;
	}
	memcpy(o.data + sig_at, sig, 64);
	if (head->data)
		explicit_bzero(head->data, head->len);
	buf_free(head);
	*head = o;
	return 1;
}
