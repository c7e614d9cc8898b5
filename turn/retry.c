#include "turn/retry.h"

bool retry_auth_refused(long status)
{
	return status == 401 || status == 403;
}

bool retry_should(const struct http_result *r)
{
	if (r->should_retry == 1)
		return true;
	if (r->should_retry == 0)
		return false;
	switch (r->fail) {
	case HTTP_CONNECT:
	case HTTP_IDLE:
	case HTTP_TIMEOUT:
	case HTTP_NET:
		return true;
	case HTTP_TOO_BIG:
	case HTTP_STOPPED:
		return false;
	case HTTP_OK:
		break;
	}
	long s = r->status;
	return s == 408 || s == 409 || s == 429 || s >= 500;
}

int64_t retry_delay_ms(unsigned attempt, const struct http_result *r, double jitter)
{
	if (r && r->retry_after_ms >= 0 && r->retry_after_ms <= RETRY_AFTER_MAX_MS)
		return r->retry_after_ms;
	int64_t d = RETRY_BASE_MS;
	for (unsigned i = 0; i < attempt && d < RETRY_CAP_MS; i++)
		d *= 2;
	if (d > RETRY_CAP_MS)
		d = RETRY_CAP_MS;
	if (jitter < 0)
		jitter = 0;
	if (jitter > 1)
		jitter = 1;
	return (int64_t)((double)d * (1.0 - 0.25 * jitter));
}
