/* The ns box's file system, as a flat list of steps.
 *
 * Everything the host gives the box is made ready on a stage (a tmpfs at
 * s->root_dir, in the box's own mount namespace): the lowers (bound, or
 * moved there as idmapped clones), the root overlay and the host view's
 * own overlays, the workspace, /dev, /proc, ward's /etc files, and the
 * directory the guest is exec'd in. Each is then cloned (open_tree), the
 * box pivots into its root overlay, and the clones are moved onto their
 * places there. So every path the box's root holds (an image's, or what
 * the box changed before a hibernate: a symlink at /tmp, a file at /dev)
 * is only ever resolved once the root is "/", where it cannot name
 * anything of the host; a mount point that is not a directory (a file for
 * the files) is replaced by one. */
#include "sandbox/ns-int.h"
#include "sandbox/backend.h"
#include "sandbox/hostview.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/mnt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void nsroot_lowers(const struct ns_spec *s, struct ns_child *c)
{
	c->nlower = 0;
	c->lower[c->nlower++] = (struct ns_lower){ .host = s->image_root ? s->image_root : s->hostview,
						   .box = "", .layer = "top", .fd = -1 };
	if (!s->image_root) {
		/* The host view's own overlays, beside its root (whose skeleton
		 * holds their mount points): the host's /usr, the package
		 * database so that dpkg -i works over the host's packages, and
		 * the top directories that are real directories on a host
		 * without a merged /usr (sandbox/hostview.c). Each one's layer
		 * is its path with '-' for '/'. */
		const char *host[NS_LOWERS_MAX];
		size_t n = hostview_host_dirs(host, NS_LOWERS_MAX - 2);
		static char layer[NS_LOWERS_MAX][32];
		for (size_t i = 0; i < n; i++) {
			struct stat st;
			if (lstat(host[i], &st) < 0 || !S_ISDIR(st.st_mode))
				continue;
			snprintf(layer[i], sizeof(layer[i]), "%s", host[i] + 1);
			for (char *p = layer[i]; *p; p++)
				if (*p == '/')
					*p = '-';
			c->lower[c->nlower++] = (struct ns_lower){ .host = host[i], .box = host[i] + 1,
								   .layer = layer[i], .fd = -1 };
		}
	}
	if (s->workspace)
		c->lower[c->nlower++] = (struct ns_lower){ .host = s->workspace, .box = "workspace", .fd = -1 };
}

static void st_mkdir(struct ns_child *c, const char *p, mode_t mode)
{
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		ns_fail(c, "mkdir %s", p);
}

static void st_write(struct ns_child *c, const char *p, const char *content)
{
	_cleanup_close_ int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || fdio_write_full(fd, content, strlen(content)) < 0)
		ns_fail(c, "write %s", p);
}

static void st_bind(struct ns_child *c, const char *src, const char *dst, bool ro, bool dir)
{
	if (dir) {
		st_mkdir(c, dst, 0755);
	} else {
		int fd = open(dst, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			ns_fail(c, "create %s", dst);
		close(fd);
	}
	errno = ro ? -mnt_bind_ro(src, dst) : mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0 ? errno : 0;
	if (errno)
		ns_fail(c, "bind %s", src);
}

/* An overlay at target, its changes in the root layer's dir (or, for the
 * workspace, in upper and work: descriptors, whose directories the box's
 * root could not walk to). Inside the box's user namespace (userxattr);
 * redirects and metacopy never followed: a lower (an image) holding such
 * xattrs cannot make the overlay read another file of it in its place. */
static void st_overlay(struct ns_child *c, const char *lower, int rootlayer, const char *layer, int upfd, int workfd,
		       const char *target)
{
	char opts[PATH_MAX + 256];
	if (layer)
		snprintf(opts, sizeof(opts),
			 "lowerdir=%s,upperdir=/proc/self/fd/%d/%s/upper,workdir=/proc/self/fd/%d/%s/work,"
			 "userxattr,redirect_dir=nofollow,metacopy=off",
			 lower, rootlayer, layer, rootlayer, layer);
	else
		snprintf(opts, sizeof(opts),
			 "lowerdir=%s,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr,"
			 "redirect_dir=nofollow,metacopy=off",
			 lower, upfd, workfd);
	st_mkdir(c, target, 0755);
	if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		ns_fail(c, "mount the copy-on-write %s (overlayfs over %s)", layer ? "root" : "workspace", lower);
}

/* The root's overlay of layer, mounted already (fuse-overlayfs, the
 * layers' child): bound at target, nosuid and nodev as an overlay is. */
static void st_root_view(struct ns_child *c, const char *layer, const char *target)
{
	char src[PATH_MAX];
	snprintf(src, sizeof(src), "%s/%s", c->root_views, layer);
	st_mkdir(c, target, 0755);
	if (mount(src, target, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL) < 0)
		ns_fail(c, "bind the root's copy-on-write view %s", src);
}

static int st_top_bind(void *arg, const char *host, const char *dst)
{
	st_bind(arg, host, dst, true, true);
	return 0;
}

/* /bin, /lib and friends of the directory the guest is exec'd in: a
 * symlink where the host has one (merged /usr), otherwise a read-only
 * bind. */
static void st_tops(struct ns_child *c, const char *root)
{
	char what[PATH_MAX + 80] = "";
	int r = hostview_tops_make(root, st_top_bind, c, what, sizeof(what));
	if (r < 0) {
		errno = -r;
		ns_fail(c, "%s", what);
	}
}

/* Where ward-guest is exec'd: the host's /usr (and top directories) and
 * its loader cache, read-only, and the box's /proc (which a sanitizer
 * build's runtime reads as it starts). The loader and the libraries are
 * read from here, and nothing of the box's root (its /etc/ld.so.preload,
 * its libc) is seen while they are; then the guest changes its root to
 * the box's (guest/main.c, --root-fd). The box never sees this
 * directory. */
static void st_guestroot(struct ns_child *c)
{
	if (mount("tmpfs", "guest", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k,uid=0,gid=0") < 0)
		ns_fail(c, "mount the guest's directory");
	st_bind(c, "/usr", "guest/usr", true, true);
	st_tops(c, "guest");
	st_mkdir(c, "guest/etc", 0755);
	if (access("/etc/ld.so.cache", R_OK) == 0)
		st_bind(c, "/etc/ld.so.cache", "guest/etc/ld.so.cache", true, false);
	st_mkdir(c, "guest/proc", 0555);
	if (mount("proc", "guest/proc", NULL, MS_BIND | MS_REC, NULL) < 0)
		ns_fail(c, "bind /proc for the guest");
	if (mount(NULL, "guest", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		ns_fail(c, "read-only guest directory");
}

/* /tmp is a tmpfs, that is memory: its size is the smaller of the box's
 * disk and memory ceilings (1 GiB with neither). */
static uint64_t nsroot_tmp_size(const struct limits *l)
{
	uint64_t n = 1ULL << 30;
	if (l->disk)
		n = l->disk;
	if (l->memory && l->memory < n)
		n = l->memory;
	return n;
}

static void st_dev(struct ns_child *c)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom" };
	char p[PATH_MAX];
	st_mkdir(c, "dev", 0755);
	if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m,uid=0,gid=0") < 0)
		ns_fail(c, "mount /dev");
	/* A user namespace cannot make device nodes, so these are binds of
	 * the host's. Each bind is read-only: the device still reads and
	 * writes (a read-only mount does not apply to device I/O), but its
	 * inode's mode, owner and times cannot be changed from the box. */
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		char host[64];
		snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
		snprintf(p, sizeof(p), "dev/%s", nodes[i]);
		st_bind(c, host, p, false, false);
		if (mnt_remount_ro(p, MS_NOSUID | MS_NOEXEC) < 0)
			ns_fail(c, "read-only /dev/%s", nodes[i]);
	}
	static const char *const links[][2] = {
		{ "/proc/self/fd", "fd" }, { "/proc/self/fd/0", "stdin" },
		{ "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		snprintf(p, sizeof(p), "dev/%s", links[i][1]);
		if (symlink(links[i][0], p) < 0)
			ns_fail(c, "symlink /dev/%s", links[i][1]);
	}
	st_mkdir(c, "dev/shm", 01777);
	char shmopt[80];
	snprintf(shmopt, sizeof(shmopt), "mode=1777,size=%llu,uid=0,gid=0",
		 (unsigned long long)MIN(nsroot_tmp_size(&c->s->lim), 64ULL << 20));
	if (mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, shmopt) < 0)
		ns_fail(c, "mount /dev/shm");
	/* Nothing more goes into /dev: its tmpfs becomes read-only. */
	if (mount(NULL, "dev", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m,uid=0,gid=0") < 0)
		ns_fail(c, "read-only /dev");
}

/* What ward writes into every box's /etc, bound read-only over the
 * root's own (an image's resolv.conf names its builder's resolver). */
static const char *const nsroot_etc[] = { "hosts", "hostname", "resolv.conf", BOX_CA_FILE };

static void st_etc(struct ns_child *c)
{
	st_mkdir(c, "etc", 0755);
	st_write(c, "etc/hostname", "ward\n");
	/* With secrets: the host's CAs and the box's own (sandbox/egress.h). */
	if (c->s->ca_bundle)
		st_write(c, "etc/" BOX_CA_FILE, c->s->ca_bundle);
	st_write(c, "etc/hosts", "127.0.0.1 localhost ward\n::1 localhost ip6-localhost\n");
	/* The host's resolver with the host's network; else none: a name is
	 * resolved by the egress proxy on the host, never in the box. */
	if (c->s->net_host && access("/etc/resolv.conf", R_OK) == 0) {
		st_bind(c, "/etc/resolv.conf", "etc/resolv.conf", true, false);
	} else {
		st_write(c, "etc/resolv.conf",
			 "# ward: this box has no DNS. Names are resolved by the egress proxy\n"
			 "# on the host ($HTTPS_PROXY), for the hosts the task was given.\n");
	}
}

static void st_workspace(struct ns_child *c, const struct ns_lower *ws, int upfd, int workfd)
{
	const struct ns_spec *s = c->s;
	if (!ws) {
		/* The tool user's (with one uid, the box's root is). */
		char opt[80];
		snprintf(opt, sizeof(opt), "mode=0755,size=1g,uid=%u,gid=%u", c->range ? (unsigned)c->user.uid : 0,
			 c->range ? (unsigned)c->user.gid : 0);
		st_mkdir(c, "ws", 0755);
		if (mount("tmpfs", "ws", "tmpfs", MS_NOSUID | MS_NODEV, opt) < 0)
			ns_fail(c, "mount the empty workspace");
		return;
	}
	char lower[32];
	snprintf(lower, sizeof(lower), "l/%zu", (size_t)(ws - c->lower));
	if (s->ws_view) {
		/* fuse-overlayfs's, the keeper's child: bound as it is. */
		st_mkdir(c, "ws", 0755);
		if (mount(s->ws_view, "ws", NULL, MS_BIND, NULL) < 0)
			ns_fail(c, "bind the workspace's copy-on-write view %s", s->ws_view);
		return;
	}
	if (s->workspace_rw) {
		/* The lower itself: the user's tree, bound (or shifted). */
		st_mkdir(c, "ws", 0755);
		if (mount(lower, "ws", NULL, MS_BIND | MS_REC, NULL) < 0)
			ns_fail(c, "bind the workspace %s", s->workspace);
		return;
	}
	st_overlay(c, lower, -1, NULL, upfd, workfd, "ws");
}

/* A clone of the stage's mount at p (with what is mounted below it, each
 * nosuid and attr), to move into place once the box's root is "/". */
static int st_clone(struct ns_child *c, const char *p, uint64_t attr)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, p, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0)
		ns_fail(c, "clone the stage's %s", p);
	struct mount_attr a = { .attr_set = MOUNT_ATTR_NOSUID | attr };
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
		ns_fail(c, "make the stage's %s nosuid", p);
	return fd;
}

/* In the box's root, p (relative to "/") made a directory or, with file, a
 * regular file: anything else there (a symlink, a file, a device) is
 * removed first. The parent is the box's and exists. */
static void root_mountpoint(struct ns_child *c, const char *p, bool file)
{
	struct stat st;
	if (lstat(p, &st) == 0) {
		if (file ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode))
			return;
		if (S_ISDIR(st.st_mode) ? rmdir(p) < 0 : unlink(p) < 0)
			ns_fail(c, "the box's /%s is not a %s and cannot be replaced by one", p,
				file ? "file" : "directory");
	} else if (errno != ENOENT) {
		ns_fail(c, "the box's /%s", p);
	}
	int r = file ? open(p, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644) : mkdir(p, 0755);
	if (r < 0)
		ns_fail(c, "make the box's /%s", p);
	if (file)
		close(r);
}

static void root_attach(struct ns_child *c, int fd, const char *p, bool file)
{
	root_mountpoint(c, p, file);
	if (syscall(SYS_move_mount, fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		ns_fail(c, "mount the box's /%s", p);
	close(fd);
}

void nsroot_build(struct ns_child *c)
{
	const struct ns_spec *s = c->s;
	/* As the keeper's uid still: the stage's directory and the layers
	 * are in directories only it can walk; the box's root gets
	 * descriptors of them. */
	if (mount("tmpfs", s->root_dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=16m,uid=0,gid=0") < 0)
		ns_fail(c, "mount the box's stage");
	if (chdir(s->root_dir) < 0)
		ns_fail(c, "enter the box's stage");
	int rootlayer = c->root_views ? -1 : open(s->root_layer, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootlayer < 0 && !c->root_views)
		ns_fail(c, "open the box's root layer %s", s->root_layer);
	int upfd = -1, workfd = -1;
	if (s->workspace && !s->workspace_rw && !s->ws_view) {
		upfd = open(s->upper_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		workfd = open(s->work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (upfd < 0 || workfd < 0)
			ns_fail(c, "open the workspace's layers");
	}
	/* The box's root from here (with one uid, that is the keeper's uid:
	 * nothing changes but the name). What it makes is its own. */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		ns_fail(c, "become root of the box's user namespace");
	/* Changing uids cleared it: /proc/self/fd is how the overlays name
	 * the layers. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	st_mkdir(c, "l", 0755);
	const struct ns_lower *ws = NULL;
	for (size_t i = 0; i < c->nlower; i++) {
		struct ns_lower *l = &c->lower[i];
		char p[32];
		snprintf(p, sizeof(p), "l/%zu", i);
		st_mkdir(c, p, 0755);
		if (!l->layer)
			ws = l;
		if (l->fd >= 0) {
			if (syscall(SYS_move_mount, l->fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				ns_fail(c, "mount the box's view of %s", l->host);
			close(l->fd);
			l->fd = -1;
		} else if (mount(l->host, p, NULL, MS_BIND | (!l->layer && s->workspace_rw ? MS_REC : 0), NULL) < 0) {
			ns_fail(c, "bind %s", l->host);
		}
	}

	int ovl[NS_LOWERS_MAX];
	size_t novl = 0;
	for (size_t i = 0; i < c->nlower; i++) {
		const struct ns_lower *l = &c->lower[i];
		if (!l->layer)
			continue;
		char d[80], lower[32], target[80];
		if (c->root_views) {
			/* Made by the keeper over its layers, each a mount already. */
			if (!*l->box) {
				st_root_view(c, l->layer, "root");
				continue;
			}
			st_mkdir(c, "o", 0755);
			snprintf(target, sizeof(target), "o/%s", l->layer);
			st_root_view(c, l->layer, target);
			ovl[novl++] = st_clone(c, target, MOUNT_ATTR_NODEV);
			continue;
		}
		snprintf(d, sizeof(d), "%s", l->layer);
		if (mkdirat(rootlayer, d, 0700) < 0 && errno != EEXIST)
			ns_fail(c, "make the root layer's %s", d);
		snprintf(d, sizeof(d), "%s/upper", l->layer);
		if (mkdirat(rootlayer, d, 0755) < 0 && errno != EEXIST)
			ns_fail(c, "make the root layer's %s", d);
		snprintf(d, sizeof(d), "%s/work", l->layer);
		if (mkdirat(rootlayer, d, 0700) < 0 && errno != EEXIST)
			ns_fail(c, "make the root layer's %s", d);
		snprintf(lower, sizeof(lower), "l/%zu", i);
		if (!*l->box) {
			st_overlay(c, lower, rootlayer, l->layer, -1, -1, "root");
			continue;
		}
		st_mkdir(c, "o", 0755);
		snprintf(target, sizeof(target), "o/%s", l->layer);
		st_overlay(c, lower, rootlayer, l->layer, -1, -1, target);
		ovl[novl++] = st_clone(c, target, MOUNT_ATTR_NODEV);
	}
	st_workspace(c, ws, upfd, workfd);
	int wsfd = st_clone(c, "ws", MOUNT_ATTR_NODEV);
	st_dev(c);
	int devfd = st_clone(c, "dev", 0);	/* its nodes are what it is for; nothing else there */
	const char *what;
	st_mkdir(c, "proc", 0555);
	errno = -mnt_proc("proc", &what);
	if (errno)
		ns_fail(c, "/proc: %s", what);
	int procfd = st_clone(c, "proc", MOUNT_ATTR_NODEV);
	st_etc(c);
	int etcfd[ARRAY_SIZE(nsroot_etc)];
	for (size_t i = 0; i < ARRAY_SIZE(nsroot_etc); i++) {
		char p[64];
		snprintf(p, sizeof(p), "etc/%s", nsroot_etc[i]);
		bool ca = !strcmp(nsroot_etc[i], BOX_CA_FILE);
		etcfd[i] = ca && !c->s->ca_bundle ? -1 : st_clone(c, p, MOUNT_ATTR_NODEV | MOUNT_ATTR_RDONLY);
	}
	st_mkdir(c, "guest", 0755);
	st_guestroot(c);
	/* A clone, as the others: the pivot's detach takes the stage's own
	 * mounts apart. */
	c->guestroot_fd = st_clone(c, "guest", MOUNT_ATTR_NODEV | MOUNT_ATTR_RDONLY);
	if (rootlayer >= 0)
		close(rootlayer);
	if (upfd >= 0)
		close(upfd), close(workfd);

	if (chdir("root") < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 ||
	    chdir("/") < 0)
		ns_fail(c, "pivot into the box's root");
	/* Only the box's root from here: its paths resolve in it. */
	novl = 0;
	for (size_t i = 0; i < c->nlower; i++)
		if (c->lower[i].layer && *c->lower[i].box)
			root_attach(c, ovl[novl++], c->lower[i].box, false);
	root_attach(c, devfd, "dev", false);
	root_attach(c, procfd, "proc", false);
	root_mountpoint(c, "tmp", false);
	char tmpopt[64];
	snprintf(tmpopt, sizeof(tmpopt), "mode=1777,size=%llu", (unsigned long long)nsroot_tmp_size(&s->lim));
	if (mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmpopt) < 0)
		ns_fail(c, "mount /tmp");
	root_attach(c, wsfd, "workspace", false);
	root_mountpoint(c, "etc", false);
	for (size_t i = 0; i < ARRAY_SIZE(nsroot_etc); i++) {
		char p[64];
		snprintf(p, sizeof(p), "etc/%s", nsroot_etc[i]);
		if (etcfd[i] >= 0)
			root_attach(c, etcfd[i], p, true);
	}
	c->root_fd = open("/", O_PATH | O_DIRECTORY);	/* the guest's way back: not CLOEXEC */
	if (c->root_fd < 0)
		ns_fail(c, "open the box's root");
}
