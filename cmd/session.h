/* What ward run and the terminal session share: opening a session (new or
 * resumed) and its box; the workspace changes a session keeps. (The flags
 * that pick the model, the gate and the budgets: cmd/run-flags.h.) */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd/run-flags.h"
#include "turn/turn.h"

/* A new session, or the one --resume names (its conversation, with a
 * result made up for each call that was cut off, and its workspace). The
 * workspace's absolute path is written to ws (PATH_MAX). 0, or an exit
 * code after an error line. */
int session_start(struct run_flags *f, struct session *s, char *ws);
/* The session's own box, named s-SESSION, with its changes kept after it
 * (a resumed session's new box sees them): made and connected. 0, or an
 * exit code after an error line (and the journal says why). */
/* The session's own box, "s-ID": a box kept from an earlier run of the
 * session (hibernated when it ended) is taken again, and *ret_kept says so;
 * else a new one. interactive: the box hibernates when idle. */
int session_box(struct session *s, struct run_flags *f, const char *workspace, bool interactive, char *name,
		size_t n, bool *ret_kept);
/* The session is over: its connection to the box is closed (calls still
 * on it are dropped, without their callbacks), and the box hibernates and
 * outlives this ward (keep), or is destroyed. 1 when it was kept. */
int session_box_end(struct session *s, const char *name, bool keep);
/* After the changes were dealt with: a kept box whose layers were dropped
 * (applied, or none) goes too. */
void session_box_settle(const char *name);
void session_end(struct session *s);

struct ws_changes;
struct layers;
/* Where a session's workspace changes are kept: the layers of its own
 * boxes (s-SESSION, kept after them until applied or dropped), or of the
 * existing box a run used (--box NAME: they live and die with that box,
 * and ward never drops them). */
struct session_ws {
	const char *session;
	const char *workspace;	/* the tree they apply to */
	const char *box;	/* --box; NULL: the session's own */
};
/* The workspace changes a session keeps (L->upper): 1 with ch read (ch->n
 * may be 0; ch NULL: only whether they are kept) and the layers held until
 * layers_release(L); 0 when none are kept; -1 with e set. */
int session_changes_read(const struct session_ws *w, struct layers *L, struct ws_changes *ch, struct err *e);
/* Remove the session's kept changes (after this process released them);
 * never a --box box's. */
void session_layers_drop(const struct session_ws *w);
/* The same, and their checkpoints (a finished fleet task whose patch holds
 * its changes). */
void session_changes_drop(const struct session_ws *w);
/* A box may change its copy of the tree from since_ns on (workspace/wsbase.h):
 * before each run or turn, or the box's birth for --box. Warns on failure. */
void session_changes_begin(const struct session_ws *w, int64_t since_ns);
/* A turn ended: record the base of what the box changed (the terminal
 * session; ward run records in session_changes). Warns on failure. */
void session_changes_record(const struct session_ws *w);

struct session_changes_opts {
	bool json;		/* nothing on stderr but errors */
	bool record;		/* the run just ended: record the base first */
	bool apply;
	bool force;		/* apply over edits made to the tree since the run */
	bool allow_git;		/* apply (and patch) the changes in git directories too */
	const char *patch;	/* write them to this file as a git patch */
	cJSON *files;		/* gets {path, change, dir?, conflict?, git?, runs?} */
};
/* Show (on stderr unless json), write to patch, or apply the changes;
 * with none, drop the layers. Applying refuses, and applies nothing, when
 * a file changed in the tree since the run (one line each), unless force.
 * Changes in git directories are left out unless allow_git, and said so:
 * the rest is applied, and the layers are kept with what was left out. 
 * ret_patched (or NULL): whether the patch was written, whole. */
int session_changes(const struct session_ws *w, const struct session_changes_opts *o, bool *ret_patched);
/* A file of the workspace as the session's box sees it (path: under
 * /workspace, or relative to it), read on the host: its copy-on-write
 * layer over the tree, or the tree itself when rw; no symlink followed.
 * 0 and *ret (malloc'd, NUL-terminated) and *len; -ENOENT when it is not
 * there (or deleted in the box); -EOPNOTSUPP for a path outside the
 * workspace or through a symlink; -EFBIG past cap. */
int session_file_read(const struct session_ws *w, bool rw, const char *path, size_t cap, char **ret, size_t *len);
/* The sessions, oldest first: [{session, stop, model, workspace, first,
 * compactions}] (first: the first thing the person asked). */
int session_list(cJSON **ret, struct err *e);
