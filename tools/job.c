/* The job tools: what the model sees. ward-guest answers them
 * (guest/bgjob.c). */
#include "tools/job.h"

static const struct arg_spec job_output_args[] = {
	{ .name = "id", .type = ARG_INT, .required = true, .min = 1, .max = 1000000 },
	{ .name = "offset", .type = ARG_INT, .min = 0, .max = 1LL << 52 },
	{ .name = "wait", .type = ARG_INT, .min = 0, .max = JOB_WAIT_MAX_S },
	{ .name = NULL },
};

const struct tool tool_job_output = {
	.name = "job_output",
	.description =
		"Read a background job's output (stdout and stderr together) and its state: its exit "
		"status once it has ended, and the TCP ports it listens on while it runs. Without "
		"`offset`, reads on from where your last read of this job stopped; with it, from that "
		"byte offset (0: the start). `wait` (seconds, up to 600) first waits for the job to "
		"end, returning as soon as it does. One read gives at most 30,000 bytes and says the "
		"offset to read on from. A job keeps the first 64 KiB and the last 1 MiB of its "
		"output; a read says how many bytes between them were dropped.",
	.args = job_output_args,
	.readonly = true,
	.job = true,
};

static const struct arg_spec job_id_args[] = {
	{ .name = "id", .type = ARG_INT, .required = true, .min = 1, .max = 1000000 },
	{ .name = NULL },
};

const struct tool tool_job_kill = {
	.name = "job_kill",
	.description =
		"Stop a background job: SIGTERM to every process it started, SIGKILL 2 s later to "
		"what is left. Returns once the job is gone, with the end of its output.",
	.args = job_id_args,
	.job = true,
};

static const struct arg_spec job_list_args[] = {
	{ .name = NULL },
};

const struct tool tool_job_list = {
	.name = "job_list",
	.description =
		"List the box's background jobs: id, state (running, or how it ended), the TCP ports "
		"each listens on, how long it has run, and its command.",
	.args = job_list_args,
	.readonly = true,
	.job = true,
};
