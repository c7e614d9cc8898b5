#include "turn/price.h"
#include "base/cleanup.h"

#include <string.h>

/* Prices per million tokens (USD), by model name prefix: input, output,
 * cache read, cache write kept 5 minutes, and kept an hour (Anthropic:
 * 0.1x, 1.25x and 2x the input price). */
static const struct {
	const char *prefix;
	struct price p;
} prices[] = {
	{ "claude-opus-4", { 15, 75, 1.5, 18.75, 30 } },
	{ "claude-sonnet-4", { 3, 15, 0.3, 3.75, 6 } },
	{ "claude-3-7-sonnet", { 3, 15, 0.3, 3.75, 6 } },
	{ "claude-3-5-sonnet", { 3, 15, 0.3, 3.75, 6 } },
	{ "claude-3-5-haiku", { 0.8, 4, 0.08, 1, 1.6 } },
	{ "claude-haiku-4", { 1, 5, 0.1, 1.25, 2 } },
	{ "gpt-4o-mini", { 0.15, 0.6, 0.075, 0, 0 } },
	{ "gpt-4o", { 2.5, 10, 1.25, 0, 0 } },
	{ "gpt-4.1-mini", { 0.4, 1.6, 0.1, 0, 0 } },
	{ "gpt-4.1", { 2, 8, 0.5, 0, 0 } },
	{ "replay", { 0, 0, 0, 0, 0 } },
};

bool price_for(const char *model, struct price *ret)
{
	if (!model)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(prices); i++)
		if (!strncmp(model, prices[i].prefix, strlen(prices[i].prefix))) {
			*ret = prices[i].p;
			return true;
		}
	return false;
}

double price_cost(const struct price *p, const struct usage *u)
{
	int64_t w1h = u->cache_write_1h < u->cache_write ? u->cache_write_1h : u->cache_write;
	return ((double)u->input * p->in + (double)u->output * p->out + (double)u->cache_read * p->cache_read +
		(double)(u->cache_write - w1h) * p->cache_write + (double)w1h * p->cache_write_1h) / 1e6;
}
