/* The VMM's file system: a root of its own holding only what QEMU uses,
 * pivoted into, with the host's tree let go. A mount namespace copied from
 * the host's holds every mount the host had when it was made (another
 * box's loop-mounted workspace layer among them) for as long as QEMU runs,
 * whatever the host unmounts meanwhile: the loop device stays attached.
 * What the VMM keeps (vm_jail_table below, and the paths the launch
 * names) is the same at every path it had on the host, so its command
 * line does not change. */
#include "sandbox/vm-int.h"
#include "sandbox/hostview.h"
#include "base/cleanup.h"
#include "base/mnt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum vm_jail_how { VJ_RO, VJ_RW, VJ_DEV };

/* Of the host's, what every VMM gets, read-only, and why. */
static const struct {
	const char *path;
	enum vm_jail_how how;
	const char *why;
} vm_jail_table[] = {
	{ "/usr", VJ_RO, "QEMU, its libraries and firmware (/usr/share/qemu, seabios), and the guest's /usr share" },
	{ "/etc/ld.so.cache", VJ_RO, "where the dynamic linker finds QEMU's libraries" },
	{ "/dev/null", VJ_DEV, "QEMU's standard input and output" },
	{ "/dev/zero", VJ_DEV, "for the allocators" },
	{ "/dev/urandom", VJ_DEV, "randomness, where getrandom is not used" },
	{ "/dev/random", VJ_DEV, "the same" },
};


/* The directories of path (absolute) made below root. */
static int vm_jail_parents(const char *root, const char *path)
{
	char p[2 * PATH_MAX];
	int n = snprintf(p, sizeof(p), "%s%s", root, path);
	if (n < 0 || (size_t)n >= sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

/* Bind path (a file or a directory) at the same path below root:
 * read-only (nosuid, nodev), read-write, or a device node (read-only, so
 * that its inode cannot be changed; its I/O still works). */
static int vm_jail_bind(const char *root, const char *path, enum vm_jail_how how)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	char dst[2 * PATH_MAX];
	snprintf(dst, sizeof(dst), "%s%s", root, path);
	int r = vm_jail_parents(root, path);
	if (r < 0)
		return r;
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, 0755) < 0 && errno != EEXIST)
			return -errno;
	} else {
		int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	if (how == VJ_RO)
		return mnt_bind_ro(path, dst);
	if (mount(path, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -errno;
	return how == VJ_DEV ? mnt_remount_ro(dst, MS_NOSUID | MS_NOEXEC) : 0;
}

static int vm_jail_top_bind(void *arg, const char *host, const char *dst)
{
	return vm_jail_bind(arg, host, VJ_RO);
}

/* /bin, /lib and friends: a symlink where the host has one (merged /usr),
 * else read-only. */
static int vm_jail_tops_make(const char *root)
{
	char what[PATH_MAX + 80] = "";
	return hostview_tops_make(root, vm_jail_top_bind, (void *)root, what, sizeof(what));
}

int vm_jail_enter(const struct vm_jail *j, const char **ret_what)
{
	const char *root = j->root;
	int r;
	*ret_what = "mount the VMM's root (tmpfs)";
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(vm_jail_table); i++) {
		*ret_what = vm_jail_table[i].path;
		if (access(vm_jail_table[i].path, F_OK) < 0)
			continue;
		if ((r = vm_jail_bind(root, vm_jail_table[i].path, vm_jail_table[i].how)) < 0)
			return r;
	}
	*ret_what = "/bin, /lib and the like";
	if ((r = vm_jail_tops_make(root)) < 0)
		return r;
	if (j->kvm) {
		*ret_what = "/dev/kvm";
		if ((r = vm_jail_bind(root, "/dev/kvm", VJ_DEV)) < 0)
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(j->ro) && j->ro[i]; i++) {
		*ret_what = j->ro[i];
		if ((r = vm_jail_bind(root, j->ro[i], VJ_RO)) < 0)
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(j->rw) && j->rw[i]; i++) {
		*ret_what = j->rw[i];
		if ((r = vm_jail_bind(root, j->rw[i], VJ_RW)) < 0)
			return r;
	}
	/* The host view: its skeleton, then the host's own directories over
	 * their mount points in it. */
	if (j->view) {
		char at[2 * PATH_MAX];
		snprintf(at, sizeof(at), "%s%s", root, j->view);
		*ret_what = j->skel;
		if ((r = mnt_bind_ro(j->skel, at)) < 0)
			return r;
		for (size_t i = 0; i < ARRAY_SIZE(j->host) && j->host[i]; i++) {
			char dst[3 * PATH_MAX];
			snprintf(dst, sizeof(dst), "%s%s", at, j->host[i]);
			*ret_what = j->host[i];
			if ((r = mnt_bind_ro(j->host[i], dst)) < 0)
				return r;
		}
	}
	/* QEMU's 9p server changes modes through /proc/self/fd/N; this /proc
	 * is its PID namespace's, where it is alone. */
	char proc[PATH_MAX + 8];
	snprintf(proc, sizeof(proc), "%s/proc", root);
	*ret_what = "mkdir /proc";
	if (mkdir(proc, 0555) < 0 || (r = mnt_proc(proc, ret_what)) < 0)
		return r < 0 ? r : -errno;
	*ret_what = "pivot into the VMM's root";
	if (chdir(root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -errno;
	*ret_what = "make the VMM's root read-only";
	return mnt_remount_ro("/", MS_NOSUID | MS_NODEV);
}
