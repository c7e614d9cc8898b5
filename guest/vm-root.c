/* A vm box's root, built at the guest's first START. The box's own disk
 * (ext4, found by its serial) holds the root's changes: an overlay whose
 * lower layer is the image's erofs (a read-only block device) or the host
 * view (a read-only 9p share: the skeleton of sandbox/hostview.c with the
 * host's /usr and package database over it), its upper on the disk. It
 * gets ward-guest's /proc, a read-only /sys and cgroup tree, a /dev of its
 * own and the workspace share; the VM's own /dev and /sys are detached
 * (ward-guest keeps descriptors of what it needs), and ward-guest's root
 * is switched to it: the initramfs's own files (ward-guest, its modules)
 * stay behind it, read-only, out of the box's view. The block devices'
 * driver is bound to them here, not at boot (guest/vm.c loads it with the
 * bus's autoprobe off), so that a snapshot's template (which has
 * stand-ins for the disks) never reads them: a restored box's driver sees
 * its own. */
#include "guest/guest.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "proto/proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* How long the block devices may take to appear once their driver is
 * loaded (its probe is synchronous: this is a bound, not a wait). */
#define VM_ROOT_DEV_WAIT_MS 5000
/* Where ward-guest builds the root before it switches to it, and what it
 * mounts below it (the initramfs's directories, guest/vm.c). */
#define VM_ROOT "/ward/root"
#define VM_ROOT_DISK "/ward/disk"
#define VM_ROOT_LOWER "/ward/lower"
#define VM_ROOT_HOST "/ward/host"
/* The workspace's image (a block workspace's lower layer). */
#define VM_ROOT_WSLOWER "/ward/wslower"
/* A block workspace's overlay: its upper is what the host is sent
 * (guest/changeset.c), in the plain form the host's readers know: no
 * redirects, no metacopy, no index. */
#define VM_WS_OVERLAY_OPTS ",redirect_dir=off,metacopy=off,index=off"

/* The block device whose serial is serial (sandbox/vm.c names them), as
 * /dev/NAME. */
static int vm_root_dev_find(const char *serial, char *out, size_t n)
{
	_cleanup_closedir_ DIR *d = opendir("/sys/block");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "/sys/block/%s/serial", de->d_name);
		_cleanup_free_ char *s = NULL;
		if (fdio_read_file(AT_FDCWD, p, 64, &s, NULL) < 0)
			continue;
		s[strcspn(s, "\n")] = 0;
		if (!strcmp(s, serial)) {
			snprintf(out, n, "/dev/%s", de->d_name);
			return access(out, F_OK) == 0 ? 0 : -ENOENT;
		}
	}
	return -ENOENT;
}

static int vm_root_dev(const char *serial, char *out, size_t n)
{
	int64_t until = now_ms() + VM_ROOT_DEV_WAIT_MS;
	while (vm_root_dev_find(serial, out, n) < 0) {
		if (now_ms() > until)
			return -ENODEV;
		usleep(2000);
	}
	return 0;
}

/* The VM's block devices (virtio device id 2), bound to their driver now:
 * it reads their size and their first blocks as it binds. */
static void vm_root_bind_disks(void)
{
	_cleanup_closedir_ DIR *d = opendir("/sys/bus/virtio/devices");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "/sys/bus/virtio/devices/%s/device", de->d_name);
		_cleanup_free_ char *id = NULL;
		if (fdio_read_file(AT_FDCWD, p, 32, &id, NULL) < 0 || strtoul(id, NULL, 16) != 2)
			continue;
		snprintf(p, sizeof(p), "/sys/bus/virtio/devices/%s/driver", de->d_name);
		if (access(p, F_OK) == 0)
			continue;
		if (fdio_write_str(AT_FDCWD, "/sys/bus/virtio/drivers/virtio_blk/bind", de->d_name) < 0)
			vm_log("bind %s to virtio_blk: %s", de->d_name, strerror(errno));
	}
}

/* name (one component) below the root as a directory of its own to mount
 * on: whatever an image has there instead (a link, a file) is replaced,
 * in the box's layer, so that no mount follows a link of the image's. A
 * directory made here gets mode. */
static int vm_root_dir(int rootfd, const char *name, mode_t mode)
{
	struct stat st;
	if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		if (unlinkat(rootfd, name, 0) < 0)
			return -errno;
	} else if (errno != ENOENT) {
		return -errno;
	}
	if (mkdirat(rootfd, name, mode) < 0 && errno != EEXIST)
		return -errno;
	return fchmodat(rootfd, name, mode, 0) < 0 ? -errno : 0;
}

/* /etc's files of the box's own identity, written at every start as a
 * container runtime does: a link or a directory of the image's in their
 * place is replaced (in the box's layer), and an /etc that is a link is
 * left alone. */
static void vm_root_etc(int rootfd, const char *ca_bundle)
{
	const struct {
		const char *name, *text;
	} files[] = {
		{ "hostname", "ward\n" },
		{ "hosts", "127.0.0.1 localhost ward\n::1 localhost ip6-localhost\n" },
		{ "resolv.conf", "" },
		/* The box's CA with the host's (a box with secrets); else none. */
		{ "ward-ca.pem", ca_bundle },
	};
	struct stat st;
	if (fstatat(rootfd, "etc", &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		mkdirat(rootfd, "etc", 0755);
	_cleanup_close_ int etc = openat(rootfd, "etc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (etc < 0)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		if (!files[i].text)
			continue;
		if (unlinkat(etc, files[i].name, 0) < 0 && errno == EISDIR)
			unlinkat(etc, files[i].name, AT_REMOVEDIR);
		_cleanup_close_ int fd =
			openat(etc, files[i].name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			fdio_write_full(fd, files[i].text, strlen(files[i].text));
	}
}

/* The box's /dev: a tmpfs of the few nodes a tool expects, a devpts of
 * its own and a /dev/shm, not the VM's devtmpfs (its disks, its serial
 * console and the ports to the host stay ward-guest's: vm_dev_fd). */
static int vm_root_devfs(const char *dev)
{
	static const struct {
		const char *name;
		unsigned major, minor;
	} nodes[] = { { "null", 1, 3 }, { "zero", 1, 5 }, { "full", 1, 7 }, { "random", 1, 8 }, { "urandom", 1, 9 },
		      { "tty", 5, 0 } };
	static const struct {
		const char *name, *target;
	} links[] = { { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" }, { "stdout", "/proc/self/fd/1" },
		      { "stderr", "/proc/self/fd/2" }, { "ptmx", "pts/ptmx" } };
	if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64") < 0)
		return -errno;
	_cleanup_close_ int d = open(dev, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++)
		if (mknodat(d, nodes[i].name, S_IFCHR | 0666, makedev(nodes[i].major, nodes[i].minor)) < 0 ||
		    fchmodat(d, nodes[i].name, 0666, 0) < 0)
			return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if (symlinkat(links[i].target, d, links[i].name) < 0)
			return -errno;
	if (mkdirat(d, "pts", 0755) < 0 || mkdirat(d, "shm", 01777) < 0 || fchmodat(d, "shm", 01777, 0) < 0)
		return -errno;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/pts", dev);
	if (mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
		return -errno;
	snprintf(p, sizeof(p), "%s/shm", dev);
	if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=10%") < 0)
		return -errno;
	return 0;
}

static int vm_root_overlay(const char *lower, const char *layer, const char *target, const char *extra)
{
	char upper[PATH_MAX], work[PATH_MAX], opts[3 * PATH_MAX];
	snprintf(upper, sizeof(upper), "%s/%s/upper", VM_ROOT_DISK, layer);
	snprintf(work, sizeof(work), "%s/%s/work", VM_ROOT_DISK, layer);
	char top[PATH_MAX];
	snprintf(top, sizeof(top), "%s/%s", VM_ROOT_DISK, layer);
	if ((mkdir(top, 0755) < 0 && errno != EEXIST) || (mkdir(upper, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(work, 0700) < 0 && errno != EEXIST))
		return -errno;
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", lower, upper, work, extra);
	return mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts) < 0 ? -errno : 0;
}

int vm_root_build(bool image, enum vm_ws ws, bool seed, struct guest_cfg *cfg, const char **ret_what)
{
	char dev[PATH_MAX];
	int r;
	_cleanup_close_ int rootfd = -1;
#define STEP(what, expr) do { *ret_what = (what); if ((r = (expr)) < 0) return r; } while (0)
#define SYS(expr) ((expr) < 0 ? -errno : 0)
	vm_root_bind_disks();
	STEP("find the box's disk (virtio-blk " VM_SERIAL_DISK ")", vm_root_dev(VM_SERIAL_DISK, dev, sizeof(dev)));
	/* noinit_itable: the disk's inode tables are never zeroed (its blank
	 * was made lazily): nothing is written that the box did not write;
	 * discard: what the box frees becomes holes in the host's file. */
	STEP("mount the box's disk (ext4)",
	     SYS(mount(dev, VM_ROOT_DISK, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "discard,noinit_itable")));
	if (image) {
		STEP("find the image (virtio-blk " VM_SERIAL_ROOT ")", vm_root_dev(VM_SERIAL_ROOT, dev, sizeof(dev)));
		STEP("mount the image (erofs)",
		     SYS(mount(dev, VM_ROOT_LOWER, "erofs", MS_RDONLY | MS_NOSUID | MS_NODEV, NULL)));
		STEP("the root's overlay", vm_root_overlay(VM_ROOT_LOWER, "root", VM_ROOT, ""));
	} else {
		STEP("mount the host view (9p)", vm_share("host", VM_ROOT_HOST, MS_RDONLY | MS_NODEV | MS_NOSUID, "loose"));
		STEP("the root's overlay", vm_root_overlay(VM_ROOT_HOST, "root", VM_ROOT, ""));
	}
	/* A block workspace's image, found while the VM's /sys is there. */
	if (ws == VM_WS_BLOCK) {
		STEP("find the workspace's image (virtio-blk " VM_SERIAL_WS ")", vm_root_dev(VM_SERIAL_WS, dev, sizeof(dev)));
		STEP("make " VM_ROOT_WSLOWER, SYS(mkdir(VM_ROOT_WSLOWER, 0755) < 0 && errno != EEXIST ? -1 : 0));
		STEP("mount the workspace's image (erofs)",
		     SYS(mount(dev, VM_ROOT_WSLOWER, "erofs", MS_RDONLY | MS_NOSUID | MS_NODEV, NULL)));
	}
	STEP("open the root", SYS(rootfd = open(VM_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC)));
	static const struct {
		const char *name;
		mode_t mode;
	} dirs[] = { { "proc", 0555 }, { "sys", 0555 }, { "dev", 0755 }, { "run", 0755 }, { "workspace", 0755 } };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		STEP(dirs[i].name, vm_root_dir(rootfd, dirs[i].name, dirs[i].mode));
	/* /tmp is the root's own (on the box's disk: it outlives a
	 * hibernate): an image's, or one made everyone's. */
	struct stat st;
	if (fstatat(rootfd, "tmp", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		STEP("/tmp", vm_root_dir(rootfd, "tmp", 01777));
	/* ward-guest's /proc (where it writes each call's user namespace
	 * maps; a call mounts its own over it). */
	STEP("move /proc into the root", SYS(mount("/proc", VM_ROOT "/proc", NULL, MS_MOVE, NULL)));
	/* The box's /sys and cgroups, read-only (its limits are ward-guest's:
	 * it holds the VM's own cgroup by a descriptor, cfg->cgroup_fd). */
	STEP("mount /sys", SYS(mount("sysfs", VM_ROOT "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				     NULL)));
	STEP("mount /sys/fs/cgroup", SYS(mount("cgroup2", VM_ROOT "/sys/fs/cgroup", "cgroup2",
					       MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)));
	STEP("the box's /dev", vm_root_devfs(VM_ROOT "/dev"));
	/* The VM's own /dev and /sys, out of every path (a chroot out of the
	 * box's root finds nothing of them): what ward-guest still needs of
	 * them, it holds by descriptors. */
	STEP("keep the VM's devices", SYS(vm_dev_fd = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC)));
	STEP("let go of the VM's /dev", SYS(umount2("/dev", MNT_DETACH)));
	STEP("let go of the VM's /sys", SYS(umount2("/sys", MNT_DETACH)));
	STEP("mount /run", SYS(mount("tmpfs", VM_ROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=8m")));
	/* Without a workspace, /workspace is the root's own directory (on the
	 * box's disk): no 9p share is mounted, and QEMU can save the VM. A
	 * block workspace is an overlay of the workspace's image and the
	 * box's disk: no 9p either. --rw (and a box on the host view) has
	 * the 9p share. */
	if (ws == VM_WS_SHARE)
		STEP("mount the workspace (9p)", vm_share("ws", VM_ROOT "/workspace", MS_NODEV | MS_NOSUID, "mmap"));
	if (ws == VM_WS_BLOCK) {
		if (seed) {
			STEP("make the workspace's layer", SYS(mkdir(VM_ROOT_DISK "/ws", 0755) < 0 && errno != EEXIST ? -1 : 0));
			STEP("take the workspace's changes from the host",
			     changeset_guest_seed(cfg->chan_fd, VM_ROOT_DISK "/ws/upper"));
		}
		STEP("the workspace's overlay",
		     vm_root_overlay(VM_ROOT_WSLOWER, "ws", VM_ROOT "/workspace", VM_WS_OVERLAY_OPTS));
		int up;
		STEP("open the workspace's upper", SYS(up = open(VM_ROOT_DISK "/ws/upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
		changeset_guest_init(up);
	}
	vm_root_etc(rootfd, cfg->ca_bundle);
	/* Synced before every result (guest/main.c): what a call changed is
	 * in the host's file by the time the host hears it ended. */
	STEP("open the box's disk", SYS(cfg->root_sync_fd = open(VM_ROOT_DISK, O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
	/* The initramfs is left behind read-only; the root on top of it is
	 * the one the box sees (a chroot of the mount namespace's root, so
	 * that user namespaces can still be made in it). */
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
		vm_log("remount the initramfs read-only: %s", strerror(errno));
	STEP("switch to the root", SYS(chdir(VM_ROOT)));
	STEP("switch to the root", SYS(mount(".", "/", NULL, MS_MOVE, NULL)));
	STEP("switch to the root", SYS(chroot(".")));
	STEP("switch to the root", SYS(chdir("/")));
#undef SYS
#undef STEP
	return 0;
}
