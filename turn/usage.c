#include "turn/usage.h"

#include <math.h>

void usage_add(struct usage *sum, const struct usage *u)
{
	sum->input += u->input;
	sum->output += u->output;
	sum->cache_read += u->cache_read;
	sum->cache_write += u->cache_write;
	sum->cache_write_1h += u->cache_write_1h;
}

int64_t usage_prompt(const struct usage *u)
{
	return u->input + u->cache_read + u->cache_write;
}

double usage_hit_rate(const struct usage *u)
{
	int64_t all = usage_prompt(u);
	return all > 0 ? (double)u->cache_read / (double)all : 0;
}

cJSON *usage_json(cJSON *o, const struct usage *u)
{
	cJSON *j = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(j, "input_tokens", (double)u->input);
	cJSON_AddNumberToObject(j, "output_tokens", (double)u->output);
	cJSON_AddNumberToObject(j, "cache_read_tokens", (double)u->cache_read);
	cJSON_AddNumberToObject(j, "cache_write_tokens", (double)u->cache_write);
	/* Three decimals: 0.873, not 0.87301587301587302. */
	cJSON_AddNumberToObject(j, "cache_hit_rate", round(usage_hit_rate(u) * 1000) / 1000);
	return j;
}
