/* When and how long to wait before trying a request again, as the official
 * SDKs do it: connection errors, 408, 409, 429, 5xx (529 included); two
 * retries by default; 0.5 s doubling to 8 s with up to 25 % jitter taken
 * off; retry-after-ms / retry-after up to 60 s honoured; x-should-retry
 * wins over everything. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"

#define RETRY_MAX_DEFAULT 2
#define RETRY_BASE_MS 500
#define RETRY_CAP_MS 8000
#define RETRY_AFTER_MAX_MS 60000

/* May this attempt be retried? Never once output from it was shown. */
bool retry_should(const struct http_result *r, bool output_shown);
/* Delay before retry number `attempt` (0 for the first retry); jitter in
 * [0,1) comes from the caller. */
int64_t retry_delay_ms(unsigned attempt, const struct http_result *r, double jitter);
