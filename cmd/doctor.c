/* ward doctor: what this machine can enforce, checked, never assumed. */
#include "cmd/cmd.h"
#include "task/hook-cgroup.h"
#include "image/image.h"
#include "image/skopeo.h"
#include "cmd/term.h"
#include "sandbox/box.h"
#include "workspace/layers.h"
#include "image/erofs.h"
#include "sandbox/ns.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "sandbox/cgroup.h"
#include "sandbox/sdscope.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

static int doctor_fail;

static void line(bool ok, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(bool ok, const char *what, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	term_printf(stdout, "%-4s %-22s %s\n", ok ? "ok" : "--", what, n >= 0 ? s : "?");
	free(s);
}

/* Try the namespaces in a child, as a box would. */
static int try_unshare(int flags)
{
	pid_t p = fork();
	if (p < 0)
		return -errno;
	if (p == 0)
		_exit(unshare(flags) < 0 ? errno : 0);
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
}

static int doctor_run(int argc, char **argv)
{
	int u = cmd_no_operands(argc, argv, "doctor");
	if (u >= 0)
		return u;
	int r = try_unshare(CLONE_NEWUSER);
	line(r == 0, "user namespace", r == 0 ? "unprivileged user namespaces work" : "refused: %s (boxes cannot be made)", strerror(-r));
	if (r)
		doctor_fail = 1;
	static const struct { int flag; const char *name; } ns[] = {
		{ CLONE_NEWPID, "pid" }, { CLONE_NEWNS, "mount" }, { CLONE_NEWNET, "net" },
		{ CLONE_NEWIPC, "ipc" }, { CLONE_NEWUTS, "uts" }, { CLONE_NEWCGROUP, "cgroup" },
	};
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		char what[32];
		snprintf(what, sizeof(what), "%s namespace", ns[i].name);
		r = try_unshare(CLONE_NEWUSER | ns[i].flag);
		line(r == 0, what, r == 0 ? "available" : "refused: %s", strerror(-r));
		if (r)
			doctor_fail = 1;
	}
	struct cgroup_caps c;
	cgroup_probe(&c);
	if (c.v2_base[0])
		line(c.v2_writable, "cgroup v2", "%s (%s) controllers: [%s]%s%s", c.v2_base,
		     c.v2_writable ? "writable" : "not writable for this user",
		     c.v2_controllers, c.v2_kill ? ", cgroup.kill" : "", c.v2_freeze ? ", cgroup.freeze" : "");
	else
		line(false, "cgroup v2", "not mounted");
	/* Each ceiling: what holds a box to it, or what stands in and why
	 * (sandbox/cgroup.c decides both, for the boxes too). */
	bool v2mem = cgroup_can_v2(&c, "memory"), v2pids = cgroup_can_v2(&c, "pids");
	char gap[PATH_MAX * 2 + 256];
	cgroup_gap(&c, "memory", gap, sizeof(gap));
	if (!cgroup_can(&c, "memory"))
		line(false, "memory ceiling", "weaker: RLIMIT_AS per process stands in (a box's processes together can "
		     "exceed it): %s", gap);
	else
		line(true, "memory ceiling", v2mem ? "cgroup v2 memory.max (%s)" : "cgroup v1 memory controller (%s)",
		     v2mem ? c.v2_base : c.mem1_base);
	cgroup_gap(&c, "pids", gap, sizeof(gap));
	if (!cgroup_can(&c, "pids"))
		line(false, "pids ceiling", "weaker: RLIMIT_NPROC per user namespace stands in: %s", gap);
	else
		line(true, "pids ceiling", v2pids ? "cgroup v2 pids.max (%s)" : "cgroup v1 pids controller (%s)",
		     v2pids ? c.v2_base : c.pids1_base);
	cgroup_gap(&c, "cpu", gap, sizeof(gap));
	line(cgroup_can(&c, "cpu"), "cpu ceiling", cgroup_can(&c, "cpu") ? "cgroup v2 cpu.max" : "not enforced: %s", gap);
	/* Where systemd would delegate a scope, each box's keeper asks for
	 * one (sandbox/sdscope.h): asked here once, to say what it got. The
	 * lines above are this process's own groups; box info says what
	 * holds a box. */
	char run[PATH_MAX], swhy[200];
	bool scope = false;
	if (getuid() != 0 && sdscope_wanted(&c, run, swhy, sizeof(swhy))) {
		scope = sdscope_probe(run, swhy, sizeof(swhy));
		line(scope, "systemd scope", scope ? "%s" : "refused (%s): each box's keeper starts where ward is, "
			     "with the ceilings above", swhy);
	}
	if (!scope && !cgroup_can(&c, "memory") && !cgroup_can(&c, "pids") && getuid() != 0)
		line(false, "cgroup delegation", "none for this user: %s", CGROUP_DELEGATE_HINT);
	char dwhy[160];
	bool disk = layers_disk_capable(dwhy, sizeof(dwhy));
	line(disk, "disk ceiling", "%s", dwhy);
	char uwhy[160];
	uid_t owner;
	bool range = ns_uid_range(&owner, uwhy, sizeof(uwhy));
	line(range, "box root", "copy-on-write over the image or the host view (ns); its users: %s", uwhy);
	cgroup_gap(&c, "kill", gap, sizeof(gap));
	line(cgroup_can(&c, "kill"), "kill a whole box",
	     cgroup_can(&c, "kill") ? "cgroup.kill plus SIGKILL to the box's PID 1%s" :
	     "SIGKILL to the box's PID 1 (the PID namespace ends every process in it); no cgroup.kill: %s", gap);
	/* Hooks and --approve-cmd: their own cgroup, or their group alone. */
	char hb[PATH_MAX];
	bool hcg = hook_cgroup_base(hb, sizeof(hb)) == 0;
	line(hcg, "hooks' processes", hcg ? "each hook in a cgroup of its own: cgroup.kill ends what it starts, setsid "
					    "children too"
					  : "a process group only (%s): a child a hook starts with setsid outlives it",
	     hook_cgroup_none());
	const struct scmp_version *sv = seccomp_version();
	int sm = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	line(sm >= 0, "seccomp", "libseccomp %u.%u.%u, filter mode %s", sv->major, sv->minor, sv->micro,
	     sm >= 0 ? "available" : "unavailable");
	/* --allow-host: what stands between a box and the network. */
	long ll = syscall(SYS_landlock_create_ruleset, NULL, 0, 1UL /* LANDLOCK_CREATE_RULESET_VERSION */);
	line(true, "egress", "--allow-host: a proxy on the host per box (its own process: %sseccomp%s), reached "
	     "through a listener in the box's own network namespace (ns) or a virtio-serial port (vm); the box "
	     "has no route and no DNS", getuid() == 0 ? "uid 65534, " : "",
	     ll > 0 ? ", Landlock" : ", no Landlock on this kernel");
	struct io_uring ring;
	r = io_uring_queue_init(2, &ring, 0);
	line(r == 0, "io_uring", r == 0 ? "available (file tools are cancellable mid-read)" : "unavailable: %s", strerror(-r));
	if (r == 0)
		io_uring_queue_exit(&ring);
	else
		doctor_fail = 1;
	/* A node can exist without a hypervisor behind it: vm_kvm_usable
	 * wants the CPU flag and a VM that can be made. */
	struct err ve = { 0 };
	bool kvm;
	bool vm = box_vm_available(&kvm, &ve) == 0;
	line(kvm, "kvm", kvm ? "usable: vm boxes run under KVM" :
	     access("/dev/kvm", F_OK) == 0 ? "/dev/kvm is there but cannot run a VM (no vmx/svm: nested virtualisation is off)"
					   : "no /dev/kvm");
	line(vm, "vm backend", vm ? (kvm ? "QEMU microvm with KVM" : "QEMU microvm under TCG emulation (boots in seconds)")
			      : "%s", ve.msg);
	char ewhy[160];
	bool erofs = image_erofs_capable(ewhy, sizeof(ewhy));
	line(erofs, "vm image root", "%s", ewhy);
	line(false, "firecracker", "not supported by this build (QEMU only)");
	line(true, "backend auto", "%s", kvm && vm ? "vm" : "ns");
	const char *g = cmd_guest_path();
	bool gok = access(g, X_OK) == 0;
	line(gok, "ward-guest", "%s", g);
	const char *k = cmd_keeper_path();
	bool kok = access(k, X_OK) == 0;
	line(kok, "ward-keeper", "%s", k);
	if (!gok || !kok)
		doctor_fail = 1;
	/* Images: where they live, and what pulls them. */
	char store[PATH_MAX], sk[PATH_MAX];
	struct err ie = { 0 };
	bool sok = image_skopeo_find(sk, sizeof(sk)) == 0;
	if (image_store_where(store, sizeof(store), &ie) < 0)
		snprintf(store, sizeof(store), "(%s)", ie.msg);
	line(sok, "images", "%s; store %s (0700)%s", sok ? "skopeo pulls them and reads docker archives" :
	     "no skopeo: ward image pull and docker archives need it (apt-get install skopeo); OCI archives import without it",
	     store, getuid() == 0 ? ", the layers' owners kept" : ", every file yours (no other owner without root)");
	line(getuid() != 0, "running as", getuid() == 0 ?
	     "root: box processes are host uid 0 without capabilities; an ordinary user is the stronger boundary" :
	     "uid %u", getuid());
	return doctor_fail ? EXIT_FAIL : 0;
}

const struct command cmd_doctor = {
	.name = "doctor",
	.args = "",
	.summary = "what this machine can enforce",
	.run = doctor_run,
};
