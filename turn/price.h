/* What a model costs: USD per million tokens, by model name, where known. */
#pragma once
#include <stdbool.h>

#include "turn/provider.h"

struct price {
	double in, out, cache_read, cache_write, cache_write_1h;
};
bool price_for(const char *model, struct price *ret);
double price_cost(const struct price *p, const struct usage *u);
