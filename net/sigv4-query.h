/* A presigned URL (SigV4 in the query: X-Amz-Algorithm, X-Amz-Credential,
 * X-Amz-Date, X-Amz-SignedHeaders, X-Amz-Signature, and
 * X-Amz-Security-Token where there is one; AWS's "Authenticating Requests:
 * Using Query Parameters") that a box made with its placeholder keys,
 * checked and made again with the real ones at the egress proxy, as
 * net_sigv4_resign does for the Authorization header. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "net/sigv4.h"

/* Whether the query q[0..n) holds X-Amz-Credential (a presigned URL's). */
bool net_sigv4_query_is_presigned(const char *q, size_t n);
/* head's presigned URL re-signed: its X-Amz-Credential named the
 * placeholder's key (-EPERM: another key, another token), its signature
 * holds with the placeholder keys (-EBADMSG: not, or not a SigV4 URL);
 * the URL goes on with the real key id, token and signature. 1 re-signed,
 * -ENOBUFS past head's cap; why[wn] says which; head changed only on 1. */
int net_sigv4_query_resign(struct buf *head, const struct net_sigv4_keys *k, const char *body_hash, char *why,
			   size_t wn);
