/* The user's config's "prices": USD per million tokens for model families
 * ward's table lacks (or prices it has wrong), given to turn/price.h. */
#pragma once
#include <cjson/cJSON.h>

#include "base/err.h"

/* {"FAMILY": {"input": N, "output": N, "cache_read"?: N, "cache_write"?:
 * N, "cache_write_1h"?: N}, ...}; where names the file for the message
 * ("FILE:LINE:COL: ", put before it). 0, or -EINVAL (-ENOSPC: too many
 * families) with one line in e saying what is wrong. */
int prices_load(const cJSON *conf, const char *where, struct err *e);
