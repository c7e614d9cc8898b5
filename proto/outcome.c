#include "proto/outcome.h"

#include <errno.h>
#include <string.h>

static const char *const outcome_names[] = {
	[OUTCOME_OK] = "ok",
	[OUTCOME_FAILED] = "failed",
	[OUTCOME_REFUSED] = "refused",
	[OUTCOME_BAD_INPUT] = "bad_input",
	[OUTCOME_TIMED_OUT] = "timed_out",
	[OUTCOME_CANCELLED] = "cancelled",
	[OUTCOME_UNKNOWN] = "unknown",
};

const char *outcome_name(enum outcome o)
{
	return (unsigned)o < sizeof(outcome_names) / sizeof(outcome_names[0]) ? outcome_names[o] : "unknown";
}

int outcome_from_name(const char *s, enum outcome *ret)
{
	for (unsigned i = 0; i < sizeof(outcome_names) / sizeof(outcome_names[0]); i++)
		if (s && !strcmp(s, outcome_names[i])) {
			*ret = (enum outcome)i;
			return 0;
		}
	return -EINVAL;
}
