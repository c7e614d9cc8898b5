#include "turn/price.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Prices per million tokens (USD), by model family: input, output, cache
 * read, cache write kept 5 minutes, and kept an hour (Anthropic: 0.1x,
 * 1.25x and 2x the input price; OpenAI's cached input at its own rate, no
 * write price). From the providers' price lists; tests/unit/test-price.c
 * pins one model of each family, so a change here is a decision. */
static const struct {
	const char *family;
	struct price p;
} prices[] = {
	{ "claude-opus-4", { 15, 75, 1.5, 18.75, 30 } },	/* 4 and 4.1 */
	{ "claude-opus-4-5", { 5, 25, 0.5, 6.25, 10 } },
	{ "claude-opus-4-6", { 5, 25, 0.5, 6.25, 10 } },
	{ "claude-opus-4-7", { 5, 25, 0.5, 6.25, 10 } },
	{ "claude-sonnet-4", { 3, 15, 0.3, 3.75, 6 } },		/* 4, 4.5 */
	{ "claude-3-7-sonnet", { 3, 15, 0.3, 3.75, 6 } },
	{ "claude-3-5-sonnet", { 3, 15, 0.3, 3.75, 6 } },
	{ "claude-3-5-haiku", { 0.8, 4, 0.08, 1, 1.6 } },
	{ "claude-haiku-4", { 1, 5, 0.1, 1.25, 2 } },		/* 4.5 */
	{ "gpt-5", { 1.25, 10, 0.125, 0, 0 } },
	{ "gpt-5-mini", { 0.25, 2, 0.025, 0, 0 } },
	{ "gpt-5-nano", { 0.05, 0.4, 0.005, 0, 0 } },
	{ "o3", { 2, 8, 0.5, 0, 0 } },
	{ "o3-mini", { 1.1, 4.4, 0.55, 0, 0 } },
	{ "o4-mini", { 1.1, 4.4, 0.275, 0, 0 } },
	{ "gpt-4o-mini", { 0.15, 0.6, 0.075, 0, 0 } },
	{ "gpt-4o", { 2.5, 10, 1.25, 0, 0 } },
	{ "gpt-4.1-mini", { 0.4, 1.6, 0.1, 0, 0 } },
	{ "gpt-4.1-nano", { 0.1, 0.4, 0.025, 0, 0 } },
	{ "gpt-4.1", { 2, 8, 0.5, 0, 0 } },
	{ "replay", { 0, 0, 0, 0, 0 } },
};

static struct {
	char *family;
	struct price p;
} user[PRICE_USER_MAX];
static size_t nuser;

/* The length of family when it names model's family, else 0: the name
 * goes on with a version or date after '-', or a tag after ':'
 * (replay:FILE, an Ollama model's llama3:8b). */
static size_t fits(const char *family, const char *model)
{
	size_t n = strlen(family);
	return !strncmp(model, family, n) && (model[n] == 0 || model[n] == '-' || model[n] == ':') ? n : 0;
}

int price_add(const char *family, const struct price *p)
{
	for (size_t i = 0; i < nuser; i++)
		if (!strcmp(user[i].family, family)) {
			user[i].p = *p;
			return 0;
		}
	if (nuser == PRICE_USER_MAX)
		return -ENOSPC;
	char *f = strdup(family);
	if (!f)
		return -ENOMEM;
	user[nuser].family = f;
	user[nuser++].p = *p;
	return 0;
}

bool price_for(const char *model, struct price *ret)
{
	if (!model)
		return false;
	size_t best = 0;
	for (size_t i = 0; i < nuser; i++) {
		size_t n = fits(user[i].family, model);
		if (n > best) {
			best = n;
			*ret = user[i].p;
		}
	}
	if (best)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(prices); i++) {
		size_t n = fits(prices[i].family, model);
		if (n > best) {
			best = n;
			*ret = prices[i].p;
		}
	}
	return best > 0;
}

double price_cost(const struct price *p, const struct usage *u)
{
	int64_t w1h = u->cache_write_1h < u->cache_write ? u->cache_write_1h : u->cache_write;
	return ((double)u->input * p->in + (double)u->output * p->out + (double)u->cache_read * p->cache_read +
		(double)(u->cache_write - w1h) * p->cache_write + (double)w1h * p->cache_write_1h) / 1e6;
}
