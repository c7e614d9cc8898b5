#include "tools/bash.h"
#include "tools/job.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct arg_spec bash_args[] = {
	{ .name = "command", .type = ARG_STRING, .required = true },
	/* Its bounds depend on "background": bash_check. */
	{ .name = "timeout", .type = ARG_INT },
	{ .name = "idle_timeout", .type = ARG_INT, .min = 1, .max = BASH_TIMEOUT_MAX_S },
	{ .name = "background", .type = ARG_BOOL },
	{ .name = NULL },
};

static int bash_check(const cJSON *args, struct err *e)
{
	bool bg = tool_arg_bool(args, "background", false);
	int64_t t = tool_arg_int(args, "timeout", 1), max = bg ? JOB_TIMEOUT_MAX_S : BASH_TIMEOUT_MAX_S;
	if (t < 1 || t > max)
		return err_set(e, -ERANGE, "bash: field \"timeout\" must be between 1 and %lld, got %lld%s",
			       (long long)max, (long long)t,
			       bg ? "" : " (a command the call waits for; with \"background\": true a job's may be up to "
					 STRINGIFY(JOB_TIMEOUT_MAX_S) ")");
	if (bg && cJSON_GetObjectItemCaseSensitive(args, "idle_timeout"))
		return err_set(e, -EINVAL, "bash: field \"idle_timeout\" is for a command the call waits for; a "
			       "background job has only \"timeout\" (its own time limit)");
	return 0;
}

const struct tool tool_bash = {
	.name = "bash",
	.description =
		"Run a command with `bash -c` inside the task's box. The working directory is "
		"/workspace. stdin is /dev/null and there is no terminal: interactive prompts "
		"fail at once, so pass input through files or flags. `timeout` (seconds, default "
		STRINGIFY(BASH_TIMEOUT_DEFAULT_S) ", at most " STRINGIFY(BASH_TIMEOUT_MAX_S) ") bounds the wall-clock "
		"time and `idle_timeout` (seconds) the time without output; on either, every process "
		"the command started is killed. Output (stdout and stderr together) is cut to its first "
		STRINGIFY(BASH_OUT_HEAD) " and last " STRINGIFY(BASH_OUT_TAIL) " bytes. The box has no network "
		"unless it was created with one.\n"
		"With `background: true` the command starts as a job and the call returns at once "
		"with the job's id: for a server, a watcher or a long build that goes on while you "
		"work. A job lives until it ends, is killed, its own `timeout` passes (seconds, up "
		"to " STRINGIFY(JOB_TIMEOUT_MAX_S) "; none by default), or the box goes. Read its output with job_output, "
		"stop it with job_kill, see them all with job_list; when a job ends you are told "
		"at your next turn.",
	.args = bash_args,
	.inproc = false,
	.readonly = false,
	.check = bash_check,
};

/* Wait channels and what they tell the model. Kernel symbol names as
 * /proc/PID/wchan prints them; several per meaning across kernel versions. */
static const struct {
	const char *wchan;
	const char *meaning;
} wchan_hints[] = {
	{ "pipe_read", "blocked reading a pipe: it is waiting for input" },
	{ "pipe_wait", "blocked reading a pipe: it is waiting for input" },
	{ "n_tty_read", "blocked reading a terminal: it is waiting for input" },
	{ "wait_woken", "blocked reading a terminal or socket: it is waiting for input" },
	{ "sk_wait_data", "blocked on a network socket that never answered" },
	{ "inet_csk_accept", "waiting for a network connection that never came" },
	{ "__skb_wait_for_more_packets", "blocked on a socket that never answered" },
	{ "unix_stream_read_generic", "blocked reading a socket: it is waiting for input" },
	{ "__inet_stream_connect", "blocked connecting to a host that never answered" },
	{ "inet_stream_connect", "blocked connecting to a host that never answered" },
	{ "do_select", "waiting in select() for I/O that never came" },
	{ "do_sys_poll", "waiting in poll() for I/O that never came" },
	{ "do_epoll_wait", "waiting in epoll for I/O that never came" },
	{ "ep_poll", "waiting in epoll for I/O that never came" },
	{ "futex_wait_queue", "waiting on a lock (futex)" },
	{ "futex_wait_queue_me", "waiting on a lock (futex)" },
	{ "hrtimer_nanosleep", "sleeping" },
	{ "do_nanosleep", "sleeping" },
};

const char *bash_hint(const cJSON *evidence, char *hint, size_t n)
{
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(evidence, "processes");
	int count = cJSON_GetArraySize(procs), running = 0;
	const cJSON *p;
	if (count <= 0)
		return NULL;
	const cJSON *total = cJSON_GetObjectItemCaseSensitive(evidence, "count");
	int ntotal = cJSON_IsNumber(total) ? total->valueint : count;
	if (ntotal >= 64) {
		snprintf(hint, n, "the command had %d processes when it was stopped: it was forking "
			 "without end (a fork bomb or a runaway loop) and hit the box's process ceiling",
			 ntotal);
		return hint;
	}
	/* The most telling process first: one blocked on input or the
	 * network, then one burning CPU, then one sleeping or waiting. */
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1) {
			cJSON_ArrayForEach(p, procs) {
				const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "state"));
				if (st && st[0] == 'R')
					running++;
			}
			if (running) {
				snprintf(hint, n, "%d process%s busy on the CPU when it was stopped: an endless loop "
					 "or a computation far larger than the time allowed", running,
					 running == 1 ? " was" : "es were");
				return hint;
			}
			continue;
		}
		for (size_t k = 0; k < sizeof(wchan_hints) / sizeof(wchan_hints[0]); k++) {
			bool io = strstr(wchan_hints[k].meaning, "input") || strstr(wchan_hints[k].meaning, "socket") ||
				  strstr(wchan_hints[k].meaning, "network") || strstr(wchan_hints[k].meaning, "host");
			if (io != (pass == 0))
				continue;
			cJSON_ArrayForEach(p, procs) {
				const char *w = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "wchan"));
				if (!w || strcmp(w, wchan_hints[k].wchan))
					continue;
				const char *meaning = wchan_hints[k].meaning, *extra = "";
				const cJSON *socks = cJSON_GetObjectItemCaseSensitive(p, "sockets");
				bool has_sock = cJSON_IsNumber(socks) && socks->valueint > 0;
				if (!strcmp(w, "wait_woken"))
					meaning = has_sock ? "blocked on a network socket that never answered" :
							     "blocked reading a terminal: it is waiting for input";
				if (strstr(meaning, "input"))
					extra = "; stdin is closed (/dev/null) and there is no terminal, so give it "
						"its input through a file, a here-doc or a non-interactive flag";
				else if (io)
					extra = "; the box has no network unless it was created with one, and a "
						"network call needs its own timeout";
				snprintf(hint, n, "process %s (%.80s) was %s%s",
					 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "pid")) ?: "?",
					 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "cmd")) ?: "?",
					 meaning, extra);
				return hint;
			}
		}
	}
	return NULL;
}

static void bash_tail(const struct bash_report *r, struct buf *text, size_t n)
{
	_cleanup_free_ char *t = malloc(n + 1);
	if (!t)
		return;
	size_t got = capture_tail(r->out, t, n);
	if (!got) {
		buf_printf(text, "(no output)\n");
		return;
	}
	if (r->out->total > got)
		buf_printf(text, "[output truncated: showing the last %zu of %llu bytes]\n", got,
			   r->out->total);
	buf_append(text, t, got);
	if (t[got - 1] != '\n')
		buf_append(text, "\n", 1);
}

static void bash_output(const struct bash_report *r, struct buf *text)
{
	const struct capture *c = r->out;
	if (!c->total)
		return;
	if (!capture_cut(c)) {
		buf_append(text, c->head.data, c->head.len);
		if (c->ring_len) {
			char *t = malloc(c->ring_len);
			if (t) {
				size_t got = capture_tail(c, t, c->ring_len);
				buf_append(text, t, got);
				free(t);
			}
		}
	} else {
		buf_append(text, c->head.data, c->head.len);
		unsigned long long cut = c->total - c->head.len - c->ring_len;
		buf_printf(text, "\n[... %llu bytes of output cut; %llu bytes in all ...]\n", cut, c->total);
		char *t = malloc(c->ring_len);
		if (t) {
			size_t got = capture_tail(c, t, c->ring_len);
			buf_append(text, t + (got - c->ring_len), c->ring_len);
			free(t);
		}
	}
	if (text->len && text->data[text->len - 1] != '\n')
		buf_append(text, "\n", 1);
}

int bash_format(const struct bash_report *r, struct buf *text)
{
	char hint[512];
	switch (r->outcome) {
	case OUTCOME_OK:
	case OUTCOME_FAILED:
		bash_output(r, text);
		if (r->signal)
			buf_printf(text, "[killed by signal %d (%s)]\n", r->signal, strsignal(r->signal));
		else if (r->exit_code)
			buf_printf(text, "[exit code %d]\n", r->exit_code);
		if (!r->out->total && !r->exit_code && !r->signal)
			buf_printf(text, "(no output)\n");
		break;
	case OUTCOME_TIMED_OUT:
		if (r->idle)
			buf_printf(text, "timed out: no output for %lld s (idle limit); stopped after %.1f s\n",
				   (long long)(r->limit_ms / 1000), r->elapsed_ms / 1000.0);
		else
			buf_printf(text, "timed out after %lld s\n", (long long)((r->limit_ms + 999) / 1000));
		bash_tail(r, text, BASH_TIMEOUT_TAIL);
		break;
	case OUTCOME_CANCELLED:
		buf_printf(text, "cancelled after %.1f s\n", r->elapsed_ms / 1000.0);
		bash_tail(r, text, BASH_TIMEOUT_TAIL);
		break;
	default:
		break;
	}
	if (r->environment)
		buf_printf(text, "environment: %s\n", r->environment);
	if ((r->outcome == OUTCOME_TIMED_OUT || r->outcome == OUTCOME_CANCELLED) && r->evidence &&
	    bash_hint(r->evidence, hint, sizeof(hint)))
		buf_printf(text, "hint: %s\n", hint);
	if (r->disk_full)
		buf_printf(text, "hint: %s is full: the box's disk ceiling is reached; remove files there, or ask "
			   "for a box with a larger --disk\n", r->disk_full);
	return 0;
}
