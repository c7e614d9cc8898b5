/* AWS Signature Version 4 (AWS's "Create a signed AWS API request": the
 * canonical request, the string to sign, the derived key), as the egress
 * proxy needs it for an aws secret (net/secret.h): the Authorization a
 * client in the box made with its placeholder keys is checked against the
 * request as it is forwarded, and made again with the real keys. Only the
 * header form (Authorization: AWS4-HMAC-SHA256 ...) is taken, with a whole
 * payload hash (x-amz-content-sha256, UNSIGNED-PAYLOAD, or the body's) or
 * one of S3's streaming payloads (net/sigv4-stream.h: the seed it chains
 * from is handed out here); and presigned URLs (net/sigv4-query.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

#define NET_SIGV4_ALGO "AWS4-HMAC-SHA256"
/* The SHA-256 of no bytes: a request with no body. */
#define NET_SIGV4_EMPTY_HASH "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* An Authorization value's parts. */
struct net_sigv4_auth {
	char key_id[129];
	char date[9];		/* YYYYMMDD */
	char region[64];
	char service[64];
	char signed_headers[1024];	/* lowercase names, ';' between, as given */
	char signature[65];	/* 64 lowercase hex digits */
	/* A presigned URL's (net/sigv4-query.h): its date is X-Amz-Date's,
	 * its X-Amz-Signature is not in the canonical query, and S3's payload
	 * is UNSIGNED-PAYLOAD. */
	bool query;
};

/* The hex SHA-256 of p[0..n) into out[65] (a body's hash): 0, or -EIO. */
int net_sigv4_hash_hex(const void *p, size_t n, char out[65]);
/* Whether an Authorization value is SigV4's at all (its algorithm word). */
bool net_sigv4_is_auth(const char *v, size_t n);
/* Parse an Authorization value: 0, or -EBADMSG with why[wn] saying what. */
int net_sigv4_auth_parse(const char *v, size_t n, struct net_sigv4_auth *ret, char *why, size_t wn);

/* How the path is made canonical: as it is, each byte encoded once (S3's
 * rule), or its . and .. segments resolved and encoded once more (every
 * other service's). */
enum net_sigv4_path { NET_SIGV4_PATH_S3, NET_SIGV4_PATH_NORMALISED };

/* The signature of a request head (request line and header lines, CRLF
 * each, as they go on the wire; the blank line may follow) under a's
 * scope and signed headers, with secret. The payload's hash is the head's
 * x-amz-content-sha256, or body_hash (hex) where it has none. 0 with
 * out[65]; -EBADMSG with why: a signed header missing, no x-amz-date, a
 * streaming payload of a kind not taken, no payload hash to use. */
int net_sigv4_signature(const char *head, size_t n, const struct net_sigv4_auth *a, const char *secret,
			const char *body_hash, enum net_sigv4_path pm, char out[65], char *why, size_t wn);

/* x-amz-content-sha256's streaming values (aws-chunked bodies), by kind. */
enum net_sigv4_payload {
	NET_SIGV4_WHOLE,		/* a hash, UNSIGNED-PAYLOAD, or none */
	NET_SIGV4_STREAM_SIGNED,	/* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
	NET_SIGV4_STREAM_SIGNED_TRAILER,	/* ...-PAYLOAD-TRAILER: a signed trailer too */
	NET_SIGV4_STREAM_UNSIGNED_TRAILER,	/* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
	NET_SIGV4_STREAM_OTHER,		/* another STREAMING- value (SigV4a's ECDSA): not taken */
};
/* The kind of an x-amz-content-sha256 value v[0..n). */
enum net_sigv4_payload net_sigv4_payload_of(const char *v, size_t n);

/* What a streaming payload's signatures chain from: the request's
 * signature (the seed) by the placeholder's key and by the real one, the
 * scope they were made in, and each key's signing key (wiped with
 * net_sigv4_seed_wipe). */
struct net_sigv4_seed {
	enum net_sigv4_payload kind;
	char amzdate[17];
	char scope[200];	/* DATE/REGION/SERVICE/aws4_request */
	unsigned char key_ph[32], key[32];
	char sig_ph[65], sig[65];
};
void net_sigv4_seed_wipe(struct net_sigv4_seed *s);
/* The signing key of secret in a scope (AWS's derived key) into out[32]. */
int net_sigv4_signing_key(const char *secret, const char *date, const char *region, const char *service,
			  unsigned char out[32]);
/* HMAC-SHA256 of p[0..n) with a signing key, hex into out[65]. */
int net_sigv4_hmac_hex(const unsigned char key[32], const char *p, size_t n, char out[65]);

/* The keys a signature is checked with (placeholder) and made again with
 * (real); token NULL when there is none. */
struct net_sigv4_keys {
	const char *ph_key, *ph_secret, *ph_token;
	const char *key, *secret, *token;
};
/* The credentials in head (a whole request head, CRLF, its blank line
 * last) made the proxy's: an Authorization signed with the placeholder
 * keys is checked and signed again with the real ones (an
 * x-amz-security-token placeholder replaced first). A streaming payload is
 * taken only where ret_seed is given (its body re-signed by the caller,
 * net/sigv4-stream.h), its seed there on 1; ret_seed->kind is
 * NET_SIGV4_WHOLE for any other. Returns 1 re-signed,
 * 0 no credential of AWS's in it, -EPERM a credential that is not the
 * placeholder's (another key id, another token, a presigned query by
 * another key, any other Authorization; a presigned URL by the
 * placeholder's is re-signed, net_sigv4_query_resign), -EBADMSG one that cannot be re-signed, -ENOBUFS
 * head's cap; why[wn] says which. head is changed only on 1. */
int net_sigv4_resign(struct buf *head, const struct net_sigv4_keys *k, const char *body_hash,
		     struct net_sigv4_seed *ret_seed, char *why, size_t wn);
