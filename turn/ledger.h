/* The task's spend, shared by a parent run and its subagents (each a
 * ward run of its own): one page of shared memory (a memfd the children
 * inherit) holding the totals the budgets are checked against. Every
 * turn adds what it spends as it comes; every check before a round or a
 * call reads the whole task's, so --max-tokens, --max-calls and
 * --max-cost are totals over parent and children running in parallel. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct ledger_page;

struct ledger {
	struct ledger_page *p;
	int fd;			/* the memfd, passed to children; -1: none */
	bool shared;		/* with other agents (a subagent's, or a parent that started one): its requests reserve */
	/* What this process holds reserved for its request in flight. */
	int64_t held_tokens, held_micro;
};

/* A new, empty ledger. */
int ledger_new(struct ledger *ret, struct err *e);
/* The ledger a parent passed as fd (a child's --agent-ledger). */
int ledger_attach(int fd, struct ledger *ret, struct err *e);
void ledger_free(struct ledger *l);
/* Add spend: tokens (input + output), tool calls, cost in USD (<0: not
 * priced, nothing added). */
void ledger_add(struct ledger *l, int64_t tokens, int64_t calls, double cost);
/* Count one tool call if fewer than max (0: no cap) were made over the
 * task: taken at once, so two agents that check together cannot both take
 * the last one. false: the cap is reached, nothing counted. */
bool ledger_take_call(struct ledger *l, int64_t max);
/* Before a subagent's request: hold room for it, estimated as the
 * largest reply of the task so far (tokens and cost), so that agents
 * asking at once cannot together pass a budget that each alone would
 * not. false: the total with what is held would pass max_tokens or
 * max_cost (0: none), nothing held. A process holds one reservation at a
 * time; ledger_add settles it. */
bool ledger_reserve(struct ledger *l, int64_t max_tokens, double max_cost);
/* The largest reply of the task so far (tokens, cost in USD): what the
 * next request is estimated to cost. */
void ledger_largest(const struct ledger *l, int64_t *ret_tokens, double *ret_cost);
/* Let go of what is held (the request ended without usage). */
void ledger_release(struct ledger *l);
int64_t ledger_tokens(const struct ledger *l);
int64_t ledger_calls(const struct ledger *l);
double ledger_cost(const struct ledger *l);
