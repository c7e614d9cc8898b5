/* Per-message checkpoints and going back to one: what ward run, the
 * terminal session (/rewind) and `ward rewind` share.
 *
 * The person's messages of a session are numbered from 1 in the order of
 * its journal. Before each, its checkpoint: the session's workspace layer
 * (s-SESSION's upper directory) kept under the state dir
 * (workspace/checkpoint.h), and a "checkpoint" record. Rewinding to N puts
 * the layer back as checkpoint N holds it, drops the checkpoints after N,
 * and writes a "rewind" record, after which the conversation (here and
 * for --resume) is what it was before message N; the next message is N. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "workspace/checkpoint.h"
#include "turn/turn.h"

/* Before the person's message s->asked + 1: its checkpoint, of the
 * session's own layer when layer is true (else the session keeps none:
 * --rw, --box, no workspace; the record says so), and the record. The
 * layer may be in use by the session's running box. A checkpoint that
 * cannot be taken is a warning, and its record says why; s->asked counts
 * the message either way. */
void rewind_checkpoint(struct session *s, bool layer);

struct rewind_done {
	bool workspace;		/* the layer was rewound (else the session keeps none) */
	bool box_stopped;	/* stop_box was called */
	struct checkpoint_stats st;
	int messages;		/* the conversation's messages now */
};
/* Rewind session s, whose journal this process holds, to before the
 * person's message n (1 ≤ n ≤ s->asked): its layer, if the checkpoint has
 * one (no box may be using it: stop_box, unless NULL, is called once every
 * check has passed and before the layer is touched, for the caller to
 * destroy its own box; a running box s-SESSION, or another holder of the
 * layers' image, is then refused), the
 * later checkpoints dropped, the rewind record, and s->messages and
 * s->asked rebuilt from the journal. disk: the size of the layers' image
 * if it has to be made (0: the default). 0, or an exit code after one
 * error line saying what to do; nothing is changed then. */
int rewind_to(struct session *s, int n, uint64_t disk, void (*stop_box)(void *ud), void *ud, struct rewind_done *ret);
/* What the person can rewind to in session id, oldest first:
 * [{message, at, text}] (journal_state.checkpoints). 0, or -errno with e
 * set. */
int rewind_list(const char *id, cJSON **ret, struct err *e);
