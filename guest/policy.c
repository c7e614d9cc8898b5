#include "guest/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "base/cleanup.h"

/* Denied with EPERM; everything else is allowed. The box's other walls
 * (namespaces, no capabilities, read-only binds) stand without this table;
 * it removes kernel surface a tool command has no use for. */
static const struct {
	const char *name;
	const char *why;
} policy_deny[] = {
	{ "mount", "no new mounts: the box's file system view is fixed" },
	{ "umount2", "would uncover what the box's mounts hide" },
	{ "pivot_root", "root changes are the box's, not a command's" },
	{ "move_mount", "new mount API" },
	{ "open_tree", "new mount API" },
	{ "fsopen", "new mount API" },
	{ "fsconfig", "new mount API" },
	{ "fsmount", "new mount API" },
	{ "fspick", "new mount API" },
	{ "mount_setattr", "new mount API" },
	{ "setns", "entering other namespaces" },
	{ "ptrace", "no debugging of other processes, in or out of the box" },
	{ "process_vm_readv", "reading another process's memory" },
	{ "process_vm_writev", "writing another process's memory" },
	{ "kcmp", "comparing kernel objects across processes" },
	{ "init_module", "loading kernel modules" },
	{ "finit_module", "loading kernel modules" },
	{ "delete_module", "unloading kernel modules" },
	{ "kexec_load", "replacing the kernel" },
	{ "kexec_file_load", "replacing the kernel" },
	{ "reboot", "rebooting" },
	{ "swapon", "swap is the host's" },
	{ "swapoff", "swap is the host's" },
	{ "acct", "process accounting is the host's" },
	{ "bpf", "eBPF programs reach deep into the kernel" },
	{ "perf_event_open", "performance counters leak host activity" },
	{ "userfaultfd", "a common exploit primitive" },
	{ "keyctl", "the kernel keyring is not namespaced" },
	{ "add_key", "the kernel keyring is not namespaced" },
	{ "request_key", "the kernel keyring is not namespaced" },
	{ "open_by_handle_at", "opens files by handle, bypassing the box's paths" },
	{ "name_to_handle_at", "pairs with open_by_handle_at" },
	{ "syslog", "the kernel log is the host's" },
	{ "settimeofday", "the clock is the host's" },
	{ "clock_settime", "the clock is the host's" },
	{ "clock_adjtime", "the clock is the host's" },
	{ "adjtimex", "the clock is the host's" },
	{ "quotactl", "quotas are the host's" },
	{ "iopl", "raw I/O ports" },
	{ "ioperm", "raw I/O ports" },
	{ "lookup_dcookie", "profiling interface" },
	{ "vhangup", "terminal control" },
	{ "chroot", "no new roots" },
	{ "io_uring_setup", "io_uring: a large, often-exploited kernel surface; hardened platforms deny it" },
	{ "io_uring_enter", "io_uring" },
	{ "io_uring_register", "io_uring" },
};

/* No setuid or setgid bit on anything a tool command makes or changes: a
 * file the box writes must not carry privilege back to the host (its
 * workspace, an --rw tree, a vm box's 9p share). Refused with EPERM when the
 * mode argument has S_ISUID or S_ISGID; for the open family only when the
 * call can create (O_CREAT, O_TMPFILE). File capabilities need
 * CAP_SETFCAP, which no tool command has. */
static const struct {
	const char *name;
	unsigned mode_arg;	/* index of the mode argument */
	int flags_arg;		/* index of open flags, or -1 */
} policy_mode[] = {
	{ "chmod", 1, -1 },
	{ "fchmod", 1, -1 },
	{ "fchmodat", 2, -1 },
	{ "fchmodat2", 2, -1 },
	{ "creat", 1, -1 },
	{ "mkdir", 1, -1 },
	{ "mkdirat", 2, -1 },
	{ "mknod", 1, -1 },
	{ "mknodat", 2, -1 },
	{ "open", 2, 1 },
	{ "openat", 3, 2 },
};

static int policy_build(scmp_filter_ctx *ret)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(policy_deny) && r >= 0; i++) {
		int nr = seccomp_syscall_resolve_name(policy_deny[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	/* No new namespaces: unshare always, clone with any CLONE_NEW* flag
	 * (one rule per flag; libseccomp has no "masked not-equal"). */
	const unsigned long nsflags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
				      CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | 0x80 /* CLONE_NEWTIME */;
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
	for (unsigned long bit = 1; bit && r >= 0; bit <<= 1)
		if (nsflags & bit)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
	/* clone3 passes its flags in memory a filter cannot read: ENOSYS makes
	 * libc fall back to clone, which the rules above check. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	for (size_t i = 0; i < ARRAY_SIZE(policy_mode) && r >= 0; i++) {
		int nr = seccomp_syscall_resolve_name(policy_mode[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue;
		static const unsigned long bits[] = { S_ISUID, S_ISGID };
		static const unsigned long creates[][2] = { { O_CREAT, O_CREAT }, { O_TMPFILE, O_TMPFILE } };
		for (size_t b = 0; b < ARRAY_SIZE(bits) && r >= 0; b++) {
			struct scmp_arg_cmp mode = SCMP_CMP(policy_mode[i].mode_arg, SCMP_CMP_MASKED_EQ, bits[b], bits[b]);
			if (policy_mode[i].flags_arg < 0) {
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, mode);
				continue;
			}
			for (size_t k = 0; k < ARRAY_SIZE(creates) && r >= 0; k++)
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, mode,
						     SCMP_CMP((unsigned)policy_mode[i].flags_arg, SCMP_CMP_MASKED_EQ,
							      creates[k][0], creates[k][1]));
		}
	}
	/* openat2 passes its mode in memory a filter cannot read: ENOSYS makes
	 * programs fall back to openat, which the rules above check. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	/* TIOCSTI and TIOCLINUX inject input into a terminal. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, TIOCSTI));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, TIOCLINUX));
	if (r < 0) {
		seccomp_release(ctx);
		return r;
	}
	*ret = ctx;
	return 0;
}

static struct sock_fprog policy_prog;

int policy_prepare(void)
{
	scmp_filter_ctx ctx;
	int r = policy_build(&ctx);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = memfd_create("ward-policy", MFD_CLOEXEC);
	if (fd < 0)
		r = -errno;
	if (r >= 0)
		r = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (r < 0)
		return r;
	off_t len = lseek(fd, 0, SEEK_CUR);
	if (len <= 0 || len % (off_t)sizeof(struct sock_filter) || len / (off_t)sizeof(struct sock_filter) > 4096)
		return -EINVAL;
	struct sock_filter *f = malloc((size_t)len);
	if (!f)
		return -ENOMEM;
	if (pread(fd, f, (size_t)len, 0) != len) {
		free(f);
		return -EIO;
	}
	free(policy_prog.filter);
	policy_prog.filter = f;
	policy_prog.len = (unsigned short)(len / (off_t)sizeof(struct sock_filter));
	return 0;
}

int policy_apply(void)
{
	if (!policy_prog.filter)
		return -EINVAL;
	/* no_new_privs is set by the caller. */
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &policy_prog) < 0 ? -errno : 0;
}
