#include "base/mnt.h"
#include "base/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

int mnt_remount_ro(const char *dst, unsigned long extra)
{
	struct statvfs sv;
	if (statvfs(dst, &sv) < 0)
		return -errno;
	unsigned long fl = MS_REMOUNT | MS_BIND | MS_RDONLY | extra;
	if (sv.f_flag & ST_NOSUID)
		fl |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		fl |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		fl |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		fl |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		fl |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		fl |= MS_RELATIME;
	return mount(NULL, dst, NULL, fl, NULL) < 0 ? -errno : 0;
}

int mnt_bind_ro(const char *src, const char *dst)
{
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -errno;
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
	if (syscall(SYS_mount_setattr, AT_FDCWD, dst, AT_RECURSIVE, &attr, sizeof(attr)) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	/* Before Linux 5.12: each mount at or below dst, one by one. */
	int r = mnt_remount_ro(dst, MS_NOSUID | MS_NODEV);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	size_t dl = strlen(dst);
	while (r >= 0 && f && fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX];
		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && !strncmp(mp, dst, dl) && mp[dl] == '/')
			r = mnt_remount_ro(mp, MS_NOSUID | MS_NODEV);
	}
	if (f)
		fclose(f);
	return r;
}

/* What /proc tells about the host's kernel and a box has no use for (the
 * list runc and others mask, and the allocator's statistics). */
static const char *const mnt_proc_masked[] = {
	"kcore", "keys", "key-users", "timer_list", "timer_stats", "sched_debug", "slabinfo", "vmallocinfo",
	"kpagecount", "kpageflags", "kpagecgroup", "latency_stats", "pagetypeinfo", "acpi", "asound", "scsi",
};

int mnt_proc(const char *target, const char **ret_what)
{
	static const char *const ro[] = { "sys", "sysrq-trigger", "irq", "bus", "fs" };
	*ret_what = "mount proc";
	if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(mnt_proc_masked); i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", target, mnt_proc_masked[i]);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		*ret_what = mnt_proc_masked[i];
		if (S_ISDIR(st.st_mode) ? mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555") < 0
					: mount("/dev/null", p, NULL, MS_BIND, NULL) < 0 || mnt_remount_ro(p, MS_NOSUID | MS_NOEXEC) < 0)
			return -errno;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ro); i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", target, ro[i]);
		if (access(p, F_OK) < 0)
			continue;
		*ret_what = ro[i];
		if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0)
			return -errno;
		int r = mnt_remount_ro(p, 0);
		if (r < 0)
			return r;
	}
	return 0;
}
