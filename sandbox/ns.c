/* Building a box, as a flat list of steps. The child of clone3 runs the
 * steps in its new namespaces; any failure travels back to the parent over a
 * CLOEXEC socket as one line, and an exec that succeeds closes that socket. */
#include "sandbox/ns.h"
#include "sandbox/backend.h"
#include "sandbox/box.h"
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
#include <sys/wait.h>
#include <unistd.h>

/* /tmp is a tmpfs, that is memory: its size is the smaller of the box's
 * disk and memory ceilings (1 GiB with neither). */
static uint64_t ns_tmp_size(const struct limits *l)
{
	uint64_t n = 1ULL << 30;
	if (l->disk)
		n = l->disk;
	if (l->memory && l->memory < n)
		n = l->memory;
	return n;
}

struct ns_child {
	const struct ns_spec *s;
	int sync_fd;		/* child end: setup errors go here */
	int chan_fd;		/* guest end of the channel */
	int guest_fd;		/* O_PATH of the guest binary, exec'd by fd */
	int log_fd;		/* write end of the guest's stderr pipe */
	int net_fd;		/* child end: the proxy's listener goes here */
	uid_t uid;
	gid_t gid;
};

static __attribute__((noreturn, format(printf, 2, 3))) void ns_fail(struct ns_child *c, const char *fmt, ...)
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

static void ns_mkdir(struct ns_child *c, const char *root, const char *rel, mode_t mode)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		ns_fail(c, "mkdir %s", rel);
}

static void ns_bind(struct ns_child *c, const char *src, const char *dst, bool ro, bool dir)
{
	if (dir) {
		if (mkdir(dst, 0755) < 0 && errno != EEXIST)
			ns_fail(c, "mkdir %s", dst);
	} else {
		int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			ns_fail(c, "create %s", dst);
		close(fd);
	}
	errno = ro ? -mnt_bind_ro(src, dst) : mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0 ? errno : 0;
	if (errno)
		ns_fail(c, "bind %s", src);
}

/* Below a directory of the host's bound into the box, hide what is not for
 * everyone (/etc/ssl/private): when ward runs as root the box's uid is the
 * owner of such files. An empty read-only tmpfs over a directory,
 * /dev/null over a file. Bounded: a few levels, a few thousand entries. */
static void ns_mask_private(struct ns_child *c, const char *host, const char *dst, int depth, int *budget)
{
	_cleanup_closedir_ DIR *d = opendir(host);
	struct dirent *de;
	while (d && (de = readdir(d)) && --*budget > 0) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char h[PATH_MAX], b[PATH_MAX];
		snprintf(h, sizeof(h), "%s/%s", host, de->d_name);
		snprintf(b, sizeof(b), "%s/%s", dst, de->d_name);
		struct stat st;
		if (lstat(h, &st) < 0 || S_ISLNK(st.st_mode))
			continue;
		bool open_to_all = (st.st_mode & S_IROTH) && (!S_ISDIR(st.st_mode) || (st.st_mode & S_IXOTH));
		if (!open_to_all) {
			int r = S_ISDIR(st.st_mode)
				? mount("tmpfs", b, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
				: mount("/dev/null", b, NULL, MS_BIND, NULL);
			if (r < 0)
				ns_fail(c, "hide %s", h);
		} else if (S_ISDIR(st.st_mode) && depth < 4) {
			ns_mask_private(c, h, b, depth + 1, budget);
		}
	}
}

/* /bin, /lib and friends: a symlink where the host has one (merged /usr),
 * otherwise a read-only bind. */
static void ns_top_dirs(struct ns_child *c, const char *root)
{
	static const char *const tops[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };
	for (size_t i = 0; i < ARRAY_SIZE(tops); i++) {
		char host[64], dst[PATH_MAX], target[PATH_MAX];
		snprintf(host, sizeof(host), "/%s", tops[i]);
		snprintf(dst, sizeof(dst), "%s/%s", root, tops[i]);
		struct stat st;
		if (lstat(host, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(host, target, sizeof(target) - 1);
			if (n < 0)
				ns_fail(c, "readlink %s", host);
			target[n] = 0;
			if (symlink(target, dst) < 0)
				ns_fail(c, "symlink %s", dst);
		} else if (S_ISDIR(st.st_mode)) {
			ns_bind(c, host, dst, true, true);
		}
	}
}

static void ns_write(struct ns_child *c, const char *root, const char *rel, const char *content)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	_cleanup_close_ int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || fdio_write_full(fd, content, strlen(content)) < 0)
		ns_fail(c, "write %s", rel);
}

/* A minimal /etc: what the dynamic linker, bash, python and git need, and
 * nothing of the host's secrets (no shadow, no keys, no resolv.conf). */
static void ns_etc(struct ns_child *c, const char *root)
{
	static const char *const binds[] = {
		"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
		"localtime", "nsswitch.conf", "protocols", "services", "mime.types", "bash.bashrc",
		"inputrc", "profile", "gitconfig", "python3", "python3.11", "perl", "debian_version",
		"os-release", "magic", "magic.mime", "terminfo", "environment", "login.defs",
	};
	ns_mkdir(c, root, "etc", 0755);
	for (size_t i = 0; i < ARRAY_SIZE(binds); i++) {
		char host[PATH_MAX], dst[PATH_MAX];
		snprintf(host, sizeof(host), "/etc/%s", binds[i]);
		snprintf(dst, sizeof(dst), "%s/etc/%s", root, binds[i]);
		struct stat st;
		if (stat(host, &st) < 0 || access(host, R_OK) < 0)
			continue;
		if (!(st.st_mode & S_IROTH))
			continue;	/* not for everyone: not for the box */
		if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
			ns_bind(c, host, dst, true, S_ISDIR(st.st_mode));
		int budget = 20000;
		if (S_ISDIR(st.st_mode))
			ns_mask_private(c, host, dst, 0, &budget);
	}
	ns_write(c, root, "etc/passwd",
		 "root:x:0:0:root:/tmp:/bin/bash\n"
		 "ward:x:1000:1000:ward:/tmp:/bin/bash\n"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
	ns_write(c, root, "etc/group", "root:x:0:\nward:x:1000:\nnogroup:x:65534:\n");
	ns_write(c, root, "etc/hostname", "ward\n");
	ns_write(c, root, "etc/hosts", "127.0.0.1 localhost ward\n::1 localhost ip6-localhost\n");
	/* The host's resolver with the host's network; else none: a name is
	 * resolved by the egress proxy on the host, never in the box. */
	if (c->s->net_host && access("/etc/resolv.conf", R_OK) == 0) {
		char dst[PATH_MAX];
		snprintf(dst, sizeof(dst), "%s/etc/resolv.conf", root);
		ns_write(c, root, "etc/resolv.conf", "");
		ns_bind(c, "/etc/resolv.conf", dst, true, false);
	} else {
		ns_write(c, root, "etc/resolv.conf",
			 "# ward: this box has no DNS. Names are resolved by the egress proxy\n"
			 "# on the host ($HTTPS_PROXY), for the hosts the task was given.\n");
	}
}

static void ns_dev(struct ns_child *c, const char *root)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom" };
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/dev", root);
	ns_mkdir(c, root, "dev", 0755);
	if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") < 0)
		ns_fail(c, "mount /dev");
	/* A user namespace cannot make device nodes, so these are binds of
	 * the host's. Each bind is read-only: the device still reads and
	 * writes (a read-only mount does not apply to device I/O), but its
	 * inode's mode, owner and times cannot be changed from the box. */
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		char host[64], dst[PATH_MAX];
		snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
		snprintf(dst, sizeof(dst), "%s/dev/%s", root, nodes[i]);
		ns_bind(c, host, dst, false, false);
		if (mnt_remount_ro(dst, MS_NOSUID | MS_NOEXEC) < 0)
			ns_fail(c, "read-only /dev/%s", nodes[i]);
	}
	static const char *const links[][2] = {
		{ "/proc/self/fd", "fd" }, { "/proc/self/fd/0", "stdin" },
		{ "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		snprintf(p, sizeof(p), "%s/dev/%s", root, links[i][1]);
		if (symlink(links[i][0], p) < 0)
			ns_fail(c, "symlink /dev/%s", links[i][1]);
	}
	ns_mkdir(c, root, "dev/shm", 01777);
	snprintf(p, sizeof(p), "%s/dev/shm", root);
	char shmopt[64];
	snprintf(shmopt, sizeof(shmopt), "mode=1777,size=%llu", (unsigned long long)MIN(ns_tmp_size(&c->s->lim), 64ULL << 20));
	if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, shmopt) < 0)
		ns_fail(c, "mount /dev/shm");
	/* Nothing more goes into /dev: its tmpfs becomes read-only. */
	snprintf(p, sizeof(p), "%s/dev", root);
	if (mount(NULL, p, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") < 0)
		ns_fail(c, "read-only /dev");
}

/* A fresh /proc for the box's PID namespace, with the parts that change the
 * kernel (sysctls, sysrq, irq affinity) read-only. */
static void ns_proc(struct ns_child *c, const char *root)
{
	char p[PATH_MAX];
	const char *what;
	ns_mkdir(c, root, "proc", 0555);
	snprintf(p, sizeof(p), "%s/proc", root);
	errno = -mnt_proc(p, &what);
	if (errno)
		ns_fail(c, "/proc: %s", what);
}

static void ns_workspace(struct ns_child *c, const char *root)
{
	const struct ns_spec *s = c->s;
	char p[PATH_MAX];
	ns_mkdir(c, root, "workspace", 0755);
	snprintf(p, sizeof(p), "%s/workspace", root);
	if (!s->workspace) {
		if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1g") < 0)
			ns_fail(c, "mount the empty workspace");
		return;
	}
	if (s->workspace_rw) {
		if (mount(s->workspace, p, NULL, MS_BIND | MS_REC, NULL) < 0)
			ns_fail(c, "bind the workspace %s", s->workspace);
		return;
	}
	if (box_mount_overlay(s->workspace, s->upper_dir, s->work_dir, p) < 0)
		ns_fail(c, "mount the copy-on-write workspace over %s (overlayfs)", s->workspace);
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

static void ns_rlimits(struct ns_child *c)
{
	const struct ns_spec *s = c->s;
	/* Stand-ins where no cgroup enforces the ceiling: RLIMIT_NPROC counts
	 * per user namespace, so it bounds the box; RLIMIT_AS bounds each
	 * process, not the sum. */
	if (s->lim.pids && !cgroup_pids_enforced(s->cg)) {
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
	const char *root = s->root_dir;
	char b;
	if (fdio_read_full(c->sync_fd, &b, 1) < 0)
		_exit(1);	/* the keeper died before finishing the maps */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		ns_fail(c, "pdeathsig");
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		ns_fail(c, "become root of the box's user namespace");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		ns_fail(c, "make mounts private");
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0)
		ns_fail(c, "mount the box's root");
	ns_mkdir(c, root, "usr", 0755);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/usr", root);
	ns_bind(c, "/usr", p, true, true);
	ns_top_dirs(c, root);
	ns_etc(c, root);
	ns_dev(c, root);
	ns_proc(c, root);
	ns_mkdir(c, root, "tmp", 01777);
	snprintf(p, sizeof(p), "%s/tmp", root);
	char tmpopt[64];
	snprintf(tmpopt, sizeof(tmpopt), "mode=1777,size=%llu", (unsigned long long)ns_tmp_size(&s->lim));
	if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, tmpopt) < 0)
		ns_fail(c, "mount /tmp");
	ns_workspace(c, root);
	ns_mkdir(c, root, "run", 0755);
	ns_mkdir(c, root, "home", 0755);
	if (chdir(root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 ||
	    chdir("/") < 0)
		ns_fail(c, "pivot into the box's root");
	if (mnt_remount_ro("/", MS_NOSUID | MS_NODEV) < 0)
		ns_fail(c, "make the box's root read-only");
	if (s->workspace && !s->git_rw)
		ns_git_ro(c);
	sethostname("ward", 4);
	if (!s->net_host)
		ns_loopback_up();
	if (s->proxy)
		ns_proxy_listener(c);
	ns_rlimits(c);

	char fdarg[16], asarg[32], portarg[16];
	snprintf(fdarg, sizeof(fdarg), "%d", c->chan_fd);
	char *argv[10] = { "ward-guest", "--fd", fdarg };
	int ac = 3;
	if (s->proxy) {
		snprintf(portarg, sizeof(portarg), "%d", NET_PROXY_PORT);
		argv[ac++] = "--proxy-port";
		argv[ac++] = portarg;
	}
	if (s->lim.memory && !cgroup_memory_enforced(s->cg)) {
		snprintf(asarg, sizeof(asarg), "%llu", (unsigned long long)s->lim.memory);
		argv[ac++] = "--rlimit-as";
		argv[ac++] = asarg;
	}
	argv[ac] = NULL;
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	/* The keeper attached the v1 cgroups while this was built (an attach
	 * can take milliseconds: the cgroup core waits for an RCU grace
	 * period); nothing of the box runs before they hold. */
	if (fdio_read_full(c->sync_fd, &b, 1) < 0)
		_exit(1);
	/* No descriptor of the host's goes into the box: what the guest holds
	 * from here on is the channel, the box's own /dev/null, and a pipe
	 * whose other end the keeper reads (the guest's stderr). */
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(c->log_fd, 2) < 0)
		ns_fail(c, "the guest's standard descriptors");
	int keep[] = { c->chan_fd, c->guest_fd, c->sync_fd };
	fdio_close_all_but(3, keep, ARRAY_SIZE(keep));
	fcntl(c->chan_fd, F_SETFD, 0);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	syscall(SYS_execveat, c->guest_fd, "", argv, envp, AT_EMPTY_PATH);
	ns_fail(c, "exec ward-guest");
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
	_cleanup_close_ int cgfd = -1;
	if (s->cg && s->cg->v2[0])
		cgfd = open(s->cg->v2, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	struct ns_child c = {
		.s = s, .sync_fd = sync[1], .chan_fd = chan[1], .guest_fd = guest_fd,
		.log_fd = logp[1], .net_fd = netp[1], .uid = getuid(), .gid = getgid(),
	};
	int pidfd = -1;
	/* The box starts in its v2 cgroup (for cgroup.kill on destroy); its
	 * descriptor stays out here. */
	pid_t pid = box_clone3(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
				       (s->net_host ? 0 : CLONE_NEWNET),
			       &cgfd, &pidfd);
	if (pid < 0) {
		r = -errno;
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
	r = box_userns_map(pid, 0, c.uid, c.gid);
	if (r < 0)
		err_setc(e, r, "cannot write the box's user namespace maps");
	/* Two go-aheads: "m", the maps are written, build the box; "g", the
	 * cgroups hold, exec the guest. The attach overlaps the build. */
	bool mapped = r >= 0;
	if (r >= 0)
		r = box_go_ahead(sync[0], s->cg, pid);
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
		.rlimit_pids = s->lim.pids && !cgroup_pids_enforced(s->cg),
		.rlimit_memory = s->lim.memory && !cgroup_memory_enforced(s->cg),
	};
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
