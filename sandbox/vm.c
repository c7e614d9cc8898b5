/* The vm backend: a box is a QEMU microvm (KVM where /dev/kvm works, TCG
 * otherwise) booted from the host's own kernel with ward-guest as /init.
 * The VMM runs jailed, as Firecracker's jailer does: in fresh user, mount,
 * PID, network, IPC and UTS namespaces and the box's host cgroup, as PID 1
 * of its PID namespace, so a QEMU bug does not hand over the host and
 * killing QEMU reaps any helper it started. Its view of the host user is
 * uid 1000, the uid tool commands run as in the VM, so the workspace's
 * files are theirs. Destroying the box is SIGKILL to the VMM. */
#include "sandbox/box.h"
#include "sandbox/image.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define VM_QEMU "qemu-system-x86_64"
/* QEMU's own memory beside the guest's RAM, for the host cgroup. */
#define VM_HOST_OVERHEAD (384ull << 20)
#define VM_CONNECT_MS 5000

/* /dev/kvm can be there and answer, yet fail at the first vCPU (a VM
 * without nested virtualisation): want the CPU flag and a VM that can be
 * made. */
bool vm_kvm_usable(void)
{
	_cleanup_free_ char *ci = NULL;
	if (fdio_read_file(AT_FDCWD, "/proc/cpuinfo", 4u << 20, &ci, NULL) < 0 ||
	    (!strstr(ci, " vmx") && !strstr(ci, " svm")))
		return false;
	_cleanup_close_ int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, KVM_GET_API_VERSION, 0) != 12)
		return false;
	int vm = ioctl(fd, KVM_CREATE_VM, 0);
	if (vm < 0)
		return false;
	close(vm);
	return true;
}

static bool vm_qemu_path(char *out, size_t n)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *copy = strdup(path && *path ? path : "/usr/bin:/bin");
	char *save = NULL;
	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, n, "%s/%s", d, VM_QEMU);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

int vm_available(struct err *e)
{
	char q[PATH_MAX], vz[PATH_MAX], kver[128];
	if (!vm_qemu_path(q, sizeof(q)))
		return err_set(e, -ENOENT, "%s is not installed (apt-get install qemu-system-x86)", VM_QEMU);
	return image_kernel(vz, sizeof(vz), kver, sizeof(kver), e);
}

/* The guest's TSC runs at the host's rate; telling the kernel skips a
 * calibration against the PIT that fails now and then under TCG. */
static unsigned long vm_tsc_khz(void)
{
	_cleanup_free_ char *s = NULL;
	if (fdio_read_file(AT_FDCWD, "/sys/devices/system/cpu/cpu0/tsc_freq_khz", 64, &s, NULL) == 0)
		return strtoul(s, NULL, 10);
	_cleanup_free_ char *ci = NULL;
	if (fdio_read_file(AT_FDCWD, "/proc/cpuinfo", 1 << 20, &ci, NULL) < 0)
		return 0;
	const char *m = strstr(ci, "cpu MHz");
	m = m ? strchr(m, ':') : NULL;
	return m ? (unsigned long)(strtod(m + 1, NULL) * 1000) : 0;
}

struct vm_child {
	const struct box_spec *s;
	int sync_fd;
	char *const *argv;
	const char *export_dir;
	uid_t uid;
	gid_t gid;
};

static __attribute__((noreturn)) void vm_fail(struct vm_child *c, const char *what)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "%s: %s", what, strerror(errno));
	fdio_write_full(c->sync_fd, msg, (size_t)MIN(n, (int)sizeof(msg) - 1));
	_exit(1);
}

static __attribute__((noreturn)) void vm_child_main(struct vm_child *c)
{
	const struct box_opts *o = c->s->opts;
	char b;
	if (fdio_read_full(c->sync_fd, &b, 1) < 0)
		_exit(1);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		vm_fail(c, "make mounts private");
	/* The workspace QEMU exports: the copy-on-write overlay, the live
	 * directory with --rw, or an empty directory. */
	if (o->workspace && !o->rw) {
		char opts[3 * PATH_MAX + 64];
		snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", o->workspace,
			 c->s->upper_dir, c->s->work_dir);
		if (mount("overlay", c->export_dir, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
			vm_fail(c, "mount the copy-on-write workspace (overlayfs)");
	} else if (o->workspace) {
		if (mount(o->workspace, c->export_dir, NULL, MS_BIND | MS_REC, NULL) < 0)
			vm_fail(c, "bind the workspace");
	}
	/* The go-ahead: the cgroups hold. */
	if (fdio_read_full(c->sync_fd, &b, 1) < 0)
		_exit(1);
	int keep[] = { c->sync_fd };
	fdio_close_all_but(3, keep, 1);
	int devnull = open("/dev/null", O_RDWR);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		if (devnull > 2)
			close(devnull);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* As uid 1000 of this namespace, the exec drops every capability. */
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	execve(c->argv[0], c->argv, envp);
	vm_fail(c, "exec " VM_QEMU);
}

static int vm_write_map(pid_t pid, const char *file, const char *map)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	return fdio_write_str(AT_FDCWD, path, map);
}

static int vm_start(const struct box_spec *s, struct box_inst *ret, struct err *e)
{
	const struct box_opts *o = s->opts;
	struct vm_image img;
	int r = image_get(o->guest_path, false, &img, e);
	if (r < 0)
		return r;
	char qemu[PATH_MAX];
	if (!vm_qemu_path(qemu, sizeof(qemu)))
		return err_set(e, -ENOENT, "%s is not installed (apt-get install qemu-system-x86)", VM_QEMU);
	/* Files beside the box's root dir, in its runtime dir. */
	char dir[PATH_MAX], sock[PATH_MAX + 16], qmp[PATH_MAX + 16], con[PATH_MAX + 16], exp[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s", s->root_dir);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	snprintf(sock, sizeof(sock), "%s/chan.sock", dir);
	snprintf(qmp, sizeof(qmp), "%s/qmp.sock", dir);
	snprintf(con, sizeof(con), "%s/console.log", dir);
	snprintf(exp, sizeof(exp), "%s", s->root_dir);
	mkdir(exp, 0700);
	unlink(sock);
	unlink(qmp);
	bool kvm = vm_kvm_usable();
	uint64_t mem_mib = o->lim.memory ? o->lim.memory >> 20 : 1024;
	if (mem_mib < 128)
		mem_mib = 128;
	char mem[32], append[512], chardev[PATH_MAX + 64], qmparg[PATH_MAX + 32], serial[PATH_MAX + 16];
	char fs_usr[] = "local,id=usr,path=/usr,security_model=none,readonly=on";
	char fs_ws[PATH_MAX + 64];
	snprintf(mem, sizeof(mem), "%lluM", (unsigned long long)mem_mib);
	/* The guest's own limits: its RAM less what the kernel and ward-guest
	 * need, and the box's pids. */
	unsigned long khz = vm_tsc_khz();
	char tsc[48] = "";
	if (khz)
		snprintf(tsc, sizeof(tsc), " tsc_early_khz=%lu", khz);
	snprintf(append, sizeof(append),
		 "console=ttyS0 quiet panic=-1 reboot=t random.trust_cpu=on%s ward.ws=1 ward.pids=%llu ward.mem=%llu "
		 "ward.grace=%lld",
		 tsc, (unsigned long long)(o->lim.pids ? o->lim.pids : 512),
		 (unsigned long long)((mem_mib - MIN(mem_mib / 4, 96ull)) << 20), (long long)o->grace_ms);
	snprintf(chardev, sizeof(chardev), "socket,id=ch,path=%s,server=on,wait=off", sock);
	snprintf(qmparg, sizeof(qmparg), "unix:%s,server=on,wait=off", qmp);
	snprintf(serial, sizeof(serial), "file:%s", con);
	snprintf(fs_ws, sizeof(fs_ws), "local,id=ws,path=%s,security_model=none", exp);
	char *argv[] = {
		qemu, "-M", "microvm,rtc=on", "-accel", kvm ? "kvm" : "tcg", "-cpu", kvm ? "host" : "max",
		"-m", mem, "-smp", "1", "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-kernel", img.kernel, "-initrd", img.initrd, "-append", append,
		"-serial", serial,
		"-device", "virtio-serial-device", "-chardev", chardev,
		"-device", "virtserialport,chardev=ch,name=ward",
		"-fsdev", fs_usr, "-device", "virtio-9p-device,fsdev=usr,mount_tag=usr",
		"-fsdev", fs_ws, "-device", "virtio-9p-device,fsdev=ws,mount_tag=ws",
		"-qmp", qmparg,
		"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
		NULL,
	};
	int sync[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0)
		return err_setc(e, -errno, "socketpair");
	_cleanup_close_ int cgfd = -1;
	if (s->cg && s->cg->v2[0])
		cgfd = open(s->cg->v2, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	struct vm_child c = { .s = s, .sync_fd = sync[1], .argv = argv, .export_dir = exp, .uid = getuid(), .gid = getgid() };
	int pidfd = -1;
	struct clone_args a = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
			 CLONE_NEWCGROUP | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
	};
	if (cgfd >= 0) {
		a.flags |= CLONE_INTO_CGROUP;
		a.cgroup = (uint64_t)cgfd;
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid < 0 && cgfd >= 0) {
		a.flags &= ~(uint64_t)CLONE_INTO_CGROUP;
		pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	}
	if (pid < 0) {
		r = -errno;
		close(sync[0]);
		close(sync[1]);
		return err_setc(e, r, "cannot create the VMM's namespaces");
	}
	if (pid == 0) {
		close(sync[0]);
		vm_child_main(&c);
	}
	close(sync[1]);
	/* The host user is uid 1000 to the VMM: 9p shows the workspace's files
	 * as uid 1000's, the uid tool commands run as in the VM. */
	char map[64];
	snprintf(map, sizeof(map), "1000 %u 1\n", c.uid);
	r = vm_write_map(pid, "uid_map", map);
	if (r >= 0)
		r = vm_write_map(pid, "setgroups", "deny");
	snprintf(map, sizeof(map), "1000 %u 1\n", c.gid);
	if (r >= 0)
		r = vm_write_map(pid, "gid_map", map);
	if (r < 0)
		err_setc(e, r, "cannot write the VMM's user namespace maps");
	if (r >= 0)
		r = fdio_write_full(sync[0], "m", 1);
	if (r >= 0 && s->cg)
		cgroup_attach_v1(s->cg, pid);
	if (r >= 0)
		r = fdio_write_full(sync[0], "g", 1);
	/* Connect to QEMU's end of the channel as soon as it listens; the
	 * sync socket says if the exec failed first. */
	int chan = -1;
	int64_t until = now_ms() + VM_CONNECT_MS;
	while (r >= 0 && chan < 0) {
		struct pollfd pf = { .fd = sync[0], .events = POLLIN };
		if (poll(&pf, 1, 5) > 0) {
			char msg[512];
			ssize_t n = read(sync[0], msg, sizeof(msg) - 1);
			if (n > 0) {
				msg[n] = 0;
				r = err_set(e, -EIO, "cannot start the VMM: %s", msg);
				break;
			}
		}
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			chan = fd;
			break;
		}
		if (fd >= 0)
			close(fd);
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			r = err_set(e, -EIO, "the VMM exited at start (see %s)", con);
			pid = 0;
			break;
		}
		if (now_ms() > until)
			r = err_set(e, -ETIMEDOUT, "the VMM did not open its channel within %d s", VM_CONNECT_MS / 1000);
	}
	close(sync[0]);
	if (r < 0) {
		if (pid > 0) {
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			waitpid(pid, NULL, 0);
		}
		close(pidfd);
		return r;
	}
	*ret = (struct box_inst){ .pid = pid, .pidfd = pidfd, .chan_fd = chan };
	return 0;
}

static void vm_kill(struct box_inst *b)
{
	/* One process (and its threads): its exit is quick. */
	if (b->pid > 0)
		box_kill_reap(b->pid, b->pidfd, b->chan_fd);
	else if (b->chan_fd >= 0)
		close(b->chan_fd);
	b->pid = 0;
	b->pidfd = b->chan_fd = -1;
}

static void vm_host_limits(const struct limits *box, struct limits *host)
{
	/* The guest's RAM and pids are the VM's own; on the host the VMM is
	 * one process with a few threads. */
	*host = *box;
	host->memory = box->memory ? box->memory + VM_HOST_OVERHEAD : 0;
	host->pids = 256;
}

const struct box_backend box_backend_vm = {
	.name = "vm",
	.start = vm_start,
	.kill = vm_kill,
	.host_limits = vm_host_limits,
};
