#include "sandbox/box.h"
#include "sandbox/ns.h"

#include "base/timeutil.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void box_kill_reap(pid_t pid, int pidfd, int chan_fd)
{
	if (pidfd >= 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	else
		kill(pid, SIGKILL);
	int64_t until = now_ms() + 2000;
	while (now_ms() < until) {
		pid_t p = waitpid(pid, NULL, WNOHANG);
		if (p == pid || (p < 0 && errno == ECHILD))
			break;
		struct pollfd pf = { .fd = pidfd, .events = POLLIN };
		poll(&pf, 1, 10);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (chan_fd >= 0)
		close(chan_fd);
}

static int ns_backend_start(const struct box_spec *s, struct box_inst *ret, struct err *e)
{
	const struct box_opts *o = s->opts;
	struct ns_spec ns = {
		.root_dir = s->root_dir,
		.guest_path = o->guest_path,
		.workspace = o->workspace,
		.upper_dir = s->upper_dir,
		.work_dir = s->work_dir,
		.workspace_rw = o->rw,
		.net = o->net,
		.lim = o->lim,
		.cg = s->cg,
		.grace_ms = o->grace_ms,
	};
	struct ns_box b;
	int r = ns_start(&ns, &b, e);
	if (r < 0)
		return r;
	*ret = (struct box_inst){ .pid = b.pid, .pidfd = b.pidfd, .chan_fd = b.chan_fd,
				  .rlimit_pids = b.rlimit_pids, .rlimit_memory = b.rlimit_memory };
	return 0;
}

static void ns_backend_kill(struct box_inst *b)
{
	struct ns_box nb = { .pid = b->pid, .pidfd = b->pidfd, .chan_fd = b->chan_fd };
	ns_kill(&nb);
	b->pid = 0;
	b->pidfd = b->chan_fd = -1;
}

const struct box_backend box_backend_ns = {
	.name = "ns",
	.start = ns_backend_start,
	.kill = ns_backend_kill,
};

const struct box_backend *box_backend_find(const char *name)
{
	if (!name || !strcmp(name, "ns"))
		return &box_backend_ns;
	if (!strcmp(name, "vm"))
		return &box_backend_vm;
	if (!strcmp(name, "auto")) {
		/* A microVM where the machine has KVM; under TCG a VM is seconds
		 * to boot, so auto means ns there. */
		struct err e = { 0 };
		return vm_kvm_usable() && vm_available(&e) == 0 ? &box_backend_vm : &box_backend_ns;
	}
	return NULL;
}
