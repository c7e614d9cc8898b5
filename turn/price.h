/* What a model costs: USD per million tokens, by model family, where
 * known: ward's table (turn/price.c), and before it the prices the user's
 * config gives (price_add). */
#pragma once
#include <stdbool.h>

#include "turn/provider.h"

struct price {
	double in, out, cache_read, cache_write, cache_write_1h;
};
/* A model's prices: the family whose name is the longest prefix of model
 * that ends where the name does, at a '-' or at a ':' ("claude-opus-4-5" covers
 * claude-opus-4-5-20251101; "gpt-5" covers gpt-5-2025-08-07, not gpt-5.4,
 * which is unknown). The user's prices first. */
bool price_for(const char *model, struct price *ret);
double price_cost(const struct price *p, const struct usage *u);
#define PRICE_USER_MAX 32
/* The user's prices for a model family (its name as price_for matches
 * it), over ward's table: -ENOSPC past PRICE_USER_MAX, -ENOMEM. */
int price_add(const char *family, const struct price *p);
