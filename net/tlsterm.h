/* TLS terminated at the egress proxy, for a secret's hosts only
 * (net/secret.h): the box's CONNECT is answered with a certificate for
 * the host signed by a CA made for that box (its key in the keeper and
 * the proxy, never in the box), the request head read in the clear, its
 * placeholder replaced, and the request sent on over a new TLS session to
 * the real host, whose certificate is verified against the host's CAs
 * (and a CA the user names for it: --secret-ca). One request per
 * connection (Connection: close). Blocking, on a thread of its own. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "net/secret.h"

/* A SigV4 request to an aws secret's host whose signature covers its
 * body's hash (no x-amz-content-sha256: AWS's services but S3) has its
 * body read whole before it is re-signed: at most this many bytes. */
#define NET_TLS_HASHED_BODY_MAX (1u << 20)

/* A box refused after its body began to go on (a streaming chunk that
 * does not hold, or over its bound) is read from and dropped this long,
 * this much at most, so that it gets to read the refusal. */
#define NET_TLS_LINGER_MS 2000
#define NET_TLS_LINGER_MAX (64u << 20)

/* Hosts whose certificate (signed by the box's CA, for the one leaf key
 * the box's proxy makes) is kept between connections; each is made
 * again when it is NET_TLS_LEAF_RENEW_S old, valid NET_TLS_LEAF_DAYS. */
#define NET_TLS_LEAF_MAX 32
#define NET_TLS_LEAF_RENEW_S (12 * 3600)
#define NET_TLS_LEAF_DAYS 1

/* The host's CA bundle, as Debian keeps it. */
#define NET_TLS_SYSTEM_CAS "/etc/ssl/certs/ca-certificates.crt"

/* A CA for one box: an EC P-256 key and a self-signed certificate, PEM
 * each (the caller's to free; the key's to wipe). */
int net_tls_ca_make(const char *box, char **ret_key_pem, char **ret_cert_pem, struct err *e);

struct net_tls;
/* The CA (PEM) that signs the hosts' certificates; extra_ca_pem (or NULL)
 * trusted upstream beside NET_TLS_SYSTEM_CAS. Reads files: call before
 * the process is confined. */
int net_tls_new(const char *ca_key_pem, const char *ca_cert_pem, const char *extra_ca_pem, struct net_tls **ret,
		struct err *e);
void net_tls_free(struct net_tls *t);

struct net_tls_result {
	char method[32];
	unsigned substituted;	/* bit i: secrets[i] */
	const char *secret;	/* refused for it, or NULL */
	char why[320];		/* refused: why; "" carried */
	uint64_t up, down;
	uint64_t masked;	/* values of a secret kept out of the response */
};
/* Serve one connection: cfd is the box's (after the CONNECT's 200), ufd
 * connected to host's address; both closed here. other_ok: as
 * net_proxy_cfg's secret_other_ok. spend(ud, n) before n bytes are
 * carried either way: <0, the box's budget is spent, and the connection
 * is cut. 0 carried; <0 refused
 * or failed (res->why). */
int net_tls_serve(struct net_tls *t, int cfd, int ufd, const char *host, uint16_t port,
		  const struct net_secret *secrets, size_t nsecrets, bool other_ok, int64_t idle_ms,
		  int (*spend)(void *ud, uint64_t n), void *ud, struct net_tls_result *res);
