/* Checkpoints of a copy-on-write workspace's layer (the overlay's upper
 * directory), one per message of a session, so that the layer can be put
 * back as it was before any of them (/rewind, ward rewind).
 *
 * A checkpoint is a directory DIR/N holding a manifest (one JSON object a
 * line: each entry's path, type, mode, owner, mtime, the overlay's xattrs
 * on it, a symlink's target, and for a regular file the object that holds
 * its bytes). The objects are in DIR/objects, shared by every checkpoint
 * that names them. What it keeps: regular files, directories, symlinks,
 * whiteouts (deleted files) and the overlay's xattrs (opaque directories).
 * Not kept: sockets, FIFOs and devices (counted in skipped), hard links
 * between two names of the layer (each name gets its own copy), and setuid
 * or setgid bits (never restored).
 *
 * Cheap: a file whose stamp (inode, size, mtime and ctime, to the
 * nanosecond) is the one the previous checkpoint recorded for its path
 * names that checkpoint's object again (no copy, no link: one stat and a
 * line of the manifest); any other is copied into a new object (FICLONE
 * where the file system shares extents, else its bytes). Nothing in a
 * checkpoint is ever a link into the live layer: a file changed in place
 * there (bash's >>) would change the checkpoint with it. So each
 * checkpoint costs the bytes changed since the one before, a stat per
 * file, and its manifest. All are kept until they are dropped
 * (checkpoint_drop_after) or replaced; then the objects no manifest names
 * are removed, and never one that a manifest names. A checkpoint made
 * before objects were shared (its copies in DIR/N/files) still restores.
 *
 * The layer must be still while a checkpoint is restored into it: no box
 * may have it mounted (the caller makes sure). A checkpoint taken while a
 * box runs is the layer as it was file by file during the walk. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/err.h"

struct checkpoint_stats {
	size_t entries;		/* everything kept: files, directories, symlinks, whiteouts */
	size_t files;		/* regular files */
	size_t copied;		/* of which copied (new or changed since the previous checkpoint) */
	uint64_t bytes_copied;	/* their bytes */
	size_t skipped;		/* sockets, FIFOs, devices: not kept */
	int64_t ms;
};

/* What decides that a file is unchanged since a checkpoint. */
struct checkpoint_stamp {
	uint64_t ino;
	int64_t size, mtime_ns, ctime_ns;
};
struct checkpoint_stamp checkpoint_stamp_of(const struct stat *st);
/* Unchanged: the same inode, size, mtime and ctime. A write changes mtime
 * and ctime; chmod, chown and a link change ctime; a rename over it, the
 * inode. */
bool checkpoint_unchanged(const struct checkpoint_stamp *a, const struct checkpoint_stamp *b);

/* Where NAME's layers keep their checkpoints: beside them in the state dir
 * ($XDG_STATE_HOME/ward/workspaces/NAME.ckpt), made 0700. */
int checkpoint_dir(const char *name, char *out, size_t n, struct err *e);
/* Checkpoint n (from 1) of upper into dir, replacing one of that number;
 * against the highest-numbered checkpoint there. upper NULL or missing:
 * an empty layer. ret may be NULL. */
int checkpoint_take(const char *dir, const char *upper, int n, struct checkpoint_stats *ret, struct err *e);
bool checkpoint_has(const char *dir, int n);
/* Make upper what checkpoint n holds: built beside it (UPPER.rewind, the
 * same file system) and swapped in with one rename, so upper is either
 * all old or all new. upper's parent must exist. Checkpoint n is then
 * renewed to the files just written (their stamps), so that the next
 * checkpoint keeps its objects. ret may be NULL. */
int checkpoint_restore(const char *dir, int n, const char *upper, struct checkpoint_stats *ret, struct err *e);
/* Make the layer dst (an existing directory, whose mode and owner are
 * kept) a copy of the layer src, as a checkpoint of src is taken and
 * restored, with what that keeps and leaves out (no setuid or setgid
 * bits; no sockets, FIFOs or devices): taken beside dst (DST.fork, on
 * dst's file system), and each copy then linked into place, so each
 * file's bytes are copied once (FICLONE where the file system shares
 * extents). ret: the take's counts (copied, bytes_copied), and the time
 * of both. A fork's layers (box_fork). */
int checkpoint_copy(const char *src, const char *dst, struct checkpoint_stats *ret, struct err *e);
/* Remove the checkpoints numbered above n (n = 0: all of them, and dir),
 * and the objects only they named. */
void checkpoint_drop_after(const char *dir, int n);
