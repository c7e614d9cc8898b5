/* Building a box, as a flat list of steps. The child of clone3 runs the
 * steps in its new namespaces; any failure travels back to the parent over a
 * CLOEXEC socket as one line, and an exec that succeeds closes that socket. */
#include "sandbox/ns-int.h"
#include "guest/guest.h"
#include "sandbox/box-start.h"
#include "sandbox/box.h"
#include "sandbox/hostview.h"
#include "image/image.h"
#include "net/secret.h"
#include "workspace/layers.h"
#include "base/account.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/gitdir.h"
#include "base/mnt.h"
#include "base/timeutil.h"
#include "proto/proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

void ns_fail(struct ns_child *c, const char *fmt, ...)
{
	char msg[512];
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(msg) - 1)
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(saved));
	fdio_write_full(c->sync_fd, msg, strlen(msg));
	_exit(1);
}

/* Every git directory of the workspace read-only (base/gitdir.h): the
 * box's commands can read a repository (git status, log, diff) but not
 * change what git runs on the host (hooks, config). After the pivot, so
 * that nothing outside the box is reachable, and before anything of the
 * box runs. */
static void ns_git_ro(struct ns_child *c)
{
	struct gitdir_walk w = { 0 };
	char bad[PATH_MAX];
	errno = -gitdir_ro("/workspace", &w, bad, sizeof(bad));
	if (errno)
		ns_fail(c, "make %s read-only", bad);
}

static void ns_loopback_up(void)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
}

/* The egress proxy's address in the box: a listener the host's proxy
 * accepts from. It goes to the keeper; nothing in the box holds it. */
static void ns_proxy_listener(struct ns_child *c)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(NET_PROXY_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
		ns_fail(c, "listen on 127.0.0.1:%d for the egress proxy", NET_PROXY_PORT);
	if (fdio_send_fd(c->net_fd, fd) < 0)
		ns_fail(c, "hand the egress proxy its listener");
	close(fd);
	close(c->net_fd);
	c->net_fd = -1;
}

static void ns_rlimits(struct ns_child *c, char go)
{
	const struct ns_spec *s = c->s;
	/* Stand-ins where no cgroup holds the box to the ceiling: RLIMIT_NPROC
	 * counts per user namespace, so it bounds the box; RLIMIT_AS bounds
	 * each process, not the sum. */
	if (s->lim.pids && !(go & BOX_GO_PIDS)) {
		struct rlimit rl = { s->lim.pids, s->lim.pids };
		setrlimit(RLIMIT_NPROC, &rl);
	}
	/* RLIMIT_AS goes to tool commands only (ward-guest sets it before
	 * exec): the guest itself may need a large address space (ASan). */
	struct rlimit core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &core);
}

static __attribute__((noreturn)) void ns_child_main(struct ns_child *c)
{
	const struct ns_spec *s = c->s;
	char b;
	if (fdio_read_full(c->sync_fd, &b, 1) < 0)
		_exit(1);	/* the keeper died before finishing the maps */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		ns_fail(c, "pdeathsig");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		ns_fail(c, "make mounts private");
	nsroot_build(c);
	if (s->workspace && !s->git_rw)
		ns_git_ro(c);
	sethostname("ward", 4);
	if (!s->net_host)
		ns_loopback_up();
	if (s->proxy)
		ns_proxy_listener(c);
	/* The keeper attached the v1 cgroups while this was built (an attach
	 * can take milliseconds: the cgroup core waits for an RCU grace
	 * period) and says which hold; nothing of the box runs before. */
	char go;
	if (fdio_read_full(c->sync_fd, &go, 1) < 0)
		_exit(1);
	ns_rlimits(c, go);

	/* ward-guest's arguments: at most 16 of its own and the image's Env. */
	char fdarg[16], asarg[32], portarg[16], rootarg[16], uidsarg[16];
	static char *argv[24 + 2 * GUEST_ENV_MAX];
	snprintf(fdarg, sizeof(fdarg), "%d", c->chan_fd);
	snprintf(rootarg, sizeof(rootarg), "%d", c->root_fd);
	int ac = 0;
	argv[ac++] = "ward-guest";
	argv[ac++] = "--fd";
	argv[ac++] = fdarg;
	argv[ac++] = "--root-fd";
	argv[ac++] = rootarg;
	if (c->range) {
		snprintf(uidsarg, sizeof(uidsarg), "%u", NS_UIDS);
		argv[ac++] = "--uids";
		argv[ac++] = uidsarg;
	}
	char userarg[32];
	if (s->user && *s->user) {
		snprintf(userarg, sizeof(userarg), "%u:%u", (unsigned)c->user.uid, (unsigned)c->user.gid);
		argv[ac++] = "--user";
		argv[ac++] = userarg;
	}
	if (s->cwd) {
		argv[ac++] = "--workspace";
		argv[ac++] = (char *)s->cwd;
	}
	for (size_t i = 0; i < s->nenv && i < GUEST_ENV_MAX; i++) {
		argv[ac++] = "--env";
		argv[ac++] = (char *)s->env[i];
	}
	if (s->proxy) {
		snprintf(portarg, sizeof(portarg), "%d", NET_PROXY_PORT);
		argv[ac++] = "--proxy-port";
		argv[ac++] = portarg;
	}
	if (s->lim.memory && !(go & BOX_GO_MEMORY)) {
		snprintf(asarg, sizeof(asarg), "%llu", (unsigned long long)s->lim.memory);
		argv[ac++] = "--rlimit-as";
		argv[ac++] = asarg;
	}
	argv[ac] = NULL;
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	/* No descriptor of the host's goes into the box: what the guest holds
	 * from here on is the channel, the box's own /dev/null, the box's
	 * root (until it is its root again), and a pipe whose other end the
	 * keeper reads (the guest's stderr). */
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(c->log_fd, 2) < 0)
		ns_fail(c, "the guest's standard descriptors");
	int keep[] = { c->chan_fd, c->guest_fd, c->sync_fd, c->root_fd, c->guestroot_fd };
	fdio_close_all_but(3, keep, ARRAY_SIZE(keep));
	fcntl(c->chan_fd, F_SETFD, 0);
	/* The guest is exec'd where its loader and libraries are the host's
	 * (sandbox/nsroot.c); it comes back to the box's root at once. */
	if (fchdir(c->guestroot_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		ns_fail(c, "enter the guest's directory");
	close(c->guestroot_fd);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	syscall(SYS_execveat, c->guest_fd, "", argv, envp, AT_EMPTY_PATH);
	ns_fail(c, "exec ward-guest");
}

/* A user namespace with the maps given (each "ID HOSTID COUNT" lines),
 * for idmapped clones (the namespace only lends its mapping to the
 * mounts; nothing runs in it): its fd, or -errno. */
static int ns_userns_make(const char *uidmap, const char *gidmap)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		char b;
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		/* Until the parent has the namespace: then EOF. */
		ssize_t k = read(p[0], &b, 1);
		(void)k;
		_exit(0);
	}
	close(p[0]);
	if (pid < 0) {
		int r = -errno;
		close(p[1]);
		return r;
	}
	char path[64], mp[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	int r = -EAGAIN, fd = -1;
	for (int tries = 0; tries < 400 && r == -EAGAIN; tries++) {
		/* The child's namespace is new once its link differs from ours. */
		struct stat a, b;
		if (stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino != b.st_ino)
			r = 0;
		else
			usleep(500);
	}
	if (r == 0) {
		snprintf(mp, sizeof(mp), "/proc/%d/uid_map", pid);
		r = fdio_write_str(AT_FDCWD, mp, uidmap);
	}
	if (r == 0) {
		snprintf(mp, sizeof(mp), "/proc/%d/gid_map", pid);
		r = fdio_write_str(AT_FDCWD, mp, gidmap);
	}
	if (r == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		r = -errno;
	close(p[1]);
	waitpid(pid, NULL, 0);
	return r < 0 ? r : fd;
}

/* The box's NS_UIDS uids from NS_UID_BASE: made once per keeper. */
static int ns_idmap_userns(char *why, size_t n)
{
	static int fd = -2;
	static char saved[160];
	if (fd == -2) {
		char map[64];
		snprintf(map, sizeof(map), "0 %u %u\n", NS_UID_BASE, NS_UIDS);
		fd = ns_userns_make(map, map);
		if (fd < 0)
			snprintf(saved, sizeof(saved), "a user namespace for the box's uids: %s", strerror(-fd));
	}
	if (fd < 0)
		snprintf(why, n, "%s", saved);
	return fd;
}

/* The same range with box id u and 0 swapped: the host's root (the
 * owner of the workspace ward was given) is the tool user u in the box,
 * and u's own files the box's root. Lines of a map, into out. */
static void ns_swap_map(unsigned u, char *out, size_t n)
{
	if (!u) {
		snprintf(out, n, "0 %u %u\n", NS_UID_BASE, NS_UIDS);
		return;
	}
	int k = snprintf(out, n, "0 %u 1\n", NS_UID_BASE + u);
	if (u > 1)
		k += snprintf(out + k, n - (size_t)k, "1 %u %u\n", NS_UID_BASE + 1, u - 1);
	k += snprintf(out + k, n - (size_t)k, "%u %u 1\n", u, NS_UID_BASE);
	if (u + 1 < NS_UIDS)
		snprintf(out + k, n - (size_t)k, "%u %u %u\n", u + 1, NS_UID_BASE + u + 1, NS_UIDS - u - 1);
}

bool ns_uid_range(uid_t *ret_uid, char *why, size_t n)
{
	*ret_uid = geteuid();
	if (geteuid() != 0) {
		snprintf(why, n, "one uid, the user's own: a range of uids needs root");
		return false;
	}
	/* Overlayfs takes idmapped layers from Linux 5.19. */
	struct utsname u;
	unsigned maj = 0, min = 0;
	if (uname(&u) == 0 && sscanf(u.release, "%u.%u", &maj, &min) == 2 && (maj < 5 || (maj == 5 && min < 19))) {
		snprintf(why, n, "one uid, host root: Linux %u.%u cannot shift a mount's owners under overlayfs (5.19 can)",
			 maj, min);
		return false;
	}
	char w[160];
	if (ns_idmap_userns(w, sizeof(w)) < 0) {
		snprintf(why, n, "one uid, host root: %s", w);
		return false;
	}
	*ret_uid = NS_UID_BASE;
	snprintf(why, n, "%u uids from %u, none of them a host user (idmapped mounts)", NS_UIDS, NS_UID_BASE);
	return true;
}

/* The lowers as idmapped clones: the host's owners shifted into the box's
 * range, nosuid and nodev (read-only but for a --rw workspace). All or
 * none: 0, or -errno with why. */
static int ns_idmap_lowers(const struct ns_spec *s, struct ns_child *c, char *why, size_t n)
{
	int uns = ns_idmap_userns(why, n);
	if (uns < 0)
		return -EPERM;
	/* The workspace is the tool user's: what the host's root owns there
	 * (what ward was given) is theirs in the box. */
	_cleanup_close_ int wsns = -1;
	if (c->user.uid || c->user.gid) {
		char um[160], gm[160];
		ns_swap_map(c->user.uid, um, sizeof(um));
		ns_swap_map(c->user.gid, gm, sizeof(gm));
		wsns = ns_userns_make(um, gm);
		if (wsns < 0) {
			snprintf(why, n, "one uid, host root: a user namespace for the workspace's owner: %s",
				 strerror(-wsns));
			return wsns;
		}
	}
	for (size_t i = 0; i < c->nlower; i++) {
		struct ns_lower *l = &c->lower[i];
		bool rw = !l->layer && s->workspace_rw;
		int fd = (int)syscall(SYS_open_tree, AT_FDCWD, l->host,
				      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (rw ? AT_RECURSIVE : 0));
		struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						    (rw ? 0 : MOUNT_ATTR_RDONLY),
					.userns_fd = (uint64_t)(!l->layer && wsns >= 0 ? wsns : uns) };
		int r = fd < 0 ? -errno
			: syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | (rw ? AT_RECURSIVE : 0), &a, sizeof(a)) < 0 ? -errno : 0;
		if (r < 0) {
			if (fd >= 0)
				close(fd);
			snprintf(why, n, "one uid, host root: %s cannot be idmapped: %s", l->host, strerror(-r));
			for (size_t k = 0; k < i; k++) {
				close(c->lower[k].fd);
				c->lower[k].fd = -1;
			}
			return r;
		}
		l->fd = fd;
	}
	return 0;
}

static void ns_close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

int ns_start(const struct ns_spec *s, struct ns_box *ret, struct err *e)
{
	/* The channel, the setup's sync, the guest's stderr and (with egress)
	 * where the proxy's listener comes back; [0] is the keeper's end. */
	int chan[2] = { -1, -1 }, sync[2] = { -1, -1 }, logp[2] = { -1, -1 }, netp[2] = { -1, -1 };
	int r = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0 || pipe2(logp, O_CLOEXEC) < 0 ||
	    (s->proxy && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, netp) < 0))
		r = err_setc(e, -errno, "socketpair");
	_cleanup_close_ int guest_fd = r < 0 ? -1 : open(s->guest_path, O_PATH | O_CLOEXEC);
	if (r >= 0 && guest_fd < 0)
		r = err_setc(e, -errno, "cannot open ward-guest at %s", s->guest_path);
	if (r < 0) {
		ns_close_pair(chan), ns_close_pair(sync), ns_close_pair(logp), ns_close_pair(netp);
		return r;
	}
	/* The image's Env reaches the guest as its arguments. */
	if (s->nenv > GUEST_ENV_MAX)
		r = err_set(e, -E2BIG, "the image's config has %zu Env entries; a box takes at most %d", s->nenv,
			    GUEST_ENV_MAX);
	for (size_t i = 0; r >= 0 && i < s->nenv; i++) {
		const char *eq = strchr(s->env[i], '=');
		if (!eq || eq == s->env[i] || strlen(s->env[i]) > GUEST_ENV_ENTRY_MAX)
			r = err_set(e, -EINVAL, "the image's Env entry %zu is not NAME=VALUE of at most %d bytes", i + 1,
				    GUEST_ENV_ENTRY_MAX);
	}
	if (r < 0) {
		ns_close_pair(chan), ns_close_pair(sync), ns_close_pair(logp), ns_close_pair(netp);
		return r;
	}
	_cleanup_close_ int cgfd = -1;
	if (s->cg && s->cg->v2[0])
		cgfd = open(s->cg->v2, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	struct ns_child c = {
		.s = s, .sync_fd = sync[1], .chan_fd = chan[1], .guest_fd = guest_fd,
		.log_fd = logp[1], .net_fd = netp[1], .root_fd = -1, .guestroot_fd = -1,
	};
	/* Who the box's root is: decided before the box exists (the clones
	 * are what it is built from). */
	char why[160];
	uid_t owner;
	nsroot_lowers(s, &c);
	bool range = ns_uid_range(&owner, why, sizeof(why));
	/* On fuse2fs, each of the root's overlays is fuse-overlayfs, the
	 * layers' child (outside the box's PID namespace), which the box
	 * binds: overlayfs takes no FUSE upper. The keeper ends them with
	 * the box (layers_view_end). */
	char views[PATH_MAX];
	_Static_assert(NS_LOWERS_MAX <= LAYERS_ROOT_VIEWS_MAX, "a root view for each of the root's lowers");
	if (s->root_fuse) {
		if ((size_t)snprintf(views, sizeof(views), "%s.rv", s->root_dir) >= sizeof(views))
			r = err_set(e, -ENAMETOOLONG, "the box's directory %s is too long", s->root_dir);
		for (size_t i = 0; r >= 0 && i < c.nlower; i++)
			if (c.lower[i].layer)
				r = layers_root_view(s->root_fuse, c.lower[i].host, c.lower[i].layer, views, e);
		c.root_views = views;
	}
	/* The image's User, found in the image (a box whose image names no
	 * such account is not made). */
	if (r >= 0 && s->user && *s->user) {
		char msg[256];
		const char *tree = s->image_root ? s->image_root : s->hostview;
		_cleanup_close_ int img = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r = img < 0 ? err_setc(e, -errno, "cannot open the image's tree %s", tree)
			    : account_resolve(img, s->user, 0, range ? NS_UIDS : 0, &c.user, msg, sizeof(msg));
		if (r < 0 && img >= 0)
			err_set(e, r, "%s", msg);
	}
	c.range = r >= 0 && range && ns_idmap_lowers(s, &c, why, sizeof(why)) == 0;
	if (r >= 0 && !c.range && owner != geteuid() && lchown(s->root_layer, geteuid(), getegid()) < 0)
		r = err_setc(e, -errno, "cannot give the box's root layer %s back to uid %u", s->root_layer, geteuid());
	/* The workspace's top directory is its upper's: the tool user's. */
	if (r >= 0 && c.range && s->workspace && !s->workspace_rw &&
	    lchown(s->upper_dir, NS_UID_BASE + c.user.uid, NS_UID_BASE + c.user.gid) < 0)
		r = err_setc(e, -errno, "cannot give the workspace layer %s to the tool user", s->upper_dir);
	if (r < 0) {
		ns_close_pair(chan), ns_close_pair(sync), ns_close_pair(logp), ns_close_pair(netp);
		return r;
	}
	int pidfd = -1;
	/* The box starts in its v2 cgroup (for cgroup.kill on destroy); its
	 * descriptor stays out here. */
	pid_t pid = box_clone3(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
				       (s->net_host ? 0 : CLONE_NEWNET),
			       &cgfd, &pidfd);
	if (pid < 0) {
		r = -errno;
		for (size_t i = 0; i < c.nlower; i++)
			if (c.lower[i].fd >= 0)
				close(c.lower[i].fd);
		ns_close_pair(chan), ns_close_pair(sync), ns_close_pair(logp), ns_close_pair(netp);
		return err_setc(e, r, "cannot create the box's namespaces (are unprivileged user namespaces enabled?)");
	}
	if (pid == 0) {
		close(chan[0]);
		close(sync[0]);
		close(logp[0]);
		if (netp[0] >= 0)
			close(netp[0]);
		ns_child_main(&c);
	}
	close(chan[1]), close(sync[1]), close(logp[1]);
	chan[1] = sync[1] = logp[1] = -1;
	if (netp[1] >= 0)
		close(netp[1]);
	netp[1] = -1;
	for (size_t i = 0; i < c.nlower; i++)
		if (c.lower[i].fd >= 0)
			close(c.lower[i].fd);
	r = c.range ? box_userns_map_range(pid, NS_UID_BASE, NS_UIDS) : box_userns_map(pid, 0, geteuid(), getegid());
	if (r < 0)
		err_setc(e, r, "cannot write the box's user namespace maps");
	/* Two go-aheads: "m", the maps are written, build the box; "g", the
	 * cgroups hold, exec the guest. The attach overlaps the build. */
	bool mapped = r >= 0;
	struct cgroup_held held = { 0 };
	if (r >= 0)
		r = box_go_ahead(sync[0], s->cg, pid, &held);
	int net_fd = -1;
	if (mapped) {
		/* EOF: the exec happened. Bytes: the child's one-line error, which
		 * may already be there when a go-ahead could not be written (the
		 * child failed and left first). */
		char msg[512];
		struct pollfd pf = { .fd = sync[0], .events = POLLIN };
		int pr = poll(&pf, 1, r >= 0 ? 10000 : 1000);
		ssize_t n = pr > 0 ? read(sync[0], msg, sizeof(msg) - 1) : -1;
		if (n > 0) {
			msg[n] = 0;
			r = err_set(e, -EIO, "cannot build the box: %s", msg);
		} else if (r < 0) {
			r = err_setc(e, r, "the box's setup ended early");
		} else if (pr == 0) {
			r = err_set(e, -ETIMEDOUT, "the box did not start within 10 s");
		} else if (n < 0) {
			r = err_setc(e, -errno, "box setup");
		}
		/* The listener was sent before the exec. */
		if (r >= 0 && s->proxy) {
			net_fd = fdio_recv_fd(netp[0], now_ms() + 1000);
			if (net_fd < 0)
				r = err_setc(e, net_fd, "the egress proxy's listener did not come from the box");
		}
	}
	close(sync[0]);
	ns_close_pair(netp);
	if (r < 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		waitpid(pid, NULL, 0);
		close(pidfd);
		close(chan[0]);
		close(logp[0]);
		return r;
	}
	fdio_set_nonblock(logp[0], true);
	*ret = (struct ns_box){
		.pid = pid, .pidfd = pidfd, .chan_fd = chan[0], .log_fd = logp[0], .net_fd = net_fd,
		.rlimit_pids = s->lim.pids && !held.pids,
		.rlimit_memory = s->lim.memory && !held.memory,
		.held = held,
		.uid_range = c.range,
	};
	snprintf(ret->uid_why, sizeof(ret->uid_why), "%s", why);
	return 0;
}

void ns_kill(struct ns_box *b)
{
	if (b->pid <= 0)
		return;
	/* PID 1 exits only after the kernel has killed and reaped the rest of
	 * its namespace: the reap waits for that, bounded. */
	box_kill_reap(b->pid, b->pidfd, b->chan_fd);
	if (b->log_fd >= 0)
		close(b->log_fd);
	if (b->net_fd >= 0)
		close(b->net_fd);
	b->pid = 0;
	b->pidfd = b->chan_fd = b->log_fd = b->net_fd = -1;
}

static int ns_backend_start(const struct box_spec *s, struct box_inst *ret, struct err *e)
{
	const struct box_opts *o = s->opts;
	char hostview[PATH_MAX];
	if (!s->image_root) {
		int r = hostview_get(hostview, sizeof(hostview), e);
		if (r < 0)
			return r;
	}
	/* The image's Env, then the keeper's (a secret's placeholder wins). */
	static const char *env[GUEST_ENV_MAX + NET_SECRET_MAX];
	size_t nenv = 0;
	for (size_t i = 0; s->image && i < s->image->nenv && nenv < GUEST_ENV_MAX; i++)
		env[nenv++] = s->image->env[i];
	if (s->image && s->image->nenv > GUEST_ENV_MAX)
		nenv = s->image->nenv;	/* (refused below, with the image's count) */
	for (size_t i = 0; i < s->nenv && nenv < GUEST_ENV_MAX; i++)
		env[nenv++] = s->env[i];
	struct ns_spec ns = {
		.root_dir = s->root_dir,
		.guest_path = o->guest_path,
		.workspace = o->workspace,
		.upper_dir = s->upper_dir,
		.work_dir = s->work_dir,
		.ws_view = s->ws_view,
		.root_layer = s->root_layer,
		.root_fuse = s->root_fuse,
		.image_root = s->image_root,
		.hostview = s->image_root ? NULL : hostview,
		.env = env,
		.nenv = nenv,
		.ca_bundle = s->ca_bundle,
		.user = s->image ? s->image->user : NULL,
		.cwd = box_tool_cwd(s),
		.workspace_rw = o->rw,
		.git_rw = o->git_rw,
		.net_host = o->net == BOX_NET_HOST,
		.proxy = o->net == BOX_NET_ALLOW,
		.lim = o->lim,
		.cg = s->cg,
	};
	struct ns_box b;
	int r = ns_start(&ns, &b, e);
	if (r < 0)
		return r;
	*ret = (struct box_inst){ .pid = b.pid, .pidfd = b.pidfd, .chan_fd = b.chan_fd, .log_fd = b.log_fd,
				  .net_fd = b.net_fd, .rlimit_pids = b.rlimit_pids, .rlimit_memory = b.rlimit_memory,
				  .held = b.held };
	/* A pool box is made whole, its guest attached: a claim hands it over. */
	ret->pooled = o->pool;
	snprintf(ret->uid_why, sizeof(ret->uid_why), "%s", b.uid_why);
	return 0;
}

static void ns_backend_kill(struct box_inst *b)
{
	struct ns_box nb = { .pid = b->pid, .pidfd = b->pidfd, .chan_fd = b->chan_fd, .log_fd = b->log_fd,
			     .net_fd = b->net_fd };
	ns_kill(&nb);
	b->pid = 0;
	b->pidfd = b->chan_fd = b->log_fd = b->net_fd = -1;
}

const struct box_backend ns_backend = {
	.name = "ns",
	.root_owner = ns_uid_range,
	.start = ns_backend_start,
	.kill = ns_backend_kill,
};
