/* Fuzz target for the stream multiplexer's host side: whatever a guest
 * writes on the port (frames of any type, ids, lengths, windows and
 * credits, or bytes that are not frames), the mux stays within its
 * bounds: never more than NETMUX_MAX_STREAMS streams, no read or write
 * outside a buffer, every stream's socket closed when the mux is freed
 * (the guest's and the host's own, a published port's),
 * and the loop never spins without the input moving. A stream the guest
 * opens gets a socketpair whose far end this harness reads and writes a
 * little to, so data, EOF and credit all flow both ways. Built with
 * libFuzzer when -Dfuzz=true (clang); otherwise main() replays the corpus
 * as a test. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/loop.h"
#include "proto/netmux.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAR_MAX (NETMUX_MAX_STREAMS + 8)

struct harness {
	int far[FAR_MAX];	/* the far ends of the streams' sockets */
	int n;
};

static int on_open(void *ud, const uint8_t *what, size_t n, int *ret_fd)
{
	(void)what;
	(void)n;
	struct harness *h = ud;
	if (h->n >= FAR_MAX)
		abort();	/* the mux opened past its own cap */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	h->far[h->n++] = sv[1];
	/* Something for the stream to carry towards the guest. */
	(void)!send(sv[1], "hello from the host", 19, MSG_NOSIGNAL);
	*ret_fd = sv[0];
	return 0;
}

static void drain(int fd)
{
	char b[65536];
	while (read(fd, b, sizeof(b)) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct harness h = { .n = 0 };
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	struct loop *l;
	if (loop_new(&l) < 0)
		abort();
	struct netmux *m;
	if (netmux_new(l, sv[0], NETMUX_SIDE_HOST, on_open, &h, &m) < 0)
		abort();
	/* A stream of the host's own (a published port's), so that what the
	 * guest says of host ids (OPENED, data, credit, close) meets one. */
	struct netmux_tally tally = { 0 };
	int pv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pv) < 0)
		abort();
	(void)!send(pv[1], "to the box's port", 17, MSG_NOSIGNAL);
	if (netmux_connect(m, pv[0], 8080, &tally) < 0)
		abort();
	h.far[h.n++] = pv[1];
	/* Feed the input in pieces, running the loop between them, then end
	 * the guest's side; a bounded number of rounds, each with no wait. */
	size_t off = 0;
	bool shut = false;
	for (int round = 0; round < 4096; round++) {
		if (off < size) {
			/* The mux may have given the port up: EPIPE, not SIGPIPE. */
			ssize_t w = send(sv[1], data + off, size - off, MSG_NOSIGNAL);
			if (w > 0)
				off += (size_t)w;
		} else if (!shut) {
			shutdown(sv[1], SHUT_WR);
			shut = true;
		}
		drain(sv[1]);
		for (int i = 0; i < h.n; i++)
			drain(h.far[i]);
		if (loop_run_once(l, 0) < 0)
			break;
		if (netmux_streams(m) > NETMUX_MAX_STREAMS)
			abort();
		if (shut && netmux_dead(m))
			break;
	}
	netmux_free(m);
	loop_free(l);
	close(sv[1]);
	/* Every stream's socket is closed by the mux: its far end reads EOF. */
	for (int i = 0; i < h.n; i++) {
		char b[64];
		ssize_t r;
		while ((r = read(h.far[i], b, sizeof(b))) > 0)
			;
		if (r < 0 && errno == EAGAIN)
			abort();	/* still open on the mux's side */
		close(h.far[i]);
	}
	return 0;
}

#include "replay.h"
