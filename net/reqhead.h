/* The request head a client in a box sends its proxy (RFC 9112), parsed
 * strictly: every byte is the box's. Two forms are taken:
 *
 *   CONNECT host:port HTTP/1.x            a tunnel (TLS checked by its SNI)
 *   METHOD http://host[:port]/p HTTP/1.x  plain HTTP, forwarded
 *
 * and everything else is refused with a reason fit for a 400: origin-form,
 * https:// targets (those go through CONNECT), userinfo, bare CR or LF,
 * obs-fold, a space before a colon, Content-Length with Transfer-Encoding,
 * differing Content-Lengths, a Transfer-Encoding that does not end in
 * chunked, a Connection header naming Host or the framing headers (a
 * proxy that dropped them would change where the body ends), several Host
 * headers, HTTP/2's preface.
 *
 * For forwarding, the head sent upstream is rebuilt: origin-form target,
 * Host from the request target (a proxy ignores the client's Host, RFC 9112
 * 3.2.2), hop-by-hop headers dropped (Connection and the headers it names,
 * Proxy-Connection, Proxy-Authorization, Keep-Alive, TE, Trailer, Upgrade),
 * one Content-Length or "Transfer-Encoding: chunked" as the body is framed,
 * and Connection: close: one request per connection. */
#pragma once
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "net/allow.h"

#define NET_REQHEAD_MAX (16 * 1024)
#define NET_REQHEAD_MAX_LINES 100

enum net_req_kind {
	NET_REQ_CONNECT,
	NET_REQ_FORWARD,
};

enum net_req_body {
	NET_BODY_NONE,
	NET_BODY_LENGTH,
	NET_BODY_CHUNKED,	/* re-framed on the way by net_chunked */
};

struct net_reqhead {
	enum net_req_kind kind;
	char method[32];
	struct net_host host;
	uint16_t port;
	enum net_req_body body;
	uint64_t length;	/* NET_BODY_LENGTH */
	size_t head_len;	/* bytes of the head, its blank line included */
	struct buf upstream;	/* NET_REQ_FORWARD: the head to send on */
};

/* Parse the head at the start of p[0..n). 0: a whole head (ret filled, to
 * free with net_reqhead_free); -EAGAIN: it has not all come yet; -EMSGSIZE:
 * it is over NET_REQHEAD_MAX or NET_REQHEAD_MAX_LINES; -EBADMSG: refused,
 * e says why in one line. Bytes after the head are the caller's. */
int net_reqhead_parse(const char *p, size_t n, struct net_reqhead *ret, struct err *e);
void net_reqhead_free(struct net_reqhead *h);
