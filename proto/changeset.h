/* A workspace's change set: what a vm box's guest sends of its
 * workspace's overlay upper (guest/changeset.c) and the host reads into a
 * directory of the same shape (the host-side upper that wsdiff, apply,
 * --patch and checkpoints read), so that the host never mounts a file
 * system the box wrote.
 *
 * The stream (little-endian): "WCS1", then records, then an end record.
 * A record: u8 op, u16 path length, the path (relative, '/'-separated,
 * no NUL), then by op:
 *   'd' a directory: u32 mode, u8 flags (1: opaque), u64 mtime (ns)
 *   'f' a file: u32 mode, u64 mtime (ns), u64 size, then size bytes
 *   'k' a file unchanged since the last sync: linked from the old upper
 *   'l' a symlink: u16 target length, the target (no NUL)
 *   'w' a whiteout (the lower tree's entry is deleted)
 *   'E' the end (path length 0): nothing may follow it.
 * A record's parent directory comes before it, in the same stream.
 *
 * The reader treats the stream as hostile (the box wrote it): every
 * bound below is checked before anything is written, every path is
 * refused if it has "..", ".", an empty component, a leading '/', a NUL,
 * or more than the limits' depth and length, and every path is resolved
 * beneath the target by the kernel (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), so a symlink the stream made earlier is never
 * followed. Nothing is created but directories, regular files, symlinks
 * and whiteouts (character devices 0/0); no entry is made twice (O_EXCL);
 * modes lose their setuid, setgid and sticky bits. The first refusal
 * ends the reader: the target is then to be thrown away. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"

#define CHANGESET_MAGIC "WCS1"
#define CHANGESET_PATH_MAX 4096		/* bytes of a path or a symlink's target */
#define CHANGESET_NAME_MAX 255		/* bytes of one component */
/* The reader's bounds where the caller has none of its own. */
#define CHANGESET_ENTRIES_MAX (1u << 20)
#define CHANGESET_DEPTH_MAX 128

enum changeset_op {
	CHANGESET_DIR = 'd',
	CHANGESET_FILE = 'f',
	CHANGESET_KEEP = 'k',
	CHANGESET_LINK = 'l',
	CHANGESET_WHITEOUT = 'w',
	CHANGESET_END = 'E',
};
#define CHANGESET_F_OPAQUE 0x1

/* Encoders (the guest's, and the tests'): each appends one record's head
 * to b; a file's size bytes are to follow it. 0, or -ENAMETOOLONG,
 * -ENOBUFS (b's ceiling). */
int changeset_put_magic(struct buf *b);
int changeset_put_dir(struct buf *b, const char *path, mode_t mode, bool opaque, int64_t mtime_ns);
int changeset_put_file(struct buf *b, const char *path, mode_t mode, int64_t mtime_ns, uint64_t size);
int changeset_put_keep(struct buf *b, const char *path);
int changeset_put_link(struct buf *b, const char *path, const char *target);
int changeset_put_whiteout(struct buf *b, const char *path);
int changeset_put_end(struct buf *b);

struct changeset_limits {
	uint64_t entries;	/* records, the end's aside */
	uint64_t file_bytes;	/* one file's size */
	uint64_t total_bytes;	/* all files' sizes together */
	unsigned path_bytes;	/* a path's length (at most CHANGESET_PATH_MAX) */
	unsigned depth;		/* a path's components */
	/* The xattr an opaque directory gets: NULL, the host's upper's
	 * ("user.overlay.opaque", as overlayfs's userxattr has it); a guest
	 * seeding its own upper, "trusted.overlay.opaque". */
	const char *opaque_xattr;
};

/* What a reader saw, for the caller's figures. */
struct changeset_stats {
	uint64_t entries, files, kept, bytes;
};

struct changeset_reader;

/* A reader that builds into dirfd (an empty directory, kept open by the
 * caller); old (or -1): the previous upper that 'k' records link from.
 * 0 or -ENOMEM. */
int changeset_reader_new(int dirfd, int old, const struct changeset_limits *lim, struct changeset_reader **ret);
/* n more bytes of the stream. 0, or -errno with e set (what was wrong,
 * and at which path): the reader takes nothing more. */
int changeset_reader_feed(struct changeset_reader *r, const void *p, size_t n, struct err *e);
/* The stream ended: its end record must have come, and nothing be left
 * half-read. Deferred directory modes are set. 0 or -errno, e set. */
int changeset_reader_finish(struct changeset_reader *r, struct changeset_stats *ret, struct err *e);
void changeset_reader_free(struct changeset_reader *r);

/* rel beneath root (a directory fd), no symlink anywhere on the way, the
 * last component neither (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS):
 * a descriptor, or -errno. */
int changeset_open_beneath(int root, const char *rel, int flags);

/* The writer (proto/changeset-writer.c), the stream's one maker: the guest
 * sends its workspace's upper with it, the host the upper it kept to a
 * fresh guest. Each says how its upper's writer marks deletions and
 * opaque directories (the kernel's overlayfs, fuse-overlayfs). */
enum changeset_mark {
	CHANGESET_MARK_NONE,		/* the entry itself */
	CHANGESET_MARK_SKIP,		/* a mark of the upper's writer's own: not sent */
	CHANGESET_MARK_WHITEOUT,	/* a deletion of the lower entry *gone names */
};
struct changeset_marks {
	/* What name (lstat st) of a directory of the upper is; *gone is set
	 * to the deleted name where it differs from name. */
	enum changeset_mark (*entry)(void *arg, const char *name, const struct stat *st, const char **gone);
	/* Whether the directory name of dfd (open at fd) hides the lower's. */
	bool (*opaque)(void *arg, int dfd, const char *name, int fd);
	void *arg;
};
struct changeset_writer;
/* Walks the upper open at upper (the caller's, open while the writer is)
 * into a list of its entries, preorder; m is kept. A regular file whose
 * ctime precedes keep_before_ns is sent as 'k' (INT64_MIN: none is). An
 * entry past a reader's bounds is left out and counted. 0, -E2BIG (more
 * than CHANGESET_ENTRIES_MAX), -ENOMEM or -errno. */
int changeset_writer_new(int upper, const struct changeset_marks *m, int64_t keep_before_ns,
			 struct changeset_writer **ret);
/* The stream's next bytes appended to b, up to its ceiling (b->cap, at
 * least 3 * CHANGESET_PATH_MAX; b->alloc above it): 1 when the stream's
 * end is in b (nothing is left), 0 when more is to come, or -errno. A
 * file that shrank since it was walked is sent with zeros to the size its
 * record gave. */
int changeset_writer_fill(struct changeset_writer *w, struct buf *b);
/* How many entries were left out, and the first of them. */
uint64_t changeset_writer_skipped(const struct changeset_writer *w, const char **first);
void changeset_writer_free(struct changeset_writer *w);

/* A path as the reader takes it (its checks, for the guest to skip what
 * the host would refuse): 0 or -EINVAL. */
int changeset_path_check(const char *p, size_t n, const struct changeset_limits *lim);
