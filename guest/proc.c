/* A bash call's process tree: a nested PID, mount and user namespace whose
 * PID 1 is a tiny init forked from ward-guest. SIGTERM to that init is
 * passed to every process in the namespace; SIGKILL to it ends the
 * namespace, and with it every process the call started, setsid'd and
 * double-forked ones included. The call's /proc is its own (mounted for its
 * PID namespace in its mount namespace), so it sees only its own processes:
 * not ward-guest, not other calls. In a VM the tree also starts in a cgroup
 * of its own (clone3 CLONE_INTO_CGROUP) so cgroup.kill can end it too. */
#include "guest/guest.h"
#include "guest/policy.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/mnt.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t proc_clone3(uint64_t flags, int cgroup_fd)
{
	struct clone_args a = {
		.flags = flags,
		.exit_signal = SIGCHLD,
	};
	if (cgroup_fd >= 0) {
		a.flags |= CLONE_INTO_CGROUP;
		a.cgroup = (uint64_t)cgroup_fd;
	}
	return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}

static void proc_child_fail(const char *what)
{
	/* stdout is the call's output pipe by now: the model sees this line. */
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "ward: could not start the command: %s: %s\n", what, strerror(errno));
	if (n > 0)
		fdio_write_full(1, msg, (size_t)n);
	_exit(127);
}

/* What a tool command that runs as root keeps: a container runtime's
 * default set, less CAP_MKNOD (no device nodes) and CAP_SETFCAP (no file
 * capabilities); never CAP_SYS_ADMIN. They are held in the call's own user
 * namespace, so they act on the files and processes of the call and of
 * the box's uids, never on the box's namespaces (its mounts, its network,
 * ward-guest), which belong to the box's user namespace above it. */
static const struct {
	int cap;
	const char *why;
} proc_caps[] = {
	{ CAP_CHOWN, "dpkg, apt, tar and pip give files to their owners" },
	{ CAP_DAC_OVERRIDE, "root reads and writes what the box's other users own" },
	{ CAP_FOWNER, "chmod and utimes of other users' files (dpkg unpacking)" },
	{ CAP_FSETID, "a file keeps its group bits when root changes it" },
	{ CAP_KILL, "signals to the call's processes of other users" },
	{ CAP_SETGID, "apt, su and daemons drop to another group" },
	{ CAP_SETUID, "apt drops to _apt for downloads; su, runuser" },
	{ CAP_SETPCAP, "a program drops capabilities of its own" },
	{ CAP_SYS_CHROOT, "chroot into a directory of the box (build tools)" },
	{ CAP_NET_BIND_SERVICE, "kept for parity; no effect: the box's network belongs to its namespace above" },
	{ CAP_NET_RAW, "the same" },
	{ CAP_AUDIT_WRITE, "the same: audit records are the host's" },
};

/* Before the uid changes (dropping from the bounding set needs
 * CAP_SETPCAP): every capability not in proc_caps leaves the bounding
 * set; then root keeps proc_caps, anyone else nothing. */
static void proc_drop_bounding(void)
{
	for (int cap = 0; cap <= 63; cap++) {
		bool keep = false;
		for (size_t i = 0; i < ARRAY_SIZE(proc_caps); i++)
			keep |= proc_caps[i].cap == cap;
		if (!keep)
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

static int proc_set_caps(bool root)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	for (size_t i = 0; root && i < ARRAY_SIZE(proc_caps); i++) {
		int c = proc_caps[i].cap;
		d[c / 32].effective |= 1u << (c % 32);
		d[c / 32].permitted |= 1u << (c % 32);
		d[c / 32].inheritable |= 1u << (c % 32);
	}
	return (int)syscall(SYS_capset, &h, d);
}

const char *proc_shell(void)
{
	static const char *const shells[] = { "/bin/bash", "/bin/sh" };
	for (size_t i = 0; i < ARRAY_SIZE(shells); i++)
		if (access(shells[i], X_OK) == 0)
			return shells[i];
	return NULL;
}

/* What the command's child needs, prepared by call-init before the clone:
 * the child shares call-init's memory until it execs (CLONE_VM|CLONE_VFORK,
 * as posix_spawn does), so it makes system calls only. No fork of
 * ward-guest's address space, and no allocator: call-init came from a raw
 * clone3 of a process with worker threads, whose malloc locks it may have
 * copied held. */
struct spawn {
	const struct guest_cfg *cfg;
	const char *shell;
	int in_r, out_w, err_w, devnull;
	char idvar[128], uservar[80], lognamevar[80], shellvar[32];
	char *env[48 + GUEST_ENV_MAX];
	size_t nenv;
	char *argv[4];
};

/* kv ("K=V") into sp's environment, in place of a K there already. */
static void proc_env_set(struct spawn *sp, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t kn = eq ? (size_t)(eq - kv) : 0;
	if (!kn)
		return;
	for (size_t i = 0; i < sp->nenv; i++)
		if (!strncmp(sp->env[i], kv, kn) && sp->env[i][kn] == '=') {
			sp->env[i] = (char *)kv;
			return;
		}
	if (sp->nenv < ARRAY_SIZE(sp->env) - 1)
		sp->env[sp->nenv++] = (char *)kv;
}

/* With egress, every command finds the proxy: the variables curl, git,
 * pip, cargo and go read, and npm's and yarn's own. Names are resolved by
 * the proxy; the box has no DNS. Local addresses stay direct. */
static size_t proc_proxy_env(int port, char **out)
{
	static char url[64], vars[10][96];
	static const char *const names[] = {
		"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy",
		"npm_config_https_proxy", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",
	};
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	size_t n = 0;
	for (; n < ARRAY_SIZE(names); n++) {
		snprintf(vars[n], sizeof(vars[n]), "%s=%s", names[n], url);
		out[n] = vars[n];
	}
	snprintf(vars[n], sizeof(vars[n]), "NO_PROXY=localhost,127.0.0.1,::1");
	out[n] = vars[n];
	n++;
	snprintf(vars[n], sizeof(vars[n]), "no_proxy=localhost,127.0.0.1,::1");
	out[n] = vars[n];
	return n + 1;
}

static int proc_exec(void *arg)
{
	struct spawn *sp = arg;
	sigset_t none;
	sigemptyset(&none);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (dup2(sp->in_r, 0) < 0 || dup2(sp->out_w, 1) < 0 || dup2(sp->err_w, 2) < 0)
		_exit(127);
	/* Become the tool user (raw system calls: glibc's setxid would
	 * signal threads this child does not have). With one uid the process
	 * is that uid of its namespace already (ns) or becomes it (a VM's
	 * 1000); with the box's range, root drops to the image's User. */
	const struct guest_cfg *cfg = sp->cfg;
	proc_drop_bounding();
	gid_t g = cfg->tool_gid;
	if ((cfg->uids && syscall(SYS_setgroups, 1, &g) < 0) ||
	    syscall(SYS_setresgid, cfg->tool_gid, cfg->tool_gid, cfg->tool_gid) < 0 ||
	    syscall(SYS_setresuid, cfg->tool_uid, cfg->tool_uid, cfg->tool_uid) < 0)
		proc_child_fail("become the tool user");
	if (chdir(cfg->workspace) < 0 && chdir("/") < 0)
		proc_child_fail("chdir");
	if (proc_set_caps(cfg->tool_uid == 0) < 0)
		proc_child_fail("capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		proc_child_fail("no_new_privs");
	if (policy_apply() < 0)
		proc_child_fail("seccomp");
	/* Everything ward-guest opens is close-on-exec; this is the backstop. */
	syscall(SYS_close_range, 3U, ~0U, 0);
	/* Last, so nothing in this (possibly sanitizer-built) image allocates
	 * under the cap. */
	if (sp->cfg->rlimit_as) {
		struct rlimit rl = { sp->cfg->rlimit_as, sp->cfg->rlimit_as };
		setrlimit(RLIMIT_AS, &rl);
	}
	execve(sp->shell, sp->argv, sp->env);
	proc_child_fail(sp->shell);
	_exit(127);
}

static char proc_spawn_stack[64 * 1024] __attribute__((aligned(16)));

static char *proc_title_area;
static size_t proc_title_len;

void proc_title_init(int argc, char **argv)
{
	if (argc < 1 || !argv[0])
		return;
	/* The command line and, where they follow it in memory (as the kernel
	 * lays them out), the environment strings: the kernel reads a
	 * command line on into them when its last byte is not NUL. */
	char *end = argv[argc - 1] + strlen(argv[argc - 1]);
	for (char **e = environ; e && *e && *e == end + 1; e++)
		end = *e + strlen(*e);
	proc_title_area = argv[0];
	proc_title_len = (size_t)(end - argv[0]);
}

/* In call-init's own copy of the memory: what its /proc/PID/cmdline shows
 * (setproctitle's way: ward-guest's strings overwritten in place). */
static void proc_title_set(const char *title)
{
	size_t l = strlen(title);
	if (proc_title_area && proc_title_len >= l) {
		memset(proc_title_area, 0, proc_title_len);
		memcpy(proc_title_area, title, l);
	}
	prctl(PR_SET_NAME, title);
}

/* PID 1 of the call's namespace: start the command, pass SIGTERM on to
 * everything, reap, and report the command's wait status. Exiting ends the
 * namespace: whatever the command left behind is killed by the kernel.
 * in_r and err_w: a stdin call's stdin and stderr pipes; -1: /dev/null and
 * stdout's pipe. */
static __attribute__((noreturn)) void proc_init(const struct guest_cfg *cfg, const char *key, const char *shell,
						 const char *command, int in_r, int out_w, int err_w, int status_w)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		_exit(126);
	static struct spawn sp;
	sp = (struct spawn){ .cfg = cfg, .shell = shell, .out_w = out_w };
	sp.devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (sp.devnull < 0 || dup2(sp.devnull, 0) < 0 || dup2(sp.devnull, 1) < 0 || dup2(sp.devnull, 2) < 0)
		_exit(126);
	sp.in_r = in_r >= 0 ? in_r : sp.devnull;
	sp.err_w = err_w >= 0 ? err_w : out_w;
	/* ward's defaults, which the image's Env overrides... */
	static const char *const env_base[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp",
	};
	/* ...and what no image overrides: commands run with no terminal and
	 * no person to answer. */
	static const char *const env_forced[] = {
		"TERM=dumb", "CI=1", "GIT_TERMINAL_PROMPT=0", "DEBIAN_FRONTEND=noninteractive",
		"PAGER=cat", "GIT_PAGER=cat", "NO_COLOR=1", "PIP_NO_INPUT=1",
		/* A .pyc written in the same second as an edit of the same size
		 * would hide the edit; and none litters the workspace. */
		"PYTHONDONTWRITEBYTECODE=1",
	};
	for (size_t i = 0; i < ARRAY_SIZE(env_base); i++)
		proc_env_set(&sp, env_base[i]);
	const char *name = cfg->tool_name[0] ? cfg->tool_name : "ward";
	snprintf(sp.uservar, sizeof(sp.uservar), "USER=%s", name);
	snprintf(sp.lognamevar, sizeof(sp.lognamevar), "LOGNAME=%s", name);
	snprintf(sp.shellvar, sizeof(sp.shellvar), "SHELL=%s", shell);
	proc_env_set(&sp, sp.uservar);
	proc_env_set(&sp, sp.lognamevar);
	proc_env_set(&sp, sp.shellvar);
	for (size_t i = 0; i < cfg->nenv; i++)
		proc_env_set(&sp, cfg->env[i]);
	for (size_t i = 0; i < ARRAY_SIZE(env_forced); i++)
		proc_env_set(&sp, env_forced[i]);
	snprintf(sp.idvar, sizeof(sp.idvar), "WARD_CALL_ID=%s", key);
	proc_env_set(&sp, sp.idvar);
	if (cfg->proxy_port) {
		char *px[16];
		size_t k = proc_proxy_env(cfg->proxy_port, px);
		for (size_t i = 0; i < k; i++)
			proc_env_set(&sp, px[i]);
	}
	sp.env[sp.nenv] = NULL;
	sp.argv[0] = strrchr(shell, '/') + 1;
	sp.argv[1] = "-c";
	sp.argv[2] = (char *)command;
	sp.argv[3] = NULL;
	pid_t child = clone(proc_exec, proc_spawn_stack + sizeof(proc_spawn_stack),
			    CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);
	if (child < 0)
		_exit(126);
	/* The command holds the pipes now: call-init keeping an end would
	 * hold stdin open past the command's own close, or stdout past its
	 * exit. */
	close(out_w);
	if (in_r >= 0)
		close(in_r);
	if (err_w >= 0)
		close(err_w);
	close(sp.devnull);
	for (;;) {
		struct signalfd_siginfo si;
		ssize_t r = read(sfd, &si, sizeof(si));
		if (r < 0 && errno != EINTR)
			_exit(126);
		if (r == sizeof(si) && si.ssi_signo == SIGTERM)
			kill(-1, SIGTERM);
		int st;
		pid_t p;
		while ((p = waitpid(-1, &st, WNOHANG)) > 0)
			if (p == child) {
				fdio_write_full(status_w, &st, sizeof(st));
				_exit(0);
			}
	}
}

static int proc_write_map(pid_t pid, const char *file, const char *map)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	return fdio_write_str(AT_FDCWD, path, map);
}

/* The box's own boot id over the kernel's in the call's /proc, read-only
 * (a VM restored from a snapshot or a fork's state shares the kernel's). */
static int proc_boot_id(const char *src, const char **ret_what)
{
	static const char dst[] = "/proc/sys/kernel/random/boot_id";
	*ret_what = "bind the box's boot id";
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		return -errno;
	return mnt_remount_ro(dst, MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

/* In call-init, still as ward-guest's user: the call's own /proc (with
 * the box's boot id, where it has one), then its own user namespace
 * (whose maps ward-guest writes). A failure goes back to ward-guest as
 * one line on the sync socket. */
static void proc_init_namespaces(int sync_fd, const char *boot_id)
{
	const char *what = "make the call's mounts private";
	int r = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ? -errno : 0;
	if (r >= 0)
		r = mnt_proc("/proc", &what);
	if (r >= 0 && boot_id)
		r = proc_boot_id(boot_id, &what);
	if (r >= 0 && unshare(CLONE_NEWUSER) < 0) {
		r = -errno;
		what = "a user namespace for the call";
	}
	char b;
	if (r >= 0 && fdio_write_full(sync_fd, "u", 1) >= 0 && fdio_read_full(sync_fd, &b, 1) >= 0 && b == 'g')
		return;
	if (r < 0) {
		char msg[200];
		int n = snprintf(msg, sizeof(msg), "E%s: %s", what, strerror(-r));
		if (n > 0)
			fdio_write_full(sync_fd, msg, MIN((size_t)n, sizeof(msg) - 1));
	}
	_exit(126);
}

/* ward-guest's half: wait (bounded) for call-init's "u", write the call's
 * user namespace maps, and say "g". */
static int proc_map_call(pid_t pid, int sync_fd, const struct guest_cfg *cfg, const char **ret_why)
{
	char msg[200];
	struct pollfd pf = { .fd = sync_fd, .events = POLLIN };
	*ret_why = NULL;
	if (poll(&pf, 1, 5000) <= 0)
		return -ETIMEDOUT;
	ssize_t n = read(sync_fd, msg, sizeof(msg) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ECHILD;
	if (msg[0] != 'u') {
		static char why[200];
		msg[n] = 0;
		snprintf(why, sizeof(why), "%s", msg + 1);
		*ret_why = why;
		return -EPERM;
	}
	/* The box's uids one to one; or the one uid the tool user is, as the
	 * box's tool_outer_uid (and no setgroups: an unprivileged writer's
	 * map). */
	char map[64], gmap[64];
	if (cfg->uids) {
		snprintf(map, sizeof(map), "0 0 %u\n", cfg->uids);
		snprintf(gmap, sizeof(gmap), "0 0 %u\n", cfg->uids);
	} else {
		snprintf(map, sizeof(map), "%u %d 1\n", (unsigned)cfg->tool_uid, cfg->tool_outer_uid);
		snprintf(gmap, sizeof(gmap), "%u %d 1\n", (unsigned)cfg->tool_gid, cfg->tool_outer_uid);
	}
	int r = proc_write_map(pid, "uid_map", map);
	if (r >= 0 && !cfg->uids)
		r = proc_write_map(pid, "setgroups", "deny");
	if (r >= 0)
		r = proc_write_map(pid, "gid_map", gmap);
	if (r >= 0)
		r = fdio_write_full(sync_fd, "g", 1);
	return r;
}

static void proc_close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

int proc_start(struct call *c, const struct guest_cfg *cfg, const char *command)
{
	const char *shell = proc_shell();
	if (!shell)
		return -ENOEXEC;
	/* out, status, sync; a stdin call's stdin and stderr pipes, or -1. */
	int fds[10] = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	int *outp = fds, *statp = fds + 2, *syncp = fds + 4, *inp = fds + 6, *errp = fds + 8;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(statp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, syncp) < 0 ||
	    (c->input && (pipe2(inp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0))) {
		int r = -errno;
		proc_close_fds(fds, ARRAY_SIZE(fds));
		return r;
	}
	c->cg_fd = -1;
	if (cfg->cgroup_fd >= 0) {
		char name[32];
		snprintf(name, sizeof(name), "call-%u", c->id);
		if (mkdirat(cfg->cgroup_fd, name, 0755) == 0 || errno == EEXIST)
			c->cg_fd = openat(cfg->cgroup_fd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	}
	/* PID and mount namespaces owned by ward-guest's user namespace, so
	 * call-init may mount the call's /proc; the call's user namespace
	 * comes after, from call-init. */
	pid_t pid = proc_clone3(CLONE_NEWPID | CLONE_NEWNS, c->cg_fd);
	if (pid < 0 && c->cg_fd >= 0) {
		/* The cgroup may refuse (no delegation): the namespace still ends all. */
		close(c->cg_fd);
		c->cg_fd = -1;
		pid = proc_clone3(CLONE_NEWPID | CLONE_NEWNS, -1);
	}
	if (pid < 0) {
		int r = -errno;
		proc_close_fds(fds, ARRAY_SIZE(fds));
		return r;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* call-init is a copy of ward-guest: of its descriptors (the
		 * channel, the tools' root, other calls' pipes) it keeps none. */
		int keep[] = { outp[1], statp[1], syncp[1], inp[0], errp[1] };
		fdio_close_all_but(3, keep, ARRAY_SIZE(keep));	/* -1 (no stdin call) is no fd */
		proc_title_set("ward-call-init");
		proc_init_namespaces(syncp[1], cfg->boot_id);
		close(syncp[1]);
		proc_init(cfg, c->key, shell, command, inp[0], outp[1], errp[1], statp[1]);
	}
	int ends[] = { outp[1], statp[1], syncp[1], inp[0], errp[1] };
	proc_close_fds(ends, ARRAY_SIZE(ends));
	const char *why;
	int r = proc_map_call(pid, syncp[0], cfg, &why);
	close(syncp[0]);
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
	if (r >= 0 && stat(path, &st) == 0)
		c->pidns = st.st_ino;
	c->init_pid = pid;
	c->out_fd = outp[0];
	c->status_fd = statp[0];
	c->in_fd = inp[1];
	c->err_fd = errp[0];
	fdio_set_nonblock(c->out_fd, true);
	fdio_set_nonblock(c->status_fd, true);
	if (c->input) {
		fdio_set_nonblock(c->in_fd, true);
		fdio_set_nonblock(c->err_fd, true);
	}
	if (r < 0) {
		if (why) {
			/* The model sees why on the call's output. */
			char line[256];
			int n = snprintf(line, sizeof(line), "ward: could not start the command: %s\n", why);
			capture_add(&c->cap, line, (size_t)MIN(n, (int)sizeof(line) - 1));
		}
		proc_signal(c, SIGKILL);
	}
	return r;
}

void proc_signal(struct call *c, int sig)
{
	if (sig == SIGKILL && c->cg_fd >= 0)
		fdio_write_str(c->cg_fd, "cgroup.kill", "1");
	if (!c->init_reaped && c->init_pid > 0)
		kill(c->init_pid, sig);
}
