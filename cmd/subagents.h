/* The task tool (turn/agent.h) for a front end that runs turns of a
 * session (the terminal session, ward acp): a turn's agents over the
 * session's box, with the flags the session was given passed on to each
 * child as ward run passes its own (cmd/run.c), and the session's ledger,
 * kept over its turns. ward run makes its own (it has flags of its own to
 * pass). */
#pragma once
#include <stddef.h>

#include "cmd/run-flags.h"
#include "turn/agent.h"
#include "turn/ledger.h"

#define SUBAGENTS_ARGV 64

struct subagents {
	struct ledger led;	/* fd -1: none yet */
	const char *argv[SUBAGENTS_ARGV];
	size_t nargv;
};

void subagents_init(struct subagents *sa);
void subagents_free(struct subagents *sa);
/* A turn's agents, set in cfg (its agents and the session's ledger), over
 * box (ws: the workspace under its layer; NULL: none); session: the
 * session's id, which each child's journal names. NULL where none is
 * offered (--rw, no box, no ward to start). Freed by agents_free after
 * the turn. */
struct agents *subagents_begin(struct subagents *sa, const struct run_flags *f, struct turn_cfg *cfg, const char *box,
			       const char *ws, const char *session);
