#include "task/hook-cgroup.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "sandbox/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static char none_why[160];
static int seq;

int hook_cgroup_base(char *out, size_t n)
{
	/* What this machine's cgroups can do, looked at once (sandbox/cgroup.h:
	 * v2 at /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1). */
	static struct cgroup_caps caps;
	static bool probed;
	if (!probed) {
		cgroup_probe(&caps);
		probed = true;
	}
	if (!caps.v2_base[0]) {
		snprintf(none_why, sizeof(none_why), "no cgroup v2 here");
		return -ENOTSUP;
	}
	if (!caps.v2_writable || !caps.v2_kill) {
		snprintf(none_why, sizeof(none_why), "%s", !caps.v2_kill ? "this kernel's cgroups have no cgroup.kill"
								      : "ward may not make a cgroup under its own");
		return -EACCES;
	}
	if ((size_t)snprintf(out, n, "%s", caps.v2_base) >= n)
		return -ENAMETOOLONG;
	return 0;
}

int hook_cgroup_new(struct hook_cgroup *cg)
{
	cg->fd = -1;
	char base[PATH_MAX - 64], kill_file[PATH_MAX];
	int r = hook_cgroup_base(base, sizeof(base));
	if (r < 0)
		return r;
	cg->seq = ++seq;
	snprintf(cg->path, sizeof(cg->path), "%s/ward-hook-%d-%d", base, (int)getpid(), cg->seq);
	if (mkdir(cg->path, 0700) < 0) {
		r = -errno;
		snprintf(none_why, sizeof(none_why), "ward may not make a cgroup under %.100s (%s)", base, strerror(-r));
		return r;
	}
	snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", cg->path);
	if (access(kill_file, W_OK) < 0 || (cg->fd = open(cg->path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = -errno;
		rmdir(cg->path);
		cg->fd = -1;
		snprintf(none_why, sizeof(none_why), "this kernel's cgroups have no cgroup.kill");
		return r;
	}
	none_why[0] = 0;
	return 0;
}

struct spawn_child {
	const int *moved;
	char *const *argv;
};

/* The child, on its own stack: system calls only. It shares ward's memory
 * until its exec (CLONE_VM | CLONE_VFORK: ward waits), so it writes no
 * memory of ward's but errno, which ward does not read here. */
static __attribute__((noreturn, used, no_sanitize_address)) void spawn_child_run(struct spawn_child *c)
{
	setpgid(0, 0);
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	for (int i = 0; i < 3; i++)
		dup2(c->moved[i], i);
	syscall(SYS_close_range, 3, ~0U, 0);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve("/bin/sh", c->argv, environ);
	_exit(127);
}

#if defined(__x86_64__)
/* clone3 with the child on a stack of its own, running spawn_child_run:
 * a fork that copies none of ward's page tables (what posix_spawn does,
 * which cannot start a child in a cgroup in this glibc). The child starts
 * at the instruction after the syscall with its stack pointer at the new
 * stack's top; it calls the function there and never returns. */
static pid_t clone3_vm(struct clone_args *a, struct spawn_child *c)
{
	long ret;
	register struct spawn_child *arg __asm__("r12") = c;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "mov %%r12, %%rdi\n\t"
			 "call spawn_child_run\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "0"((long)SYS_clone3), "D"(a), "S"(sizeof(*a)), "r"(arg)
			 : "rcx", "r11", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (pid_t)ret;
}
#define SPAWN_STACK (64 * 1024)
#endif

int hook_cgroup_spawn(const struct hook_cgroup *cg, char *const argv[], const int fds[3], pid_t *ret_pid)
{
	/* Everything the child needs is ready before the clone: it makes
	 * system calls only (a fork of a ward with threads). */
	int moved[3];
	for (int i = 0; i < 3; i++)
		moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
	for (int i = 0; i < 3; i++)
		if (moved[i] < 0) {
			for (int k = 0; k < 3; k++)
				if (moved[k] >= 0)
					close(moved[k]);
			return -EMFILE;
		}
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	struct spawn_child c = { .moved = moved, .argv = argv };
	struct clone_args a = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)cg->fd };
	pid_t pid = -1;
#if defined(__x86_64__)
	void *stack = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack != MAP_FAILED) {
		a.flags |= CLONE_VM | CLONE_VFORK;
		a.stack = (uint64_t)(uintptr_t)stack;
		a.stack_size = SPAWN_STACK;
		pid = clone3_vm(&a, &c);
		int saved = errno;
		munmap(stack, SPAWN_STACK);	/* the child has exec'd or exited */
		errno = saved;
	} else
#endif
	{
		pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
		if (pid == 0)
			spawn_child_run(&c);
	}
	int r = pid < 0 ? -errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < 3; i++)
		close(moved[i]);
	if (r == 0) {
		/* Its group is its own before ward signals it (the child may not
		 * have run yet). */
		setpgid(pid, pid);
		*ret_pid = pid;
	}
	return r;
}

void hook_cgroup_end(struct hook_cgroup *cg)
{
	if (cg->fd < 0)
		return;
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/cgroup.kill", cg->path);
	_cleanup_close_ int k = open(p, O_WRONLY | O_CLOEXEC);
	if (k >= 0)
		fdio_write_full(k, "1", 1);
	/* The kill is done when cgroup.events says populated 0 (it is
	 * signalled with POLLPRI); then the directory can go. */
	snprintf(p, sizeof(p), "%s/cgroup.events", cg->path);
	_cleanup_close_ int ev = open(p, O_RDONLY | O_CLOEXEC);
	int64_t until = now_ms() + 1000;
	while (rmdir(cg->path) < 0 && errno == EBUSY && now_ms() < until) {
		struct pollfd pf = { .fd = ev, .events = POLLPRI };
		if (ev < 0 || poll(&pf, 1, 20) < 0)
			usleep(20000);
		if (ev >= 0)
			lseek(ev, 0, SEEK_SET);
	}
	close(cg->fd);
	cg->fd = -1;
}

const char *hook_cgroup_none(void)
{
	return none_why;
}
