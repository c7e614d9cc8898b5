/* The box's running jobs as the keeper knows them from the guest's events
 * (each one's id, command and start), for a hibernate that ends them (an
 * ns box keeps no processes): each one's end is told as a job's end event
 * to every client (a session's model reads it at its next round, as it
 * reads any job's end; the person sees it), in the hibernate's answer,
 * and in the box's info after. The events are the guest's, which the box
 * may have taken over: at most JOB_RUNNING_MAX jobs are kept, each
 * command cut to KJOB_CMD_MAX bytes. */
#include "sandbox/keeper-int.h"
#include "base/timeutil.h"
#include "tools/job.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define KJOB_CMD_MAX 200
/* Jobs a box's info remembers ending at its last hibernate. */
#define KJOB_ENDED_MAX JOB_RUNNING_MAX

struct kjob {
	unsigned id;
	char command[KJOB_CMD_MAX];
	int64_t seen_ms;	/* when the keeper heard it start */
};
static struct kjob running[JOB_RUNNING_MAX];
static size_t nrunning;
static cJSON *ended;	/* the last hibernate's, for the box's info */

static ssize_t kjob_find(unsigned id)
{
	for (size_t i = 0; i < nrunning; i++)
		if (running[i].id == id)
			return (ssize_t)i;
	return -1;
}

void keeper_jobs_event(const cJSON *ev)
{
	const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "event"));
	const cJSON *job = cJSON_GetObjectItemCaseSensitive(ev, "job");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
	const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(job, "command"));
	if (!what || !cJSON_IsNumber(id) || id->valuedouble < 1 || id->valuedouble > 1e9)
		return;
	unsigned n = (unsigned)id->valuedouble;
	ssize_t at = kjob_find(n);
	if (!strcmp(what, "started") && at < 0 && nrunning < JOB_RUNNING_MAX) {
		struct kjob *j = &running[nrunning++];
		*j = (struct kjob){ .id = n, .seen_ms = now_ms() };
		snprintf(j->command, sizeof(j->command), "%s", cmd ? cmd : "?");
	} else if (!strcmp(what, "ended") && at >= 0) {
		running[at] = running[--nrunning];
	}
}

unsigned keeper_jobs_running(void)
{
	return (unsigned)nrunning;
}

void keeper_jobs_forget(void)
{
	nrunning = 0;
}

unsigned keeper_jobs_end(const char *why, cJSON *ret)
{
	cJSON_Delete(ended);
	ended = cJSON_CreateArray();
	unsigned n = 0;
	int64_t now = now_ms();
	/* Which hibernate ended them, for a session resumed later: the
	 * guest's job numbers start again after it, the stamp does not. */
	double at = (double)(now_file_ns() / 1000000);
	/* Oldest first, as they were started. */
	for (size_t k = 0; k < nrunning; k++) {
		size_t first = k;
		for (size_t i = k + 1; i < nrunning; i++)
			if (running[i].id < running[first].id)
				first = i;
		struct kjob t = running[k];
		running[k] = running[first];
		running[first] = t;
	}
	for (size_t i = 0; i < nrunning; i++) {
		const struct kjob *j = &running[i];
		char how[400];
		snprintf(how, sizeof(how), "ended after %.1f s when the box hibernated: %s", (double)(now - j->seen_ms) / 1000.0,
			 why);
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "type", "job");
		cJSON_AddStringToObject(ev, "event", "ended");
		cJSON *jj = cJSON_AddObjectToObject(ev, "job");
		cJSON_AddNumberToObject(jj, "id", j->id);
		cJSON_AddStringToObject(jj, "command", j->command);
		cJSON_AddStringToObject(jj, "state", "ended");
		cJSON_AddNumberToObject(jj, "elapsed_ms", (double)(now - j->seen_ms));
		cJSON_AddNumberToObject(jj, "signal", SIGKILL);
		cJSON_AddStringToObject(jj, "why", "the box hibernated");
		/* Its output went with the guest that held it: what it wrote
		 * is not known here. */
		cJSON_AddNumberToObject(jj, "output_bytes", 0);
		cJSON_AddNumberToObject(jj, "dropped_bytes", 0);
		cJSON_AddArrayToObject(jj, "ports");
		cJSON_AddStringToObject(ev, "how", how);
		cJSON_AddNumberToObject(ev, "hibernated_at", at);
		cJSON_AddNumberToObject(ev, "running", (double)(nrunning - i - 1));
		cJSON_AddBoolToObject(ev, "output_lost", 1);
		keeper_broadcast(ev);
		cJSON_Delete(ev);
		if (n < KJOB_ENDED_MAX) {
			cJSON *e = cJSON_CreateObject();
			cJSON_AddNumberToObject(e, "id", j->id);
			cJSON_AddStringToObject(e, "command", j->command);
			cJSON_AddStringToObject(e, "how", how);
			cJSON_AddNumberToObject(e, "hibernated_at", at);
			cJSON_AddItemToArray(ended, e);
		}
		n++;
	}
	nrunning = 0;
	if (ret)
		cJSON_AddItemToObject(ret, "jobs_ended", cJSON_Duplicate(ended, 1));
	return n;
}

void keeper_jobs_info(cJSON *j)
{
	if (ended && cJSON_GetArraySize(ended))
		cJSON_AddItemToObject(j, "jobs_ended_by_hibernate", cJSON_Duplicate(ended, 1));
}

void keeper_jobs_free(void)
{
	cJSON_Delete(ended);
	ended = NULL;
	nrunning = 0;
}
