/* How a tool call ended, as the CALL reply and the model are told it. */
#pragma once

enum outcome {
	OUTCOME_OK,
	OUTCOME_FAILED,
	OUTCOME_REFUSED,
	OUTCOME_BAD_INPUT,
	OUTCOME_TIMED_OUT,
	OUTCOME_CANCELLED,
	OUTCOME_UNKNOWN,
};
const char *outcome_name(enum outcome o);
int outcome_from_name(const char *s, enum outcome *ret);
