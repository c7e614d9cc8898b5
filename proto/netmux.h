/* Many TCP streams over one byte stream: how a vm box's connections to
 * its egress proxy cross the VM's second virtio-serial port. The guest
 * opens a stream for each connection a process in the VM makes to the
 * proxy's address; the host hands each stream to the proxy as a socket.
 *
 * The host opens streams too: a published port's connection (ward box
 * port) is a stream the host opens with the box's port in its OPEN, and
 * the guest connects it to that port on the VM's loopback. The host's
 * ids have the top bit set, the guest's have it clear: neither side can
 * open a stream in the other's id space.
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
	NETMUX_OPENED = 6,	/* the receiver of an OPEN has connected its end */
};

/* The side a mux serves (whose id space it opens streams in). */
enum netmux_side { NETMUX_SIDE_GUEST, NETMUX_SIDE_HOST };
#define NETMUX_HOST_ID 0x80000000u

/* Figures of the streams netmux_connect opened (a published port's):
 * connected, refused (closed by the peer before it connected), bytes in
 * (to the peer) and out (from it), and how many are open now. */
struct netmux_tally {
	uint64_t conns, refused, in, out;
	unsigned open;
};

struct netmux;
/* The receiving side of an OPEN whose payload is what[n] (empty: an
 * egress stream; 2 bytes, little-endian: the port to connect to): a local
 * socket for the stream, connected or still connecting (the mux owns it
 * from then on; OPENED goes back once it is connected, CLOSE if it
 * fails), or a negative errno to refuse it. */
typedef int netmux_open_cb(void *ud, const uint8_t *what, size_t n, int *ret_fd);

/* Serve the streams over fd (non-blocking; the mux owns it) in loop l, as
 * side. on_open NULL: the peer's OPENs are all refused. */
int netmux_new(struct loop *l, int fd, enum netmux_side side, netmux_open_cb *on_open, void *ud,
	       struct netmux **ret);
void netmux_free(struct netmux *m);
/* A new stream carrying local_fd (a connected socket; owned from here,
 * closed on failure). */
int netmux_open(struct netmux *m, int local_fd);
/* The same, asking the peer to connect it to its port; counted in t (which
 * outlives the stream or the mux). */
int netmux_connect(struct netmux *m, int local_fd, uint16_t port, struct netmux_tally *t);
/* The port closed or the peer broke the protocol: every stream is closed. */
bool netmux_dead(const struct netmux *m);
unsigned netmux_streams(const struct netmux *m);
