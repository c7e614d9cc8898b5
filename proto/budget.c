#include "proto/budget.h"

#include <errno.h>

struct budget budget_make(int64_t limit_ms, int64_t idle_ms, int64_t left_ms, int64_t grace_ms)
{
	struct budget b = {
		.limit_ms = limit_ms > 0 ? limit_ms : 1,
		.idle_ms = idle_ms > 0 ? idle_ms : 0,
		.grace_ms = grace_ms > 0 ? grace_ms : BUDGET_GRACE_MS,
		.margin_ms = BUDGET_MARGIN_MS,
	};
	if (left_ms >= 0 && left_ms < b.limit_ms)
		b.limit_ms = left_ms > 0 ? left_ms : 1;
	return b;
}

int64_t budget_timeout_grace(const struct budget *b)
{
	int64_t g = b->limit_ms / 4;
	if (g > BUDGET_TIMEOUT_GRACE_MAX_MS)
		g = BUDGET_TIMEOUT_GRACE_MAX_MS;
	if (g > b->grace_ms)
		g = b->grace_ms;
	return g;
}

int64_t budget_deadline(const struct budget *b, enum budget_layer layer, int64_t start_ms, int64_t cancel_ms)
{
	int64_t d = start_ms + b->limit_ms + budget_timeout_grace(b);
	if (cancel_ms > 0 && cancel_ms + b->grace_ms < d)
		d = cancel_ms + b->grace_ms;
	return d + (int64_t)layer * b->margin_ms;
}

int64_t budget_cancelled_by(int64_t grace_ms, enum budget_layer layer, int64_t cancel_ms)
{
	return cancel_ms + (grace_ms > 0 ? grace_ms : BUDGET_GRACE_MS) + (int64_t)layer * BUDGET_MARGIN_MS;
}

cJSON *budget_to_json(const struct budget *b)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "limit_ms", (double)b->limit_ms);
	cJSON_AddNumberToObject(j, "idle_ms", (double)b->idle_ms);
	cJSON_AddNumberToObject(j, "grace_ms", (double)b->grace_ms);
	cJSON_AddNumberToObject(j, "margin_ms", (double)b->margin_ms);
	return j;
}

static int budget_field(const cJSON *j, const char *name, int64_t min, int64_t max, int64_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
	if (!cJSON_IsNumber(v) || v->valuedouble < (double)min || v->valuedouble > (double)max)
		return -EINVAL;
	*ret = (int64_t)v->valuedouble;
	return 0;
}

int budget_from_json(const cJSON *j, struct budget *ret)
{
	/* A grace of a day is far past any ward sets; beyond it is a bug. */
	const int64_t day = 24LL * 3600 * 1000;
	struct budget b;
	if (budget_field(j, "limit_ms", 1, BUDGET_LIMIT_MAX_MS, &b.limit_ms) < 0 ||
	    budget_field(j, "idle_ms", 0, BUDGET_LIMIT_MAX_MS, &b.idle_ms) < 0 ||
	    budget_field(j, "grace_ms", 0, day, &b.grace_ms) < 0 ||
	    budget_field(j, "margin_ms", 0, 60000, &b.margin_ms) < 0)
		return -EINVAL;
	*ret = b;
	return 0;
}
