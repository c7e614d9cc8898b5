/* A box's layers: the copy-on-write workspace's upper and work
 * directories, under the state dir ($XDG_STATE_HOME/ward/workspaces/NAME),
 * kept across boxes until the changes are applied or dropped; and beside
 * them, in root/, the changes to the box's own root (its backend's
 * overlays' upper and work directories), which go with the box: never
 * diffed, applied, patched or checkpointed, removed when the box ends
 * even where a session keeps its workspace's changes. Where the
 * kernel can enforce a size (ward runs as root and has loop devices), the
 * layers live on an ext4 image of that size (NAME.img beside the
 * directory, sparse), loop-mounted nosuid and nodev over the directory:
 * a box that fills it gets ENOSPC, and the host's disk keeps the rest.
 * Without root, where fuse2fs and fuse-overlayfs are there, an ns box's
 * keeper (layersfuse_enter) serves the same image with fuse2fs, and both
 * copy-on-writes over it with fuse-overlayfs, as overlayfs takes no FUSE
 * upper: the workspace's (layers_view) and, where the ceiling was asked
 * for (layers_root_on_image), each of the root's overlays
 * (layers_root_view), whose changes are then in root/ on the image as
 * root's are, and otherwise beside it (NAME.root) under overlayfs; others
 * reach the image through its server's /proc/PID/root (NAME.fuse).
 * Elsewhere nothing caps them, and disk_by says so. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

/* The most overlays a box's root is made of (sandbox/ns-int.h's lowers). */
#define LAYERS_ROOT_VIEWS_MAX 10

struct layers {
	char dir[PATH_MAX - 16];
	char upper[PATH_MAX], work[PATH_MAX];
	char root[PATH_MAX];	/* the root's changes: the backend's to lay out */
	bool root_image;	/* root is on the image (capped with the workspace's) */
	uint64_t disk;		/* the size the kernel enforces, 0 = none */
	char disk_by[160];	/* what enforces it, or why nothing does */
	int lock_fd;		/* the shared lock held while in use (NAME.img or NAME.lock), or -1 */
	bool image;		/* the layers are on a mounted image */
	/* Without root (layersfuse.h): the image is served by fuse2fs, a
	 * child of this process where it entered a namespace of its own (a
	 * keeper: fuse_pid), or held by a process of its own (fuse_holder),
	 * found through /proc/PID/root (upper, work name it so). The
	 * workspace's view (fuse-overlayfs, view_pid) is mounted on view. */
	bool fuse;
	pid_t fuse_pid, fuse_holder, view_pid;
	char view[PATH_MAX];
	/* The root's views on fuse2fs (fuse-overlayfs each, root_pid), each
	 * mounted on root_views/LAYER. */
	pid_t root_pid[LAYERS_ROOT_VIEWS_MAX];
	size_t nroot;
	char root_views[PATH_MAX];
};

/* Each user holds a shared lock from layers_open/layers_find to
 * layers_release: on NAME.img (its own open of it) where there is an
 * image, else on NAME.lock beside the layers. An image is mounted while
 * someone uses it: mounting and unmounting happen under the exclusive
 * lock, so one image is never mounted twice, and the last user to let go
 * unmounts it. Whoever holds the lock exclusively (layers_alone) has the
 * layers alone on either kind. */

/* Make (or find) NAME's layers, capped at disk bytes where the kernel can
 * do it, and hold them. An image made before keeps its size. */
int layers_open(const char *name, uint64_t disk, struct layers *ret, struct err *e);
/* NAME's existing layers, held: 1, 0 when NAME has none, or -errno. */
int layers_find(const char *name, struct layers *ret, struct err *e);
/* Whether this process is the only one holding l (no box uses the
 * layers): then it holds them alone until layers_release, and nobody can
 * take them meanwhile (layers_open and layers_find wait up to 10 s, then
 * fail saying why). */
bool layers_alone(struct layers *l);
/* Let go; the last user unmounts the image. */
void layers_release(struct layers *l);
/* Remove NAME's layers: the mount, the directory, the image and the base
 * record. Call after layers_release of this process's own hold. */
void layers_drop(const char *name);
/* NAME's layers' path with suffix: a file or directory beside them
 * (outside the image), whose directory is made. */
int layers_beside(const char *name, const char *suffix, char *out, size_t n, struct err *e);
/* The file beside NAME's layers (outside the image, so it can be written
 * before the layers exist) that records the base of their changes
 * (workspace/wsbase.h); its directory is made. */
int layers_base_path(const char *name, char *out, size_t n, struct err *e);
/* A fork's layers made whole from FROM's (a box running on them): FROM's
 * mounted image frozen (FIFREEZE: its writers wait, what they wrote is
 * on it, its journal clean), copied extent by extent (a clone where the
 * host's file system can) into TO's image, thawed. Every file keeps its
 * inode, times and owner; FROM's root/ comes with them. Root only (a
 * freeze needs CAP_SYS_ADMIN). 1 when TO's image was made (bytes: what
 * the copy moved; entries: the files, directories and links on it), 0
 * when this way does not apply (not root, FROM has no mounted image, or
 * TO has layers already), or -errno with e set. */
int layers_copy_image(const char *from, const char *to, uint64_t *bytes, uint64_t *entries, struct err *e);
/* Thaw NAME's image if a copy left it frozen (its copier died between
 * the freeze and the thaw): the owner of NAME's box calls it when the
 * fork it answered is over. */
void layers_thaw(const char *name);
/* Make l's root/ (empty, as a fresh box finds it: fresh) or keep what is
 * in it (a woken box), owned by uid:gid (the box's root) and 0700. */
int layers_root_make(struct layers *l, bool fresh, uid_t uid, gid_t gid, struct err *e);
/* Remove l's root/ (the box ended). */
void layers_root_clear(struct layers *l);
/* Remove NAME's root/ where its layers are kept (a session's) and its box
 * is gone without its keeper having done it (ward box reap). */
void layers_root_drop(const char *name);
/* Unmount every image of the user's that nobody holds (ward box reap). */
void layers_sweep(void);
/* Where l is on fuse2fs: the copy-on-write view of lower over l's upper
 * (fuse-overlayfs, a child of this process), mounted on mp, for a box
 * cloned from this process to bind; l->view names it. 0 or -errno. */
int layers_view(struct layers *l, const char *lower, const char *mp, struct err *e);
/* Where l is on fuse2fs: its root/ on the image from here on, not beside
 * it (a keeper, before layers_root_make); layers_find finds it there
 * once it is made. */
void layers_root_on_image(struct layers *l);
/* Where l is on fuse2fs: one overlay of the box's root, lower (read-only
 * to it) over l's root/LAYER/upper (fuse-overlayfs, a child of this
 * process), mounted on dir/LAYER (dir made 0700 if need be) for a box
 * cloned from this process to bind. 0 or -errno. */
int layers_root_view(struct layers *l, const char *lower, const char *layer, const char *dir, struct err *e);
/* End l's views (the workspace's and the root's fuse-overlayfs), if any. */
void layers_view_end(struct layers *l);
/* Can this process cap a workspace's disk here? why says how, or why not. */
bool layers_disk_capable(char *why, size_t n);
