/* /jobs: the box's background jobs (tools/job.h), and /jobs kill N. The
 * person's view of what the model started; Esc cancels a call, never a
 * job, so this is how a person ends one. */
#include "cmd/tui.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "sandbox/box.h"

#include <stdlib.h>
#include <string.h>

/* The job tools' own text, which the box wrote: each line term-safe. */
static void jobs_print(struct tui *u, const char *text)
{
	while (text && *text) {
		size_t n = strcspn(text, "\n");
		_cleanup_free_ char *l = tui_short_n(text, n, 400);
		tui_putf(u, "%s\n", l ? l : "");
		text += n + (text[n] == '\n');
	}
}

/* The jobs the box's last hibernate ended (its guest, and their list, went
 * with it): from the box's info. */
static void jobs_hibernated(struct tui *u)
{
	cJSON *info = NULL;
	struct err e = { 0 };
	if (box_info(u->s.box, &info, &e) < 0)
		return;
	const cJSON *j;
	cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(info, "jobs_ended_by_hibernate")) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
		const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "command"));
		const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "how"));
		_cleanup_free_ char *c = tui_short(cmd ? cmd : "", 200), *h = tui_short(how ? how : "ended", 300);
		tui_putf(u, "job %d (before the box's hibernate): %s\n  $ %s\n", cJSON_IsNumber(id) ? id->valueint : 0,
			 h ? h : "", c ? c : "");
	}
	cJSON_Delete(info);
}

void tui_jobs(struct tui *u, const char *arg, const char *more)
{
	if (!u->s.box) {
		tui_put(u, "No box now, so no jobs; the next message makes one.\n");
		return;
	}
	cJSON *args = cJSON_CreateObject();
	const char *tool = "job_list";
	uint64_t id = 0;
	if (!strcmp(arg, "kill")) {
		if (!more || parse_u64(more, &id) < 0 || !id || id > 1000000) {
			tui_put(u, "/jobs kill takes a job's number: /jobs kill 2 (/jobs lists them).\n");
			cJSON_Delete(args);
			return;
		}
		tool = "job_kill";
		cJSON_AddNumberToObject(args, "id", (double)id);
	} else if (*arg) {
		tui_put(u, "/jobs takes kill N, or nothing.\n");
		cJSON_Delete(args);
		return;
	}
	/* job_kill answers once the job is gone: SIGKILL comes 2 s after
	 * SIGTERM. */
	const struct box_call_req rq = { .tool = tool, .args = args, .left_ms = 2 * BOX_JOBS_TIMEOUT_MS };
	cJSON *res = NULL;
	struct err e = { 0 };
	int r = box_call(u->s.box, &rq, NULL, NULL, -1, &res, &e);
	cJSON_Delete(args);
	if (r < 0) {
		_cleanup_free_ char *m = tui_short(e.msg, 400);
		tui_putf(u, RED "ward: %s" RESET "\n", m ? m : "");
		return;
	}
	jobs_print(u, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "text")));
	cJSON_Delete(res);
	if (!strcmp(tool, "job_list"))
		jobs_hibernated(u);
}
