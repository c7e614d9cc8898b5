/* A VM's way to the egress proxy. The VM has no network device: a process
 * connects to 127.0.0.1:PORT (HTTP_PROXY), and each connection becomes a
 * stream over the "ward-net" virtio-serial port (proto/netmux.h) to the
 * proxy on the host, which decides what it may reach. One thread with its
 * own loop; the port is reopened when the host comes back. */
#include "guest/guest.h"
#include "base/fdio.h"
#include "base/loop.h"
#include "proto/netmux.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

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

static void *netfwd_main(void *arg)
{
	for (;;) {
		int port = vm_open_port(VM_PORT_NET);
		if (netmux_new(N.loop, port, NULL, NULL, &N.mux) < 0) {
			close(port);
			sleep(1);
			continue;
		}
		while (!netmux_dead(N.mux))
			loop_run_once(N.loop, -1);
		/* The host's side went away (its proxy was restarted, or the
		 * host is coming back after a restore): the streams are gone. */
		netmux_free(N.mux);
		N.mux = NULL;
	}
	return NULL;
}

int netfwd_start(int port)
{
	N.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	if (N.lfd < 0 || setsockopt(N.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(N.lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(N.lfd, 128) < 0)
		return -errno;
	int r = loop_new(&N.loop);
	if (r < 0)
		return r;
	r = loop_add(N.loop, N.lfd, EPOLLIN, netfwd_accept, NULL);
	if (r < 0)
		return r;
	pthread_t t;
	r = pthread_create(&t, NULL, netfwd_main, NULL);
	if (r != 0)
		return -r;
	pthread_detach(t);
	return 0;
}
