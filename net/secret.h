/* A box's secrets (--secret NAME@HOST[,HOST...]): a credential the task
 * needs that never enters the box. The box's environment holds NAME=<a
 * placeholder made for that box alone>; the egress proxy, which the box
 * cannot read, puts the real value in place of the placeholder on
 * requests to the secret's own hosts, and refuses a request to any other
 * host that carries the placeholder or the value.
 *
 * This file owns what a secret is: its spec's syntax, its name's and
 * value's rules, its placeholder's form, and the two questions the proxy
 * asks of a request's bytes (does it carry a secret; put the value in). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "net/allow.h"

/* A box's secrets at most, each with this many hosts at most. */
#define NET_SECRET_MAX 16
#define NET_SECRET_HOSTS_MAX 8
/* NAME: [A-Za-z_][A-Za-z0-9_]*, at most this long (an environment name). */
#define NET_SECRET_NAME_MAX 64
/* A value's bytes at most: one header's worth (no CR, LF or NUL). */
#define NET_SECRET_VALUE_MAX 4096
/* "ward-secret-" and 32 hex digits (128 random bits). */
#define NET_SECRET_PH_PREFIX "ward-secret-"
#define NET_SECRET_PH_LEN (sizeof(NET_SECRET_PH_PREFIX) - 1 + 32)

/* The secret named this is AWS's keys (--secret aws@HOST): its value
 * "KEY_ID:SECRET_KEY[:SESSION_TOKEN]" (ward reads AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN), the box's environment
 * the placeholder in each of those, and the proxy checks and makes again
 * the SigV4 signature of each request to its hosts (net/sigv4.h). */
#define NET_SECRET_AWS "aws"
bool net_secret_is_aws(const char *name);
/* The AWS environment's names, in the value's order. */
extern const char *const net_secret_aws_vars[3];
/* An aws value from its parts (token NULL or ""): -EINVAL with one line
 * in e where one cannot be (empty, a ':' in a key, too long). */
int net_secret_aws_value(const char *key, const char *secret, const char *token, char *out, size_t n,
			 struct err *e);

/* A parsed spec: NAME[=@PATH]@HOST[,HOST...] (a HOST is a name, or
 * name:port; where it connects is the allow-list's business). */
struct net_secret_spec {
	char name[NET_SECRET_NAME_MAX + 1];
	const char *path;	/* into the spec: "=@PATH" given (up to the last '@'); else NULL */
	size_t path_len;
	struct net_host host[NET_SECRET_HOSTS_MAX];
	size_t nhost;
};

/* One line in e on a bad spec: what is wrong and what to write. */
int net_secret_spec_parse(const char *spec, struct net_secret_spec *ret, struct err *e);
/* A value as read (the environment, a file; one trailing newline of a
 * file already dropped): -EINVAL with one line in e when it cannot go in
 * a header. */
int net_secret_value_check(const char *name, const char *v, size_t n, struct err *e);
/* A fresh placeholder (from getrandom) into out[NET_SECRET_PH_LEN + 1]. */
int net_secret_placeholder(char *out, size_t n);
/* Whether s looks like one (for a test, a scan). */
bool net_secret_is_placeholder(const char *s);

/* A secret as the proxy holds it. */
struct net_secret {
	char name[NET_SECRET_NAME_MAX + 1];
	char ph[NET_SECRET_PH_LEN + 1];
	char *value;		/* NUL-terminated; value_len bytes */
	size_t value_len;
	struct net_host host[NET_SECRET_HOSTS_MAX];
	size_t nhost;
	/* An aws secret (net_secret_load): its parts, in value's bytes;
	 * aws_token NULL when there is none. */
	bool aws;
	const char *aws_key, *aws_secret, *aws_token;
};

/* s's value taken (value, value_len set; the caller's to wipe with s):
 * an aws secret's split into its parts. -EINVAL when it is not one. */
int net_secret_load(struct net_secret *s);
/* Whether h is one of s's hosts (any port). */
bool net_secret_owns(const struct net_secret *s, const struct net_host *h);
/* Whether p[0..n) carries s's placeholder or its value. */
bool net_secret_carried(const struct net_secret *s, const char *p, size_t n);
/* Every placeholder of s in b replaced by the value, within b's cap: the
 * count, or -ENOBUFS (b is then as it was). */
int net_secret_substitute(const struct net_secret *s, struct buf *b);
/* Whether head (a request head, CRLF lines) has a credential header
 * (Authorization, X-Api-Key) that does not carry s's placeholder: a key
 * the proxy did not put there, to s's own host. */
bool net_secret_foreign_cred(const struct net_secret *s, const char *head, size_t n);
/* A request head (whole, as it goes on) to s's own host made s's: a
 * credential of another (net_secret_foreign_cred; for aws, a signature by
 * another key) refused unless other_ok, then the placeholder replaced by
 * the value, or for aws the signature checked and made again (body_hash:
 * the hex SHA-256 of its body, or NULL where it is not known; ret_seed:
 * where a streaming body can be re-signed, net_sigv4_resign's). The count
 * put in (>0) or 0; -EPERM another credential, -EBADMSG an aws request
 * that cannot be re-signed, -ENOBUFS past head's cap; why[wn] says. */
struct net_sigv4_seed;
int net_secret_apply(const struct net_secret *s, struct buf *head, const char *body_hash, bool other_ok,
		     struct net_sigv4_seed *ret_seed, char *why, size_t wn);
/* What comes back from a secret's host, kept from bringing a value into
 * the box (a server that echoes the request's headers, an error that
 * quotes the key): each whole value of the box's secrets (an aws secret's
 * key id, secret key and token) in a response's bytes, as they stream,
 * replaced by as many '*' (a Content-Length stays true). The caller keeps
 * the bytes: each call masks p[0..len), the bytes held back before and
 * those just read, and says how many of them may go now; the rest end
 * with the start of a value the next bytes may finish, and are held (at
 * most the longest value less one) until then or the end (eof: all may
 * go). A caller that holds bytes while its server is silent for
 * NET_SECRET_MASK_HOLD_MS lets them go (eof): a server that quotes a
 * value sends it whole, and a response's last bytes must not wait on it. */
#define NET_SECRET_MASK_HOLD_MS 100
/* The bytes one call masks together (more: value after value). */
#define NET_SECRET_MASK_MAX (128u << 10)
struct net_secret_mask {
	const struct net_secret *s;
	size_t n;
	uint64_t masked;	/* values masked so far */
};
void net_secret_mask_init(struct net_secret_mask *m, const struct net_secret *s, size_t n);
size_t net_secret_mask(struct net_secret_mask *m, char *p, size_t len, bool eof);
/* Zero and free what net_secret holds. */
void net_secret_wipe(struct net_secret *s);
