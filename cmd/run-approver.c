#include "cmd/run-approver.h"
#include "task/hook.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>


int run_approver_ask(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap)
{
	const struct run_approver *ap = ud;
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "tool", tool);
	cJSON_AddItemToObject(j, "input", cJSON_Duplicate(input, 1));
	_cleanup_free_ char *s = jsonprint_text(j);
	cJSON_Delete(j);
	_cleanup_free_ struct hook_run *hr = calloc(1, sizeof(*hr));
	if (!s || !hr) {
		snprintf(reason, cap, "the approver could not be started: out of memory");
		return 'n';
	}
	/* The one way ward runs a program of the user's (task/hook.c): its own
	 * process group, killed whole when it answers or runs out of time. */
	int r = hook_exec(ap->cmd, s, tool, HOOK_TIMEOUT_MS_DEFAULT, *ap->deadline_ms, hr);
	if (r < 0) {
		snprintf(reason, cap, "the approver could not be started: %s", strerror(-r));
		return 'n';
	}
	if (hr->interrupted) {
		snprintf(reason, cap, "ward was asked to stop while the approver ran");
		return 'n';
	}
	if (hr->timed_out) {
		if (hr->by_deadline)
			snprintf(reason, cap, "the approver did not answer before the run's deadline");
		else
			snprintf(reason, cap, "the approver did not answer within %d s", HOOK_TIMEOUT_MS_DEFAULT / 1000);
		return 'n';
	}
	hr->out[strcspn(hr->out, "\n")] = 0;
	_cleanup_free_ char *safe = utf8_dup(hr->out, strlen(hr->out));
	snprintf(reason, cap, "%s", safe ? safe : "");
	if (WIFEXITED(hr->status) && WEXITSTATUS(hr->status) == 0)
		return 'y';
	if (WIFEXITED(hr->status) && WEXITSTATUS(hr->status) == 2)
		return 'q';
	return 'n';
}
