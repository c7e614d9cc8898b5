/* Compaction: a conversation near its model's context window keeps its
 * first message and its most recent rounds verbatim and has its middle
 * replaced by a summary the model writes in a separate, tool-less request.
 * This is where to cut, what that request carries, the splice, and what a
 * context-length error looks like; the turn loop runs it (turn-compact.c)
 * and the journal replays it (journal.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"

/* --compact-at: the share of the context window (percent) the last
 * request's whole prompt may reach before the next round compacts. */
#define COMPACT_AT_DEFAULT 80
/* Recent rounds kept verbatim, at most (fewer when they are big). */
#define COMPACT_KEEP_ROUNDS 6
/* The summary's own max_tokens. */
#define COMPACT_SUMMARY_MAX_TOKENS 4096

enum compact_reason {
	COMPACT_THRESHOLD,	/* the last prompt passed --compact-at */
	COMPACT_CONTEXT,	/* the API said the prompt is too long */
	COMPACT_MANUAL,		/* /compact */
};
const char *compact_reason_name(enum compact_reason r);

/* The system prompt of the summary request. */
extern const char compact_instruction[];

struct compact_split {
	int from, to;		/* messages [from, to) are replaced */
	int rounds_replaced;	/* assistant messages among them */
	int rounds_kept;	/* assistant messages after them */
};

struct compact_opts {
	int keep_rounds;	/* recent rounds kept, at most; 0: COMPACT_KEEP_ROUNDS */
	size_t tail_bytes;	/* and past the last round, no more bytes than this; 0: no limit */
};

/* Where to cut: the first message (a person's) stays, and the most recent
 * rounds (at least the last) stay, beginning at a message that is not a
 * tool_result, so that no tool_use is ever parted from its tool_result.
 * -EAGAIN with e saying so when there are too few rounds to replace any. */
int compact_split(const cJSON *messages, const struct compact_opts *o, struct compact_split *ret, struct err *e);

/* The summary request's messages: one user message holding the first
 * message and the replaced ones as a transcript, at most max_bytes (long
 * blocks are cut in their middle, then the oldest lines go; each cut is
 * marked). */
cJSON *compact_summary_request(const cJSON *messages, const struct compact_split *sp, size_t max_bytes);
/* The text blocks of the model's reply, joined; NULL when it has none. */
char *compact_reply_text(const cJSON *content);
/* The user message that stands for the replaced ones. */
cJSON *compact_summary_message(const char *summary, const struct compact_split *sp);
/* Replace messages [from, to) with summary (taken). ret_replaced (or NULL)
 * gets them, as an array. -EINVAL when the split does not fit messages. */
int compact_splice(cJSON *messages, const struct compact_split *sp, cJSON *summary, cJSON **ret_replaced);

/* Whether an API's error answer says the prompt is more than the model's
 * context window (Anthropic's and OpenAI's wording). */
bool compact_context_error(long status, const char *body, size_t n);
