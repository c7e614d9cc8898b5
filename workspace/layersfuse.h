/* A layers image mounted without root and without loop devices: fuse2fs
 * serves the ext4 image over the layers directory, in a user and mount
 * namespace of its own (the user is its own uid there, nothing else is
 * mapped; fuse2fs keeps CAP_SYS_ADMIN there, and only there, as an ambient
 * capability, to mount; the image's top directory is the user's), so the
 * mount exists in that mount namespace only and nothing
 * is left on the host's when it ends.
 *
 * Who can reach it: the user's processes on the host, at
 * /proc/PID/root/DIR (the user owns the namespace, so the kernel lets it
 * through /proc/PID/root), and a process in a user namespace below the
 * holder's (a box cloned from a process that joined PID's namespaces sees
 * it at DIR). Not a process in a user namespace beside it (the kernel
 * refuses /proc/PID/root across sibling namespaces), and, as the mount is
 * not allow_other, only a process whose uids and gids are all the user's
 * (fuse_allow_current_process).
 *
 * What fuse2fs can see and do: it is the user's process, in namespaces
 * the user owns, with no capability outside them; it holds the image
 * open, and RLIMIT_FSIZE at the image's size stops it from growing the
 * image past the cap whatever it is made to write (EFBIG).
 *
 * The size holds because the image's ext4 has that many blocks: a fill
 * gets ENOSPC. Overlayfs refuses a FUSE upper that has no d_type and no
 * RENAME_WHITEOUT (fuse2fs 1.47 over libfuse 2 has neither: "upper fs
 * missing required features"), so a box's copy-on-write over this mount
 * needs a userspace overlay (fuse-overlayfs) in the box. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

/* fuse2fs where it is installed, or NULL. */
const char *layersfuse_fuse2fs(void);
/* Can this process mount a layers image with fuse2fs here? why says how,
 * or why not (fuse2fs or mke2fs missing, no /dev/fuse, no user
 * namespaces). */
bool layersfuse_capable(char *why, size_t n);
/* Make image an ext4 of size bytes, sparse, with no journal (fuse2fs
 * does not write one). */
int layersfuse_mkfs(const char *image, uint64_t size, struct err *e);
/* Mount image over dir in namespaces of its own: the holder's pid. Returns
 * once the mount is there (bounded: 5 s). */
int layersfuse_mount(const char *image, const char *dir, pid_t *ret_pid, struct err *e);
/* Whether pid holds a FUSE mount over dir (its /proc/PID/root/DIR is the
 * root of a FUSE file system): a pid that was reused is not. */
bool layersfuse_mounted(pid_t pid, const char *dir);
/* Where a process of the host reaches dir in pid's mount namespace. */
int layersfuse_path(pid_t pid, const char *dir, char *out, size_t n);
/* End pid's fuse2fs, which unmounts (SIGTERM; SIGKILL after 2 s): only
 * when it is the holder of dir. Returns when it has exited, bounded. */
void layersfuse_unmount(pid_t pid, const char *dir);

/* The other way, where the process itself holds the mounts (a box's
 * keeper: its box is cloned from it, so the box's user namespace is below
 * its own and its mount namespace a copy of its own, with the mounts in
 * it). layersfuse_enter puts this process in a user and mount namespace of
 * its own, once (the user its own uid there, nothing else mapped, so uids
 * read as before; it keeps its capabilities there, not across an exec):
 * single-threaded callers only. What it then mounts exists in that mount
 * namespace alone, and its own children serve it, outside any box's PID
 * namespace, so no process of a box can see or trace them. */
int layersfuse_enter(struct err *e);
bool layersfuse_entered(void);
/* fuse-overlayfs where it is installed, or NULL. */
const char *layersfuse_overlayfs(void);
/* fuse2fs serving image over dir, a child of this process in its
 * namespaces (after layersfuse_enter): returns once the mount is there
 * (bounded: 5 s). The child ends when this process does. */
int layersfuse_serve(const char *image, const char *dir, pid_t *ret_pid, struct err *e);
/* fuse-overlayfs over lower (read-only to it: a box's tree), its changes
 * in upper and work, mounted on mp: a child of this process, as above. */
int layersfuse_overlay(const char *lower, const char *upper, const char *work, const char *mp, pid_t *ret_pid,
		       struct err *e);
/* End such a child (SIGTERM: it unmounts; SIGKILL after 2 s) and reap
 * it. */
void layersfuse_stop(pid_t pid);
