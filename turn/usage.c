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

void usage_sub(struct usage *d, const struct usage *a, const struct usage *b)
{
	d->input = a->input - b->input;
	d->output = a->output - b->output;
	d->cache_read = a->cache_read - b->cache_read;
	d->cache_write = a->cache_write - b->cache_write;
	d->cache_write_1h = a->cache_write_1h - b->cache_write_1h;
}

static int64_t field(const cJSON *rec, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, name);
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (int64_t)v->valuedouble : 0;
}

void usage_add_record(struct usage *sum, const cJSON *rec)
{
	struct usage u = { field(rec, "input_tokens"), field(rec, "output_tokens"), field(rec, "cache_read_tokens"),
			   field(rec, "cache_write_tokens"), field(rec, "cache_write_1h_tokens") };
	usage_add(sum, &u);
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
