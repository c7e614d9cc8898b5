/* When and how long to wait before trying a request again, as the official
 * SDKs do it: connection errors, 408, 409, 429, 5xx (529 included), a
 * stream cut or stalled before its message ended; 0.5 s doubling to 16 s
 * with up to 25 % jitter taken off; retry-after-ms / retry-after up to 60 s
 * honoured; x-should-retry wins over everything. How many: --retries N;
 * by default RETRY_MAX_DEFAULT (Claude Code's 10, about a minute and a
 * half of trying), or with a deadline as many as it leaves room for. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"

#define RETRY_MAX_DEFAULT 10
#define RETRY_BASE_MS 500
#define RETRY_CAP_MS 16000
#define RETRY_AFTER_MAX_MS 60000

/* May this attempt be retried? A stream cut after some of its text is:
 * no call of a message runs before the whole message is in (turn/turn.c
 * shows none of its text twice). */
bool retry_should(const struct http_result *r);
/* Delay before retry number `attempt` (0 for the first retry); jitter in
 * [0,1) comes from the caller. */
int64_t retry_delay_ms(unsigned attempt, const struct http_result *r, double jitter);
/* Is a key refused (401, 403)? Its own stop (TURN_AUTH_ERROR): a retry
 * ends the same way. */
bool retry_auth_refused(long status);
