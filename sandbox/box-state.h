/* A box's state: one enum, the names it has on the wire (info's "state",
 * the keeper's state file, ward box ls) and which moves between states are
 * legal. The keeper's steps that take time (a hibernate, a wake, a move to
 * the store) each have a state while they run and three box events: the
 * step's start, its end, its failure. */
#pragma once
#include <stdbool.h>

#include "base/err.h"

enum box_state {
	BOX_ST_CREATING,	/* the keeper builds the box: nobody is told */
	BOX_ST_POOLED,		/* waits in a pool for a create to take it */
	BOX_ST_RUNNING,		/* its guest runs */
	BOX_ST_LOST,		/* its guest ended: made again at the next call */
	BOX_ST_HIBERNATING,
	BOX_ST_HIBERNATED,	/* saved to disk; nothing of the box runs */
	BOX_ST_WAKING,
	BOX_ST_GOING_COLD,
	BOX_ST_COLD,		/* saved, compressed, in the store */
	BOX_ST_COUNT
};

/* The state's name ("running"); NULL for none. */
const char *box_state_name(enum box_state s);
/* A name back to its state; -EINVAL for a name that is none. */
int box_state_parse(const char *name, enum box_state *ret);
/* Whether the move from one state to the other is one the keeper makes
 * (staying where it is always is). */
bool box_state_legal(enum box_state from, enum box_state to);
/* *cur moved to `to`, or -EINVAL (and *cur as it was) for a move that is
 * not legal, e saying which. */
int box_state_move(enum box_state *cur, enum box_state to, struct err *e);
/* A step of the keeper's runs (hibernating, waking, going cold): the
 * keeper answers its clients once it is over. */
bool box_state_busy(enum box_state s);
/* The box is saved, nothing of it runs (hibernated or cold). */
bool box_state_saved(enum box_state s);
/* The same, by name (info's "state", the state file); false for none. */
bool box_state_name_busy(const char *name);
bool box_state_name_saved(const char *name);

/* The keeper's steps and their box events. */
enum box_step {
	BOX_STEP_HIBERNATE,
	BOX_STEP_WAKE,
	BOX_STEP_COLD,
	BOX_STEP_COUNT
};
enum box_step_event {
	BOX_EV_START,	/* "hibernating" */
	BOX_EV_DONE,	/* "hibernated" */
	BOX_EV_FAILED,	/* "hibernate_failed" */
};
/* The event's name ({"type":"box","event":NAME}). */
const char *box_step_event_name(enum box_step s, enum box_step_event ev);
/* Which step and event a box event's name is; -EINVAL for one that is
 * not a step's. */
int box_step_event_parse(const char *name, enum box_step *ret_step, enum box_step_event *ret_ev);
