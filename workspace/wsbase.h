/* The base of a workspace's changes: what the user's tree held at each
 * path before the box took its own copy, so that applying the changes
 * never silently overwrites an edit made to the tree since.
 *
 * Overlayfs keeps no record of what the tree held when the box copied a
 * file up, and the tree is the user's live directory, so ward keeps one
 * itself, in a file beside the layers (layers_base_path):
 *  - "since": the moment from which a box may have copied something up
 *    and not recorded it yet: set when a run (or a turn of the terminal
 *    session) starts, or to the box's birth for an existing box (--box);
 *    the earliest one is kept until a record is made;
 *  - when a run ends, for every path the box has its own copy of (a change
 *    of any kind, or a file copied up unchanged) that has no record yet:
 *    the tree's state there, or "unknown" when the tree's entry changed
 *    (its ctime) at or after "since": the box may have taken its copy
 *    before that edit, and cannot have seen it.
 * A record stays while the layers do (the box's copy keeps hiding the
 * tree's file, whatever later runs do), and is renewed for what is applied.
 *
 * A state is a SHA-256 of the entry's type, mode and content (a symlink's
 * target); for a directory the box deleted, of every entry below it: name,
 * type, mode, size and modification time. A file deleted from the tree
 * while a run ran leaves no trace to compare (no ctime): it is not
 * detected; one deleted after the run is. */
#pragma once
#include <stdint.h>

#include "base/err.h"
#include "workspace/wsdiff.h"

/* A box may change its copy of the tree from since_ns (CLOCK_REALTIME) on;
 * an earlier moment not yet recorded is kept. */
int ws_base_begin(const char *file, int64_t since_ns, struct err *e);
/* Record the tree's state for every path of c that has no record (see
 * above), and end "since". applied: c was just applied to lower: its
 * paths' records are renewed to what the tree holds now (but for what
 * the apply left out), and "since" is kept. */
int ws_base_record(const char *file, const char *lower, const struct ws_changes *c, bool applied, struct err *e);
/* Set c->v[i].conflict for every change whose path in lower is no longer
 * what was recorded (or, with no record, changed since "since"), of those
 * an apply would apply. The number of conflicting changes, or -errno. */
int ws_base_check(const char *file, const char *lower, struct ws_changes *c, struct err *e);
