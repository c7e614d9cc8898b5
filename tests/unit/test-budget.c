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
	cJSON_Delete(j);
	return tap_done();
}
