/* The retry policy: which failures are retried, x-should-retry first,
 * a cut stream too, the delays and the default count. */
#include "turn/retry.h"
#include "tap.h"

static struct http_result res(enum http_fail f, long status)
{
	return (struct http_result){ .fail = f, .status = status, .retry_after_ms = -1, .should_retry = -1 };
}

int main(void)
{
	long yes[] = { 408, 409, 429, 500, 502, 503, 504, 529 };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		struct http_result r = res(HTTP_OK, yes[i]);
		ok(retry_should(&r), "%ld is retried", yes[i]);
	}
	long no[] = { 200, 400, 401, 403, 404, 413, 422 };
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		struct http_result r = res(HTTP_OK, no[i]);
		ok(!retry_should(&r), "%ld is not", no[i]);
	}
	struct http_result r = res(HTTP_CONNECT, 0);
	ok(retry_should(&r), "a connection error is retried");
	r = res(HTTP_NET, 200);
	ok(retry_should(&r), "a stream cut is retried (no call of its message has run)");
	r = res(HTTP_IDLE, 200);
	ok(retry_should(&r), "a stalled stream is retried");
	r = res(HTTP_TOO_BIG, 200);
	ok(!retry_should(&r), "a response past the size cap is not");
	r = res(HTTP_OK, 400);
	r.should_retry = 1;
	ok(retry_should(&r), "x-should-retry: true wins over a 400");
	r = res(HTTP_OK, 529);
	r.should_retry = 0;
	ok(!retry_should(&r), "x-should-retry: false wins over a 529");

	is_int(retry_delay_ms(0, NULL, 0), 500, "first retry: 0.5 s");
	is_int(retry_delay_ms(1, NULL, 0), 1000, "second: 1 s");
	is_int(retry_delay_ms(4, NULL, 0), 8000, "fifth: 8 s");
	is_int(retry_delay_ms(5, NULL, 0), 16000, "sixth: 16 s");
	is_int(retry_delay_ms(10, NULL, 0), 16000, "capped at 16 s");
	is_int(RETRY_MAX_DEFAULT, 10, "ten retries by default, as Claude Code");
	ok(retry_auth_refused(401) && retry_auth_refused(403) && !retry_auth_refused(429) && !retry_auth_refused(404),
	   "401 and 403 are a refused key; 429 and 404 are not");
	is_int(retry_delay_ms(0, NULL, 1), 375, "jitter takes up to a quarter off");
	r = res(HTTP_OK, 429);
	r.retry_after_ms = 2000;
	is_int(retry_delay_ms(0, &r, 0.5), 2000, "retry-after is honoured exactly");
	r.retry_after_ms = 120000;
	is_int(retry_delay_ms(1, &r, 0), 1000, "a retry-after past 60 s is not: back to the backoff");
	return tap_done();
}
