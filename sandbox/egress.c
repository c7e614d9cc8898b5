#include "sandbox/egress.h"
#include "sandbox/box.h"
#include "net/proxy.h"
#include "proto/netmux.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/loop.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* One event line at most this long (a host name, a reason, numbers). */
#define EGRESS_LINE_MAX 4096
/* How long a stopping proxy has to end its connections and report them. */
#define EGRESS_STOP_MS 500

void egress_init(struct egress *g)
{
	*g = (struct egress){ .pidfd = -1, .ev_fd = -1, .host_fd = -1 };
	buf_init(&g->line, EGRESS_LINE_MAX);
}

int egress_listen(struct egress *g, const char *boxdir, struct err *e)
{
	if ((size_t)snprintf(g->host_path, sizeof(g->host_path), "%s/" EGRESS_SOCK, boxdir) >= sizeof(g->host_path))
		return err_set(e, -ENAMETOOLONG, "the box's egress socket path is too long");
	g->host_fd = fdio_unix_listen(g->host_path, 64, true);
	if (g->host_fd < 0) {
		int r = err_setc(e, g->host_fd, "cannot listen on %s", g->host_path);
		g->host_path[0] = 0;
		return r;
	}
	return 0;
}

void egress_free(struct egress *g)
{
	if (g->host_fd >= 0) {
		close(g->host_fd);
		unlink(g->host_path);
	}
	g->host_fd = -1;
	buf_free(&g->line);
}

/* The host's connections (ward's, for the box): its owner's only. */
struct egress_host {
	struct net_proxy *p;
	uid_t owner;
	int reserve;		/* given up when out of descriptors (fdio_accept) */
};

static void egress_on_host(struct loop *l, int fd, uint32_t events, void *data)
{
	struct egress_host *h = data;
	for (int i = 0; i < 16; i++) {
		int c = fdio_accept(fd, NULL, NULL, &h->reserve);
		if (c == -EMFILE)
			continue;	/* (shed: out of descriptors) */
		if (c < 0)
			return;
		if (!fdio_peer_is(c, h->owner)) {
			close(c);
			continue;
		}
		net_proxy_add_client(h->p, c);
	}
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

/* SIGTERM (egress_stop): the proxy ends its connections, reporting what
 * each carried, and exits. */
static void egress_on_term(struct loop *l, int fd, uint32_t events, void *data)
{
	net_proxy_stop(data);
}

static __attribute__((noreturn)) void egress_child(const struct box_opts *o, const struct box_inst *inst, int ev_w,
						   int host_fd, pid_t keeper, uint64_t used_before)
{
	prctl(PR_SET_NAME, "ward-proxy");
	/* The keeper blocks its signals for its signalfd; the proxy reads
	 * only SIGTERM, through one of its own. */
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_SETMASK, &term, NULL);
	int keep[] = { inst->net_fd, ev_w, host_fd };
	fdio_close_all_but(3, keep, 3);
	struct egress_host host = { .owner = getuid(), .reserve = open("/dev/null", O_RDONLY | O_CLOEXEC) };
	int sfd = signalfd(-1, &term, SFD_CLOEXEC | SFD_NONBLOCK);
	struct err e = { 0 };
	fdio_set_nonblock(inst->net_fd, true);
	struct net_proxy_cfg cfg = {
		.allow = o->allow, .nallow = o->nallow,
		.listen_fd = inst->net_mux ? -1 : inst->net_fd,
		.event_fd = ev_w,
		.max_bytes = o->net_max_bytes ? o->net_max_bytes : BOX_NET_MAX_BYTES_DEFAULT,
		.used_before = used_before,
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
	host.p = p;
	if (host_fd >= 0 && loop_add(net_proxy_loop(p), host_fd, EPOLLIN, egress_on_host, &host) < 0) {
		fprintf(stderr, "ward-proxy: cannot serve the box's egress socket\n");
		_exit(1);
	}
	if (sfd < 0 || loop_add(net_proxy_loop(p), sfd, EPOLLIN, egress_on_term, p) < 0) {
		fprintf(stderr, "ward-proxy: cannot take SIGTERM\n");
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
	/* Each connection still open is reported, with its bytes, as it ends. */
	netmux_free(m);
	net_proxy_free(p);
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
		egress_child(o, inst, ev[1], g->host_fd, keeper, g->up + g->down);
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
		/* SIGTERM first, so that the bytes of the tunnels it ends count
		 * (the budget is the box's, over its restarts); then, whatever
		 * it did, SIGKILL and the reap. */
		if (g->pidfd >= 0 && syscall(SYS_pidfd_send_signal, g->pidfd, SIGTERM, NULL, 0) == 0) {
			struct pollfd pf = { .fd = g->pidfd, .events = POLLIN };
			poll(&pf, 1, EGRESS_STOP_MS);
		}
		box_kill_reap(g->pid, g->pidfd, -1);
	}
	if (g->ev_fd >= 0) {
		egress_read(g, on_event, ud);
		close(g->ev_fd);
	}
	g->pid = 0;
	g->pidfd = g->ev_fd = -1;
	g->line.len = 0;
}
