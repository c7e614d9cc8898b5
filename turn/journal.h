/* The session journal: one JSON object per line, 0600 in a 0700 directory
 * ($XDG_STATE_HOME/ward/sessions). Records:
 *   {"type":"header","session","created","provider","model","workspace","box","box_labels"?,"image"?,
 *    "image_untrusted"?}
 *   {"type":"instructions","files":[{"path","sha256","bytes","cut"?}],"cut"?}
 *                          the project instruction files in the system prompt
 *                          (each time the session starts or resumes)
 *   {"type":"message","role","content"[,"partial":true]}
 *   {"type":"intent","call_id","key","tool","input"}   written before dispatch
 *   {"type":"gate","call_id","tool","decision","why"}
 *   {"type":"result","call_id","outcome","text",...}   written after
 *   {"type":"net","host","port","method","allowed","why","addr","up","down","ms"}
 *                          a connection of the box's egress proxy
 *   {"type":"hook","event","command","exit","elapsed_ms","decision","why"?}
 *                          one run of a user's hook (exit null when it was
 *                          killed or did not start; decision continue, block,
 *                          approve, error or timeout)
 *   {"type":"stop","reason","why","rounds","calls","usage"}
 *   {"type":"clear"}        the conversation starts again (the box does not)
 *   {"type":"compaction","reason","why","from","to","prompt_tokens","context_window",
 *    "summary","replaced"}
 *                          messages [from, to) of the conversation as it stood
 *                          were replaced by the summary (a user message);
 *                          "replaced" keeps them; reason is threshold,
 *                          context_length or manual
 *   {"type":"checkpoint","message","at","files","copied","bytes_copied","ms",
 *    "layer"?,"error"?}
 *                          written before the person's message N (from 1, in
 *                          the order of the journal): the workspace layer as it
 *                          was then (workspace/checkpoint.h); layer false: the
 *                          session keeps none (--rw, --box, no workspace);
 *                          error: none could be taken
 *   {"type":"rewind","to","files","ms","workspace"}
 *                          back to before message N: every record from
 *                          checkpoint N's to this one is left out when the
 *                          conversation is rebuilt, and the next message is N
 * Every record after the header carries the header's "box_labels" too
 * (a box's labels, for audit and cost: a record can be counted by label
 * without its header).
 * Each record is one write(2) of a whole line, so a killed ward leaves at
 * most its last line cut; the loader skips a cut last line. */
#pragma once
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "turn/usage.h"

#include "base/err.h"

struct journal {
	int fd;
	char id[64];
	char path[4096];
	char *labels;	/* the header's box_labels, printed; NULL none */
};

/* A new session: its id is made here. header is completed with
 * "type", "session" and "created"; its "box_labels" go on every record. */
int journal_create(struct journal *j, cJSON *header, struct err *e);
/* An existing session, for appending (its header's "box_labels" go on
 * every record); -EBUSY when another ward has it
 * open (each holds its journal locked, flock, while it runs). */
int journal_open(struct journal *j, const char *id, struct err *e);
/* What is written is on the disk (each round's end). */
void journal_sync(struct journal *j);
void journal_close(struct journal *j);
/* Append one record (its "type" set to type). */
int journal_write(struct journal *j, const char *type, cJSON *rec);

/* What a journal holds, for --resume: the header, the conversation, and
 * the results recorded for calls (an intent without one was cut off); and
 * how it last stopped, for a listing. */
struct journal_state {
	cJSON *header;
	cJSON *messages;	/* array, ready to send */
	cJSON *results;		/* object: call_id -> result record */
	/* Subagents (the task tool): call_id -> {agent, description?,
	 * session?, stop?, why?}, from the agent_start and agent_end
	 * records; and, in a subagent's own journal, its agent record
	 * ({agent, parent, parent_session?}; NULL in any other). */
	cJSON *agents;
	cJSON *agent;
	char stop[32];		/* the last stop record's reason; "" if none */
	int compactions;	/* compaction records */
	/* The person's messages in the conversation, in order, from their
	 * checkpoint records (those no rewind took back): [{message, at,
	 * text, layer?, error?}] (text: the message's first 200 bytes; ""
	 * when none came; layer and error as the record has them).
	 * The next message is number cJSON_GetArraySize + 1. */
	cJSON *checkpoints;
	/* What the session's runs spent, all of them (rewound records too:
	 * they were spent): its usage records summed, the cost (<0 when a
	 * request's was unknown), the rounds (its whole assistant messages),
	 * the calls (intents) and the refusals (gate records not allowed). */
	struct usage usage;
	double cost;
	int rounds, calls, refused;
	/* The jobs a box's hibernate ended that the model was told of (its
	 * job_told records, those no rewind took back): ["ID@HIBERNATED_AT"],
	 * the stamp as the keeper gave it (keeper-int.h). */
	cJSON *jobs_told;
};
int journal_load(const char *id, struct journal_state *st, struct err *e);
/* A job a hibernate ended, as jobs_told holds it: from {id | job.id,
 * hibernated_at} (an end event, a box info's entry, a job_told record);
 * -EINVAL when it has no stamp. */
int journal_job_key(const cJSON *o, char *out, size_t n);
void journal_state_free(struct journal_state *st);
/* The sessions directory. */
int journal_dir(char *out, size_t n, struct err *e);
