/* Many TCP streams over one byte stream: how a vm box's connections to
 * its egress proxy cross the VM's second virtio-serial port. The guest
 * opens a stream for each connection a process in the VM makes to the
 * proxy's address; the host hands each stream to the proxy as a socket.
 *
 * Frames are the box protocol's (proto.h header) with their own types.
 * Each direction of each stream has a window: a sender sends no more than
 * NETMUX_WINDOW bytes the receiver has not yet credited back, so the
 * receiver never stops reading the port and one slow stream never stalls
 * the others. Ids are never reused. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/loop.h"

#define NETMUX_WINDOW (256u << 10)
#define NETMUX_MAX_STREAMS 256

enum netmux_type {
	NETMUX_OPEN = 1,	/* guest -> host: a new stream */
	NETMUX_DATA = 2,	/* bytes, at most the window the peer gave */
	NETMUX_EOF = 3,		/* the sender's direction has ended (shutdown) */
	NETMUX_CLOSE = 4,	/* the stream is gone, both ways */
	NETMUX_CREDIT = 5,	/* u32 (little-endian): bytes the receiver consumed */
};

struct netmux;
/* The host's side of an OPEN: a connected local socket for the stream
 * (the mux owns it from then on), or a negative errno to refuse it. */
typedef int netmux_open_cb(void *ud, int *ret_fd);

/* Serve the streams over fd (non-blocking; the mux owns it) in loop l.
 * on_open is NULL on the side that opens streams (the guest). */
int netmux_new(struct loop *l, int fd, netmux_open_cb *on_open, void *ud, struct netmux **ret);
void netmux_free(struct netmux *m);
/* A new stream carrying local_fd (a connected socket; owned from here,
 * closed on failure). */
int netmux_open(struct netmux *m, int local_fd);
/* The port closed or the peer broke the protocol: every stream is closed. */
bool netmux_dead(const struct netmux *m);
unsigned netmux_streams(const struct netmux *m);
