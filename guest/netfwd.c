/* A VM's connections to and from the host, over the "ward-net"
 * virtio-serial port (proto/netmux.h). The VM has no network device.
 * Egress: a process connects to 127.0.0.1:PORT (HTTP_PROXY), and each
 * connection becomes a stream to the proxy on the host, which decides
 * what it may reach. Published ports (ward box port): the host opens a
 * stream naming a port, and it is connected to that port on the VM's
 * loopback, and nowhere else. One thread with its own loop; the port is
 * reopened when the host comes back. */
#include "guest/guest.h"
#include "base/fdio.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "proto/netmux.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

/* A port that closed sooner than this after it was opened waits this
 * long before it is opened again. */
#define NETFWD_RETRY_MS 100

static struct {
	int lfd;
	struct loop *loop;
	struct netmux *mux;
} N = { .lfd = -1 };

static void netfwd_accept(struct loop *l, int fd, uint32_t events, void *data)
{
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0)
			return;
		/* Past the mux's cap the connection is refused here. */
		if (!N.mux || netmux_dead(N.mux))
			close(c);
		else
			netmux_open(N.mux, c);
	}
}

/* The host's stream for a published port: a connection to the port on
 * the VM's loopback (a server bound to 0.0.0.0 answers there too). Not
 * waited for: the mux says OPENED or CLOSE when it is done. */
static int netfwd_on_open(void *ud, const uint8_t *what, size_t n, int *ret_fd)
{
	if (n != 2)
		return -EPROTO;
	uint16_t port = (uint16_t)(what[0] | what[1] << 8);
	if (!port)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static void *netfwd_main(void *arg)
{
	for (;;) {
		int port = vm_open_port(VM_PORT_NET);
		if (netmux_new(N.loop, port, NETMUX_SIDE_GUEST, netfwd_on_open, NULL, &N.mux) < 0) {
			close(port);
			sleep(1);
			continue;
		}
		int64_t t0 = now_ms();
		while (!netmux_dead(N.mux))
			loop_run_once(N.loop, -1);
		/* The host's side went away (the box is hibernating, or the
		 * host is coming back after a restore): the streams are gone.
		 * A port the host does not hold reads as closed at once: not
		 * reopened in a busy loop. */
		netmux_free(N.mux);
		N.mux = NULL;
		if (now_ms() - t0 < NETFWD_RETRY_MS)
			usleep(NETFWD_RETRY_MS * 1000);
	}
	return NULL;
}

int netfwd_start(int port)
{
	int r = loop_new(&N.loop);
	if (r < 0)
		return r;
	if (port) {
		N.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int one = 1;
		if (N.lfd < 0 || setsockopt(N.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(N.lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(N.lfd, 128) < 0)
			return -errno;
		r = loop_add(N.loop, N.lfd, EPOLLIN, netfwd_accept, NULL);
		if (r < 0)
			return r;
	}
	/* The thread takes no signals: a process-directed signal goes to a
	 * thread that does not block it, and the main loop's SIGCHLD, read
	 * from a signalfd, would be taken here and dropped (SIG_DFL), its
	 * call never reaped and its result never sent. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	r = pthread_create(&t, NULL, netfwd_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return -r;
	pthread_detach(t);
	return 0;
}
