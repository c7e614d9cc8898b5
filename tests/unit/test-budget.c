/* A call's time budget: made once, and every layer's deadline derived from
 * it, each outer one a margin after the one inside. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto/budget.h"
#include "tap.h"

int main(void)
{
	struct budget b = budget_make(120000, 0, -1, 10000);
	is_int(b.limit_ms, 120000, "the tool's own limit without a clamp");
	is_int(b.grace_ms, 10000, "the box's grace");
	is_int(budget_timeout_grace(&b), 500, "a time-out's grace: at most 0.5 s");
	is_int(budget_make(120000, 0, 3000, 0).limit_ms, 3000, "what the task has left wins when shorter");
	is_int(budget_make(3000, 0, 120000, 0).limit_ms, 3000, "and not when longer");
	is_int(budget_make(3000, 0, 0, 0).limit_ms, 1, "nothing left: the shortest limit, not none");
	is_int(budget_make(1000, 0, -1, 0).grace_ms, BUDGET_GRACE_MS, "no grace given: the default");
	is_int(budget_timeout_grace(&(struct budget){ .limit_ms = 400, .grace_ms = 2000 }), 100,
	       "a short limit's time-out grace is a quarter of it");
	is_int(budget_timeout_grace(&(struct budget){ .limit_ms = 60000, .grace_ms = 200 }), 200,
	       "never more than the cancel grace");

	/* Start at 1000, limit 120 s, grace 10 s, margin 1 s. */
	int64_t g = budget_deadline(&b, BUDGET_GUEST, 1000, 0);
	int64_t k = budget_deadline(&b, BUDGET_KEEPER, 1000, 0);
	int64_t c = budget_deadline(&b, BUDGET_CLIENT, 1000, 0);
	is_int(g, 1000 + 120000 + 500, "guest: SIGKILL at limit + time-out grace");
	is_int(k - g, 1000, "keeper: one margin after the guest");
	is_int(c - k, 1000, "client: one margin after the keeper");
	/* Cancelled at 5000: the grace (10 s) decides, for every layer. */
	is_int(budget_deadline(&b, BUDGET_GUEST, 1000, 5000), 15000, "cancel: the guest kills at cancel + grace");
	is_int(budget_deadline(&b, BUDGET_CLIENT, 1000, 5000), 17000,
	       "cancel: the client waits grace + two margins, not a fixed few seconds");
	is_int(budget_cancelled_by(10000, BUDGET_CLIENT, 5000), budget_deadline(&b, BUDGET_CLIENT, 1000, 5000),
	       "a call cancelled at 5000 is over for the client when its budget says, whatever its limit");
	is_int(budget_cancelled_by(0, BUDGET_KEEPER, 5000), 5000 + BUDGET_GRACE_MS + BUDGET_MARGIN_MS,
	       "with no grace given: the default grace, one margin for the keeper");
	/* A cancel after the time-out's kill: the earlier moment stands. */
	is_int(budget_deadline(&b, BUDGET_GUEST, 1000, 200000), g, "a late cancel does not extend the budget");

	cJSON *j = budget_to_json(&b);
	struct budget r;
	is_int(budget_from_json(j, &r), 0, "the CALL frame's budget parses back");
	ok(r.limit_ms == b.limit_ms && r.grace_ms == b.grace_ms && r.margin_ms == b.margin_ms &&
	   r.idle_ms == b.idle_ms, "whole");
	cJSON_ReplaceItemInObject(j, "limit_ms", cJSON_CreateNumber(0));
	is_int(budget_from_json(j, &r), -EINVAL, "a zero limit is refused");
	cJSON_DeleteItemFromObject(j, "limit_ms");
	is_int(budget_from_json(j, &r), -EINVAL, "a missing field is refused");
	is_int(budget_from_json(NULL, &r), -EINVAL, "no budget at all is refused");

	/* A long-lived call (stdin, an MCP server): days, in int64 ms. */
	const int64_t week = 7LL * 24 * 3600 * 1000, month = 30LL * 24 * 3600 * 1000;
	struct budget lb = budget_make(month, 0, -1, 0);
	cJSON *lj = budget_to_json(&lb);
	ok(budget_from_json(lj, &r) == 0 && r.limit_ms == month && r.idle_ms == 0, "a 30-day limit parses back");
	cJSON_Delete(lj);
	lb = budget_make(week, 0, -1, 0);
	int64_t t = 5LL * 24 * 3600 * 1000;	/* a monotonic clock days after boot */
	is_int(budget_deadline(&lb, BUDGET_CLIENT, t, 0), t + week + 500 + 2 * BUDGET_MARGIN_MS,
	       "a 7-day limit's client deadline, no overflow");
	is_int(budget_deadline(&lb, BUDGET_GUEST, t, t + 1000), t + 1000 + BUDGET_GRACE_MS,
	       "and a cancel still ends it one grace later");
	lb.limit_ms = BUDGET_LIMIT_MAX_MS + 1;
	lj = budget_to_json(&lb);
	is_int(budget_from_json(lj, &r), -EINVAL, "past the maximum limit is refused");
	cJSON_Delete(lj);
	cJSON_Delete(j);
	return tap_done();
}
