/* ward-guest: PID 1 of a box. Speaks the box protocol on one byte stream,
 * runs calls concurrently, enforces each call's limits first (the host
 * enforces them again), reaps every child. */
#include "guest/guest.h"
#include "guest/policy.h"
#include "base/account.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/loop.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "proto/proto.h"
#include "tools/bash.h"
#include "tools/job.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

static struct {
	struct guest_cfg cfg;
	struct loop *loop;
	struct proto_reader rd;
	struct proto_writer wr;
	bool wr_armed;
	int sfd, done_efd;
	struct call *calls;
	bool quit;
	bool vm;	/* /init of a microVM */
} G;

static void guest_resume(void);

static void guest_flush(void)
{
	int r = proto_flush(&G.wr, G.cfg.chan_fd);
	guest_resume();
	if (r == -EAGAIN && !G.wr_armed) {
		loop_mod(G.loop, G.cfg.chan_fd, EPOLLIN | EPOLLOUT);
		G.wr_armed = true;
	} else if (r == 0 && G.wr_armed) {
		loop_mod(G.loop, G.cfg.chan_fd, EPOLLIN);
		G.wr_armed = false;
	} else if (r < 0 && r != -EAGAIN) {
		G.quit = true;	/* the host is gone */
	}
}

static void guest_send(uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n)
{
	if (proto_queue(&G.wr, type, flags, id, p, n) < 0) {
		/* The host stopped reading with megabytes queued: it is gone. */
		G.quit = true;
		return;
	}
	guest_flush();
}

void guest_send_frame(uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n)
{
	guest_send(type, flags, id, p, n);
}

size_t guest_queued(void)
{
	return proto_queued(&G.wr);
}

void guest_send_json(uint8_t type, uint32_t id, cJSON *j)
{
	_cleanup_free_ char *s = cJSON_PrintUnformatted(j);
	if (s)
		guest_send(type, 0, id, s, strlen(s));
}

static void guest_error(uint32_t id, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void guest_error(uint32_t id, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	guest_send(PROTO_ERROR, 0, id, msg, n > 0 ? MIN((size_t)n, sizeof(msg) - 1) : 0);
}

static struct call *guest_find(uint32_t id)
{
	for (struct call *c = G.calls; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void guest_unlink(struct call *c)
{
	for (struct call **p = &G.calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			return;
		}
}

static void call_free(struct call *c)
{
	if (c->out_fd >= 0) {
		loop_del(G.loop, c->out_fd);
		close(c->out_fd);
	}
	if (c->err_fd >= 0) {
		loop_del(G.loop, c->err_fd);
		close(c->err_fd);
	}
	if (c->in_fd >= 0) {
		loop_del(G.loop, c->in_fd);
		close(c->in_fd);
	}
	buf_free(&c->in_pend);
	if (c->status_fd >= 0)
		close(c->status_fd);
	if (c->cg_fd >= 0) {
		close(c->cg_fd);
		char name[32];
		snprintf(name, sizeof(name), "call-%u", c->id);
		unlinkat(G.cfg.cgroup_fd, name, AT_REMOVEDIR);
	}
	worker_free(c->job);
	capture_free(&c->cap);
	cJSON_Delete(c->evidence);
	cJSON_Delete(c->req);
	free(c);
}

/* Send the one result a call gets, and forget the call. */
void guest_result(struct call *c, enum outcome o, const struct buf *text, cJSON *extra)
{
	cJSON *j = extra ? extra : cJSON_CreateObject();
	cJSON_AddStringToObject(j, "outcome", outcome_name(o));
	struct buf clean;
	buf_init(&clean, TOOL_TEXT_MAX * 4);
	utf8_sanitize(text ? text->data : "", text ? text->len : 0, &clean);
	cJSON_AddStringToObject(j, "text", clean.data ? clean.data : "");
	buf_free(&clean);
	/* A VM's root changes reach the host's file before the host hears the
	 * call ended: a hibernate, or a VMM killed, keeps what it was told. */
	if (G.cfg.root_sync_fd >= 0)
		syncfs(G.cfg.root_sync_fd);
	cJSON_AddNumberToObject(j, "elapsed_ms", (double)(now_ms() - c->start_ms));
	if (c->evidence) {
		cJSON_AddItemToObject(j, "evidence", c->evidence);
		c->evidence = NULL;
	}
	guest_send_json(PROTO_RESULT, c->id, j);
	cJSON_Delete(j);
	guest_unlink(c);
	call_free(c);
}

void guest_result_simple(struct call *c, enum outcome o, const char *msg)
{
	struct buf b;
	buf_init(&b, TOOL_TEXT_MAX);
	buf_append(&b, msg, strlen(msg));
	guest_result(c, o, &b, NULL);
	buf_free(&b);
}

/* A file system of the box with no room left, after a command failed. */
static const char *guest_disk_full(void)
{
	static const char *const where[] = { "/workspace", "/tmp", "/" };
	for (size_t i = 0; i < ARRAY_SIZE(where); i++) {
		struct statvfs sv;
		/* Under 1 % or 2 MiB free: a failed write's last block does not fit. */
		if (statvfs(where[i], &sv) == 0 && !(sv.f_flag & ST_RDONLY) && sv.f_blocks &&
		    (sv.f_bavail < sv.f_blocks / 100 || (uint64_t)sv.f_bavail * sv.f_frsize < (2u << 20)))
			return where[i];
	}
	return NULL;
}

static void bash_finish(struct call *c)
{
	struct bash_report r = {
		.outcome = c->end,
		.elapsed_ms = now_ms() - c->start_ms,
		.limit_ms = c->idle_fired ? c->b.idle_ms : c->b.limit_ms,
		.idle = c->idle_fired,
		.out = &c->cap,
		.evidence = c->evidence,
	};
	cJSON *extra = cJSON_CreateObject();
	if (c->end == OUTCOME_OK) {
		if (!c->have_status || WIFSIGNALED(c->wstatus) || WEXITSTATUS(c->wstatus))
			r.disk_full = guest_disk_full();
		if (!c->have_status) {
			r.outcome = OUTCOME_FAILED;
			r.signal = SIGKILL;
		} else if (WIFSIGNALED(c->wstatus)) {
			r.outcome = OUTCOME_FAILED;
			r.signal = WTERMSIG(c->wstatus);
		} else {
			r.exit_code = WEXITSTATUS(c->wstatus);
			r.outcome = r.exit_code ? OUTCOME_FAILED : OUTCOME_OK;
		}
		if (r.signal)
			cJSON_AddNumberToObject(extra, "signal", r.signal);
		else
			cJSON_AddNumberToObject(extra, "exit_code", r.exit_code);
	} else {
		r.environment = "the command's process tree was killed; the box is intact";
		cJSON_AddStringToObject(extra, "environment", r.environment);
		cJSON_AddNumberToObject(extra, "limit_ms", (double)r.limit_ms);
		if (c->idle_fired)
			cJSON_AddBoolToObject(extra, "idle", 1);
	}
	cJSON_AddNumberToObject(extra, "output_bytes", (double)c->cap.total);
	cJSON_AddBoolToObject(extra, "truncated", capture_cut(&c->cap));
	struct buf text;
	buf_init(&text, TOOL_TEXT_MAX);
	bash_format(&r, &text);
	guest_result(c, r.outcome, &text, extra);
	buf_free(&text);
}

static void bash_maybe_finish(struct call *c)
{
	if (c->init_reaped && c->out_eof && c->err_eof)
		bash_finish(c);
}

static void on_output(struct loop *l, int fd, uint32_t events, void *data);

/* A stdin call's pipes leave the loop while the channel's queue is over
 * GUEST_STREAM_QUEUE (the command blocks on a full pipe: that is how a
 * slow host slows it down) and come back once half of it has drained.
 * Out of the loop rather than with no events: a pipe whose writer is gone
 * reports EPOLLHUP whatever it was asked for. */
static void call_pause(struct call *c, bool pause)
{
	if (c->paused == pause)
		return;
	c->paused = pause;
	int fds[] = { c->out_fd, c->err_fd };
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		if (fds[i] < 0)
			continue;
		if (pause)
			loop_del(G.loop, fds[i]);
		else
			loop_add(G.loop, fds[i], EPOLLIN, on_output, c);
	}
}

static void guest_resume(void)
{
	if (proto_queued(&G.wr) > GUEST_STREAM_QUEUE / 2)
		return;
	for (struct call *c = G.calls; c; c = c->next)
		call_pause(c, false);
	changeset_guest_pump();
}

static void stdin_close(struct call *c)
{
	if (c->in_fd < 0)
		return;
	loop_del(G.loop, c->in_fd);
	close(c->in_fd);
	c->in_fd = -1;
	buf_free(&c->in_pend);
	c->in_off = 0;
}

/* As much of what is pending as the pipe takes; the rest when it has room. */
static void stdin_pump(struct call *c)
{
	while (c->in_fd >= 0 && c->in_off < c->in_pend.len) {
		ssize_t n = fdio_write_some(c->in_fd, c->in_pend.data + c->in_off, c->in_pend.len - c->in_off);
		if (n == -EAGAIN) {
			loop_mod(G.loop, c->in_fd, EPOLLOUT);
			return;
		}
		if (n <= 0) {
			/* The command closed its stdin (EPIPE): what is pending
			 * has nowhere to go. */
			stdin_close(c);
			return;
		}
		c->in_off += (size_t)n;
	}
	if (c->in_fd < 0)
		return;
	c->in_pend.len = c->in_off = 0;
	if (c->in_eof)
		stdin_close(c);
	else
		loop_mod(G.loop, c->in_fd, 0);
}

/* Room in the pipe, or its reader gone: EPOLLERR, which epoll reports
 * whatever was asked for, so the pipe is closed rather than pumped (with
 * nothing pending, pumping would leave it in the loop, reporting again). */
static void on_stdin(struct loop *l, int fd, uint32_t events, void *data)
{
	if (events & (EPOLLERR | EPOLLHUP))
		stdin_close(data);
	else
		stdin_pump(data);
}

static void guest_input(const struct frame *f)
{
	struct call *c = guest_find(f->id);
	/* For a call that has ended, or whose stdin is closed: a race with
	 * its end, not an error. */
	if (!c || c->in_fd < 0 || c->in_eof)
		return;
	if (c->in_off) {
		buf_consume(&c->in_pend, c->in_off);
		c->in_off = 0;
	}
	if (buf_append(&c->in_pend, f->payload, f->len) < 0) {
		/* A note on the call's stderr, as the streaming note is: the call
		 * goes on, and its result comes as ever. */
		char note[120];
		int k = snprintf(note, sizeof(note), "\n[ward: the command's stdin was closed: %u MiB written to it "
				 "were still unread]\n", GUEST_STDIN_PENDING >> 20);
		guest_send(PROTO_OUTPUT, 2, c->id, note, (size_t)k);
		stdin_close(c);
		return;
	}
	if (f->flags & PROTO_F_EOF)
		c->in_eof = true;
	stdin_pump(c);
}

static void on_output(struct loop *l, int fd, uint32_t events, void *data)
{
	struct call *c = data;
	bool err = fd == c->err_fd;
	/* Before reading: every stdin call may add a chunk past the mark,
	 * and the queue's ceiling is only a few chunks above it. */
	if (c->input && proto_queued(&G.wr) > GUEST_STREAM_QUEUE) {
		call_pause(c, true);
		return;
	}
	char tmp[65536];
	ssize_t n = fdio_read_some(fd, tmp, sizeof(tmp));
	if (n == -EAGAIN)
		return;
	if (n <= 0) {
		loop_del(l, fd);
		close(fd);
		if (err) {
			c->err_fd = -1;
			c->err_eof = true;
		} else {
			c->out_fd = -1;
			c->out_eof = true;
		}
		bash_maybe_finish(c);
		return;
	}
	capture_add(&c->cap, tmp, (size_t)n);
	c->last_out_ms = now_ms();
	if (c->input) {
		guest_send(PROTO_OUTPUT, err ? 2 : 1, c->id, tmp, (size_t)n);
	} else if (c->stream && !c->stream_dropped) {
		if (proto_queued(&G.wr) + (size_t)n > GUEST_STREAM_QUEUE) {
			/* The host reads slower than the command writes: stop
			 * streaming; the result still carries head and tail. */
			c->stream_dropped = true;
			const char note[] = "\n[ward: output streaming stopped: the reader fell behind]\n";
			guest_send(PROTO_OUTPUT, 2, c->id, note, sizeof(note) - 1);
		} else {
			guest_send(PROTO_OUTPUT, 1, c->id, tmp, (size_t)n);
		}
	}
}

static void call_stop(struct call *c, enum outcome why, int64_t grace_ms)
{
	if (c->stopping)
		return;
	if (c->jobwait) {
		bgjob_call_stop(c, why);	/* answered: c is gone */
		return;
	}
	c->end = why;
	c->stopping = true;
	c->kill_at_ms = now_ms() + grace_ms;
	if (c->job) {
		worker_cancel(c->job);
		return;
	}
	/* Evidence first: it costs a few /proc reads and never delays the kill
	 * beyond its own small budget. */
	c->evidence = evidence_collect(c, 50);
	/* A server on stdin takes its end as the sign to leave. */
	stdin_close(c);
	proc_signal(c, SIGTERM);
}

static int64_t guest_tick(void)
{
	int64_t now = now_ms(), next = -1;
#define NEXT(t) do { if ((t) >= 0 && (next < 0 || (t) < next)) next = (t); } while (0)
	NEXT(bgjob_tick(now));
	for (struct call *c = G.calls, *n; c; c = n) {
		n = c->next;
		if (c->jobwait) {
			/* Its answer waits on a job; its own deadline still holds. */
			if (now >= c->deadline_ms)
				call_stop(c, OUTCOME_TIMED_OUT, 0);
			else
				NEXT(c->deadline_ms);
			continue;
		}
		if (!c->stopping) {
			if (now >= c->deadline_ms) {
				call_stop(c, OUTCOME_TIMED_OUT, budget_timeout_grace(&c->b));
			} else if (c->b.idle_ms && !c->job && now - c->last_out_ms >= c->b.idle_ms) {
				c->idle_fired = true;
				call_stop(c, OUTCOME_TIMED_OUT, budget_timeout_grace(&c->b));
			}
		}
		if (c->stopping) {
			if (now >= c->kill_at_ms && !c->job && !c->init_reaped) {
				proc_signal(c, SIGKILL);
				c->kill_at_ms = now + 1000;	/* resend if it is still there */
			}
			NEXT(c->kill_at_ms);
		} else {
			NEXT(c->deadline_ms);
			if (c->b.idle_ms && !c->job)
				NEXT(c->last_out_ms + c->b.idle_ms);
		}
	}
	return next;
#undef NEXT
}

static void guest_reap(void)
{
	int st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (bgjob_reaped(p))
			continue;
		for (struct call *c = G.calls; c; c = c->next) {
			if (c->init_pid != p)
				continue;
			c->init_reaped = true;
			int s;
			if (read(c->status_fd, &s, sizeof(s)) == sizeof(s)) {
				c->wstatus = s;
				c->have_status = true;
			}
			bash_maybe_finish(c);
			break;
		}
	}
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *data)
{
	struct signalfd_siginfo si;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			G.quit = true;
	}
	guest_reap();
}

static void on_done(struct loop *l, int fd, uint32_t events, void *data)
{
	uint64_t v;
	if (read(fd, &v, sizeof(v)) < 0)
		return;
	for (struct job *j = worker_take_done(), *n; j; j = n) {
		n = worker_next(j);
		struct call *c = worker_call(j);
		struct tool_result *res = worker_result(j);
		enum outcome o = res->outcome;
		/* A tool that finished before it saw the token did its work: that
		 * is reported as it happened. */
		if (c->end != OUTCOME_OK && o == OUTCOME_CANCELLED) {
			o = c->end;
			res->text.len = 0;
			if (o == OUTCOME_TIMED_OUT)
				buf_printf(&res->text, "timed out after %lld s; the tool stopped and changed "
					   "nothing; the box is intact\n", (long long)((c->b.limit_ms + 999) / 1000));
			else
				buf_printf(&res->text, "cancelled after %.1f s; the tool stopped and changed nothing\n",
					   (now_ms() - c->start_ms) / 1000.0);
		}
		guest_result(c, o, &res->text, NULL);
	}
}

static void guest_call(const struct frame *f)
{
	if (guest_find(f->id)) {
		guest_error(f->id, "call id %u is already running", f->id);
		return;
	}
	struct call *c = calloc(1, sizeof(*c));
	if (!c) {
		guest_error(f->id, "out of memory");
		return;
	}
	c->id = f->id;
	c->out_fd = c->status_fd = c->cg_fd = c->in_fd = c->err_fd = -1;
	c->err_eof = true;
	buf_init(&c->in_pend, GUEST_STDIN_PENDING);
	c->start_ms = c->last_out_ms = now_ms();
	c->next = G.calls;
	G.calls = c;
	capture_init(&c->cap, BASH_OUT_HEAD, BASH_OUT_TAIL);
	if (parse_json_has_nul((const char *)f->payload, f->len)) {
		guest_result_simple(c, OUTCOME_BAD_INPUT, "the call's arguments hold a NUL character (\\u0000), "
				    "which no path, command or pattern may contain");
		return;
	}
	c->req = cJSON_ParseWithLength((const char *)f->payload, f->len);
	const char *toolname = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->req, "tool"));
	c->args = cJSON_GetObjectItemCaseSensitive(c->req, "args");
	if (!cJSON_IsObject(c->req) || !toolname) {
		guest_result_simple(c, OUTCOME_BAD_INPUT, "the request is not a JSON object with a \"tool\" name");
		return;
	}
	c->tool = tool_lookup(toolname);
	if (!c->tool) {
		char msg[200];
		snprintf(msg, sizeof(msg), "unknown tool \"%.60s\": the tools are read, write, edit, grep, find, ls, bash, "
			 "job_output, job_kill and job_list", toolname);
		guest_result_simple(c, OUTCOME_BAD_INPUT, msg);
		return;
	}
	if (G.cfg.user_err[0]) {
		guest_result_simple(c, OUTCOME_FAILED, G.cfg.user_err);
		return;
	}
	if (!c->tool->inproc && !c->tool->job && !proc_shell()) {
		guest_result_simple(c, OUTCOME_FAILED,
				    "this box has no shell: its root has neither /bin/bash nor /bin/sh, so no command "
				    "can run; the file tools (read, write, edit, grep, find, ls) work without one");
		return;
	}
	struct err e = { 0 };
	if (tool_check_args(c->tool, c->args, &e) < 0) {
		guest_result_simple(c, OUTCOME_BAD_INPUT, e.msg);
		return;
	}
	const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->req, "key"));
	snprintf(c->key, sizeof(c->key), "%s", key ? key : "");
	c->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c->req, "stream"));
	c->input = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c->req, "stdin"));
	if (c->input && (c->tool->inproc || c->tool->job || tool_arg_bool(c->args, "background", false))) {
		guest_result_simple(c, OUTCOME_BAD_INPUT, "only a bash call that is not a background job can have a stdin");
		return;
	}
	c->err_eof = !c->input;
	/* The host made the call's budget (proto/budget.h); the guest only
	 * keeps it. */
	if (budget_from_json(cJSON_GetObjectItemCaseSensitive(c->req, "budget"), &c->b) < 0) {
		guest_result_simple(c, OUTCOME_BAD_INPUT, "the call has no valid time budget (a host of another version?)");
		return;
	}
	c->deadline_ms = c->start_ms + c->b.limit_ms;

	if (c->tool->job) {
		bgjob_call(c);
		return;
	}
	if (tool_arg_bool(c->args, "background", false)) {
		bgjob_start(c, tool_arg_str(c->args, "command", ""));
		return;
	}
	int r;
	if (c->tool->inproc)
		r = worker_start(c, G.done_efd);
	else
		r = proc_start(c, &G.cfg, tool_arg_str(c->args, "command", ""));
	/* Read even when the start failed half-way: its end is their EOF. */
	if (c->out_fd >= 0)
		loop_add(G.loop, c->out_fd, EPOLLIN, on_output, c);
	if (c->err_fd >= 0)
		loop_add(G.loop, c->err_fd, EPOLLIN, on_output, c);
	if (c->in_fd >= 0)
		loop_add(G.loop, c->in_fd, 0, on_stdin, c);
	if (r < 0) {
		char msg[200];
		snprintf(msg, sizeof(msg), "the box could not start the call: %s", strerror(-r));
		if (c->init_pid > 0) {
			/* Started half-way and killed: wait for the reap. */
			c->end = OUTCOME_FAILED;
			c->stopping = true;
			return;
		}
		guest_result_simple(c, OUTCOME_FAILED, msg);
		return;
	}
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "event", "started");
	cJSON_AddNumberToObject(ev, "limit_ms", (double)c->b.limit_ms);
	guest_send_json(PROTO_EVENT, c->id, ev);
	cJSON_Delete(ev);
}

static void guest_frame(const struct frame *f)
{
	struct call *c;
	cJSON *ev;
	switch (f->type) {
	case PROTO_HELLO:
		if (proto_hello_check(f) < 0)
			guest_error(0, "hello: wrong magic or protocol version (this guest speaks %d)", PROTO_VERSION);
		break;
	case PROTO_CALL:
		guest_call(f);
		break;
	case PROTO_CANCEL:
		c = guest_find(f->id);
		if (c)
			call_stop(c, OUTCOME_CANCELLED, c->b.grace_ms);
		break;
	case PROTO_EVIDENCE:
		c = f->id ? guest_find(f->id) : NULL;
		ev = evidence_collect(c, 100);
		guest_send_json(PROTO_EVIDENCE, f->id, ev);
		cJSON_Delete(ev);
		break;
	case PROTO_INPUT:
		guest_input(f);
		break;
	case PROTO_PING:
		guest_send(PROTO_PONG, 0, f->id, f->payload, f->len);
		break;
	case PROTO_CHANGES:
		changeset_guest_request(f->id, f->payload, f->len);
		break;
	case PROTO_START: {
		/* A vm's wake from a saved state: the clock and the entropy. */
		cJSON *j = G.vm ? cJSON_ParseWithLength((const char *)f->payload, f->len) : NULL;
		if (j)
			vm_fresh(j);
		else
			guest_error(f->id, "START after the box started is a vm's wake, with its clock and entropy");
		cJSON_Delete(j);
		break;
	}
	default:
		guest_error(f->id, "unknown request type %u", f->type);
		break;
	}
}

static void on_channel(struct loop *l, int fd, uint32_t events, void *data)
{
	if (events & EPOLLOUT)
		guest_flush();
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	int r = proto_reader_fill(&G.rd, fd);
	if (r == -EAGAIN)
		return;
	if (r <= 0) {
		G.quit = true;
		return;
	}
	struct frame f;
	while ((r = proto_reader_next(&G.rd, &f)) == 0)
		guest_frame(&f);
	if (r != -EAGAIN) {
		/* Oversize or malformed: the stream cannot be resynchronised. */
		guest_error(0, "protocol error: %s", r == -EMSGSIZE ? "frame over the maximum size" : "malformed frame header");
		proto_flush(&G.wr, fd);
		G.quit = true;
	}
}

/* Who tool commands are (def without an image's User). */
static void guest_user(uid_t def)
{
	_cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct account a;
	if (account_resolve(root, G.cfg.user, def, G.cfg.uids, &a, G.cfg.user_err, sizeof(G.cfg.user_err)) < 0)
		return;
	G.cfg.tool_uid = a.uid;
	G.cfg.tool_gid = a.gid;
	snprintf(G.cfg.tool_name, sizeof(G.cfg.tool_name), "%s", a.name);
}

/* An argument's own copy: the command line's memory is a call's init's
 * title later (proc_title_init). */
static const char *guest_keep(const char *arg)
{
	char *p = strdup(arg);
	if (!p)
		abort();
	return p;
}

static int guest_parse_args(int argc, char **argv)
{
	G.cfg = (struct guest_cfg){ .chan_fd = -1, .cgroup_fd = -1, .root_fd = -1, .root_sync_fd = -1, .workspace = "/workspace" };
	/* Each flag and its value: two arguments a step. */
	for (int i = 1; i < argc; i += 2) {
		uint64_t v;
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!val)
			return -EINVAL;
		if (!strcmp(a, "--fd") && parse_u64(val, &v) == 0)
			G.cfg.chan_fd = (int)v;
		else if (!strcmp(a, "--rlimit-as") && parse_u64(val, &v) == 0)
			G.cfg.rlimit_as = v;
		else if (!strcmp(a, "--workspace"))
			G.cfg.workspace = guest_keep(val);
		else if (!strcmp(a, "--proxy-port") && parse_u64(val, &v) == 0 && v > 0 && v < 65536)
			G.cfg.proxy_port = (int)v;
		else if (!strcmp(a, "--root-fd") && parse_u64(val, &v) == 0 && v > 2 && v < 1024)
			G.cfg.root_fd = (int)v;
		else if (!strcmp(a, "--uids") && parse_u64(val, &v) == 0 && v > 0 && v <= 65536)
			G.cfg.uids = (unsigned)v;
		else if (!strcmp(a, "--user"))
			G.cfg.user = guest_keep(val);
		else if (!strcmp(a, "--env") && strchr(val, '=') && val[0] != '=' && G.cfg.nenv < GUEST_ENV_MAX)
			G.cfg.env[G.cfg.nenv++] = guest_keep(val);
		else
			return -EINVAL;
	}
	return G.cfg.chan_fd >= 0 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	/* Before anything else opens a descriptor; a VM's /init may have no
	 * /dev yet (vm_setup calls it again once /dev is mounted). */
	fdio_std_open();
	/* Started by a kernel as /init, with no arguments: a microVM. */
	bool vm = G.vm = getpid() == 1 && argc == 1;
	int pr = 0;
	if (vm) {
		G.cfg = (struct guest_cfg){ .chan_fd = -1, .cgroup_fd = -1, .root_fd = -1, .root_sync_fd = -1 };
		vm_setup(&G.cfg);
		/* The seccomp filter is the same for every box: built before
		 * START, it is in the snapshot, and a restored or pooled box
		 * does not build it again (tens of ms under emulation). */
		pr = policy_prepare();
		while (vm_wait_start(&G.cfg) < 0) {
			/* The host left before START: wait for the next one. */
			close(G.cfg.chan_fd);
			G.cfg.chan_fd = vm_open_port(VM_PORT_BOX);
		}
		vm_identity(false);
		G.cfg.boot_id = access(VM_BOOT_ID, R_OK) == 0 ? VM_BOOT_ID : NULL;
		guest_user(0);
		worker_uid = (int)G.cfg.tool_uid;
		worker_gid = (int)G.cfg.tool_gid;
		/* The host's port streams come over it whether or not the box
		 * has egress (proxy_port 0: no proxy listener). */
		int nr = netfwd_start(G.cfg.proxy_port);
		if (nr < 0)
			fprintf(stderr, "ward-guest: no way to the egress proxy or the box's ports: %s\n",
				strerror(-nr));
	} else if (guest_parse_args(argc, argv) < 0) {
		fprintf(stderr, "usage: ward-guest --fd N [--root-fd N] [--uids N] [--user USER] [--env K=V]... "
			"[--rlimit-as BYTES] [--workspace DIR] [--proxy-port N]\n");
		return 64;
	}
	/* Loaded where the box was built (its loader, its libraries); from
	 * here on, the box's root is the guest's. */
	if (G.cfg.root_fd >= 0) {
		if (fchdir(G.cfg.root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0) {
			fprintf(stderr, "ward-guest: cannot enter the box's root: %s\n", strerror(errno));
			return 1;
		}
		close(G.cfg.root_fd);
		G.cfg.root_fd = -1;
	}
	if (!vm) {
		guest_user(0);
		worker_uid = G.cfg.uids ? (int)G.cfg.tool_uid : G.cfg.tool_outer_uid;
		worker_gid = G.cfg.uids ? (int)G.cfg.tool_gid : G.cfg.tool_outer_uid;
	}
	prctl(PR_SET_NAME, "ward-guest");
	proc_title_init(argc, argv);
	int wr = worker_setup(G.cfg.workspace);
	if (wr < 0) {
		fprintf(stderr, "ward-guest: cannot open the box's root: %s\n", strerror(-wr));
		return 1;
	}
	if (!vm)
		pr = policy_prepare();
	if (pr < 0) {
		fprintf(stderr, "ward-guest: cannot build the seccomp filter: %s\n", strerror(-pr));
		return 1;
	}
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	G.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	G.done_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (G.sfd < 0 || G.done_efd < 0 || loop_new(&G.loop) < 0)
		return 1;
	fcntl(G.cfg.chan_fd, F_SETFD, FD_CLOEXEC);
	if (G.cfg.cgroup_fd >= 0)
		fcntl(G.cfg.cgroup_fd, F_SETFD, FD_CLOEXEC);
	fdio_set_nonblock(G.cfg.chan_fd, true);
	proto_reader_init(&G.rd);
	proto_writer_init(&G.wr, GUEST_STREAM_QUEUE + 4 * PROTO_MAX_PAYLOAD);
	loop_add(G.loop, G.cfg.chan_fd, EPOLLIN, on_channel, NULL);
	loop_add(G.loop, G.sfd, EPOLLIN, on_signal, NULL);
	loop_add(G.loop, G.done_efd, EPOLLIN, on_done, NULL);
	bgjob_init(G.loop, &G.cfg);

	uint8_t hello[8];
	proto_hello_payload(hello);
	guest_send(PROTO_HELLO, 0, 0, hello, sizeof(hello));

	for (;;) {
		while (!G.quit) {
			int64_t next = guest_tick();
			if (loop_run_once(G.loop, next) < 0)
				break;
		}
		if (!vm)
			break;
		/* The host went away: its calls end; wait for it to come back. */
		for (struct call *c = G.calls; c; c = c->next) {
			proc_signal(c, SIGKILL);
			if (c->job)
				worker_cancel(c->job);
		}
		changeset_guest_abort();
		loop_del(G.loop, G.cfg.chan_fd);
		close(G.cfg.chan_fd);
		proto_reader_free(&G.rd);
		proto_writer_free(&G.wr);
		G.wr_armed = false;
		G.quit = false;
		G.cfg.chan_fd = vm_open_port(VM_PORT_BOX);
		fdio_set_nonblock(G.cfg.chan_fd, true);
		proto_reader_init(&G.rd);
		proto_writer_init(&G.wr, GUEST_STREAM_QUEUE + 4 * PROTO_MAX_PAYLOAD);
		loop_add(G.loop, G.cfg.chan_fd, EPOLLIN, on_channel, NULL);
		guest_send(PROTO_HELLO, 0, 0, hello, sizeof(hello));
	}
	if (vm)
		vm_poweroff(NULL);
	/* Leaving PID 1 ends the box's PID namespace: the kernel kills all. */
	for (struct call *c = G.calls; c; c = c->next)
		proc_signal(c, SIGKILL);
	bgjob_kill_all();
	return 0;
}
