#include "sandbox/egress.h"
#include "sandbox/box.h"
#include "net/proxy.h"
#include "proto/netmux.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* One event line at most this long (a host name, a reason, numbers). */
#define EGRESS_LINE_MAX 4096

void egress_init(struct egress *g)
{
	*g = (struct egress){ .pidfd = -1, .ev_fd = -1 };
	buf_init(&g->line, EGRESS_LINE_MAX);
}

/* vm: each stream the guest opens becomes a client of the proxy. */
static int egress_on_open(void *ud, int *ret_fd)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
		return -errno;
	int r = net_proxy_add_client(ud, sp[0]);
	if (r < 0) {
		close(sp[1]);
		return r;
	}
	*ret_fd = sp[1];
	return 0;
}

static __attribute__((noreturn)) void egress_child(const struct box_opts *o, const struct box_inst *inst, int ev_w,
						   pid_t keeper)
{
	prctl(PR_SET_NAME, "ward-proxy");
	/* The keeper blocks its signals for its signalfd; the proxy has none. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int keep[] = { inst->net_fd, ev_w };
	fdio_close_all_but(3, keep, 2);
	struct err e = { 0 };
	fdio_set_nonblock(inst->net_fd, true);
	struct net_proxy_cfg cfg = {
		.allow = o->allow, .nallow = o->nallow,
		.listen_fd = inst->net_mux ? -1 : inst->net_fd,
		.event_fd = ev_w,
		.max_bytes = o->net_max_bytes ? o->net_max_bytes : BOX_NET_MAX_BYTES_DEFAULT,
	};
	struct net_proxy *p;
	if (net_proxy_new(&cfg, &p, &e) < 0) {
		fprintf(stderr, "ward-proxy: %s\n", e.msg);
		_exit(1);
	}
	struct netmux *m = NULL;
	if (inst->net_mux && netmux_new(net_proxy_loop(p), inst->net_fd, egress_on_open, p, &m) < 0) {
		fprintf(stderr, "ward-proxy: cannot serve the VM's port\n");
		_exit(1);
	}
	if (net_proxy_confine(&e) < 0) {
		fprintf(stderr, "ward-proxy: %s\n", e.msg);
		_exit(1);
	}
	/* A change of uid clears the parent-death signal: set it after. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != keeper)
		_exit(1);
	int r = net_proxy_run(p);
	if (r < 0)
		fprintf(stderr, "ward-proxy: %s\n", strerror(-r));
	_exit(r < 0);
}

int egress_start(struct egress *g, const struct box_opts *o, struct box_inst *inst, struct err *e)
{
	if (inst->net_fd < 0)
		return err_set(e, -EINVAL, "the box has no way to its egress proxy");
	int ev[2];
	if (pipe2(ev, O_CLOEXEC) < 0)
		return err_setc(e, -errno, "pipe");
	pid_t keeper = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(ev[0]);
		close(ev[1]);
		return err_setc(e, r, "fork the egress proxy");
	}
	if (pid == 0) {
		close(ev[0]);
		egress_child(o, inst, ev[1], keeper);
	}
	close(ev[1]);
	close(inst->net_fd);
	inst->net_fd = -1;
	fdio_set_nonblock(ev[0], true);
	g->pid = pid;
	g->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	g->ev_fd = ev[0];
	g->line.len = 0;
	return 0;
}

static void egress_line(struct egress *g, const char *p, size_t n, void (*on_event)(void *, cJSON *), void *ud)
{
	cJSON *j = cJSON_ParseWithLength(p, n);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return;
	}
	g->conns++;
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "allowed")))
		g->refused++;
	const cJSON *up = cJSON_GetObjectItemCaseSensitive(j, "up"), *down = cJSON_GetObjectItemCaseSensitive(j, "down");
	if (cJSON_IsNumber(up) && up->valuedouble > 0)
		g->up += (uint64_t)up->valuedouble;
	if (cJSON_IsNumber(down) && down->valuedouble > 0)
		g->down += (uint64_t)down->valuedouble;
	if (on_event)
		on_event(ud, j);
	else
		cJSON_Delete(j);
}

int egress_read(struct egress *g, void (*on_event)(void *ud, cJSON *ev), void *ud)
{
	if (g->ev_fd < 0)
		return -EPIPE;
	char b[16384];
	for (;;) {
		ssize_t n = fdio_read_some(g->ev_fd, b, sizeof(b));
		if (n == -EAGAIN)
			return 0;
		if (n <= 0)
			return -EPIPE;
		const char *p = b, *end = b + n;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
			/* A line over the cap is dropped whole. */
			if (!g->overlong && buf_append(&g->line, p, k) < 0)
				g->overlong = true;
			if (nl) {
				if (!g->overlong)
					egress_line(g, g->line.data, g->line.len, on_event, ud);
				g->line.len = 0;
				g->overlong = false;
			}
			p += k + (nl ? 1 : 0);
		}
	}
}

bool egress_running(const struct egress *g)
{
	return g->pid > 0;
}

void egress_stop(struct egress *g, void (*on_event)(void *ud, cJSON *ev), void *ud)
{
	if (g->pid > 0) {
		if (g->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, g->pidfd, SIGKILL, NULL, 0);
		else
			kill(g->pid, SIGKILL);
		/* One process: its exit is quick; bounded all the same. */
		for (int i = 0; i < 200; i++) {
			pid_t w = waitpid(g->pid, NULL, WNOHANG);
			if (w == g->pid || (w < 0 && errno == ECHILD))
				break;
			struct pollfd pf = { .fd = g->pidfd, .events = POLLIN };
			poll(&pf, 1, 10);
		}
	}
	if (g->ev_fd >= 0) {
		egress_read(g, on_event, ud);
		close(g->ev_fd);
	}
	if (g->pidfd >= 0)
		close(g->pidfd);
	g->pid = 0;
	g->pidfd = g->ev_fd = -1;
	g->line.len = 0;
}
