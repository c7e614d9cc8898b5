/* A call's time budget. Made once, by the host's client (budget_make), from
 * the tool's own limit, what the task has left and the box's grace; carried
 * in the CALL frame; every layer derives its deadline from it and from when
 * it saw the call start and (if at all) be cancelled:
 *
 *   guest   stops the call at start + limit: SIGTERM, then SIGKILL after
 *           the time-out grace; on a cancel, SIGKILL after the grace;
 *   keeper  destroys the box one margin after the guest's last moment;
 *   client  kills the keeper one margin after the keeper's.
 *
 * So the layers agree on the outcome: the innermost that can answer does,
 * and each outer one waits exactly long enough for the one inside. */
#pragma once
#include <stdint.h>

#include <cjson/cJSON.h>

/* Defaults, pinned in tests/unit/test-defaults.c. */
#define BUDGET_GRACE_MS 2000		/* SIGTERM -> SIGKILL on a cancel */
#define BUDGET_TIMEOUT_GRACE_MAX_MS 500	/* the same after a time-out, at most */
#define BUDGET_MARGIN_MS 1000		/* each outer layer waits this much longer */
/* The longest limit a CALL frame may carry: a long-lived call (an MCP
 * server on a stdin call) runs for days. Deadlines are int64 ms of a
 * monotonic clock, so this is far from any overflow. */
#define BUDGET_LIMIT_MAX_MS (366LL * 24 * 3600 * 1000)

struct budget {
	int64_t limit_ms;	/* the call's wall-clock limit, >= 1 */
	int64_t idle_ms;	/* no output for this long ends it; 0: none */
	int64_t grace_ms;	/* SIGTERM -> SIGKILL on a cancel (the box's --grace) */
	int64_t margin_ms;	/* between one layer's deadline and the next one out */
};

enum budget_layer { BUDGET_GUEST, BUDGET_KEEPER, BUDGET_CLIENT };

/* limit_ms: the tool's own (bash: its timeout argument or the default;
 * file tools: their fixed limit); left_ms: what the task has left (<0:
 * no clamp), which wins when shorter; grace_ms <= 0: the default. */
struct budget budget_make(int64_t limit_ms, int64_t idle_ms, int64_t left_ms, int64_t grace_ms);
/* The grace after a time-out: a quarter of the limit, at most
 * BUDGET_TIMEOUT_GRACE_MAX_MS, never more than the cancel grace. */
int64_t budget_timeout_grace(const struct budget *b);
/* When a layer gives up on the call: from its start (and its cancel, 0 if
 * none). The guest's is when it sends SIGKILL. */
int64_t budget_deadline(const struct budget *b, enum budget_layer layer, int64_t start_ms, int64_t cancel_ms);
/* When a call cancelled at cancel_ms is over at a layer, whatever its
 * limit, in a box whose grace is grace_ms (<= 0: the default). */
int64_t budget_cancelled_by(int64_t grace_ms, enum budget_layer layer, int64_t cancel_ms);
/* As the CALL frame carries it: {"limit_ms","idle_ms","grace_ms","margin_ms"}. */
cJSON *budget_to_json(const struct budget *b);
/* -EINVAL when a field is missing or out of range (limit_ms and idle_ms:
 * 1 ms to BUDGET_LIMIT_MAX_MS and 0 to the same; grace_ms: up to a day). */
int budget_from_json(const cJSON *j, struct budget *ret);
