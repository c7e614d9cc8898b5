/* The vm backend: a box is a QEMU microvm (KVM where /dev/kvm works, TCG
 * otherwise) booted from the host's own kernel with ward-guest as /init.
 * The VMM runs jailed, as Firecracker's jailer does: in fresh user, mount,
 * PID, network, IPC and UTS namespaces and the box's host cgroup, as PID 1
 * of its PID namespace, so a QEMU bug does not hand over the host and
 * killing QEMU reaps any helper it started. Its view of the host user is
 * uid 0 (with no capability), the VM's root, whom tool commands run as,
 * so the workspace's files are theirs. Destroying the box is SIGKILL to
 * the VMM. */
#include "sandbox/vm.h"
#include "sandbox/backend.h"
#include "sandbox/box-start.h"
#include "sandbox/box.h"
#include "sandbox/vmimage.h"
#include "workspace/layers.h"
#include "workspace/blank.h"
#include "sandbox/hostview.h"
#include "sandbox/spawn-env.h"
#include "sandbox/vm-int.h"
#include "guest/guest.h"
#include "base/account.h"
#include "image/image.h"
#include "image/erofs.h"
#include "proto/proto.h"
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
#include <linux/securebits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VM_QEMU "qemu-system-x86_64"
/* QEMU's own memory beside the guest's RAM, for the host cgroup. */
#define VM_HOST_OVERHEAD (384ull << 20)

/* /dev/kvm can be there and answer, yet fail at the first vCPU (a VM
 * without nested virtualisation): want the CPU flag and a VM that can be
 * made. */
static bool vm_kvm_probe(void)
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

/* Asked at every launch and for the snapshot's key: probe once. */
bool vm_kvm_usable(void)
{
	static int usable = -1;
	if (usable < 0)
		usable = vm_kvm_probe();
	return usable;
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
	if (!blank_mkfs())
		return err_set(e, -ENOENT, "mkfs.ext4 is missing (apt-get install e2fsprogs): a vm box's own disk is ext4");
	return vmimage_kernel(vz, sizeof(vz), kver, sizeof(kver), e);
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
	const struct vm_jail *jail;
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
	 * directory with --rw, or an empty directory (a block workspace's
	 * box: its workspace is an image, vm-ws.c). */
	if (o->workspace && !o->rw && !vm_ws_block(c->s)) {
		if (box_mount_overlay(o->workspace, c->s->upper_dir, c->s->work_dir, c->export_dir) < 0)
			vm_fail(c, "mount the copy-on-write workspace (overlayfs)");
	} else if (o->workspace && o->rw) {
		if (mount(o->workspace, c->export_dir, NULL, MS_BIND | MS_REC, NULL) < 0)
			vm_fail(c, "bind the workspace");
	}
	/* Then only what the VMM uses: nothing else of the host's mounts
	 * stays held by this namespace. */
	const char *what;
	int r = vm_jail_enter(c->jail, &what);
	if (r < 0) {
		errno = -r;
		vm_fail(c, what);
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
	/* uid 0 of this namespace, which the exec of root does not give a
	 * capability (SECBIT_NOROOT, locked): QEMU runs with none. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
					     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
		vm_fail(c, "securebits");
	execve(c->argv[0], c->argv, spawn_env_vmm);
	vm_fail(c, "exec " VM_QEMU);
}

/* How to launch one VMM. */
struct vm_launch {
	const char *mem_path;	/* RAM in this file (NULL: anonymous) */
	bool mem_share;		/* MAP_SHARED (a snapshot's template) or private */
	/* With no mem_path: RAM of a memory backend of its own all the same
	 * (anonymous), laid out as a snapshot's restore has it, for a
	 * hibernated box's state that was one to come back to. */
	bool mem_anon;
	bool incoming;		/* -incoming defer: a restore */
	bool template;		/* a snapshot's template: no box of its own */
	/* The two disks every VM has, in this order (a snapshot's devices are
	 * its restores'): the root's read-only image (an image's erofs, or a
	 * stand-in on the host view) and the box's own disk (a stand-in in a
	 * template). The guest finds them by their serials. */
	const char *root_img, *disk;
	/* The third: the workspace's image (vm-ws.c), or a stand-in. */
	const char *ws_img;
	/* The host view's skeleton (hostview.h), which the host share holds
	 * with the host's /usr and package database over it; NULL (an image's
	 * box, a template): the share is an empty directory. */
	const char *skel;
};

/* The devices a VM has, as far as a snapshot must match them: part of its
 * key, so a change of them is a new snapshot. */
#define VM_DEVICES "serial,net,9p-host,9p-ws,blk-root,blk-disk,blk-ws"

/* A path in a QEMU option's value: commas doubled. */
static int vm_opt_path(char *out, size_t n, const char *prefix, const char *path, const char *suffix)
{
	size_t k = (size_t)snprintf(out, n, "%s", prefix);
	for (const char *c = path; *c && k + 2 < n; c++) {
		if (*c == ',')
			out[k++] = ',';
		out[k++] = *c;
	}
	if (k >= n)
		return -ENAMETOOLONG;
	out[k] = 0;
	size_t l = strlen(suffix);
	if (k + l + 1 > n)
		return -ENAMETOOLONG;
	memcpy(out + k, suffix, l + 1);
	return 0;
}


void vm_paths(const struct box_spec *s, struct vm_paths *p)
{
	snprintf(p->dir, sizeof(p->dir), "%s", s->root_dir);
	char *slash = strrchr(p->dir, '/');
	if (slash)
		*slash = 0;
	snprintf(p->vmm, sizeof(p->vmm), "%s/vmm", p->dir);
	snprintf(p->sock, sizeof(p->sock), "%s/chan.sock", p->vmm);
	snprintf(p->qmp, sizeof(p->qmp), "%s/qmp.sock", p->vmm);
	snprintf(p->con, sizeof(p->con), "%s/console.log", p->vmm);
	snprintf(p->mig, sizeof(p->mig), "%s/mig.sock", p->vmm);
	snprintf(p->net, sizeof(p->net), "%s/net.sock", p->vmm);
	snprintf(p->exp, sizeof(p->exp), "%s", s->root_dir);
	snprintf(p->jail, sizeof(p->jail), "%s/vmm-root", p->dir);
}

static uint64_t vm_mem_mib(const struct box_opts *o)
{
	uint64_t m = o->lim.memory ? o->lim.memory >> 20 : 1024;
	return m < 128 ? 128 : m;
}

/* Start a jailed VMM and connect to its channel. The command line holds
 * nothing per box but paths, so one snapshot serves every box of a size. */
static int vm_launch(const struct box_spec *s, const struct vm_image *img, const struct vm_paths *p,
		     const struct vm_launch *l, struct box_inst *ret, struct err *e)
{
	char qemu[PATH_MAX];
	if (!vm_qemu_path(qemu, sizeof(qemu)))
		return err_set(e, -ENOENT, "%s is not installed (apt-get install qemu-system-x86)", VM_QEMU);
	mkdir(p->exp, 0700);
	mkdir(p->vmm, 0700);
	mkdir(p->jail, 0700);
	/* The RAM file is bound into the VMM's root: it is there first. */
	if (l->mem_path) {
		int mfd = open(l->mem_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (mfd < 0)
			return err_setc(e, -errno, "cannot open the VM's RAM file %s", l->mem_path);
		close(mfd);
	}
	unlink(p->sock);
	unlink(p->qmp);
	unlink(p->net);
	bool kvm = vm_kvm_usable();
	char mem[32], append[256], chardev[PATH_MAX + 64], qmparg[PATH_MAX + 32], serial[PATH_MAX + 16];
	char netdev[PATH_MAX + 64];
	char fs_host[2 * PATH_MAX + 64], fs_ws[2 * PATH_MAX + 64], machine[64] = "microvm,rtc=on", memobj[PATH_MAX + 96];
	char drv_root[2 * PATH_MAX + 64], drv_disk[2 * PATH_MAX + 96], drv_ws[2 * PATH_MAX + 64], share[PATH_MAX + 16];
	/* The host share (which every VM has, for one snapshot to serve them
	 * all): the host view, put together in the VMM's root (vm-jail.c);
	 * for a box with an image, which sees nothing of the host's files,
	 * and for a template, an empty directory. It spans several file
	 * systems: QEMU keeps their inode numbers apart (multidevs=remap). */
	snprintf(share, sizeof(share), "%s/%s", p->vmm, l->skel ? "host" : "empty");
	if (mkdir(share, l->skel ? 0755 : 0500) < 0 && errno != EEXIST)
		return err_setc(e, -errno, "cannot make %s", share);
	if (vm_opt_path(fs_host, sizeof(fs_host), "local,id=host,path=", share,
			",security_model=none,readonly=on,multidevs=remap") < 0 ||
	    vm_opt_path(fs_ws, sizeof(fs_ws), "local,id=ws,path=", p->exp, ",security_model=none") < 0 ||
	    vm_opt_path(drv_root, sizeof(drv_root), "if=none,id=root,format=raw,readonly=on,file=", l->root_img, "") < 0 ||
	    vm_opt_path(drv_ws, sizeof(drv_ws), "if=none,id=ws,format=raw,readonly=on,file=", l->ws_img, "") < 0 ||
	    /* The box's writes land in the host's page cache and a flush is
	     * not waited for (unsafe): a box is gone with the host anyway, and
	     * what the guest synced is in the file even if the VMM is killed.
	     * Blocks the guest frees, or writes as zeros, become holes. */
	    vm_opt_path(drv_disk, sizeof(drv_disk), "if=none,id=disk,format=raw,cache=unsafe,discard=unmap,"
			"detect-zeroes=unmap,file=", l->disk, "") < 0)
		return err_set(e, -ENAMETOOLONG, "a path of the VM's is too long");
	snprintf(mem, sizeof(mem), "%lluM", (unsigned long long)vm_mem_mib(s->opts));
	unsigned long khz = vm_tsc_khz();
	char tsc[48] = "";
	if (khz)
		snprintf(tsc, sizeof(tsc), " tsc_early_khz=%lu", khz);
	snprintf(append, sizeof(append), "console=ttyS0 quiet panic=-1 reboot=t random.trust_cpu=on%s", tsc);
	snprintf(chardev, sizeof(chardev), "socket,id=ch,path=%s,server=on,wait=off", p->sock);
	snprintf(netdev, sizeof(netdev), "socket,id=net,path=%s,server=on,wait=off", p->net);
	snprintf(qmparg, sizeof(qmparg), "unix:%s,server=on,wait=off", p->qmp);
	snprintf(serial, sizeof(serial), "file:%s", p->con);
	if (l->mem_path) {
		snprintf(machine, sizeof(machine), "microvm,rtc=on,memory-backend=ram");
		snprintf(memobj, sizeof(memobj), "memory-backend-file,id=ram,size=%s,mem-path=%s,share=%s", mem, l->mem_path,
			 l->mem_share ? "on" : "off");
	} else if (l->mem_anon) {
		snprintf(machine, sizeof(machine), "microvm,rtc=on,memory-backend=ram");
		snprintf(memobj, sizeof(memobj), "memory-backend-ram,id=ram,size=%s", mem);
	}
	char *argv[72] = {
		qemu, "-M", machine, "-accel", kvm ? "kvm" : "tcg", "-cpu", kvm ? "host" : "max",
		"-m", mem, "-smp", "1", "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-kernel", (char *)img->kernel, "-initrd", (char *)img->initrd, "-append", append,
		"-serial", serial,
		"-device", "virtio-serial-device", "-chardev", chardev,
		"-device", "virtserialport,chardev=ch,name=ward",
		/* The egress proxy's streams (proto/netmux.h); every box has the
		 * port, so one snapshot serves them all. */
		"-chardev", netdev, "-device", "virtserialport,chardev=net,name=ward-net",
		"-fsdev", fs_host, "-device", "virtio-9p-device,fsdev=host,mount_tag=host",
		"-fsdev", fs_ws, "-device", "virtio-9p-device,fsdev=ws,mount_tag=ws",
		"-drive", drv_root, "-device", "virtio-blk-device,drive=root,serial=" VM_SERIAL_ROOT,
		"-drive", drv_disk, "-device", "virtio-blk-device,drive=disk,serial=" VM_SERIAL_DISK,
		"-drive", drv_ws, "-device", "virtio-blk-device,drive=ws,serial=" VM_SERIAL_WS,
		"-qmp", qmparg,
		"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
	};
	int ac = 0;
	while (argv[ac])
		ac++;
	if (l->mem_path || l->mem_anon) {
		argv[ac++] = "-object";
		argv[ac++] = memobj;
	}
	if (l->incoming) {
		argv[ac++] = "-incoming";
		argv[ac++] = "defer";
	}
	argv[ac] = NULL;
	int sync[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0)
		return err_setc(e, -errno, "socketpair");
	_cleanup_close_ int cgfd = -1;
	if (s->cg && s->cg->v2[0])
		cgfd = open(s->cg->v2, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	/* QEMU under /usr comes with it; one elsewhere is bound by itself. */
	const char *own_qemu = strncmp(qemu, "/usr/", 5) ? qemu : NULL;
	struct vm_jail jail = { .root = p->jail, .ro = { img->kernel, img->initrd, l->root_img },
				.rw = { p->vmm, p->exp, l->disk, l->mem_path }, .kvm = kvm,
				.view = l->skel ? share : NULL, .skel = l->skel };
	/* Each file bound once: the root's stand-in is the workspace's too
	 * where a box has neither (a second bind over the first's read-only
	 * file fails). */
	size_t nro = 3;
	if (strcmp(l->ws_img, l->root_img))
		jail.ro[nro++] = l->ws_img;
	jail.ro[nro] = own_qemu;
	if (l->skel)
		hostview_host_dirs(jail.host, ARRAY_SIZE(jail.host) - 1);
	struct vm_child c = { .s = s, .sync_fd = sync[1], .argv = argv, .export_dir = p->exp, .jail = &jail,
			      .uid = getuid(), .gid = getgid() };
	int pidfd = -1;
	pid_t pid = box_clone3(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
				       CLONE_NEWCGROUP,
			       &cgfd, &pidfd);
	if (pid < 0) {
		int r = -errno;
		close(sync[0]);
		close(sync[1]);
		return err_setc(e, r, "cannot create the VMM's namespaces");
	}
	if (pid == 0) {
		close(sync[0]);
		vm_child_main(&c);
	}
	close(sync[1]);
	/* The host user is uid 0 to the VMM: 9p shows the workspace's files
	 * (and the host view's, where ward is root) as root's, the VM's, whom
	 * tool commands run as. */
	int r = box_userns_map(pid, 0, c.uid, c.gid);
	struct cgroup_held held = { 0 };
	if (r < 0)
		err_setc(e, r, "cannot write the VMM's user namespace maps");
	if (r >= 0) {
		r = box_go_ahead(sync[0], s->cg, pid, &held);
		/* A go-ahead the child could not take: it failed first, and its
		 * one line may be there. */
		char msg[512];
		struct pollfd pf = { .fd = sync[0], .events = POLLIN };
		ssize_t n = r < 0 && poll(&pf, 1, 1000) > 0 ? read(sync[0], msg, sizeof(msg) - 1) : -1;
		if (n > 0) {
			msg[n] = 0;
			r = err_set(e, -EIO, "cannot start the VMM: %s", msg);
		} else if (r < 0) {
			err_setc(e, r, "the VMM's setup ended early");
		}
	}
	/* Connect to QEMU's end of the channel as soon as it listens; the
	 * sync socket says if the exec failed first. */
	int chan = -1;
	int64_t until = now_ms() + VM_CONNECT_MS;
	while (r >= 0 && chan < 0) {
		struct pollfd pf = { .fd = sync[0], .events = POLLIN };
		if (poll(&pf, 1, 2) > 0) {
			char msg[512];
			ssize_t n = read(sync[0], msg, sizeof(msg) - 1);
			if (n > 0) {
				msg[n] = 0;
				r = err_set(e, -EIO, "cannot start the VMM: %s", msg);
				break;
			}
		}
		chan = fdio_unix_connect(p->sock, false);
		if (chan >= 0)
			break;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			r = err_set(e, -EIO, "the VMM exited at start (see %s)", p->con);
			pid = 0;
			break;
		}
		if (now_ms() > until)
			r = err_set(e, -ETIMEDOUT, "the VMM did not open its channel within %d s", VM_CONNECT_MS / 1000);
	}
	close(sync[0]);
	if (r < 0) {
		if (pid > 0)
			box_kill_reap(pid, pidfd, -1);
		else
			close(pidfd);
		return r;
	}
	/* The mux port too (egress and the box's published ports, which any
	 * box may have later): QEMU opens it just after the channel. */
	int net = -1;
	if (!l->template) {
		while ((net = fdio_unix_connect(p->net, false)) < 0 && now_ms() < until)
			usleep(1000);
		if (net < 0) {
			box_kill_reap(pid, pidfd, chan);
			return err_setc(e, net, "the VMM's network port");
		}
	}
	*ret = (struct box_inst){ .pid = pid, .pidfd = pidfd, .chan_fd = chan, .log_fd = -1, .net_fd = net,
				  .net_mux = true, .held = held };
	return 0;
}

/* Wait for the guest's HELLO; READY says it waits for START. seed: the
 * host's upper, sent when the guest asks for it (a CHANGES request at its
 * first START: vm-ws.c), or NULL. */
static int vm_hello_seed(int fd, bool *ready, int64_t ms, const char *seed, struct err *e)
{
	struct frame f;
	uint8_t *payload = NULL;
	int64_t until = now_ms() + ms;
	int r = proto_recv(fd, until, &f, &payload);
	if (r == 0 && f.type == PROTO_CHANGES && seed) {
		free(payload);
		payload = NULL;
		if ((r = vm_ws_seed_send(fd, seed, e)) < 0)
			return r;
		r = proto_recv(fd, now_ms() + ms, &f, &payload);
	}
	if (r == 0)
		r = proto_hello_check(&f);
	free(payload);
	if (r < 0)
		return err_set(e, r, "the VM's guest did not say hello (%s)", strerror(-r));
	*ready = f.flags & PROTO_F_READY;
	return 0;
}

static int vm_hello(int fd, bool *ready, int64_t ms, struct err *e)
{
	return vm_hello_seed(fd, ready, ms, NULL, e);
}

/* What the guest's START says beyond the box's options: whether it is a
 * pool box's first (prepare: the box's limits and its root without the
 * entropy and the clock, which come with the second, at its claim), and
 * its root: root ("image": the root disk is an image's erofs; "host": the
 * host view), cwd (where calls start), and an image's user ("uid:gid",
 * found in the image) and env (vm_root_json). The root is built at the
 * first START the guest takes; a later one (a claim's) has none of it. */
struct vm_start_as {
	bool prepare;
	const cJSON *root;	/* NULL: a claim's */
	const char *hostname;	/* a fork's name (NULL: the guest keeps its own) */
};

static int vm_send_start_as(int fd, const struct box_opts *o, const struct vm_start_as *as)
{
	uint8_t rnd[32];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -EIO;
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t mib = vm_mem_mib(o);
	cJSON *j = cJSON_CreateObject();
	if (as->prepare) {
		cJSON_AddBoolToObject(j, "prepare", 1);
	} else {
		cJSON_AddStringToObject(j, "entropy", hex);
		cJSON_AddNumberToObject(j, "time_ns", (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
		if (as->hostname)
			cJSON_AddStringToObject(j, "hostname", as->hostname);
	}
	/* With egress, the port the guest listens on for the proxy; git_rw:
	 * the guest leaves the workspace's git directories writable. */
	cJSON_AddNumberToObject(j, "pids", (double)(o->lim.pids ? o->lim.pids : 512));
	cJSON_AddNumberToObject(j, "mem", (double)((mib - MIN(mib / 4, 96ull)) << 20));
	cJSON_AddNumberToObject(j, "proxy_port", o->net == BOX_NET_ALLOW ? NET_PROXY_PORT : 0);
	if (o->git_rw)
		cJSON_AddBoolToObject(j, "git_rw", 1);
	const cJSON *x;
	cJSON_ArrayForEach(x, as->root)
		cJSON_AddItemToObject(j, x->string, cJSON_Duplicate(x, 1));
	_cleanup_free_ char *txt = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!txt)
		return -ENOMEM;
	return proto_send(fd, PROTO_START, 0, 0, txt, strlen(txt));
}

/* The root's part of START for box s (vm_start_as), or NULL with e set: an
 * image's Env that is not NAME=VALUE, or more than a START holds; a User
 * the image's /etc/passwd does not have. */
static cJSON *vm_root_json(const struct box_spec *s, struct err *e)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "root", s->image_root ? "image" : "host");
	cJSON_AddStringToObject(j, "cwd", box_tool_cwd(s));
	/* No workspace: /workspace is a directory of the box's own disk, and
	 * no 9p share is mounted (a box of an image can then be saved whole);
	 * nor with a block workspace ("ws": "block", vm-ws.c). */
	cJSON_AddBoolToObject(j, "ws_share", s->opts->workspace != NULL && !vm_ws_block(s));
	if (vm_ws_block(s))
		cJSON_AddStringToObject(j, "ws", "block");
	/* A new disk over changes the host kept (a session's, across
	 * boxes): the guest asks for them before it mounts its overlay. */
	if (vm_ws_block(s) && access(s->disk_path, F_OK) != 0 && vm_ws_seed_wanted(s->upper_dir))
		cJSON_AddBoolToObject(j, "ws_seed", 1);
	/* With secrets: the trust bundle of the box's CA, its /etc/ward-ca.pem. */
	if (s->ca_bundle)
		cJSON_AddStringToObject(j, "ca_bundle", s->ca_bundle);
	const char *user = s->image ? s->image->user : NULL;
	if (s->image_root && user && *user) {
		char why[256];
		struct account a;
		_cleanup_close_ int img = open(s->image_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		int r = img < 0 ? err_setc(e, -errno, "cannot open the image's tree %s", s->image_root)
				: account_resolve(img, user, 0, GUEST_VM_UIDS, &a, why, sizeof(why));
		if (r < 0) {
			if (img >= 0)
				err_set(e, r, "%s", why);
			cJSON_Delete(j);
			return NULL;
		}
		char u[32];
		snprintf(u, sizeof(u), "%u:%u", (unsigned)a.uid, (unsigned)a.gid);
		cJSON_AddStringToObject(j, "user", u);
	}
	size_t nenv = s->image ? s->image->nenv : 0;
	if (nenv > GUEST_ENV_MAX) {
		err_set(e, -E2BIG, "the image's config has %zu Env entries; a box takes at most %d", nenv, GUEST_ENV_MAX);
		cJSON_Delete(j);
		return NULL;
	}
	cJSON *env = cJSON_AddArrayToObject(j, "env");
	size_t bytes = 0;
	for (size_t i = 0; i < nenv; i++) {
		const char *kv = s->image->env[i], *eq = strchr(kv, '=');
		if (!eq || eq == kv || strlen(kv) > GUEST_ENV_ENTRY_MAX) {
			err_set(e, -EINVAL, "the image's Env entry %zu is not NAME=VALUE of at most %d bytes", i + 1,
				GUEST_ENV_ENTRY_MAX);
			cJSON_Delete(j);
			return NULL;
		}
		bytes += strlen(kv);
		cJSON_AddItemToArray(env, cJSON_CreateString(kv));
	}
	/* The keeper's own (a secret's placeholder), after the image's. */
	for (size_t i = 0; i < s->nenv; i++) {
		bytes += strlen(s->env[i]);
		cJSON_AddItemToArray(env, cJSON_CreateString(s->env[i]));
	}
	/* START is one frame: the rest of it is small. */
	if (bytes > PROTO_MAX_PAYLOAD / 2) {
		err_set(e, -E2BIG, "the image's Env holds %zu bytes; a vm box takes at most %u", bytes, PROTO_MAX_PAYLOAD / 2);
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* A pool box: the first START, then the guest's {"prepared":true} once
 * its shares are mounted and its limits set, so that a box listed as
 * pooled has nothing left to do but take the second START. A READY hello
 * meanwhile says the guest's channel reopened and it waits for a START
 * again: it gets the first one again. */
static int vm_prepare_guest(struct box_inst *b, const struct box_opts *o, const cJSON *root, struct err *e)
{
	int64_t until = now_ms() + BOX_CREATE_TIMEOUT_MS;
	struct vm_start_as as = { .prepare = true, .root = root };
	for (int tries = 0; tries < 3; tries++) {
		int r = vm_send_start_as(b->chan_fd, o, &as);
		if (r < 0)
			return err_set(e, r, "cannot send the pool's START to the VM's guest (%s)", strerror(-r));
		struct frame f;
		_cleanup_free_ uint8_t *payload = NULL;
		r = proto_recv(b->chan_fd, until, &f, &payload);
		if (r < 0)
			return err_set(e, r, "the VM's guest did not say it was prepared (%s)", strerror(-r));
		if (f.type == PROTO_HELLO && (f.flags & PROTO_F_READY) && proto_hello_check(&f) == 0)
			continue;
		if (f.type == PROTO_EVENT && f.len == strlen(PROTO_PREPARED_EVENT) &&
		    !memcmp(f.payload, PROTO_PREPARED_EVENT, f.len))
			return 0;
		break;
	}
	return err_set(e, -EPROTO, "the VM's guest did not say it was prepared");
}

/* START, then the guest's plain HELLO: the box is up. A guest that saw
 * the channel close and reopen says READY again: START again. */
static int vm_start_guest_as(struct box_inst *b, const struct box_opts *o, const cJSON *root, const char *seed,
			     struct err *e)
{
	struct vm_start_as as = { .root = root };
	int r = vm_send_start_as(b->chan_fd, o, &as);
	for (int tries = 0; r >= 0 && tries < 3; tries++) {
		bool ready = false;
		r = vm_hello_seed(b->chan_fd, &ready, BOX_CREATE_TIMEOUT_MS, seed, e);
		if (r < 0)
			return r;
		if (!ready) {
			b->hello_done = true;
			return 0;
		}
		r = vm_send_start_as(b->chan_fd, o, &as);
	}
	return err_set(e, -EPROTO, "the VM's guest did not start");
}

/* A pool box's claim: its root was built at its first START. */
static int vm_go(struct box_inst *b, const struct box_opts *o, struct err *e)
{
	return vm_start_guest_as(b, o, NULL, NULL, e);
}

static int vm_lock(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		flock(fd, LOCK_EX);
	return fd;
}

/* Make the snapshot at state (and its RAM file ram): boot a template into
 * a shared RAM file, snapshot it when it waits for START, and throw it
 * away; one at a time (lock). The template's disks are stand-ins it never
 * reads: the guest binds its block devices' driver only at START. */
static void vm_snapshot_make(const struct box_spec *s, const struct vm_image *img, const struct vm_paths *p,
			     const char *snap, const char *ram, const char *state, const char *lock)
{
	_cleanup_close_ int lk = vm_lock(lock);	/* held until this returns */
	(void)lk;
	if (access(state, R_OK) == 0)
		return;
	char tram[PATH_MAX + 96], tdisk[PATH_MAX + 96], standin[PATH_MAX];
	snprintf(tram, sizeof(tram), "%s.tmp", ram);
	snprintf(tdisk, sizeof(tdisk), "%s.disk", snap);
	unlink(tram);
	unlink(tdisk);
	struct err te = { 0 };
	int tr = vm_disk_standin(NULL, standin, sizeof(standin), &te);
	if (tr >= 0)
		tr = vm_disk_standin(tdisk, tdisk, sizeof(tdisk), &te);
	struct vm_launch l = { .mem_path = tram, .mem_share = true, .template = true, .root_img = standin, .disk = tdisk,
			       .ws_img = standin };
	struct box_inst t = { .pid = 0 };
	if (tr >= 0)
		tr = vm_launch(s, img, p, &l, &t, &te);
	bool ready = false;
	if (tr >= 0)
		tr = vm_hello(t.chan_fd, &ready, BOX_CREATE_TIMEOUT_MS, &te);
	if (tr >= 0 && ready)
		tr = vm_snapshot_take(p, state, &te);
	if (t.pid > 0)
		box_kill_reap(t.pid, t.pidfd, t.chan_fd);
	unlink(tdisk);
	if (tr >= 0 && rename(tram, ram) < 0)
		tr = -errno;
	if (tr < 0) {
		unlink(tram);
		unlink(state);
		return;
	}
	/* A snapshot's RAM file is the size of the guest's RAM (sparse): keep
	 * the newest few. */
	char pat[PATH_MAX + 16];
	const char *sl = strrchr(snap, '/');
	snprintf(pat, sizeof(pat), "%.*s/snap-*.state", (int)(sl ? sl - snap : 0), snap);
	static const char *const sfx[] = { ".ram", ".lock", NULL };
	vmimage_prune(pat, VMIMAGE_KEEP, sfx);
}

static void vm_inst_clear(struct box_inst *b)
{
	if (b->pid > 0)
		box_kill_reap(b->pid, b->pidfd, b->chan_fd);
	if (b->net_fd >= 0)
		close(b->net_fd);
	*b = (struct box_inst){ .pidfd = -1, .chan_fd = -1, .log_fd = -1, .net_fd = -1 };
}

static int vm_start_with(const struct box_spec *s, const cJSON *root, struct box_inst *ret, struct err *e)
{
	const struct box_opts *o = s->opts;
	const char *seed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "ws_seed")) ? s->upper_dir : NULL;
	if (o->net == BOX_NET_HOST)
		return err_set(e, -ENOTSUP, "a vm box has no network device: --net host is for --backend ns; "
			       "--allow-host gives a vm box egress through the proxy");
	if (!s->disk_path)
		return err_set(e, -EINVAL, "a vm box needs a disk of its own");
	struct vm_image img;
	int r = vmimage_get(o->guest_path, false, &img, e);
	if (r < 0)
		return r;
	/* The box's own disk (made at its first start, kept until it is
	 * destroyed) and its root's image: the image's erofs (made once for
	 * every box of it), or a stand-in on the host view. */
	r = vm_disk_make(s->disk_path, o->lim.disk ? o->lim.disk : BOX_DEFAULT_DISK, e);
	char root_img[PATH_MAX];
	if (r >= 0)
		r = s->image_root ? image_erofs_tree(s->image_root, root_img, sizeof(root_img), e)
				  : vm_disk_standin(NULL, root_img, sizeof(root_img), e);
	/* The workspace's image (a block workspace), else a stand-in. */
	char ws_img[PATH_MAX];
	if (r >= 0)
		r = vm_ws_block(s) ? vm_ws_image(s, ws_img, sizeof(ws_img), e)
				   : vm_disk_standin(NULL, ws_img, sizeof(ws_img), e);
	if (r < 0)
		return r;
	/* The host view's skeleton, for a box without an image. */
	char skel[PATH_MAX];
	if (!s->image_root && (r = hostview_get(skel, sizeof(skel), e)) < 0)
		return r;
	const char *sk = s->image_root ? NULL : skel;
	struct vm_paths p;
	vm_paths(s, &p);
	/* The snapshot: tied to the image, the QEMU binary, the RAM size and
	 * the devices (the command line is otherwise the same for every box,
	 * and every box has the same devices: what differs is the files behind
	 * them). */
	char qemu[PATH_MAX], snap[PATH_MAX + 64], ram[PATH_MAX + 80], state[PATH_MAX + 80], lock[PATH_MAX + 80];
	char key[PATH_MAX * 3];
	struct stat qs = { 0 };
	if (vm_qemu_path(qemu, sizeof(qemu)))
		stat(qemu, &qs);
	snprintf(key, sizeof(key), "%s|%s|%s|%lld|%lld|%llu|%d|%s", img.kernel, img.initrd, qemu, (long long)qs.st_size,
		 (long long)qs.st_mtime, (unsigned long long)vm_mem_mib(o), vm_kvm_usable(), VM_DEVICES);
	uint64_t h = 1469598103934665603ULL;
	for (const char *k = key; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ULL;
	snprintf(snap, sizeof(snap), "%s", img.kernel);
	char *sl = strrchr(snap, '/');
	if (sl)
		snprintf(sl, sizeof(snap) - (size_t)(sl - snap), "/snap-%016llx", (unsigned long long)h);
	snprintf(ram, sizeof(ram), "%s.ram", snap);
	snprintf(state, sizeof(state), "%s.state", snap);
	snprintf(lock, sizeof(lock), "%s.lock", snap);
	if (!o->no_snapshot && access(state, R_OK) != 0)
		vm_snapshot_make(s, &img, &p, snap, ram, state, lock);
	if (!o->no_snapshot && access(state, R_OK) == 0 && access(ram, R_OK) == 0) {
		struct vm_launch l = { .mem_path = ram, .mem_share = false, .incoming = true, .root_img = root_img,
				       .disk = s->disk_path, .ws_img = ws_img, .skel = sk };
		r = vm_launch(s, &img, &p, &l, ret, e);
		if (r >= 0)
			r = vm_snapshot_restore(&p, state, e);
		if (r >= 0)
			r = o->pool ? vm_prepare_guest(ret, o, root, e) : vm_start_guest_as(ret, o, root, seed, e);
		if (r >= 0) {
			ret->restored = true;
			ret->pooled = o->pool;
			ret->tmp_on_disk = true;
			return 0;
		}
		vm_inst_clear(ret);
		/* A snapshot that does not restore is stale: cold boot. */
		unlink(state);
		e->code = 0;
	}
	struct vm_launch l = { .root_img = root_img, .disk = s->disk_path, .ws_img = ws_img, .skel = sk };
	r = vm_launch(s, &img, &p, &l, ret, e);
	if (r < 0)
		return r;
	bool ready = false;
	r = vm_hello(ret->chan_fd, &ready, BOX_CREATE_TIMEOUT_MS, e);
	if (r >= 0)
		r = o->pool ? vm_prepare_guest(ret, o, root, e) : vm_start_guest_as(ret, o, root, seed, e);
	ret->pooled = o->pool;
	ret->tmp_on_disk = true;
	if (r < 0) {
		vm_inst_clear(ret);
		return r;
	}
	return 0;
}

/* Whether box s's VM can be saved whole: QEMU 7.2 refuses to migrate
 * while a 9p share is mounted, which the host view (/usr) and a --rw
 * workspace are (a copy-on-write one is a block image: vm-ws.c). NULL:
 * it can; else why not. */
static const char *vm_ram_why(const struct box_spec *s)
{
	if (!s->image_root)
		return "a vm box without --image reads the host's /usr over a 9p share, which QEMU 7.2 cannot "
		       "save: its processes end at a hibernate (its files are kept)";
	if (s->opts->workspace && !vm_ws_block(s))
		return "a vm box's --rw workspace is a 9p share (live writes to the directory), which QEMU 7.2 "
		       "cannot save: its processes end at a hibernate (its files are kept)";
	return NULL;
}

static int vm_start(const struct box_spec *s, struct box_inst *ret, struct err *e)
{
	cJSON *root = vm_root_json(s, e);
	if (!root)
		return e->code ? e->code : -ENOMEM;
	int r = vm_start_with(s, root, ret, e);
	cJSON_Delete(root);
	if (r >= 0) {
		ret->ram_why = vm_ram_why(s);
		ret->keeps_ram = !ret->ram_why;
		ret->ws_sync = vm_ws_block(s);
	}
	return r;
}

static int vm_save(const struct box_spec *s, struct box_inst *b, const char *state, struct err *e)
{
	if (!b->keeps_ram)
		return err_set(e, -ENOTSUP, "%s", b->ram_why ? b->ram_why : "this box cannot be saved whole");
	struct vm_paths p;
	vm_paths(s, &p);
	if (b->chan_fd >= 0)
		close(b->chan_fd);
	if (b->net_fd >= 0)
		close(b->net_fd);
	b->chan_fd = b->net_fd = -1;
	return vm_snapshot_save(&p, state, e);
}

/* A restored guest says hello when it saw its host go before the save,
 * and opened its port again; one that had not seen it yet goes on with
 * the channel it had: a PING finds either (its PONG, or a hello first).
 * Then a START without a root: its clock set to the host's (it stood
 * still while saved) and fresh entropy (the state it woke from is on
 * disk), as a pool box's claim gets them. */
int vm_resume_hello(const struct box_opts *o, struct box_inst *b, const char *hostname, struct err *e)
{
	int r = proto_send(b->chan_fd, PROTO_PING, 0, 0, NULL, 0);
	int64_t until = now_ms() + BOX_CREATE_TIMEOUT_MS;
	while (r >= 0) {
		struct frame f;
		uint8_t *payload = NULL;
		r = proto_recv(b->chan_fd, until, &f, &payload);
		if (r == 0 && f.type == PROTO_HELLO)
			r = proto_hello_check(&f) < 0 ? -EPROTO : 1;
		else if (r == 0 && f.type == PROTO_PONG)
			r = 1;
		free(payload);
		if (r == 1) {
			b->hello_done = true;
			r = vm_send_start_as(b->chan_fd, o, &(struct vm_start_as){ .hostname = hostname });
			if (r < 0)
				return err_set(e, r, "the restored guest's clock and entropy could not be sent (%s)",
					       strerror(-r));
			return 0;
		}
	}
	return err_set(e, r, "the restored guest did not answer (%s)", strerror(-r));
}

/* The VMM again, with the devices and disks the saved one had, fed the
 * saved state: the guest goes on where it stopped, and opens its port
 * again (vm_snapshot_save). */
static int vm_resume(const struct box_spec *s, const char *state, bool restored, struct box_inst *ret,
		     struct err *e)
{
	const char *why = vm_ram_why(s);
	if (why)
		return err_set(e, -ENOTSUP, "%s", why);
	struct vm_image img;
	int r = vmimage_get(s->opts->guest_path, false, &img, e);
	char root_img[PATH_MAX], ws_img[PATH_MAX];
	if (r >= 0)
		r = image_erofs_tree(s->image_root, root_img, sizeof(root_img), e);
	/* The workspace's image the box was made with (its own, kept beside
	 * its disk): the saved guest's overlay was built on those bytes. */
	if (r >= 0)
		r = vm_ws_block(s) ? vm_ws_image(s, ws_img, sizeof(ws_img), e)
				   : vm_disk_standin(NULL, ws_img, sizeof(ws_img), e);
	if (r < 0)
		return r;
	struct vm_paths p;
	vm_paths(s, &p);
	struct vm_launch l = { .mem_anon = restored, .incoming = true, .root_img = root_img, .disk = s->disk_path,
			       .ws_img = ws_img };
	r = vm_launch(s, &img, &p, &l, ret, e);
	if (r >= 0)
		r = vm_snapshot_restore(&p, state, e);
	if (r >= 0)
		r = vm_resume_hello(s->opts, ret, s->opts->fork_of ? s->name : NULL, e);
	if (r < 0) {
		vm_inst_clear(ret);
		return r;
	}
	ret->restored = restored;
	ret->tmp_on_disk = true;
	ret->keeps_ram = true;
	ret->ws_sync = vm_ws_block(s);
	return 0;
}

static void vm_kill(struct box_inst *b)
{
	/* One process (and its threads): its exit is quick. */
	if (b->pid > 0)
		box_kill_reap(b->pid, b->pidfd, b->chan_fd);
	else if (b->chan_fd >= 0)
		close(b->chan_fd);
	if (b->net_fd >= 0)
		close(b->net_fd);
	b->pid = 0;
	b->pidfd = b->chan_fd = b->net_fd = -1;
}

static void vm_host_limits(const struct limits *box, struct limits *host)
{
	/* The guest's RAM and pids are the VM's own; on the host the VMM is
	 * one process with a few threads. */
	*host = *box;
	host->memory = box->memory ? box->memory + VM_HOST_OVERHEAD : 0;
	host->pids = 256;
}

const struct box_backend vm_backend = {
	.name = "vm",
	.start = vm_start,
	.kill = vm_kill,
	.go = vm_go,
	.save = vm_save,
	.resume = vm_resume,
	.fork = vm_fork,
	.host_limits = vm_host_limits,
};
