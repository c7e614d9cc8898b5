#include "net/tlsterm.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/param.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "net/reqhead.h"
#include "net/sigv4.h"

struct net_tls {
	SSL_CTX *server, *client;
	EVP_PKEY *ca_key;
	X509 *ca;
};

static const char *tls_err(void)
{
	static __thread char b[160];
	unsigned long e = ERR_get_error();
	ERR_error_string_n(e, b, sizeof(b));
	ERR_clear_error();
	return e ? b : "unknown TLS error";
}

static char *pem_of(int (*w)(BIO *, void *), void *obj)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL;
	if (b && w(b, obj) == 1) {
		char *p;
		long n = BIO_get_mem_data(b, &p);
		if (n > 0 && (out = malloc((size_t)n + 1))) {
			memcpy(out, p, (size_t)n);
			out[n] = 0;
		}
	}
	BIO_free(b);
	return out;
}

static int w_key(BIO *b, void *k) { return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL); }
static int w_cert(BIO *b, void *c) { return PEM_write_bio_X509(b, c); }

static EVP_PKEY *ec_key(void)
{
	return EVP_EC_gen("P-256");
}

/* A certificate for subject (CN), valid from an hour ago for days days,
 * signed by (issuer, key), or self-signed when issuer is NULL. */
static X509 *cert_make(EVP_PKEY *pub, const char *cn, const char *san, bool ca, X509 *issuer, EVP_PKEY *key,
		       long days)
{
	X509 *x = X509_new();
	if (!x)
		return NULL;
	unsigned char serial[16];
	RAND_bytes(serial, sizeof(serial));
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
	X509_set_version(x, 2);
	BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), days * 86400);
	X509_set_pubkey(x, pub);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	X509V3_CTX v;
	X509V3_set_ctx(&v, issuer ? issuer : x, x, NULL, NULL, 0);
	const char *ext[][2] = {
		{ "basicConstraints", ca ? "critical,CA:TRUE,pathlen:0" : "critical,CA:FALSE" },
		{ "keyUsage", ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature" },
		{ ca ? NULL : "extendedKeyUsage", "serverAuth" },
		{ ca ? NULL : "subjectAltName", san },
		{ "subjectKeyIdentifier", "hash" },
	};
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		if (!ext[i][0])
			continue;
		X509_EXTENSION *e = X509V3_EXT_conf(NULL, &v, ext[i][0], ext[i][1]);
		if (!e || !X509_add_ext(x, e, -1)) {
			X509_EXTENSION_free(e);
			X509_free(x);
			return NULL;
		}
		X509_EXTENSION_free(e);
	}
	if (!X509_sign(x, key, EVP_sha256())) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int net_tls_ca_make(const char *box, char **ret_key_pem, char **ret_cert_pem, struct err *e)
{
	EVP_PKEY *k = ec_key();
	char cn[128];
	snprintf(cn, sizeof(cn), "ward box %s CA", box);
	X509 *x = k ? cert_make(k, cn, NULL, true, NULL, k, 3650) : NULL;
	char *kp = x ? pem_of(w_key, k) : NULL, *cp = kp ? pem_of(w_cert, x) : NULL;
	EVP_PKEY_free(k);
	X509_free(x);
	if (!cp) {
		if (kp)
			explicit_bzero(kp, strlen(kp));
		free(kp);
		return err_set(e, -ENOMEM, "cannot make the box's CA: %s", tls_err());
	}
	*ret_key_pem = kp;
	*ret_cert_pem = cp;
	return 0;
}

void net_tls_free(struct net_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	EVP_PKEY_free(t->ca_key);
	X509_free(t->ca);
	free(t);
}

static int add_pem_cas(X509_STORE *st, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	int n = 0;
	X509 *x;
	while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		n += X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(b);
	return n;
}

int net_tls_new(const char *ca_key_pem, const char *ca_cert_pem, const char *extra_ca_pem, struct net_tls **ret,
		struct err *e)
{
	struct net_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return err_set(e, -ENOMEM, "out of memory");
	BIO *kb = BIO_new_mem_buf(ca_key_pem, -1), *cb = BIO_new_mem_buf(ca_cert_pem, -1);
	t->ca_key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	t->ca = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	BIO_free(kb);
	BIO_free(cb);
	t->server = SSL_CTX_new(TLS_server_method());
	t->client = SSL_CTX_new(TLS_client_method());
	if (!t->ca_key || !t->ca || !t->server || !t->client) {
		net_tls_free(t);
		return err_set(e, -EINVAL, "the box's CA is not what it should be: %s", tls_err());
	}
	SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
	/* No session tickets: each connection has a leaf certificate of its
	 * own, nothing to resume, and a ticket is a record a client waiting
	 * for an answer may take for one. */
	SSL_CTX_set_num_tickets(t->server, 0);
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_load_verify_locations(t->client, NET_TLS_SYSTEM_CAS, NULL) != 1)
		ERR_clear_error();	/* none: only extra_ca_pem is trusted */
	if (extra_ca_pem && *extra_ca_pem && !add_pem_cas(SSL_CTX_get_cert_store(t->client), extra_ca_pem)) {
		net_tls_free(t);
		return err_set(e, -EINVAL, "--secret-ca: no certificate in it");
	}
	*ret = t;
	return 0;
}

/* SSL_read/SSL_write to the end, or <0. */
static int ssl_write_all(SSL *s, const char *p, size_t n)
{
	while (n) {
		int w = SSL_write(s, p, n > INT32_MAX ? INT32_MAX : (int)n);
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void set_timeouts(int fd, int64_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The head as read from the box, rebuilt: the request line as it is,
 * hop-by-hop headers dropped, Connection: close added. Its body's length
 * into *ret_len; a chunked body is refused (one request, bounded). */
static int head_rebuild(const char *h, size_t n, struct buf *out, uint64_t *ret_len, char *method, size_t mn,
			char *why, size_t wn)
{
	static const char *const drop[] = { "connection:", "keep-alive:", "proxy-connection:", "proxy-authorization:",
					    "te:", "upgrade:" };
	const char *p = h, *end = h + n;
	bool first = true;
	*ret_len = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl || nl == p || nl[-1] != '\r') {
			snprintf(why, wn, "the request head inside TLS is not CRLF lines");
			return -EBADMSG;
		}
		size_t ll = (size_t)(nl - p) - 1;
		if (ll == 0)
			break;
		if (first) {
			size_t m = strcspn(p, " ");
			if (m == 0 || m >= mn || m >= ll) {
				snprintf(why, wn, "the request line inside TLS is not METHOD TARGET HTTP/1.x");
				return -EBADMSG;
			}
			memcpy(method, p, m);
			method[m] = 0;
			first = false;
		} else {
			bool skip = false;
			for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
				skip |= !strncasecmp(p, drop[i], strlen(drop[i]));
			if (!strncasecmp(p, "transfer-encoding:", 18)) {
				snprintf(why, wn, "a chunked body inside TLS to a secret's host is not carried (send its length)");
				return -EPROTO;
			}
			if (!strncasecmp(p, "content-length:", 15)) {
				char *e;
				*ret_len = strtoull(p + 15, &e, 10);
			}
			if (skip) {
				p = nl + 1;
				continue;
			}
		}
		if (buf_append(out, p, ll + 2) < 0)
			return -ENOBUFS;
		p = nl + 1;
	}
	if (buf_append(out, "Connection: close\r\n\r\n", 21) < 0)
		return -ENOBUFS;
	return 0;
}

/* The head's line named name (lowercase, with its ':'), or NULL; its
 * length into *ret_len. */
static const char *header_line(const char *h, size_t n, const char *name, size_t *ret_len)
{
	size_t nl0 = strlen(name);
	for (const char *p = h, *end = h + n; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (ll > nl0 && !strncasecmp(p, name, nl0)) {
			*ret_len = ll;
			return p;
		}
		p += ll + 1;
	}
	return NULL;
}

static bool expects_continue(const char *h, size_t n)
{
	size_t ll;
	const char *p = header_line(h, n, "expect:", &ll);
	return p && memmem(p, ll, "100-continue", 12);
}

/* Whether an aws secret of host's is to re-sign this head, and its
 * signature covers the body's hash rather than x-amz-content-sha256's. */
static bool wants_body_hash(const struct net_secret *secrets, size_t nsecrets, const struct net_host *h,
			    const char *head, size_t n)
{
	size_t ll;
	const char *a = header_line(head, n, "authorization:", &ll);
	if (!a || !memmem(a, ll, NET_SIGV4_ALGO " ", strlen(NET_SIGV4_ALGO) + 1) ||
	    header_line(head, n, "x-amz-content-sha256:", &ll))
		return false;
	for (size_t i = 0; i < nsecrets; i++)
		if (secrets[i].aws && net_secret_owns(&secrets[i], h))
			return true;
	return false;
}

static SSL *leaf_ssl(struct net_tls *t, const char *host, int fd)
{
	EVP_PKEY *k = ec_key();
	char san[300];
	bool ip = strspn(host, "0123456789.:") == strlen(host);
	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", host);
	X509 *x = k ? cert_make(k, host, san, false, t->ca, t->ca_key, 1) : NULL;
	SSL *s = x ? SSL_new(t->server) : NULL;
	if (s && (SSL_use_certificate(s, x) != 1 || SSL_use_PrivateKey(s, k) != 1 || SSL_set_fd(s, fd) != 1)) {
		SSL_free(s);
		s = NULL;
	}
	X509_free(x);
	EVP_PKEY_free(k);
	return s;
}

int net_tls_serve(struct net_tls *t, int cfd, int ufd, const char *host, uint16_t port,
		  const struct net_secret *secrets, size_t nsecrets, bool other_ok, int64_t idle_ms,
		  int (*spend)(void *ud, uint64_t n), void *ud, struct net_tls_result *res)
{
	memset(res, 0, sizeof(*res));
	set_timeouts(cfd, idle_ms);
	set_timeouts(ufd, idle_ms);
	SSL *c = leaf_ssl(t, host, cfd), *u = NULL;
	struct buf head, out, body;
	buf_init(&head, NET_REQHEAD_MAX);
	buf_init(&body, NET_TLS_HASHED_BODY_MAX);
	buf_init(&out, NET_REQHEAD_MAX + 2 * NET_SECRET_MAX * NET_SECRET_VALUE_MAX);
	int r = -EIO;
	if (!c || SSL_accept(c) != 1) {
		snprintf(res->why, sizeof(res->why), "the box's TLS to the proxy failed (%s)", tls_err());
		goto done;
	}
	/* The head, in the clear. */
	char b[16384];
	char *hend = NULL;
	while (!hend) {
		int n = SSL_read(c, b, sizeof(b));
		if (n <= 0 || buf_append(&head, b, (size_t)n) < 0) {
			snprintf(res->why, sizeof(res->why), n <= 0 ? "the box ended before its request head" :
				 "the request head inside TLS is over 16 KiB");
			goto done;
		}
		buf_cstr(&head);
		hend = strstr(head.data, "\r\n\r\n");
	}
	size_t hl = (size_t)(hend + 4 - head.data);
	uint64_t blen;
	r = head_rebuild(head.data, hl, &out, &blen, res->method, sizeof(res->method), res->why, sizeof(res->why));
	if (r < 0)
		goto refuse;
	struct net_host h;
	struct err e = { 0 };
	net_allow_host(host, strlen(host), &h, &e);
	/* A body an AWS signature covers by its hash: read whole, hashed,
	 * then sent on from here (the client told to go on first, if it
	 * waits to be). */
	char bh[65];
	const char *body_hash = blen ? NULL : NET_SIGV4_EMPTY_HASH;
	bool held = false;
	if (blen && blen <= NET_TLS_HASHED_BODY_MAX && wants_body_hash(secrets, nsecrets, &h, out.data, out.len)) {
		size_t extra = head.len - hl;
		if ((expects_continue(out.data, out.len) && ssl_write_all(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) ||
		    buf_append(&body, head.data + hl, extra > blen ? (size_t)blen : extra) < 0)
			goto cut;
		while (body.len < blen) {
			int n = SSL_read(c, b, (int)MIN(sizeof(b), blen - body.len));
			if (n <= 0 || buf_append(&body, b, (size_t)n) < 0)
				goto cut;
		}
		if (net_sigv4_hash_hex(body.data, body.len, bh) < 0)
			goto cut;
		body_hash = bh;
		held = true;
	}
	for (size_t i = 0; i < nsecrets; i++) {
		const struct net_secret *s = &secrets[i];
		bool own = net_secret_owns(s, &h);
		if (!own && net_secret_carried(s, out.data, out.len)) {
			res->secret = s->name;
			snprintf(res->why, sizeof(res->why), "the request carries secret %s, which goes only to %s", s->name,
				 s->host[0].name);
			r = -EPERM;
			goto refuse;
		}
		if (!own)
			continue;
		char why[256];
		int k = net_secret_apply(s, &out, body_hash, other_ok, why, sizeof(why));
		if (k < 0) {
			res->secret = s->name;
			if (k == -EPERM)
				snprintf(res->why, sizeof(res->why), "%s, to %s, %s's host (use $%s%s)", why, host,
					 s->name, s->aws ? net_secret_aws_vars[0] : s->name, s->aws ? " and sign with it" : "");
			else
				snprintf(res->why, sizeof(res->why), "secret %s: %s", s->name, why);
			r = k == -EPERM ? -EPERM : -EBADMSG;
			goto refuse;
		}
		if (k > 0)
			res->substituted |= 1u << i;
	}
	/* Upstream: verified as any client would. */
	u = SSL_new(t->client);
	if (!u || SSL_set_fd(u, ufd) != 1 || SSL_set_tlsext_host_name(u, host) != 1 || SSL_set1_host(u, host) != 1 ||
	    SSL_connect(u) != 1) {
		long v = u ? SSL_get_verify_result(u) : 0;
		snprintf(res->why, sizeof(res->why), "TLS to %s:%u failed: %s", host, port,
			 v != X509_V_OK ? X509_verify_cert_error_string(v) : tls_err());
		r = -EIO;
		goto refuse502;
	}
	/* The head, what came of the body with it, then the rest of the body:
	 * its length and not a byte more. */
	const char *pre = held ? body.data : head.data + hl;
	size_t extra = head.len - hl, take = held ? body.len : extra > blen ? (size_t)blen : extra;
	if (spend(ud, out.len + take) < 0) {
		snprintf(res->why, sizeof(res->why), "this box's network byte budget is spent");
		r = -EPERM;
		goto refuse;
	}
	if (ssl_write_all(u, out.data, out.len) < 0 || ssl_write_all(u, pre, take) < 0)
		goto cut;
	res->up = out.len + take;
	/* A client that waits for 100 Continue before its body (botocore
	 * does, for a second, then hangs on a TLS record that is no answer)
	 * gets it here; the server's own 100 comes after, as 1xx may. */
	if (blen > take && expects_continue(out.data, out.len) &&
	    ssl_write_all(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
		goto cut;
	for (uint64_t left = blen - take; left;) {
		int n = SSL_read(c, b, (int)(left < sizeof(b) ? left : sizeof(b)));
		if (n > 0 && spend(ud, (uint64_t)n) < 0)
			goto spent;
		if (n <= 0 || ssl_write_all(u, b, (size_t)n) < 0)
			goto cut;
		left -= (uint64_t)n;
		res->up += (uint64_t)n;
	}
	/* The response, to its end (the server closes: Connection: close),
	 * with no value of a secret in it: w holds what may begin one. */
	struct net_secret_mask m;
	net_secret_mask_init(&m, secrets, nsecrets);
	char w[sizeof(b) + NET_SECRET_VALUE_MAX];
	size_t kept = 0;
	for (bool eof = false; !eof;) {
		/* Held bytes go when the server is quiet (net_secret_mask). */
		bool quiet = false;
		if (kept && !SSL_pending(u)) {
			struct pollfd pf = { .fd = ufd, .events = POLLIN };
			quiet = poll(&pf, 1, NET_SECRET_MASK_HOLD_MS) == 0;
		}
		int n = quiet ? 0 : SSL_read(u, w + kept, sizeof(b));
		eof = !quiet && n <= 0;
		if (n > 0 && spend(ud, (uint64_t)n) < 0)
			goto spent;
		size_t all = kept + (n > 0 ? (size_t)n : 0), go = net_secret_mask(&m, w, all, eof || quiet);
		if (go && ssl_write_all(c, w, go) < 0)
			goto cut;
		memmove(w, w + go, all - go);
		kept = all - go;
		res->down += go;
	}
	res->masked = m.masked;
	explicit_bzero(w, sizeof(w));
	SSL_shutdown(c);
	r = 0;
	goto done;
cut:
	snprintf(res->why, sizeof(res->why), "the connection was cut");
	r = -EPIPE;
	goto done;
spent:
	snprintf(res->why, sizeof(res->why), "budget");
	r = -ENOSPC;
	goto done;
refuse502:
refuse: {
	char resp[512];
	int n = snprintf(resp, sizeof(resp),
			 "HTTP/1.1 %s by ward: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
			 r == -EIO ? "502 Bad Gateway" : r == -EBADMSG ? "400 Bad Request" : "403 Forbidden", res->why);
	ssl_write_all(c, resp, (size_t)n < sizeof(resp) ? (size_t)n : sizeof(resp) - 1);
	SSL_shutdown(c);
}
done:
	SSL_free(c);
	SSL_free(u);
	close(cfd);
	close(ufd);
	if (out.data)
		explicit_bzero(out.data, out.len);
	buf_free(&out);
	buf_free(&head);
	buf_free(&body);
	return r;
}
