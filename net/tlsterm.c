#include "net/tlsterm.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/param.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/osslso.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "net/allow.h"
#include "net/reqhead.h"
#include "net/chunked.h"
#include "net/sigv4-stream.h"
#include "net/sigv4.h"

/* A chunked body's data decoded at a time: one read's, and room for
 * net_chunked's framing. */
#define TLS_BODY_PIECE (16384 + 64)

/* A host's certificate, made at its first connection and kept (with the
 * server context that holds it) until it is NET_TLS_LEAF_RENEW_S old. */
struct tls_leaf {
	char host[NET_HOST_MAX + 1];
	SSL_CTX *ctx;
	time_t made;
};

/* A session the real host (host:port) gave this end to resume, after a
 * handshake in which its certificate was verified: taken by the next
 * connection there (once), which skips the certificate's parsing and
 * checking, and replaced by the tickets that connection gets. */
struct tls_resume {
	char key[NET_HOST_MAX + 8];
	SSL_SESSION *sess;
	int64_t at;
};

struct net_tls {
	SSL_CTX *client;
	EVP_PKEY *ca_key;
	EVP_PKEY *leaf_key;	/* every host's certificate's: one per box */
	X509 *ca;
	pthread_mutex_t mu;	/* leaf[], resume[] */
	struct tls_leaf leaf[NET_TLS_LEAF_MAX];
	struct tls_resume resume[NET_TLS_LEAF_MAX];
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

/* Records read a socket's worth at a time, not header and body each by a
 * read of their own (a 100 MB download: 3.4k reads, not 12.8k). */
static void tls_ctx_read_ahead(SSL_CTX *ctx)
{
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, 4 * SSL3_RT_MAX_PLAIN_LENGTH);
}

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
	for (size_t i = 0; i < NET_TLS_LEAF_MAX; i++) {
		SSL_CTX_free(t->leaf[i].ctx);
		SSL_SESSION_free(t->resume[i].sess);
	}
	pthread_mutex_destroy(&t->mu);
	SSL_CTX_free(t->client);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	X509_free(t->ca);
	free(t);
}

/* A session (a TLS 1.3 ticket, or a TLS 1.2 handshake's) from the host
 * the connection's app data names: a copy kept in its place (the SSL's
 * own is marked not resumable when it ends without a close_notify). */
static int resume_keep(SSL *u, SSL_SESSION *sess)
{
	struct net_tls *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(u));
	const char *key = SSL_get_app_data(u);
	SSL_SESSION *dup = key && SSL_SESSION_is_resumable(sess) ? SSL_SESSION_dup(sess) : NULL;
	if (!dup)
		return 0;
	pthread_mutex_lock(&t->mu);
	size_t at = 0;
	for (size_t i = 0; i < NET_TLS_LEAF_MAX; i++) {
		struct tls_resume *r = &t->resume[i];
		if (!strcmp(r->key, key)) {
			at = i;
			break;
		}
		if (r->at < t->resume[at].at)
			at = i;
	}
	struct tls_resume *r = &t->resume[at];
	SSL_SESSION_free(r->sess);
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->sess = dup;
	r->at = now_us();
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* The session kept for key, if one is: u is to resume it. */
static void resume_take(struct net_tls *t, SSL *u, const char *key)
{
	SSL_SESSION *sess = NULL;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < NET_TLS_LEAF_MAX && !sess; i++)
		if (t->resume[i].sess && !strcmp(t->resume[i].key, key)) {
			sess = t->resume[i].sess;
			t->resume[i].sess = NULL;
			t->resume[i].at = 0;
		}
	pthread_mutex_unlock(&t->mu);
	if (sess)
		SSL_set_session(u, sess);
	SSL_SESSION_free(sess);
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
	pthread_mutex_init(&t->mu, NULL);
	t->client = SSL_CTX_new(TLS_client_method());
	t->leaf_key = ec_key();
	if (!t->ca_key || !t->ca || !t->client || !t->leaf_key) {
		net_tls_free(t);
		return err_set(e, -EINVAL, "the box's CA is not what it should be: %s", tls_err());
	}
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	tls_ctx_read_ahead(t->client);
	SSL_CTX_set_app_data(t->client, t);
	SSL_CTX_set_session_cache_mode(t->client, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
	SSL_CTX_sess_set_new_cb(t->client, resume_keep);
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

/* The box's Finished acknowledged now, not at the delayed ACK's timer:
 * this end sends no session ticket after the handshake (leaf_ctx_make),
 * so nothing else would carry the ACK, and a client that writes its
 * request in a segment of its own (Nagle: Python's ssl, or anything on a
 * socket without TCP_NODELAY) holds it back until then, up to 40 ms. A
 * unix socket (a vm box's) refuses the option: nothing to do. */
static void quickack(int fd)
{
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

static void set_timeouts(int fd, int64_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The head as read from the box, rebuilt: the request line as it is,
 * hop-by-hop headers dropped, Connection: close added. Its body's length
 * into *ret_len, or *ret_chunked: Transfer-Encoding: chunked alone (its
 * body framed afresh on the way, net/chunked.h); any other coding, or a
 * length beside it, is refused. */
static int head_rebuild(const char *h, size_t n, struct buf *out, uint64_t *ret_len, bool *ret_chunked, char *method,
			size_t mn, char *why, size_t wn)
{
	bool length = false;
	*ret_chunked = false;
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
				const char *v = p + 18, *ve = p + ll;
				while (v < ve && (*v == ' ' || *v == '\t'))
					v++;
				while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
					ve--;
				if (*ret_chunked || ve - v != 7 || strncasecmp(v, "chunked", 7)) {
					snprintf(why, wn, "a Transfer-Encoding inside TLS to a secret's host other than one "
						 "\"chunked\" is not carried");
					return -EPROTO;
				}
				*ret_chunked = true;
			}
			if (!strncasecmp(p, "content-length:", 15)) {
				char *e;
				*ret_len = strtoull(p + 15, &e, 10);
				length = true;
			}
			if (length && *ret_chunked) {
				snprintf(why, wn, "a request inside TLS with both Content-Length and Transfer-Encoding");
				return -EPROTO;
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

/* The aws secret of host's that is to re-sign this head when its
 * signature covers the body's hash rather than x-amz-content-sha256's,
 * or NULL. */
static const struct net_secret *wants_body_hash(const struct net_secret *secrets, size_t nsecrets,
						const struct net_host *h, const char *head, size_t n)
{
	size_t ll;
	const char *a = header_line(head, n, "authorization:", &ll);
	if (!a || !memmem(a, ll, NET_SIGV4_ALGO " ", strlen(NET_SIGV4_ALGO) + 1) ||
	    header_line(head, n, "x-amz-content-sha256:", &ll))
		return NULL;
	for (size_t i = 0; i < nsecrets; i++)
		if (secrets[i].aws && net_secret_owns(&secrets[i], h))
			return &secrets[i];
	return NULL;
}

/* A box refused in the middle of its body is still sending it: what it
 * sends is read and dropped, for NET_TLS_LINGER_MS or NET_TLS_LINGER_MAX
 * bytes at most, so that it reads the refusal rather than a reset. */
static void drain(SSL *c, int cfd)
{
	char b[16384];
	int64_t end = now_ms() + NET_TLS_LINGER_MS;
	for (uint64_t n = 0; n < NET_TLS_LINGER_MAX;) {
		int64_t left = end - now_ms();
		struct pollfd pf = { .fd = cfd, .events = POLLIN };
		if (left <= 0 || (!SSL_has_pending(c) && poll(&pf, 1, (int)left) <= 0))
			break;
		int k = SSL_read(c, b, sizeof(b));
		if (k <= 0)
			break;
		n += (uint64_t)k;
	}
}

/* The name of host's aws secret (a streaming body refused is its). */
static const char *hs_name(const struct net_secret *secrets, size_t nsecrets, const struct net_host *h)
{
	for (size_t i = 0; i < nsecrets; i++)
		if (secrets[i].aws && net_secret_owns(&secrets[i], h))
			return secrets[i].name;
	return NULL;
}

/* Bytes to the server: counted. */
static int up_write(SSL *u, const char *p, size_t n, struct net_tls_result *res)
{
	if (ssl_write_all(u, p, n) < 0)
		return -EPIPE;
	res->up += n;
	return 0;
}

/* Bytes of a chunked body framed as one chunk (the rest of what the box
 * framed was dropped by net_chunked). */
static int up_chunk(SSL *u, const char *p, size_t n, struct net_tls_result *res)
{
	char f[24];
	int fl = snprintf(f, sizeof(f), "%zx\r\n", n);
	if (!n)
		return 0;
	return up_write(u, f, (size_t)fl, res) ?: up_write(u, p, n, res) ?: up_write(u, "\r\n", 2, res);
}

/* The body after the head, to the server: pre[0..npre) (what came with
 * the head, spent), then the box's, to blen bytes or (chunked) its last
 * chunk; through st, a streaming SigV4 payload re-signed (each chunk
 * checked with the placeholder's key and signed again, one chunk held at
 * most), where st. 0; -EPIPE cut; -ENOSPC the budget spent; -EBADMSG or
 * -EMSGSIZE refused, why in res->why. */
static int body_carry(SSL *c, SSL *u, const char *pre, size_t npre, uint64_t blen, bool chunked,
		      struct net_sigv4_stream *st, int (*spend)(void *ud, uint64_t n), void *ud,
		      struct net_tls_result *res)
{
	char b[16384];
	struct net_chunked ch;
	net_chunked_init(&ch);
	ch.raw = st != NULL;	/* decoded for the stream, framed again after it */
	struct buf dec, so;
	buf_init(&dec, TLS_BODY_PIECE);
	buf_init(&so, NET_SIGV4_STREAM_ROOM(TLS_BODY_PIECE));
	const char *p = pre;
	size_t np = chunked || npre < blen ? npre : (size_t)blen;
	uint64_t left = blen;
	bool end = !chunked && !blen, st_end = false;
	int r = 0;
	while (!end && r == 0) {
		if (!np) {
			int n = SSL_read(c, b, (int)(chunked || left > sizeof(b) ? sizeof(b) : left));
			if (n <= 0) {
				r = -EPIPE;
				break;
			}
			if (spend(ud, (uint64_t)n) < 0) {
				r = -ENOSPC;
				break;
			}
			p = b;
			np = (size_t)n;
		}
		const char *d = p;
		size_t dn = np;
		if (chunked) {
			size_t used = 0;
			int rc = net_chunked_feed(&ch, p, np, &dec, &used);
			if (rc < 0) {
				snprintf(res->why, sizeof(res->why), "the chunked request body is malformed");
				r = -EBADMSG;
				break;
			}
			end = rc == 1;
			d = dec.data;
			dn = dec.len;
			p += used;
			np -= used;
		} else {
			dn = np < left ? np : (size_t)left;
			left -= dn;
			end = !left;
			p += dn;
			np -= dn;
		}
		if (!st) {
			r = up_write(u, d, dn, res);
		} else if (dn || end) {
			int sr = net_sigv4_stream_feed(st, d, dn, &so, res->why, sizeof(res->why));
			if (sr < 0) {
				r = sr == -EMSGSIZE ? -EMSGSIZE : -EBADMSG;
				break;
			}
			st_end |= sr == 1;
			r = chunked ? up_chunk(u, so.data, st->ready, res) : up_write(u, so.data, st->ready, res);
			net_sigv4_stream_sent(st, &so);
			if (r == 0 && end && !st_end) {
				snprintf(res->why, sizeof(res->why), "the body ended before its aws-chunked payload did");
				r = -EBADMSG;
			}
		}
		dec.len = 0;
		if (r == 0 && end && chunked && st)
			r = up_write(u, "0\r\n\r\n", 5, res);
	}
	if (so.data)
		explicit_bzero(so.data, so.len);
	buf_free(&so);
	buf_free(&dec);
	return r;
}

/* A server context for host: its certificate signed by the box's CA,
 * the box's leaf key. No session tickets: a ticket is a record a client
 * waiting for an answer (a 100 Continue) may take for one. */
static SSL_CTX *leaf_ctx_make(struct net_tls *t, const char *host)
{
	char san[300];
	bool ip = strspn(host, "0123456789.:") == strlen(host);
	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", host);
	X509 *x = cert_make(t->leaf_key, host, san, false, t->ca, t->ca_key, NET_TLS_LEAF_DAYS);
	SSL_CTX *ctx = x ? SSL_CTX_new(TLS_server_method()) : NULL;
	if (ctx && (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 || SSL_CTX_set_num_tickets(ctx, 0) != 1 ||
		    SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, t->leaf_key) != 1)) {
		SSL_CTX_free(ctx);
		ctx = NULL;
	}
	if (ctx)
		tls_ctx_read_ahead(ctx);
	X509_free(x);
	return ctx;
}

/* host's server context (a reference, the caller's to free): the one
 * kept, or one made now and kept in the place of the oldest. */
static SSL_CTX *leaf_ctx(struct net_tls *t, const char *host)
{
	time_t now = time(NULL);
	SSL_CTX *ctx = NULL;
	size_t old = 0;
	pthread_mutex_lock(&t->mu);
	/* The place for a new one: host's own (made too long ago), else an
	 * empty one, else the oldest. */
	int rank = 0;
	for (size_t i = 0; i < NET_TLS_LEAF_MAX && !ctx; i++) {
		struct tls_leaf *l = &t->leaf[i];
		bool mine = l->ctx && !strcmp(l->host, host);
		if (mine && now - l->made < NET_TLS_LEAF_RENEW_S && SSL_CTX_up_ref(l->ctx))
			ctx = l->ctx;
		int k = mine ? 3 : !l->ctx ? 2 : 1;
		if (k > rank || (k == 1 && rank == 1 && l->made < t->leaf[old].made)) {
			rank = k;
			old = i;
		}
	}
	pthread_mutex_unlock(&t->mu);
	if (ctx || !(ctx = leaf_ctx_make(t, host)))
		return ctx;
	pthread_mutex_lock(&t->mu);
	struct tls_leaf *l = &t->leaf[old];
	SSL_CTX_free(l->ctx);	/* (a connection using it holds its own reference) */
	snprintf(l->host, sizeof(l->host), "%s", host);
	l->made = now;
	l->ctx = SSL_CTX_up_ref(ctx) ? ctx : NULL;
	pthread_mutex_unlock(&t->mu);
	return ctx;
}

static SSL *leaf_ssl(struct net_tls *t, const char *host, int fd)
{
	SSL_CTX *ctx = leaf_ctx(t, host);
	SSL *s = ctx ? SSL_new(ctx) : NULL;
	SSL_CTX_free(ctx);
	if (s && SSL_set_fd(s, fd) != 1) {
		SSL_free(s);
		s = NULL;
	}
	return s;
}

/* One step of a handshake that has not ended: 1 done, 0 to go on (the
 * poll events it waits for in *ev), <0 failed. */
static int hs_step(SSL *s, bool server, short *ev)
{
	ERR_clear_error();
	int r = server ? SSL_accept(s) : SSL_connect(s);
	if (r == 1)
		return 1;
	switch (SSL_get_error(s, r)) {
	case SSL_ERROR_WANT_READ:
		*ev = POLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		*ev = POLLOUT;
		return 0;
	default:
		return -EPROTO;
	}
}

static void up_failed(SSL *u, int r, char *why, size_t wn)
{
	long v = SSL_get_verify_result(u);
	if (r == -ETIMEDOUT)
		snprintf(why, wn, "no answer to its handshake");
	else
		snprintf(why, wn, "%s", v != X509_V_OK ? X509_verify_cert_error_string(v) : tls_err());
}

/* The box's handshake with this end (c on cfd) and this end's with the
 * real host (u on ufd), at once: neither waits on the other's round
 * trips. 0 when the box's is done (the upstream one's outcome in
 * *ret_up: 1 done, <0 failed, its reason in up_why); <0 when the box's
 * failed (why in box_why). A side idle for idle_ms fails. */
static int handshakes(SSL *c, int cfd, SSL *u, int ufd, int64_t idle_ms, int *ret_up, char *box_why,
		      char *up_why, size_t wn)
{
	short cev = 0, uev = 0;
	fdio_set_nonblock(cfd, true);
	fdio_set_nonblock(ufd, true);
	int cs = hs_step(c, true, &cev);
	if (cs < 0)
		snprintf(box_why, wn, "%s", tls_err());
	int us = cs < 0 ? -ECANCELED : hs_step(u, false, &uev);
	if (us < 0 && cs >= 0)
		up_failed(u, us, up_why, wn);
	while (cs == 0 || (cs > 0 && us == 0)) {
		struct pollfd pf[2] = { { .fd = cs == 0 ? cfd : -1, .events = cev },
					{ .fd = us == 0 ? ufd : -1, .events = uev } };
		int n = poll(pf, 2, idle_ms > INT32_MAX ? INT32_MAX : (int)idle_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (cs == 0)
				snprintf(box_why, wn, "no answer to its handshake");
			if (us == 0)
				up_failed(u, -ETIMEDOUT, up_why, wn);
			cs = cs == 0 ? -ETIMEDOUT : cs;
			us = us == 0 ? -ETIMEDOUT : us;
			break;
		}
		if (cs == 0 && pf[0].revents && (cs = hs_step(c, true, &cev)) < 0)
			snprintf(box_why, wn, "%s", tls_err());
		if (us == 0 && pf[1].revents && (us = hs_step(u, false, &uev)) < 0)
			up_failed(u, us, up_why, wn);
	}
	fdio_set_nonblock(cfd, false);
	fdio_set_nonblock(ufd, false);
	*ret_up = us;
	return cs > 0 ? 0 : cs;
}

int net_tls_serve(struct net_tls *t, int cfd, int ufd, const char *host, uint16_t port,
		  const struct net_secret *secrets, size_t nsecrets, bool other_ok, int64_t idle_ms,
		  int (*spend)(void *ud, uint64_t n), void *ud, struct net_tls_result *res)
{
	memset(res, 0, sizeof(*res));
	set_timeouts(cfd, idle_ms);
	set_timeouts(ufd, idle_ms);
	SSL *c = leaf_ssl(t, host, cfd), *u = SSL_new(t->client);
	struct buf head, out, body;
	buf_init(&head, NET_REQHEAD_MAX);
	buf_init(&body, NET_TLS_HASHED_BODY_MAX);
	buf_init(&out, NET_REQHEAD_MAX + 2 * NET_SECRET_MAX * NET_SECRET_VALUE_MAX);
	int r = -EIO, up = -EIO;
	struct net_sigv4_seed seed = { .kind = NET_SIGV4_WHOLE };
	bool up_abort = false;
	struct net_sigv4_stream st;
	/* Upstream verified as any client would, its handshake beside the
	 * box's. */
	char box_why[160] = "", up_why[160] = "", key[NET_HOST_MAX + 8];
	snprintf(key, sizeof(key), "%s:%u", host, port);
	if (!c || !u || SSL_set_fd(u, ufd) != 1 || SSL_set_tlsext_host_name(u, host) != 1 ||
	    SSL_set1_host(u, host) != 1 || SSL_set_app_data(u, key) != 1) {
		snprintf(res->why, sizeof(res->why), "cannot start TLS: %s", tls_err());
		goto done;
	}
	resume_take(t, u, key);
	if (handshakes(c, cfd, u, ufd, idle_ms, &up, box_why, up_why, sizeof(up_why)) < 0) {
		snprintf(res->why, sizeof(res->why), "the box's TLS to the proxy failed (%s)", box_why);
		goto done;
	}
	quickack(cfd);
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
	bool chunked;
	r = head_rebuild(head.data, hl, &out, &blen, &chunked, res->method, sizeof(res->method), res->why,
			 sizeof(res->why));
	if (r < 0)
		goto refuse;
	struct net_host h;
	struct err e = { 0 };
	net_allow_host(host, strlen(host), &h, &e);
	/* A body an AWS signature covers by its hash: read whole, hashed,
	 * then sent on from here (the client told to go on first, if it
	 * waits to be). */
	char bh[65];
	const char *body_hash = blen || chunked ? NULL : NET_SIGV4_EMPTY_HASH;
	bool held = false;
	const struct net_secret *hs = blen ? wants_body_hash(secrets, nsecrets, &h, out.data, out.len) : NULL;
	if (hs && blen > NET_TLS_HASHED_BODY_MAX) {
		res->secret = hs->name;
		snprintf(res->why, sizeof(res->why),
			 "a SigV4 body signed by its own hash is read whole to be re-signed, at most %u bytes (this one: "
			 "%llu); sign it with x-amz-content-sha256 (UNSIGNED-PAYLOAD over HTTPS)",
			 NET_TLS_HASHED_BODY_MAX, (unsigned long long)blen);
		r = -EMSGSIZE;
		goto refuse;
	}
	if (hs) {
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
	/* An aws secret's streaming payload: the seed its body's chunks chain
	 * from (kind NET_SIGV4_WHOLE where there is none). */
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
		int k = net_secret_apply(s, &out, body_hash, other_ok, &seed, why, sizeof(why));
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
	if (up < 0) {
		snprintf(res->why, sizeof(res->why), "TLS to %s:%u failed: %s", host, port, up_why);
		r = -EIO;
		goto refuse502;
	}
	/* The head, what came of the body with it, then the rest of the body:
	 * its length and not a byte more, or to its last chunk. */
	const char *pre = held ? body.data : head.data + hl;
	size_t extra = head.len - hl, take = held ? body.len : chunked || extra < blen ? extra : (size_t)blen;
	if (spend(ud, out.len + take) < 0) {
		snprintf(res->why, sizeof(res->why), "this box's network byte budget is spent");
		r = -EPERM;
		goto refuse;
	}
	if (seed.kind != NET_SIGV4_WHOLE && net_sigv4_stream_init(&st, &seed) < 0)
		goto cut;
	bool streaming = seed.kind != NET_SIGV4_WHOLE;
	net_sigv4_seed_wipe(&seed);
	if (ssl_write_all(u, out.data, out.len) < 0)
		goto cut;
	res->up = out.len;
	/* A client that waits for 100 Continue before its body (botocore
	 * does, for a second, then hangs on a TLS record that is no answer)
	 * gets it here; the server's own 100 comes after, as 1xx may. */
	if ((chunked || blen > take) && !held && expects_continue(out.data, out.len) &&
	    ssl_write_all(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
		goto cut;
	r = body_carry(c, u, pre, take, held ? take : blen, chunked, streaming ? &st : NULL, spend, ud, res);
	if (streaming)
		net_sigv4_stream_free(&st);
	up_abort = r < 0;
	if (r == -EPIPE)
		goto cut;
	if (r == -ENOSPC)
		goto spent;
	if (r < 0) {
		/* The head went on: the server is told the request was cut
		 * (a reset, not an end it could take for the body's). */
		up_abort = true;
		if (streaming)
			res->secret = hs_name(secrets, nsecrets, &h);
		goto refuse;
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
		if (kept && !SSL_has_pending(u)) {
			struct pollfd pf = { .fd = ufd, .events = POLLIN };
			quiet = poll(&pf, 1, NET_SECRET_MASK_HOLD_MS) == 0;
		}
		int n = quiet ? 0 : SSL_read(u, w + kept, sizeof(b));
		eof = !quiet && n <= 0;
		bool over = n > 0 && spend(ud, (uint64_t)n) < 0;
		size_t all = kept + (n > 0 && !over ? (size_t)n : 0), go = over ? 0 : net_secret_mask(&m, w, all, eof || quiet);
		res->masked = m.masked;
		bool broke = go && ssl_write_all(c, w, go) < 0;
		if (over || broke) {
			explicit_bzero(w, sizeof(w));
			if (over)
				goto spent;
			goto cut;
		}
		memmove(w, w + go, all - go);
		kept = all - go;
		res->down += go;
	}
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
			 r == -EIO ? "502 Bad Gateway" : r == -EBADMSG ? "400 Bad Request" :
			 r == -EMSGSIZE ? "413 Content Too Large" : "403 Forbidden", res->why);
	ssl_write_all(c, resp, (size_t)n < sizeof(resp) ? (size_t)n : sizeof(resp) - 1);
	if (up_abort)
		drain(c, cfd);
	SSL_shutdown(c);
}
done:
	net_sigv4_seed_wipe(&seed);
	SSL_free(c);
	SSL_free(u);
	if (up_abort)
		(void)setsockopt(ufd, SOL_SOCKET, SO_LINGER, &(struct linger){ .l_onoff = 1, .l_linger = 0 },
				 sizeof(struct linger));
	close(ufd);
	close(cfd);
	if (out.data)
		explicit_bzero(out.data, out.len);
	buf_free(&out);
	buf_free(&head);
	buf_free(&body);
	return r;
}
