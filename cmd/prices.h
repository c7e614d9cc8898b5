/* The user's config's "prices": USD per million tokens for model families
 * ward's table lacks (or prices it has wrong), given to turn/price.h. */
#pragma once
#include <cjson/cJSON.h>

/* {"FAMILY": {"input": N, "output": N, "cache_read"?: N, "cache_write"?:
 * N, "cache_write_1h"?: N}, ...}; where names the file for the message.
 * 0, or -1 after one line saying what is wrong. */
int prices_load(const cJSON *conf, const char *where);
