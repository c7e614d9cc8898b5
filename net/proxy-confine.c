/* The proxy parses what a hostile box sends, on the host: if that parsing
 * ever goes wrong, what it can reach is this process. So it gives up
 * root, its capabilities and the right to gain them, writing anywhere,
 * binding ports, and the system calls below; what it keeps is reading
 * files (resolv.conf, hosts, NSS modules), sockets for TCP, UDP DNS and
 * netlink, and its own descriptors. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <netdb.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/osslso.h"
#include "net/proxy.h"

#define CONFINE_UID 65534	/* nobody */
#define CONFINE_GID 65534	/* nogroup */

/* Refused with EPERM; everything else is allowed. */
static const struct {
	const char *name;
	const char *why;
} confine_deny[] = {
	{ "execve", "the proxy runs nothing: a foothold would start from here" },
	{ "execveat", "the proxy runs nothing" },
	{ "ptrace", "no reaching into other processes" },
	{ "process_vm_readv", "reading another process's memory" },
	{ "process_vm_writev", "writing another process's memory" },
	{ "process_madvise", "acting on another process's memory" },
	{ "kcmp", "comparing other processes' kernel objects" },
	{ "pidfd_getfd", "taking descriptors from another process" },
	{ "kill", "signals only to itself (tgkill below)" },
	{ "tkill", "signals only to itself (tgkill below)" },
	{ "rt_sigqueueinfo", "signals to other processes" },
	{ "rt_tgsigqueueinfo", "signals to other processes" },
	{ "pidfd_send_signal", "signals to other processes" },
	{ "mount", "the host's mounts are not the proxy's" },
	{ "umount2", "the host's mounts" },
	{ "pivot_root", "the host's root" },
	{ "chroot", "no new roots" },
	{ "move_mount", "new mount API" },
	{ "open_tree", "new mount API" },
	{ "fsopen", "new mount API" },
	{ "fsconfig", "new mount API" },
	{ "fsmount", "new mount API" },
	{ "fspick", "new mount API" },
	{ "mount_setattr", "new mount API" },
	{ "setns", "entering other namespaces" },
	{ "unshare", "new namespaces widen the kernel surface (user namespaces above all)" },
	{ "bpf", "eBPF reaches deep into the kernel" },
	{ "perf_event_open", "performance counters: kernel surface and side channels" },
	{ "userfaultfd", "a common exploit primitive" },
	{ "io_uring_setup", "io_uring: a large, often-exploited kernel surface" },
	{ "io_uring_enter", "io_uring" },
	{ "io_uring_register", "io_uring" },
	{ "keyctl", "the kernel keyring is not namespaced" },
	{ "add_key", "the kernel keyring" },
	{ "request_key", "the kernel keyring" },
	{ "init_module", "loading kernel modules" },
	{ "finit_module", "loading kernel modules" },
	{ "delete_module", "unloading kernel modules" },
	{ "kexec_load", "replacing the kernel" },
	{ "kexec_file_load", "replacing the kernel" },
	{ "reboot", "rebooting the host" },
	{ "swapon", "the host's swap" },
	{ "swapoff", "the host's swap" },
	{ "acct", "the host's process accounting" },
	{ "syslog", "the kernel log" },
	{ "settimeofday", "the host's clock" },
	{ "clock_settime", "the host's clock" },
	{ "clock_adjtime", "the host's clock" },
	{ "adjtimex", "the host's clock" },
	{ "sethostname", "the host's name" },
	{ "setdomainname", "the host's name" },
	{ "iopl", "raw I/O ports" },
	{ "ioperm", "raw I/O ports" },
	{ "quotactl", "the host's quotas" },
	{ "vhangup", "terminals" },
	{ "personality", "execution domains: old exploit helpers" },
	{ "open_by_handle_at", "opens files by handle, past any path check" },
	{ "name_to_handle_at", "pairs with open_by_handle_at" },
	{ "creat", "no files are made" },
	{ "truncate", "no files are changed" },
	{ "unlink", "no files are removed" },
	{ "unlinkat", "no files are removed" },
	{ "rmdir", "no directories are removed" },
	{ "rename", "no files are moved" },
	{ "renameat", "no files are moved" },
	{ "renameat2", "no files are moved" },
	{ "link", "no links are made" },
	{ "linkat", "no links are made" },
	{ "symlink", "no links are made" },
	{ "symlinkat", "no links are made" },
	{ "mkdir", "no directories are made" },
	{ "mkdirat", "no directories are made" },
	{ "mknod", "no device nodes or fifos are made" },
	{ "mknodat", "no device nodes or fifos are made" },
	{ "chmod", "no modes are changed" },
	{ "fchmod", "no modes are changed" },
	{ "fchmodat", "no modes are changed" },
	{ "fchmodat2", "no modes are changed" },
	{ "chown", "no owners are changed" },
	{ "fchown", "no owners are changed" },
	{ "lchown", "no owners are changed" },
	{ "fchownat", "no owners are changed" },
	{ "utime", "no times are changed" },
	{ "utimes", "no times are changed" },
	{ "futimesat", "no times are changed" },
	{ "utimensat", "no times are changed" },
	{ "setxattr", "no attributes are changed" },
	{ "lsetxattr", "no attributes are changed" },
	{ "fsetxattr", "no attributes are changed" },
	{ "removexattr", "no attributes are changed" },
	{ "lremovexattr", "no attributes are changed" },
	{ "fremovexattr", "no attributes are changed" },
	{ "setuid", "the identity dropped stays dropped" },
	{ "setgid", "the identity dropped stays dropped" },
	{ "setreuid", "the identity dropped stays dropped" },
	{ "setregid", "the identity dropped stays dropped" },
	{ "setresuid", "the identity dropped stays dropped" },
	{ "setresgid", "the identity dropped stays dropped" },
	{ "setfsuid", "the identity dropped stays dropped" },
	{ "setfsgid", "the identity dropped stays dropped" },
	{ "setgroups", "the identity dropped stays dropped" },
	{ "capset", "no capabilities back" },
	{ "setrlimit", "the descriptor cap stays" },
	{ "listen", "the proxy listens on nothing new (its listener was made before)" },
};

/* Opening for writing or creating: refused by flag (one rule per bit, as
 * libseccomp compares one masked value per rule). */
static const unsigned long confine_open_bits[] = {
	O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND, __O_TMPFILE,
};

/* Socket families the proxy needs: TCP (both), UDP DNS, NSS over unix
 * sockets (nscd, systemd-resolved), and netlink for AI_ADDRCONFIG. */
static const int confine_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

static int confine_seccomp(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(confine_deny) && r >= 0; i++) {
		int nr = seccomp_syscall_resolve_name(confine_deny[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue;	/* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	/* Signals: tgkill to this process only (raise, abort). */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tgkill), 1,
				     SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)getpid()));
	/* clone with any CLONE_NEW* flag: no namespaces (threads are fine);
	 * clone3 hides its flags in memory, so ENOSYS: glibc falls back to clone. */
	const unsigned long nsflags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
				      CLONE_NEWUTS | CLONE_NEWCGROUP | 0x80 /* CLONE_NEWTIME */;
	for (unsigned long bit = 1; bit && r >= 0; bit <<= 1)
		if (nsflags & bit)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* openat2 hides its flags in memory too: ENOSYS, and glibc uses openat. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	for (size_t i = 0; i < ARRAY_SIZE(confine_open_bits) && r >= 0; i++) {
		unsigned long b = confine_open_bits[i];
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, b, b));
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(openat), 1,
					     SCMP_A2(SCMP_CMP_MASKED_EQ, b, b));
	}
	/* prlimit64 may read limits, not set them. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 1, SCMP_A2(SCMP_CMP_NE, 0));
	/* Every socket family but the four is refused: one rule per family
	 * number outside them, and all above 63. The kernel reads the family
	 * as an int, so only the low 32 bits are compared. */
	for (int fam = 0; fam < 64 && r >= 0; fam++) {
		bool ok = false;
		for (size_t i = 0; i < ARRAY_SIZE(confine_families); i++)
			ok |= confine_families[i] == fam;
		if (!ok)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffff, (scmp_datum_t)fam));
	}
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_GE, 64));
	/* Every thread of the process, the resolver's included. */
	if (r >= 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r >= 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

/* Landlock ABI numbers this file knows, newer than Debian 12's headers. */
#define CONFINE_LL_FS_REFER (1ULL << 13)		/* ABI 2 */
#define CONFINE_LL_FS_TRUNCATE (1ULL << 14)		/* ABI 3 */
#define CONFINE_LL_NET_BIND_TCP (1ULL << 0)		/* ABI 4 */
#define CONFINE_LL_FS_IOCTL_DEV (1ULL << 15)		/* ABI 5 */
#define CONFINE_LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)	/* ABI 6 */
#define CONFINE_LL_SCOPE_SIGNAL (1ULL << 1)		/* ABI 6 */

struct confine_ll_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* Landlock, where the kernel has it: every write-like right handled and
 * none granted, so no file anywhere is written, made or removed; no TCP
 * port bound; no signal to, nor abstract socket of, processes outside.
 * 1 when applied, 0 when the kernel has no Landlock, or -errno. */
static int confine_landlock(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		return 0;
	struct confine_ll_attr a = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
				     LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
				     LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
				     LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
				     LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
				     LANDLOCK_ACCESS_FS_MAKE_SYM,
	};
	size_t size = offsetof(struct confine_ll_attr, handled_access_net);
	if (abi >= 2)
		a.handled_access_fs |= CONFINE_LL_FS_REFER;
	if (abi >= 3)
		a.handled_access_fs |= CONFINE_LL_FS_TRUNCATE;
	if (abi >= 4) {
		a.handled_access_net = CONFINE_LL_NET_BIND_TCP;
		size = offsetof(struct confine_ll_attr, scoped);
	}
	if (abi >= 5)
		a.handled_access_fs |= CONFINE_LL_FS_IOCTL_DEV;
	if (abi >= 6) {
		a.scoped = CONFINE_LL_SCOPE_ABSTRACT_UNIX | CONFINE_LL_SCOPE_SIGNAL;
		size = sizeof(a);
	}
	int fd = (int)syscall(SYS_landlock_create_ruleset, &a, size, 0);
	if (fd < 0)
		return -errno;
	int r = syscall(SYS_landlock_restrict_self, fd, 0) < 0 ? -errno : 1;
	close(fd);
	return r;
}

static int confine_identity(struct err *e)
{
	if (geteuid() != 0)
		return 0;	/* not root: nothing to drop but what no_new_privs and seccomp take */
	if (setgroups(0, NULL) < 0)
		return err_setc(e, -errno, "setgroups");
	if (setresgid(CONFINE_GID, CONFINE_GID, CONFINE_GID) < 0)
		return err_setc(e, -errno, "setresgid %d", CONFINE_GID);
	if (setresuid(CONFINE_UID, CONFINE_UID, CONFINE_UID) < 0)
		return err_setc(e, -errno, "setresuid %d", CONFINE_UID);
	uid_t ru, eu, su;
	if (getresuid(&ru, &eu, &su) < 0 || ru != CONFINE_UID || eu != CONFINE_UID || su != CONFINE_UID)
		return err_set(e, -EPERM, "the proxy is still root after dropping to %d", CONFINE_UID);
	return 0;
}

int net_proxy_confine(struct err *e)
{
	/* NSS's modules are loaded by the first lookup: do it while the
	 * process can still open anything it needs. */
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	if (getaddrinfo("localhost", "80", &hints, &ai) == 0)
		freeaddrinfo(ai);
	/* And OpenSSL, loaded on first use (base/osslso.h): landlock leaves
	 * no library to open after. */
	int r = osslso_load(e);
	if (r < 0)
		return r;

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return err_setc(e, -errno, "setrlimit NOFILE");
	}
	rl = (struct rlimit){ 0, 0 };
	setrlimit(RLIMIT_CORE, &rl);	/* no core of a process holding a box's traffic */

	r = confine_identity(e);
	if (r < 0)
		return r;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return err_setc(e, -errno, "PR_SET_DUMPABLE");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_setc(e, -errno, "PR_SET_NO_NEW_PRIVS");
	r = confine_landlock();
	if (r < 0)
		return err_setc(e, r, "landlock");
	r = confine_seccomp();
	if (r < 0)
		return err_setc(e, r, "seccomp");
	return 0;
}
