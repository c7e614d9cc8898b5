/* A box's ports opened to the host (ward box port, --publish): the keeper
 * listens on the host (loopback unless an address is asked for) and
 * carries each connection it accepts to the port inside the box.
 *
 * ns: a socket made in the box's network namespace, by a helper process
 * that joined the box's user and network namespaces (setns on the guest's
 * pidfd) and does nothing but make unconnected TCP sockets and pass them
 * back (SCM_RIGHTS); the keeper connects it and carries the bytes both ways
 * in its loop, by splice(2) through a pipe per direction. The helper is
 * per instance of the box (a restart or a wake is a new network
 * namespace): it ends with the guest. It is in no namespace of the box but
 * those two, so no process of the box can see or signal it.
 *
 * vm: a stream the keeper opens over the VM's network port (keeper-mux.c,
 * proto/netmux.h), naming the port; the guest connects it to that port on
 * the VM's loopback and says OPENED, or closes it. The VM has no network
 * device: a published port is the only way in, and reaches that port.
 *
 * The listeners are the box's, for its life: kept over restarts and
 * hibernation (a connection to a box that is not running is closed at
 * once), closed with the box. */
#include "sandbox/box.h"
#include "sandbox/box-start.h"
#include "sandbox/keeper-int.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "proto/netmux.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Connections carried at once, over all of the box's ports (each holds six
 * descriptors of the keeper's: two sockets, two pipes); past it a new
 * one is closed as soon as it is accepted. */
#define KPORT_CONNS_MAX 64
/* Asked of each pipe; the kernel may give less. */
#define KPORT_PIPE_SIZE (256 * 1024)
/* How long the helper has to hand over a socket. */
#define KPORT_HELPER_MS 1000

struct kport {
	int lfd;
	struct box_port_spec spec;	/* host_port: the one bound */
	struct netmux_tally t;		/* t.open: connections held now (connecting or carried) */
	int reserve;			/* given up when out of descriptors (fdio_accept) */
};

/* One direction: src -> pipe -> dst. */
struct kport_dir {
	int src, dst, pipe[2];
	size_t inpipe;
	bool eof, shut;
};

struct kport_conn {
	struct kport *p;
	int cfd, bfd;			/* the host's client; the socket into the box */
	bool connected;
	uint32_t cev, bev;		/* registered with the loop (0: not in it) */
	struct kport_dir in, out;	/* host -> box, box -> host */
	struct kport_conn *next;
};

static struct kport ports[BOX_PORTS_MAX];
static size_t nports;
static struct kport_conn *conns;
static size_t nconns;
static pid_t helper_pid;
static int helper_pidfd = -1, helper_fd = -1;

static void kport_helper_stop(void)
{
	if (helper_fd >= 0)
		close(helper_fd);
	helper_fd = -1;
	if (helper_pid > 0)
		box_kill_reap(helper_pid, helper_pidfd, -1);
	helper_pid = 0;
	helper_pidfd = -1;
}

static __attribute__((noreturn)) void kport_helper_main(int fd, int pidfd, pid_t keeper)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != keeper)
		_exit(1);
	prctl(PR_SET_NAME, "ward-port");
	int keep[] = { fd, pidfd };
	fdio_close_all_but(3, keep, 2);
	/* Its stderr is not the keeper's log: it says nothing, and holds
	 * nothing of the host's but /dev/null. */
	dup2(STDIN_FILENO, STDERR_FILENO);
	/* Both at once, from the guest's pidfd: the namespaces of that very
	 * process (Linux 5.8). Joining the box's user namespace first is
	 * what lets an unprivileged keeper join its network namespace; the
	 * helper has no privilege outside the box's namespaces after. */
	if (setns(pidfd, CLONE_NEWUSER | CLONE_NEWNET) < 0)
		_exit(2);
	close(pidfd);
	for (;;) {
		char b;
		ssize_t n = read(fd, &b, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		int s = socket(b == '6' ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (s < 0 || fdio_send_fd(fd, s) < 0) {
			if (write(fd, "E", 1) < 0)
				_exit(1);
		}
		if (s >= 0)
			close(s);
	}
}

static int kport_helper_start(void)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid_t keeper = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(sp[0]), close(sp[1]);
		return r;
	}
	if (pid == 0) {
		close(sp[0]);
		kport_helper_main(sp[1], K.inst.pidfd, keeper);
	}
	close(sp[1]);
	helper_pid = pid;
	helper_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	helper_fd = sp[0];
	return 0;
}

/* An unconnected socket in the box's network namespace. */
static int kport_box_socket(void)
{
	/* A box with the host's network: the host's own. */
	if (K.o->net == BOX_NET_HOST) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	if (helper_fd < 0) {
		int r = kport_helper_start();
		if (r < 0)
			return r;
	}
	int r = fdio_write_full(helper_fd, "4", 1);
	int fd = r < 0 ? r : fdio_recv_fd(helper_fd, now_ms() + KPORT_HELPER_MS);
	if (fd < 0) {
		/* A helper that could not join or did not answer: made again
		 * at the next connection. */
		keeper_log("keeper: no socket into the box for a port: %s", strerror(-fd));
		kport_helper_stop();
	}
	return fd;
}

static void kport_dir_close(struct kport_dir *d)
{
	for (int i = 0; i < 2; i++)
		if (d->pipe[i] >= 0)
			close(d->pipe[i]);
	d->pipe[0] = d->pipe[1] = -1;
}

static void kport_conn_free(struct kport_conn *c)
{
	for (struct kport_conn **pp = &conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->cev)
		loop_del(K.loop, c->cfd);
	if (c->bev)
		loop_del(K.loop, c->bfd);
	close(c->cfd);
	close(c->bfd);
	kport_dir_close(&c->in);
	kport_dir_close(&c->out);
	c->p->t.open--;
	nconns--;
	free(c);
}

/* Move what moves without blocking; 0, 1 when the direction is done, or
 * -errno. */
static int kport_pump(struct kport_dir *d, uint64_t *count)
{
	for (int round = 0; round < 16; round++) {
		if (d->inpipe) {
			ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->inpipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n > 0) {
				d->inpipe -= (size_t)n;
				*count += (uint64_t)n;
				continue;
			}
			if (n < 0 && errno == EAGAIN)
				return 0;
			return n < 0 ? -errno : -EPIPE;
		}
		if (d->eof) {
			if (!d->shut) {
				shutdown(d->dst, SHUT_WR);
				d->shut = true;
			}
			return 1;
		}
		ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, KPORT_PIPE_SIZE, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n > 0) {
			d->inpipe += (size_t)n;
			continue;
		}
		if (n == 0) {
			d->eof = true;
			continue;
		}
		if (errno == EAGAIN)
			return 0;
		return -errno;
	}
	return 0;
}

static void on_conn(struct loop *l, int fd, uint32_t events, void *data);

/* Register what each side waits for; a side that waits for nothing is out
 * of the loop (a hung-up socket would otherwise wake it forever). */
static void kport_watch(struct kport_conn *c, int fd, uint32_t *have, uint32_t want)
{
	if (want == *have)
		return;
	if (!want)
		loop_del(K.loop, fd);
	else if (!*have)
		loop_add(K.loop, fd, want, on_conn, c);
	else
		loop_mod(K.loop, fd, want);
	*have = want;
}

static uint32_t kport_wants(const struct kport_conn *c, int fd)
{
	uint32_t m = 0;
	const struct kport_dir *dirs[] = { &c->in, &c->out };
	for (size_t i = 0; i < 2; i++) {
		const struct kport_dir *d = dirs[i];
		if (d->src == fd && !d->eof && !d->inpipe)
			m |= EPOLLIN;
		if (d->dst == fd && d->inpipe)
			m |= EPOLLOUT;
	}
	return m;
}

static int kport_dir_init(struct kport_dir *d, int src, int dst)
{
	*d = (struct kport_dir){ .src = src, .dst = dst, .pipe = { -1, -1 } };
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	fcntl(d->pipe[1], F_SETPIPE_SZ, KPORT_PIPE_SIZE);
	return 0;
}

static void on_conn(struct loop *l, int fd, uint32_t events, void *data)
{
	struct kport_conn *c = data;
	K.last_activity = now_ms();
	if (!c->connected) {
		/* The client gave up while the box's side still connects (a
		 * server whose backlog is full): nothing waits for it. */
		if (fd == c->cfd) {
			if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				kport_conn_free(c);
			return;
		}
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(c->bfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
			c->p->t.refused++;
			kport_conn_free(c);	/* nothing listens there: the client sees the close */
			return;
		}
		c->connected = true;
		if (kport_dir_init(&c->in, c->cfd, c->bfd) < 0 || kport_dir_init(&c->out, c->bfd, c->cfd) < 0) {
			kport_conn_free(c);
			return;
		}
		c->p->t.conns++;
	}
	int a = kport_pump(&c->in, &c->p->t.in), b = kport_pump(&c->out, &c->p->t.out);
	if (a < 0 || b < 0 || (a == 1 && b == 1)) {
		kport_conn_free(c);
		return;
	}
	kport_watch(c, c->cfd, &c->cev, kport_wants(c, c->cfd));
	kport_watch(c, c->bfd, &c->bev, kport_wants(c, c->bfd));
}

/* Connections held now, over all of the box's ports. */
static size_t kport_held(void)
{
	size_t n = 0;
	for (size_t i = 0; i < nports; i++)
		n += ports[i].t.open;
	return n;
}

static void on_port_accept(struct loop *l, int fd, uint32_t events, void *data)
{
	struct kport *p = data;
	for (int i = 0; i < 16; i++) {
		int cfd = fdio_accept(fd, NULL, NULL, &p->reserve);
		if (cfd == -EMFILE)
			continue;
		if (cfd < 0)
			return;
		K.last_activity = now_ms();
		if (K.inst.net_mux) {
			/* vm: a stream over the VM's port, closed at once where
			 * there is none (the box not running) or the box carries
			 * all it may; the mux counts it. */
			struct netmux *m = K.up && kport_held() < KPORT_CONNS_MAX ? keeper_mux() : NULL;
			if (!m || netmux_connect(m, cfd, p->spec.port, &p->t) < 0)
				p->t.refused++;
			if (!m)
				close(cfd);
			continue;
		}
		/* A box not running (hibernated, or being made again), or one
		 * carrying all it may: closed at once, never queued. */
		int bfd = K.up && nconns < KPORT_CONNS_MAX ? kport_box_socket() : -EAGAIN;
		struct kport_conn *c = bfd >= 0 ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			p->t.refused++;
			close(cfd);
			if (bfd >= 0)
				close(bfd);
			continue;
		}
		*c = (struct kport_conn){ .p = p, .cfd = cfd, .bfd = bfd, .next = conns,
					  .in.pipe = { -1, -1 }, .out.pipe = { -1, -1 } };
		conns = c;
		nconns++;
		p->t.open++;
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(p->spec.port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		if (connect(bfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
			p->t.refused++;
			kport_conn_free(c);
			continue;
		}
		/* Connected (or refused) when the socket is writable. */
		kport_watch(c, c->bfd, &c->bev, EPOLLOUT);
		kport_watch(c, c->cfd, &c->cev, EPOLLRDHUP);
	}
}

static struct kport *kport_find(uint16_t port)
{
	for (size_t i = 0; i < nports; i++)
		if (ports[i].spec.port == port)
			return &ports[i];
	return NULL;
}

static cJSON *kport_json(const struct kport *p)
{
	cJSON *j = cJSON_CreateObject();
	char addr[INET_ADDRSTRLEN + 8];
	snprintf(addr, sizeof(addr), "%s:%u", p->spec.addr, p->spec.host_port);
	cJSON_AddNumberToObject(j, "port", p->spec.port);
	cJSON_AddStringToObject(j, "address", addr);
	cJSON_AddNumberToObject(j, "connections", (double)p->t.conns);
	cJSON_AddNumberToObject(j, "refused", (double)p->t.refused);
	cJSON_AddNumberToObject(j, "open", p->t.open);
	cJSON_AddNumberToObject(j, "bytes_in", (double)p->t.in);
	cJSON_AddNumberToObject(j, "bytes_out", (double)p->t.out);
	return j;
}

int keeper_port_open(const struct box_port_spec *s, cJSON *ret, struct err *e)
{
	struct kport *p = kport_find(s->port);
	if (p) {
		/* Asked again: the one open, unless another address is asked. */
		if ((s->host_port && s->host_port != p->spec.host_port) || (s->addr[0] && strcmp(s->addr, p->spec.addr)))
			return err_set(e, -EEXIST, "the box's port %u is open at %s:%u already", s->port, p->spec.addr,
				       p->spec.host_port);
		cJSON_AddItemToObject(ret, "port", kport_json(p));
		return 0;
	}
	if (nports >= BOX_PORTS_MAX)
		return err_set(e, -ENOSPC, "the box has %d ports open to the host, as many as it may", BOX_PORTS_MAX);
	struct box_port_spec spec = *s;
	if (!spec.addr[0])
		snprintf(spec.addr, sizeof(spec.addr), "127.0.0.1");
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(spec.host_port) };
	if (inet_pton(AF_INET, spec.addr, &sa.sin_addr) != 1)
		return err_set(e, -EINVAL, "\"%s\" is not an IPv4 address", spec.addr);
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return err_setc(e, -errno, "cannot make a socket for the port");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
		return err_setc(e, -errno, "cannot listen on %s:%u for the box's port %u", spec.addr, spec.host_port,
				spec.port);
	socklen_t len = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return err_setc(e, -errno, "getsockname");
	spec.host_port = ntohs(sa.sin_port);
	p = &ports[nports];
	*p = (struct kport){ .lfd = fd, .spec = spec, .reserve = open("/dev/null", O_RDONLY | O_CLOEXEC) };
	if (loop_add(K.loop, fd, EPOLLIN, on_port_accept, p) < 0) {
		if (p->reserve >= 0)
			close(p->reserve);
		return err_set(e, -ENOMEM, "cannot watch the port's listener");
	}
	p->lfd = TAKE_FD(fd);
	nports++;
	keeper_log("keeper: the box's port %u is open at %s:%u", spec.port, spec.addr, spec.host_port);
	cJSON_AddItemToObject(ret, "port", kport_json(p));
	return 0;
}

void keeper_port_list(cJSON *ret)
{
	cJSON *a = cJSON_AddArrayToObject(ret, "ports");
	for (size_t i = 0; a && i < nports; i++)
		cJSON_AddItemToArray(a, kport_json(&ports[i]));
}

bool keeper_port_busy(void)
{
	return kport_held() > 0;
}

void keeper_port_down(void)
{
	while (conns)
		kport_conn_free(conns);
	kport_helper_stop();
}

void keeper_port_free(void)
{
	keeper_port_down();
	for (size_t i = 0; i < nports; i++) {
		loop_del(K.loop, ports[i].lfd);
		close(ports[i].lfd);
		if (ports[i].reserve >= 0)
			close(ports[i].reserve);
	}
	nports = 0;
}

void keeper_port_request(struct kclient *c, const struct frame *f)
{
	struct err e = { 0 };
	cJSON *j = cJSON_CreateObject();
	int r = 0;
	if (!f->len) {
		keeper_port_list(j);
	} else {
		cJSON *req = cJSON_ParseWithLength((const char *)f->payload, f->len);
		const cJSON *port = cJSON_GetObjectItemCaseSensitive(req, "port");
		const cJSON *hp = cJSON_GetObjectItemCaseSensitive(req, "host_port");
		const char *addr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "addr"));
		struct box_port_spec s = { 0 };
		struct in_addr a;
		if (!cJSON_IsNumber(port) || port->valuedouble < 1 || port->valuedouble > 65535 ||
		    port->valuedouble != (int)port->valuedouble || (hp && (!cJSON_IsNumber(hp) || hp->valuedouble < 0 ||
		    hp->valuedouble > 65535 || hp->valuedouble != (int)hp->valuedouble)) ||
		    (addr && (strlen(addr) >= sizeof(s.addr) || inet_pton(AF_INET, addr, &a) != 1))) {
			r = err_set(&e, -EINVAL, "the port request is not {port, host_port, addr} as ward sends it");
		} else {
			s.port = (uint16_t)port->valueint;
			s.host_port = hp ? (uint16_t)hp->valueint : 0;
			if (addr)
				snprintf(s.addr, sizeof(s.addr), "%s", addr);
			r = keeper_port_open(&s, j, &e);
		}
		cJSON_Delete(req);
	}
	kclient_reply(c, f->id, j, r, &e);
}

int keeper_port_publish(struct err *e)
{
	for (size_t i = 0; i < K.o->npublish; i++) {
		struct box_port_spec s;
		if (box_port_parse(K.o->publish[i], &s, e) < 0)
			return -EINVAL;
		cJSON *j = cJSON_CreateObject();
		int r = keeper_port_open(&s, j, e);
		cJSON_Delete(j);
		if (r < 0)
			return r;
	}
	return 0;
}
