/* Token usage, as every provider reports it to the turn loop, and the
 * one way it is summed, rated and written out.
 *
 * input is the prompt's tokens that were neither read from nor written to
 * the cache (Anthropic's input_tokens; an OpenAI server's prompt_tokens
 * less its cached_tokens), so the whole prompt of a request is
 * input + cache_read + cache_write. cache_write_1h is the part of
 * cache_write kept for an hour (priced higher). */
#pragma once
#include <stdint.h>

#include <cjson/cJSON.h>

struct usage {
	int64_t input, output, cache_read, cache_write, cache_write_1h;
};

void usage_add(struct usage *sum, const struct usage *u);
/* d = a - b, field by field (what was added to b to make a). */
void usage_sub(struct usage *d, const struct usage *a, const struct usage *b);
/* A journal's "usage" record of one request ({input_tokens, output_tokens,
 * cache_read_tokens, cache_write_tokens, cache_write_1h_tokens}) added to
 * sum. */
void usage_add_record(struct usage *sum, const cJSON *rec);
/* Every prompt token of the requests counted: input + cache reads and writes. */
int64_t usage_prompt(const struct usage *u);
/* The share of prompt tokens read from the cache, 0..1 (0 with none). */
double usage_hit_rate(const struct usage *u);
/* {input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
 * cache_hit_rate} added to o as "usage". */
cJSON *usage_json(cJSON *o, const struct usage *u);
