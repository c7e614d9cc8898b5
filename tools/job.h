/* Background jobs: a bash call with "background": true starts its command
 * as a job of the box, which lives until it ends, is killed, its own limit
 * passes or the box goes. The model reads and ends jobs with the job
 * tools; ward-guest keeps them (guest/bgjob.c). */
#pragma once
#include "tools/tool.h"

/* Defaults, pinned in tests/unit/test-defaults.c. */
#define JOB_TIMEOUT_MAX_S 86400		/* a job's own limit, at most a day (the box's TTL bounds it too) */
#define JOB_RUNNING_MAX 16		/* jobs running in one box at once */
#define JOB_KEPT_MAX 64			/* jobs a box remembers, ended ones included */
#define JOB_OUT_HEAD (64u * 1024)	/* a job's output: its first 64 KiB... */
#define JOB_OUT_TAIL (1024u * 1024)	/* ...and its last 1 MiB are kept */
#define JOB_READ_MAX 30000		/* bytes of output one job_output gives */
#define JOB_WAIT_MAX_S 600		/* job_output's wait, at most */
#define JOB_KILL_GRACE_MS 2000		/* SIGTERM, then SIGKILL this much later */
#define JOB_TOLD_TAIL 1500		/* the end of a job's output the model is told with its end */
