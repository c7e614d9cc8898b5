#include "net/sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/osslso.h"
#include "base/cleanup.h"
#include "net/sigv4-int.h"
#include "net/sigv4-query.h"

#define SIGV4_MAX_PARAMS 256
#define SIGV4_MAX_SEGMENTS 256
/* The canonical request at most: a head of 16 KiB with every byte encoded. */
#define SIGV4_CREQ_MAX (96 * 1024)

static int sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int ml = 0;
	if (EVP_Digest(p, n, md, &ml, EVP_sha256(), NULL) != 1 || ml != 32)
		return -EIO;
	sigv4_hex(md, 32, out);
	return 0;
}

static int hmac(const void *key, size_t kl, const void *p, size_t n, unsigned char out[32])
{
	unsigned int ol = 0;
	if (!HMAC(EVP_sha256(), key, (int)kl, p, n, out, &ol) || ol != 32)
		return -EIO;
	return 0;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int put_pct(struct buf *o, unsigned char b)
{
	char t[4];
	snprintf(t, sizeof(t), "%%%02X", b);
	return buf_append(o, t, 3);
}

int sigv4_enc_once(struct buf *o, const char *p, size_t n, bool path)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		int r;
		if (c == '%' && i + 2 < n && hexval(p[i + 1]) >= 0 && hexval(p[i + 2]) >= 0) {
			unsigned char b = (unsigned char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
			r = unreserved(b) ? buf_append(o, &b, 1) : put_pct(o, b);
			i += 2;
		} else if (unreserved(c) || (path && c == '/')) {
			r = buf_append(o, &c, 1);
		} else {
			r = put_pct(o, c);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every byte but the unreserved and '/' encoded (a '%' too: the path as
 * it came, encoded once more). */
static int enc_again(struct buf *o, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		int r = unreserved(c) || c == '/' ? buf_append(o, &c, 1) : put_pct(o, c);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The path's "." and ".." resolved and empty segments dropped (a last '/'
 * kept), then encoded once more. */
static int path_normalised(struct buf *o, const char *p, size_t n)
{
	const char *seg[SIGV4_MAX_SEGMENTS];
	size_t sl[SIGV4_MAX_SEGMENTS], ns = 0;
	bool trail = n > 1 && p[n - 1] == '/';
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && p[j] != '/')
			j++;
		size_t l = j - i;
		if (l == 2 && p[i] == '.' && p[i + 1] == '.') {
			if (ns)
				ns--;
		} else if (l && !(l == 1 && p[i] == '.')) {
			if (ns == SIGV4_MAX_SEGMENTS)
				return -ENOBUFS;
			seg[ns] = p + i;
			sl[ns++] = l;
		}
		i = j + 1;
	}
	if (!ns)
		return buf_append(o, "/", 1);
	for (size_t i = 0; i < ns; i++)
		if (buf_append(o, "/", 1) < 0 || enc_again(o, seg[i], sl[i]) < 0)
			return -ENOBUFS;
	return trail ? buf_append(o, "/", 1) : 0;
}

struct param {
	char *name, *value;
};

static int param_cmp(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

/* name=value pairs, each encoded once, sorted by name then value; a
 * presigned URL's X-Amz-Signature left out (skip_sig). */
static int query_canonical(struct buf *o, const char *q, size_t n, bool skip_sig)
{
	struct param pr[SIGV4_MAX_PARAMS];
	size_t np = 0;
	struct buf all;
	/* Each pair's two strings, NUL each: pointers into all stay good
	 * (allocated once at its cap). */
	buf_init(&all, 6 * n + 2 * SIGV4_MAX_PARAMS + 1);
	int r = 0;
	if (!(all.data = malloc(all.cap))) {
		return -ENOMEM;
	}
	all.alloc = all.cap;
	for (size_t i = 0; i < n && r == 0;) {
		size_t j = i;
		while (j < n && q[j] != '&')
			j++;
		const char *eq = memchr(q + i, '=', j - i);
		size_t nl = eq ? (size_t)(eq - q - i) : j - i;
		if (skip_sig && nl == 15 && !memcmp(q + i, "X-Amz-Signature", 15)) {
			i = j + 1;
			continue;
		}
		if (j > i) {
			if (np == SIGV4_MAX_PARAMS) {
				r = -ENOBUFS;
				break;
			}
			size_t at = all.len;
			r = sigv4_enc_once(&all, q + i, nl, false);
			r = r ?: buf_append(&all, "", 1);
			size_t vat = all.len;
			if (eq)
				r = r ?: sigv4_enc_once(&all, eq + 1, (size_t)(q + j - eq - 1), false);
			r = r ?: buf_append(&all, "", 1);
			pr[np].name = all.data + at;
			pr[np++].value = all.data + vat;
		}
		i = j + 1;
	}
	if (r == 0) {
		qsort(pr, np, sizeof(pr[0]), param_cmp);
		for (size_t i = 0; i < np && r == 0; i++)
			r = buf_printf(o, "%s%s=%s", i ? "&" : "", pr[i].name, pr[i].value);
	}
	buf_free(&all);
	return r;
}

size_t sigv4_lines_of(const char *head, size_t n, struct sigv4_line *l, size_t max)
{
	size_t k = 0;
	for (const char *p = head, *end = head + n; p < end && k < max;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		size_t cl = ll && p[ll - 1] == '\r' ? ll - 1 : ll;
		if (!cl)
			break;	/* the blank line */
		l[k++] = (struct sigv4_line){ p, cl };
		p += ll + 1;
	}
	return k;
}

/* A header line named name (lowercase): its value's start and length. */
static bool line_is(const struct sigv4_line *l, const char *name, const char **v, size_t *vn)
{
	size_t nl = strlen(name);
	if (l->n <= nl || l->p[nl] != ':' || strncasecmp(l->p, name, nl))
		return false;
	const char *s = l->p + nl + 1, *e = l->p + l->n;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*v = s;
	*vn = (size_t)(e - s);
	return true;
}

static bool find(const struct sigv4_line *l, size_t nl, const char *name, const char **v, size_t *vn)
{
	for (size_t i = 1; i < nl; i++)
		if (line_is(&l[i], name, v, vn))
			return true;
	return false;
}

int sigv4_request_line(const struct sigv4_line *l, const char **m, size_t *ml, const char **t, size_t *tl)
{
	const char *sp = memchr(l->p, ' ', l->n);
	if (!sp)
		return -EBADMSG;
	const char *tp = sp + 1, *end = l->p + l->n;
	const char *sp2 = memchr(tp, ' ', (size_t)(end - tp));
	if (!sp2 || sp2 == tp)
		return -EBADMSG;
	*m = l->p;
	*ml = (size_t)(sp - l->p);
	size_t n = (size_t)(sp2 - tp);
	static const char *const schemes[] = { "http://", "https://" };
	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++) {
		size_t sl = strlen(schemes[i]);
		if (n <= sl || strncasecmp(tp, schemes[i], sl))
			continue;
		const char *slash = memchr(tp + sl, '/', n - sl), *qm = memchr(tp + sl, '?', n - sl);
		const char *at = slash && (!qm || slash < qm) ? slash : qm;
		if (!at)
			return -EBADMSG;
		n -= (size_t)(at - tp);
		tp = at;
		break;
	}
	*t = tp;
	*tl = n;
	return 0;
}

int sigv4_query_param(const char *q, size_t n, const char *name, const char **ret_v, size_t *ret_vn)
{
	size_t nl0 = strlen(name);
	int k = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && q[j] != '&')
			j++;
		if (j - i > nl0 && q[i + nl0] == '=' && !memcmp(q + i, name, nl0) && !k++) {
			*ret_v = q + i + nl0 + 1;
			*ret_vn = j - i - nl0 - 1;
		}
		i = j + 1;
	}
	return k;
}

int net_sigv4_hash_hex(const void *p, size_t n, char out[65])
{
	return sha256_hex(p, n, out);
}

bool net_sigv4_is_auth(const char *v, size_t n)
{
	size_t al = strlen(NET_SIGV4_ALGO);
	return n > al && !strncmp(v, NET_SIGV4_ALGO, al) && v[al] == ' ';
}

static bool chars_in(const char *s, size_t n, const char *set, bool alnum)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool a = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (alnum && c >= 'A' && c <= 'Z');
		if (!a && (!c || !strchr(set, c)))
			return false;
	}
	return true;
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool copy_part(char *dst, size_t dn, const char *s, size_t n)
{
	if (!n || n >= dn)
		return false;
	memcpy(dst, s, n);
	dst[n] = 0;
	return true;
}

int net_sigv4_auth_parse(const char *v, size_t n, struct net_sigv4_auth *ret, char *why, size_t wn)
{
	struct net_sigv4_auth a = { 0 };
	if (!net_sigv4_is_auth(v, n))
		return sigv4_why(why, wn, -EBADMSG, "the Authorization is not " NET_SIGV4_ALGO);
	const char *p = v + strlen(NET_SIGV4_ALGO), *end = v + n;
	bool cred = false, sh = false, sig = false;
	while (p < end) {
		while (p < end && (*p == ' ' || *p == ','))
			p++;
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		const char *eq = memchr(p, '=', (size_t)(e - p));
		if (p == e)
			break;
		if (!eq)
			return sigv4_why(why, wn, -EBADMSG, "the SigV4 Authorization has a part that is not NAME=VALUE");
		const char *val = eq + 1;
		size_t vl = (size_t)(e - val), kl = (size_t)(eq - p);
		while (vl && val[vl - 1] == ' ')
			vl--;
		if (kl == 10 && !strncmp(p, "Credential", 10) && !cred) {
			const char *f[5];
			size_t fl[5], k = 0;
			for (const char *q = val, *qe = val + vl; k < 5; k++) {
				const char *sl = memchr(q, '/', (size_t)(qe - q));
				f[k] = q;
				fl[k] = sl ? (size_t)(sl - q) : (size_t)(qe - q);
				if (!sl) {
					k++;
					break;
				}
				q = sl + 1;
			}
			if (k != 5 || f[4] + fl[4] != val + vl || fl[4] != 12 || strncmp(f[4], "aws4_request", 12) ||
			    !chars_in(f[0], fl[0], "-_.+=", true) || fl[1] != 8 || !digits(f[1], 8) || !chars_in(f[2], fl[2], "-", false) ||
			    !chars_in(f[3], fl[3], "-", false) || !copy_part(a.key_id, sizeof(a.key_id), f[0], fl[0]) ||
			    !copy_part(a.date, sizeof(a.date), f[1], fl[1]) ||
			    !copy_part(a.region, sizeof(a.region), f[2], fl[2]) ||
			    !copy_part(a.service, sizeof(a.service), f[3], fl[3]))
				return sigv4_why(why, wn, -EBADMSG,
					       "the SigV4 Credential is not KEY/YYYYMMDD/REGION/SERVICE/aws4_request");
			cred = true;
		} else if (kl == 13 && !strncmp(p, "SignedHeaders", 13) && !sh) {
			if (!chars_in(val, vl, "-;_.", false) || !copy_part(a.signed_headers, sizeof(a.signed_headers), val, vl) ||
			    val[0] == ';' || val[vl - 1] == ';' || strstr(a.signed_headers, ";;"))
				return sigv4_why(why, wn, -EBADMSG, "the SigV4 SignedHeaders is not lowercase names and ;");
			sh = true;
		} else if (kl == 9 && !strncmp(p, "Signature", 9) && !sig) {
			if (vl != 64 || !sigv4_lower_hex(val, 64))
				return sigv4_why(why, wn, -EBADMSG, "the SigV4 Signature is not 64 hex digits");
			memcpy(a.signature, val, 64);
			sig = true;
		} else {
			return sigv4_why(why, wn, -EBADMSG, "the SigV4 Authorization has an unknown or repeated part");
		}
		p = e;
	}
	if (!cred || !sh || !sig)
		return sigv4_why(why, wn, -EBADMSG, "the SigV4 Authorization lacks its Credential, SignedHeaders or Signature");
	*ret = a;
	return 0;
}

/* A header's values, each trimmed with its runs of blanks made one
 * space, joined by ','. */
static int header_canonical(struct buf *o, const struct sigv4_line *l, size_t nl, const char *name)
{
	bool any = false;
	for (size_t i = 1; i < nl; i++) {
		const char *v;
		size_t vn;
		if (!line_is(&l[i], name, &v, &vn))
			continue;
		if (any && buf_append(o, ",", 1) < 0)
			return -ENOBUFS;
		for (size_t k = 0; k < vn; k++) {
			bool blank = v[k] == ' ' || v[k] == '\t';
			if (blank && k && (v[k - 1] == ' ' || v[k - 1] == '\t'))
				continue;
			if (buf_append(o, blank ? " " : v + k, 1) < 0)
				return -ENOBUFS;
		}
		any = true;
	}
	return any ? 0 : -ENOENT;
}

int net_sigv4_signature(const char *head, size_t n, const struct net_sigv4_auth *a, const char *secret,
			const char *body_hash, enum net_sigv4_path pm, char out[65], char *why, size_t wn)
{
	struct sigv4_line l[SIGV4_LINES];
	size_t nl = sigv4_lines_of(head, n, l, SIGV4_LINES);
	const char *m, *t, *v;
	size_t ml, tl, vn;
	if (!nl || sigv4_request_line(&l[0], &m, &ml, &t, &tl) < 0)
		return sigv4_why(why, wn, -EBADMSG, "the request line is not METHOD TARGET VERSION");
	char amzdate[17], ph[65];
	const char *qm = memchr(t, '?', tl);
	size_t pl = qm ? (size_t)(qm - t) : tl;
	bool dated = a->query ? qm && sigv4_query_param(qm + 1, tl - pl - 1, "X-Amz-Date", &v, &vn) == 1
			      : find(l, nl, "x-amz-date", &v, &vn);
	if (!dated || vn != 16 || strncmp(v, a->date, 8))
		return sigv4_why(why, wn, -EBADMSG, a->query ? "a presigned URL needs one X-Amz-Date, of its Credential's day" :
			       "a SigV4 request needs x-amz-date, of its Credential's day");
	memcpy(amzdate, v, 16);
	amzdate[16] = 0;
	if (find(l, nl, "x-amz-content-sha256", &v, &vn)) {
		if (vn >= sizeof(ph) || net_sigv4_payload_of(v, vn) == NET_SIGV4_STREAM_OTHER)
			return sigv4_why(why, wn, -EBADMSG, "a streaming SigV4 payload of a kind ward does not re-sign "
				       "(SigV4a's?); send STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER], "
				       "STREAMING-UNSIGNED-PAYLOAD-TRAILER, or the body whole");
		memcpy(ph, v, vn);
		ph[vn] = 0;
	} else if (a->query && !strcmp(a->service, "s3")) {
		snprintf(ph, sizeof(ph), "UNSIGNED-PAYLOAD");	/* S3's presigned URLs' */
	} else if (body_hash) {
		snprintf(ph, sizeof(ph), "%s", body_hash);
	} else {
		return sigv4_why(why, wn, -EBADMSG, "a SigV4 request with a body needs x-amz-content-sha256 here");
	}
	struct buf c;
	buf_init(&c, SIGV4_CREQ_MAX);
	int r = buf_append(&c, m, ml);
	r = r ?: buf_append(&c, "\n", 1);
	r = r ?: (pm == NET_SIGV4_PATH_S3 ? sigv4_enc_once(&c, t, pl, true) : path_normalised(&c, t, pl));
	r = r ?: buf_append(&c, "\n", 1);
	r = r ?: (qm ? query_canonical(&c, qm + 1, tl - pl - 1, a->query) : 0);
	r = r ?: buf_append(&c, "\n", 1);
	for (const char *s = a->signed_headers; r == 0 && *s;) {
		size_t k = strcspn(s, ";");
		char name[128];
		if (k >= sizeof(name)) {
			r = -ENOBUFS;
			break;
		}
		memcpy(name, s, k);
		name[k] = 0;
		r = buf_printf(&c, "%s:", name);
		int hr = r ?: header_canonical(&c, l, nl, name);
		if (hr == -ENOENT) {
			buf_free(&c);
			return sigv4_why(why, wn, -EBADMSG, "the signed header %s is not in the request", name);
		}
		r = hr ?: buf_append(&c, "\n", 1);
		s += k + (s[k] == ';');
	}
	r = r ?: buf_printf(&c, "\n%s\n%s", a->signed_headers, ph);
	char ch[65];
	r = r ?: sha256_hex(c.data, c.len, ch);
	buf_free(&c);
	if (r < 0)
		return sigv4_why(why, wn, -EBADMSG, "the request is too large to sign");
	char sts[256];
	int sl = snprintf(sts, sizeof(sts), NET_SIGV4_ALGO "\n%s\n%s/%s/%s/aws4_request\n%s", amzdate, a->date,
			  a->region, a->service, ch);
	if (sl < 0 || (size_t)sl >= sizeof(sts))
		return sigv4_why(why, wn, -ENOMEM, "out of memory");
	unsigned char k[32];
	r = net_sigv4_signing_key(secret, a->date, a->region, a->service, k);
	r = r ?: net_sigv4_hmac_hex(k, sts, (size_t)sl, out);
	OPENSSL_cleanse(k, sizeof(k));
	return r < 0 ? sigv4_why(why, wn, r, r == -ENOMEM ? "out of memory" : "HMAC-SHA256 failed") : 0;
}

int sigv4_path_match(const char *head, size_t n, const struct net_sigv4_auth *a, const char *secret,
		     const char *body_hash, char *why, size_t wn)
{
	for (int p = NET_SIGV4_PATH_S3; p <= NET_SIGV4_PATH_NORMALISED; p++) {
		char sig[65];
		int r = net_sigv4_signature(head, n, a, secret, body_hash, p, sig, why, wn);
		if (r < 0)
			return r;
		if (!CRYPTO_memcmp(sig, a->signature, 64))
			return p;
	}
	return -ENOENT;
}


int net_sigv4_signing_key(const char *secret, const char *date, const char *region, const char *service,
			  unsigned char out[32])
{
	size_t kl = strlen(secret) + 4;
	_cleanup_free_ char *k0 = malloc(kl + 1);
	unsigned char k1[32], k2[32], k3[32];
	if (!k0)
		return -ENOMEM;
	snprintf(k0, kl + 1, "AWS4%s", secret);
	int r = hmac(k0, kl, date, strlen(date), k1);
	r = r ?: hmac(k1, 32, region, strlen(region), k2);
	r = r ?: hmac(k2, 32, service, strlen(service), k3);
	r = r ?: hmac(k3, 32, "aws4_request", 12, out);
	explicit_bzero(k0, kl);
	OPENSSL_cleanse(k1, sizeof(k1));
	OPENSSL_cleanse(k2, sizeof(k2));
	OPENSSL_cleanse(k3, sizeof(k3));
	return r;
}

int net_sigv4_hmac_hex(const unsigned char key[32], const char *p, size_t n, char out[65])
{
	unsigned char sg[32];
	if (hmac(key, 32, p, n, sg) < 0)
		return -EIO;
	sigv4_hex(sg, 32, out);
	return 0;
}

enum net_sigv4_payload net_sigv4_payload_of(const char *v, size_t n)
{
	static const struct {
		const char *v;
		enum net_sigv4_payload k;
	} kinds[] = {
		{ "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", NET_SIGV4_STREAM_SIGNED },
		{ "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", NET_SIGV4_STREAM_SIGNED_TRAILER },
		{ "STREAMING-UNSIGNED-PAYLOAD-TRAILER", NET_SIGV4_STREAM_UNSIGNED_TRAILER },
	};
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (n == strlen(kinds[i].v) && !memcmp(v, kinds[i].v, n))
			return kinds[i].k;
	return n >= 10 && !memcmp(v, "STREAMING-", 10) ? NET_SIGV4_STREAM_OTHER : NET_SIGV4_WHOLE;
}

void net_sigv4_seed_wipe(struct net_sigv4_seed *s)
{
	OPENSSL_cleanse(s, sizeof(*s));
}

/* Whether a query names a presigned URL's or SigV2's credential. */
static bool query_has_cred(const char *q, size_t n)
{
	static const char *const names[] = { "x-amz-credential", "x-amz-signature", "x-amz-security-token",
					     "awsaccesskeyid", "signature" };
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && q[j] != '&')
			j++;
		const char *eq = memchr(q + i, '=', j - i);
		size_t nl = eq ? (size_t)(eq - q - i) : j - i;
		for (size_t k = 0; k < ARRAY_SIZE(names); k++)
			if (nl == strlen(names[k]) && !strncasecmp(q + i, names[k], nl))
				return true;
		i = j + 1;
	}
	return false;
}

int net_sigv4_resign(struct buf *head, const struct net_sigv4_keys *k, const char *body_hash,
		     struct net_sigv4_seed *ret_seed, char *why, size_t wn)
{
	struct sigv4_line l[SIGV4_LINES];
	size_t nl = sigv4_lines_of(head->data, head->len, l, SIGV4_LINES);
	const char *m, *t;
	size_t ml, tl;
	if (!nl || sigv4_request_line(&l[0], &m, &ml, &t, &tl) < 0)
		return sigv4_why(why, wn, -EBADMSG, "the request line is not METHOD TARGET VERSION");
	const char *qm = memchr(t, '?', tl);
	size_t qn = qm ? tl - (size_t)(qm + 1 - t) : 0;
	if (qm && net_sigv4_query_is_presigned(qm + 1, qn)) {
		if (ret_seed)
			ret_seed->kind = NET_SIGV4_WHOLE;
		return net_sigv4_query_resign(head, k, body_hash, why, wn);
	}
	if (qm && query_has_cred(qm + 1, qn)) {
		if (memmem(t, tl, k->ph_key, strlen(k->ph_key)))
			return sigv4_why(why, wn, -EBADMSG, "a SigV2 presigned URL made with the placeholder key is not "
				       "re-signed; sign it with SigV4");
		return sigv4_why(why, wn, -EPERM, "a presigned URL (a credential in its query that is not the placeholder's)");
	}
	size_t ia = 0, it = 0;
	const char *av = NULL, *tv = NULL;
	size_t an = 0, tn = 0;
	for (size_t i = 1; i < nl; i++) {
		const char *v;
		size_t vn;
		if (line_is(&l[i], "authorization", &v, &vn)) {
			if (av)
				return sigv4_why(why, wn, -EBADMSG, "two Authorization headers");
			ia = i, av = v, an = vn;
		} else if (line_is(&l[i], "x-amz-security-token", &v, &vn)) {
			if (tv)
				return sigv4_why(why, wn, -EBADMSG, "two x-amz-security-token headers");
			it = i, tv = v, tn = vn;
		}
	}
	const char *cv;
	size_t cn;
	enum net_sigv4_payload kind =
		find(l, nl, "x-amz-content-sha256", &cv, &cn) ? net_sigv4_payload_of(cv, cn) : NET_SIGV4_WHOLE;
	if (ret_seed)
		ret_seed->kind = NET_SIGV4_WHOLE;
	if (tv && (!k->token || tn != strlen(k->ph_token) || memcmp(tv, k->ph_token, tn)))
		return sigv4_why(why, wn, -EPERM, "an x-amz-security-token that is not the placeholder's");
	if (!av)
		return tv ? sigv4_why(why, wn, -EBADMSG, "a session token without a SigV4 Authorization") : 0;
	struct net_sigv4_auth a;
	if (!net_sigv4_is_auth(av, an))
		return sigv4_why(why, wn, -EPERM, "an Authorization that is not a SigV4 signature by the placeholder key");
	int r = net_sigv4_auth_parse(av, an, &a, why, wn);
	if (r < 0)
		return r;
	if (strcmp(a.key_id, k->ph_key))
		return sigv4_why(why, wn, -EPERM, "a SigV4 signature by another key (%s), not the placeholder's", a.key_id);
	for (const char *s = a.signed_headers; *s;) {
		size_t n = strcspn(s, ";");
		if (n == 13 && !strncmp(s, "authorization", 13))
			return sigv4_why(why, wn, -EBADMSG, "SignedHeaders names authorization");
		s += n + (s[n] == ';');
	}
	if (kind != NET_SIGV4_WHOLE && kind != NET_SIGV4_STREAM_OTHER && !ret_seed)
		return sigv4_why(why, wn, -EBADMSG, "a streaming SigV4 payload (aws-chunked) is re-signed over HTTPS only; "
			       "send it whole (UNSIGNED-PAYLOAD or its hash) over plain HTTP");
	/* The box's signature over the head as it goes on: it holds for one
	 * of the two path rules, and that one is used again. */
	int pm = sigv4_path_match(head->data, head->len, &a, k->ph_secret, body_hash, why, wn);
	if (pm < 0 && pm != -ENOENT)
		return pm;
	if (pm < 0)
		return sigv4_why(why, wn, -EBADMSG, "the request's SigV4 signature does not hold with the placeholder keys "
			       "(a signed header changed on the way, or it was made for another request)");
	char sig[65];
	/* The head again: the token and the Authorization the real ones'. */
	struct buf o;
	buf_init(&o, head->cap);
	size_t sig_at = 0;
	r = 0;
	for (size_t i = 0; i < nl && r == 0; i++) {
		if (i == it && tv) {
			r = buf_printf(&o, "%.*s: %s\r\n", (int)(strchr(l[i].p, ':') - l[i].p), l[i].p, k->token);
		} else if (i == ia) {
			r = buf_printf(&o, "Authorization: " NET_SIGV4_ALGO " Credential=%s/%s/%s/%s/aws4_request, "
				       "SignedHeaders=%s, Signature=", k->key, a.date, a.region, a.service, a.signed_headers);
			sig_at = o.len;
			r = r ?: buf_printf(&o, "%064d\r\n", 0);
		} else {
			r = buf_append(&o, l[i].p, l[i].n);
			r = r ?: buf_append(&o, "\r\n", 2);
		}
	}
	r = r ?: buf_append(&o, "\r\n", 2);
	r = r ?: net_sigv4_signature(o.data, o.len, &a, k->secret, body_hash, pm, sig, why, wn);
	if (r < 0) {
		if (o.data)
			explicit_bzero(o.data, o.len);
		buf_free(&o);
		return r == -ENOBUFS ? sigv4_why(why, wn, -ENOBUFS, "the request head is too long re-signed") : r;
	}
	memcpy(o.data + sig_at, sig, 64);
	if (ret_seed && kind != NET_SIGV4_WHOLE) {
		struct net_sigv4_seed sd = { .kind = kind };
		const char *dv;
		size_t dn;
		find(l, nl, "x-amz-date", &dv, &dn);	/* (the signature needed it: 16 bytes) */
		memcpy(sd.amzdate, dv, 16);
		snprintf(sd.scope, sizeof(sd.scope), "%s/%s/%s/aws4_request", a.date, a.region, a.service);
		memcpy(sd.sig_ph, a.signature, 65);
		memcpy(sd.sig, sig, 65);
		r = net_sigv4_signing_key(k->ph_secret, a.date, a.region, a.service, sd.key_ph);
		r = r ?: net_sigv4_signing_key(k->secret, a.date, a.region, a.service, sd.key);
		if (r < 0) {
			net_sigv4_seed_wipe(&sd);
			explicit_bzero(o.data, o.len);
			buf_free(&o);
			return sigv4_why(why, wn, -EBADMSG, "cannot make the streaming payload's signing keys");
		}
		*ret_seed = sd;
		net_sigv4_seed_wipe(&sd);
	}
	if (head->data)
		explicit_bzero(head->data, head->len);
	buf_free(head);
	*head = o;
	return 1;
}
