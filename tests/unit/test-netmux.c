/* The connection mux: many streams over one byte stream, both ends in one
 * loop. The "host" end hands each stream to an echo server; the "guest"
 * end's streams are socketpairs the test writes to and reads from. */
#include "tap.h"
#include "proto/netmux.h"
#include "proto/proto.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

/* The echo server behind the host's end: what it reads it writes back;
 * at EOF it shuts its side once everything is written. */
struct echo {
	int fd;
	char buf[1 << 16];
	size_t len;
	bool eof, shut, slow;
	struct loop *l;
};
static struct echo echoes[300];
static int nechoes;
static bool hold_echo;	/* a stalled server: reads nothing */

static void echo_arm(struct echo *e)
{
	uint32_t ev = 0;
	if (!e->eof && e->len < sizeof(e->buf) && !e->slow)
		ev |= EPOLLIN;
	if (e->len)
		ev |= EPOLLOUT;
	loop_mod(e->l, e->fd, ev);
}

static void echo_cb(struct loop *l, int fd, uint32_t events, void *data)
{
	struct echo *e = data;
	if (events & EPOLLIN && !e->slow) {
		ssize_t n = recv(fd, e->buf + e->len, sizeof(e->buf) - e->len, MSG_DONTWAIT);
		if (n > 0)
			e->len += (size_t)n;
		else if (n == 0)
			e->eof = true;
	}
	if (e->len) {
		ssize_t n = send(fd, e->buf, e->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			memmove(e->buf, e->buf + n, e->len - (size_t)n);
			e->len -= (size_t)n;
		}
	}
	if (e->eof && !e->len && !e->shut) {
		shutdown(fd, SHUT_WR);
		e->shut = true;
	}
	if (e->shut && (events & EPOLLHUP)) {
		loop_del(l, fd);
		close(fd);
		e->fd = -1;
		return;
	}
	echo_arm(e);
}

static struct loop *L;
static int refuse_opens;

static int host_opens;	/* OPENs the host's end took */

static int on_open(void *ud, const uint8_t *what, size_t n, int *ret_fd)
{
	if (refuse_opens || n)
		return -EPERM;
	host_opens++;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
		return -errno;
	struct echo *e = &echoes[nechoes++];
	*e = (struct echo){ .fd = sp[0], .l = L, .slow = hold_echo };
	loop_add(L, sp[0], EPOLLIN, echo_cb, e);
	*ret_fd = sp[1];
	return 0;
}

/* The guest's end of a published port (as guest/netfwd.c): a connection
 * to the port on loopback, not waited for. */
static int guest_on_open(void *ud, const uint8_t *what, size_t n, int *ret_fd)
{
	if (n != 2)
		return -EPROTO;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(what[0] | what[1] << 8)),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* A TCP echo server on loopback (the box's server behind a port). */
static void on_tcp_accept(struct loop *l, int fd, uint32_t events, void *data)
{
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	struct echo *e = &echoes[nechoes++];
	*e = (struct echo){ .fd = c, .l = L };
	loop_add(L, c, EPOLLIN, echo_cb, e);
}

static uint16_t tcp_port(int fd)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	return ntohs(sa.sin_port);
}

struct client {
	int fd;
	uint64_t sent, got, total;
	uint32_t seed;
	bool done, eof_sent;
	bool bad;
};

static uint8_t pat(uint64_t i, uint32_t seed)
{
	return (uint8_t)((i * 2654435761u) >> 13 ^ seed);
}

/* Push and pull every client without blocking. */
static void clients_step(struct client *c, int n)
{
	uint8_t b[32768];
	for (int i = 0; i < n; i++) {
		if (c[i].done)
			continue;
		while (c[i].sent < c[i].total) {
			size_t k = c[i].total - c[i].sent < sizeof(b) ? (size_t)(c[i].total - c[i].sent) : sizeof(b);
			for (size_t j = 0; j < k; j++)
				b[j] = pat(c[i].sent + j, c[i].seed);
			ssize_t w = send(c[i].fd, b, k, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w <= 0)
				break;
			c[i].sent += (uint64_t)w;
		}
		if (c[i].sent == c[i].total && !c[i].eof_sent) {
			shutdown(c[i].fd, SHUT_WR);
			c[i].eof_sent = true;
		}
		for (;;) {
			ssize_t r = recv(c[i].fd, b, sizeof(b), MSG_DONTWAIT);
			if (r == 0) {
				c[i].done = true;
				break;
			}
			if (r < 0)
				break;
			for (ssize_t j = 0; j < r; j++)
				if (b[j] != pat(c[i].got + (uint64_t)j, c[i].seed))
					c[i].bad = true;
			c[i].got += (uint64_t)r;
		}
	}
}

static bool all_done(const struct client *c, int n)
{
	for (int i = 0; i < n; i++)
		if (!c[i].done)
			return false;
	return true;
}

int main(void)
{
	loop_new(&L);
	int port[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, port);
	struct netmux *guest, *host;
	ok(netmux_new(L, port[0], NETMUX_SIDE_GUEST, guest_on_open, NULL, &guest) == 0, "the guest's end");
	ok(netmux_new(L, port[1], NETMUX_SIDE_HOST, on_open, NULL, &host) == 0, "the host's end");

	/* Twenty streams at once, 2 MiB each way, every byte checked. */
	enum { N = 20 };
	struct client c[N];
	for (int i = 0; i < N; i++) {
		int sp[2];
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp);
		c[i] = (struct client){ .fd = sp[0], .total = 2u << 20, .seed = (uint32_t)i * 7 + 1 };
		netmux_open(guest, sp[1]);
	}
	int64_t until = now_ms() + 20000;
	while (!all_done(c, N) && now_ms() < until) {
		clients_step(c, N);
		loop_run_once(L, now_ms() + 5);
	}
	bool good = true;
	for (int i = 0; i < N; i++)
		good = good && c[i].done && !c[i].bad && c[i].got == c[i].total;
	ok(good, "20 streams, 2 MiB each way: every byte back, in order, each stream ended by its EOF");
	for (int i = 0; i < N; i++)
		close(c[i].fd);
	for (int k = 0; k < 50 && (netmux_streams(guest) || netmux_streams(host)); k++)
		loop_run_once(L, now_ms() + 5);
	is_int(netmux_streams(guest) + netmux_streams(host), 0, "and every stream is gone from both ends");

	/* A stalled server does not stall the others: its window fills, the
	 * port keeps moving. */
	hold_echo = true;
	int sp[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp);
	struct client stuck = { .fd = sp[0], .total = 8u << 20, .seed = 99 };
	netmux_open(guest, sp[1]);
	for (int k = 0; k < 200; k++) {
		clients_step(&stuck, 1);
		loop_run_once(L, now_ms() + 2);
	}
	hold_echo = false;
	ok(stuck.sent < 3u << 20, "a stalled stream takes no more than its window and the sockets' buffers (%llu KiB sent)",
	   (unsigned long long)(stuck.sent >> 10));
	struct client other[2];
	for (int i = 0; i < 2; i++) {
		int q[2];
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, q);
		other[i] = (struct client){ .fd = q[0], .total = 1u << 20, .seed = 5 + (uint32_t)i };
		netmux_open(guest, q[1]);
	}
	until = now_ms() + 10000;
	while (!all_done(other, 2) && now_ms() < until) {
		clients_step(other, 2);
		loop_run_once(L, now_ms() + 5);
	}
	ok(all_done(other, 2) && !other[0].bad && !other[1].bad && other[0].got == other[0].total,
	   "twin: two other streams carry 1 MiB each way meanwhile");
	/* The stalled server wakes: its stream completes too. */
	for (int i = 0; i < nechoes; i++)
		if (echoes[i].slow && echoes[i].fd >= 0) {
			echoes[i].slow = false;
			echo_arm(&echoes[i]);
		}
	until = now_ms() + 20000;
	while (!stuck.done && now_ms() < until) {
		clients_step(&stuck, 1);
		loop_run_once(L, now_ms() + 5);
	}
	ok(stuck.done && !stuck.bad && stuck.got == stuck.total, "and the stalled one, once its server reads, gets all 8 MiB back");
	close(stuck.fd);
	close(other[0].fd);
	close(other[1].fd);

	/* A refused OPEN: the guest's socket is closed. */
	refuse_opens = 1;
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp);
	netmux_open(guest, sp[1]);
	char ch;
	ssize_t r = -1;
	until = now_ms() + 2000;
	while (now_ms() < until) {
		loop_run_once(L, now_ms() + 5);
		r = recv(sp[0], &ch, 1, MSG_DONTWAIT);
		if (r == 0)
			break;
	}
	is_int(r, 0, "a stream the host refuses is closed at the guest");
	close(sp[0]);
	refuse_opens = 0;

	/* The host opens a stream to a port: the guest connects it there;
	 * every byte comes back and is counted. */
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in lsa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bind(lfd, (struct sockaddr *)&lsa, sizeof(lsa));
	listen(lfd, 16);
	loop_add(L, lfd, EPOLLIN, on_tcp_accept, NULL);
	struct netmux_tally t = { 0 };
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp);
	struct client pc = { .fd = sp[0], .total = 1u << 20, .seed = 31 };
	ok(netmux_connect(host, sp[1], tcp_port(lfd), &t) == 0, "the host opens a stream to a port");
	is_int(t.open, 1, "it is open");
	until = now_ms() + 10000;
	while (!pc.done && now_ms() < until) {
		clients_step(&pc, 1);
		loop_run_once(L, now_ms() + 5);
	}
	ok(pc.done && !pc.bad && pc.got == pc.total, "1 MiB each way through a port on the guest's loopback");
	for (int k = 0; k < 50 && t.open; k++)
		loop_run_once(L, now_ms() + 5);
	ok(t.conns == 1 && t.refused == 0 && t.in == 1u << 20 && t.out == 1u << 20 && t.open == 0,
	   "counted: 1 connection, 1 MiB in and out, none open after (%llu %llu %llu %llu %u)",
	   (unsigned long long)t.conns, (unsigned long long)t.refused, (unsigned long long)t.in,
	   (unsigned long long)t.out, t.open);
	close(sp[0]);
	/* A port nothing listens on: the host's socket is closed, counted as
	 * refused. */
	uint16_t dead = tcp_port(lfd);
	loop_del(L, lfd);
	close(lfd);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp);
	netmux_connect(host, sp[1], dead, &t);
	r = -1;
	until = now_ms() + 3000;
	while (now_ms() < until) {
		loop_run_once(L, now_ms() + 5);
		r = recv(sp[0], &ch, 1, MSG_DONTWAIT);
		if (r == 0)
			break;
	}
	is_int(r, 0, "a port nothing listens on: the host's socket is closed");
	ok(t.refused == 1 && t.conns == 1 && t.open == 0, "and counted as refused, not connected");
	close(sp[0]);

	/* A peer that sends past the window is cut off (that stream only). */
	int raw[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, raw);
	struct netmux *h2;
	netmux_new(L, raw[1], NETMUX_SIDE_HOST, on_open, NULL, &h2);
	/* The test is the peer here: it writes frames while the loop runs, to
	 * a server that reads nothing, so no credit comes back. */
	hold_echo = true;
	struct proto_writer pw;
	proto_writer_init(&pw, 4u << 20);
	proto_queue(&pw, NETMUX_OPEN, 0, 77, NULL, 0);
	static uint8_t big[64 << 10];
	for (int i = 0; i < 32; i++)
		proto_queue(&pw, NETMUX_DATA, 0, 77, big, sizeof(big));
	fdio_set_nonblock(raw[0], true);
	until = now_ms() + 3000;
	while ((proto_pending(&pw) || netmux_streams(h2)) && now_ms() < until) {
		proto_flush(&pw, raw[0]);
		char sink[4096];
		while (read(raw[0], sink, sizeof(sink)) > 0)
			;
		loop_run_once(L, now_ms() + 5);
	}
	proto_writer_free(&pw);
	hold_echo = false;
	is_int(netmux_streams(h2), 0, "a stream whose peer sends past its window is closed");
	ok(!netmux_dead(h2), "twin: the port itself goes on");
	/* The guest cannot open a stream in the host's id space (twin: one
	 * in its own is opened, as above). */
	int before = host_opens;
	fdio_set_nonblock(raw[0], false);
	proto_send(raw[0], NETMUX_OPEN, 0, NETMUX_HOST_ID | 5, NULL, 0);
	proto_send(raw[0], NETMUX_OPEN, 0, 0, NULL, 0);
	proto_send(raw[0], NETMUX_OPEN, 0, 79, NULL, 0);
	for (int k = 0; k < 20 && host_opens == before; k++)
		loop_run_once(L, now_ms() + 5);
	is_int(host_opens - before, 1, "an OPEN in the host's id space (or id 0) is refused; one in the guest's is taken");
	/* An OPEN asking for a port of the host: refused (the host's end
	 * connects nothing it is asked to). */
	uint8_t pp[2] = { 80, 0 };
	proto_send(raw[0], NETMUX_OPEN, 0, 81, pp, sizeof(pp));
	for (int k = 0; k < 10; k++)
		loop_run_once(L, now_ms() + 5);
	is_int(host_opens - before, 1, "an OPEN from the guest naming a port is refused");
	/* A frame of an unknown type: the port is given up. */
	fdio_set_nonblock(raw[0], false);
	proto_send(raw[0], 42, 0, 1, NULL, 0);
	for (int k = 0; k < 20 && !netmux_dead(h2); k++)
		loop_run_once(L, now_ms() + 5);
	ok(netmux_dead(h2), "a frame of an unknown type ends the port");
	netmux_free(h2);
	close(raw[0]);

	/* The port closing closes every stream. */
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp);
	netmux_open(guest, sp[1]);
	for (int k = 0; k < 10; k++)
		loop_run_once(L, now_ms() + 5);
	netmux_free(host);
	until = now_ms() + 2000;
	r = -1;
	while (now_ms() < until) {
		loop_run_once(L, now_ms() + 5);
		r = recv(sp[0], &ch, 1, MSG_DONTWAIT);
		if (r == 0)
			break;
	}
	ok(netmux_dead(guest), "the guest's end sees the port close");
	is_int(r, 0, "and its streams' sockets are closed");
	netmux_free(guest);
	close(sp[0]);
	loop_free(L);
	return tap_done();
}
