#include "base/mnt.h"
#include "base/cleanup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
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

int mnt_proc(const char *target, const char **ret_what)
{
	static const char *const ro[] = { "sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "scsi" };
	*ret_what = "mount proc";
	if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
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
