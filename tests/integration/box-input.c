/* A stdin call through the box API, on one backend (argv[1]: ns or vm):
 * INPUT reaches the command whole and in order, EOF ends it, stderr comes
 * apart, 64 MB read slowly lose no byte while the guest's memory stays
 * bounded, a cancel ends the call's whole tree, INPUT to an ended call is
 * harmless, a call without stdin is as before, a command that closes its
 * stdin leaves ward-guest idle, 80 stdin calls behind a host that reads
 * nothing do not overflow the guest's queue, and a 7-day limit runs.
 * argv[2]: fd-audit.py. TAP. */
#include "sandbox/box.h"
#include "proto/budget.h"
#include "proto/proto.h"
#include "base/buf.h"
#include "base/timeutil.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))
#define tap_skip_all(why) do { printf("1..0 # SKIP %s\n", why); return 0; } while (0)

/* How much the guest's peak memory may grow while 64 MB pass through it:
 * its queue (GUEST_STREAM_QUEUE and a chunk) and slack. Under ASan its
 * quarantine keeps every block the queue outgrew resident too. */
#if defined(__SANITIZE_ADDRESS__)
#define GUEST_HWM_KB (48 * 1024)
#else
#define GUEST_HWM_KB (24 * 1024)
#endif

struct run {
	struct buf out, err;
	unsigned long long out_total, nerr_cb;
	uint64_t out_hash;	/* FNV-1a of all of stdout, for the big case */
	bool keep;		/* keep stdout in out (else only hash and count) */
	unsigned slow_us;	/* sleep per output chunk: a slow reader */
	cJSON *res;
};

static void on_out(void *ud, uint32_t id, const char *p, size_t n)
{
	struct run *r = ud;
	r->out_total += n;
	for (size_t i = 0; i < n; i++)
		r->out_hash = (r->out_hash ^ (uint8_t)p[i]) * 1099511628211ULL;
	if (r->keep)
		buf_append(&r->out, p, n);
	if (r->slow_us)
		usleep(r->slow_us);
}

static void on_err(void *ud, uint32_t id, const char *p, size_t n)
{
	struct run *r = ud;
	r->nerr_cb++;
	buf_append(&r->err, p, n);
}

static void on_result(void *ud, uint32_t id, cJSON *res)
{
	((struct run *)ud)->res = res;
}

static void run_init(struct run *r)
{
	*r = (struct run){ .keep = true, .out_hash = 14695981039346656037ULL };
	buf_init(&r->out, 8u << 20);
	buf_init(&r->err, 1u << 20);
}

static void run_free(struct run *r)
{
	buf_free(&r->out);
	buf_free(&r->err);
	cJSON_Delete(r->res);
}

/* Drive the connection for up to ms, or until the run has its result or
 * cond (if any) holds. */
static void drive(struct box_conn *c, struct run *r, int64_t ms, bool (*cond)(struct run *))
{
	int64_t until = now_ms() + ms;
	while (now_ms() < until && !(r && r->res) && !(cond && cond(r))) {
		struct pollfd pf = { .fd = box_conn_fd(c),
				     .events = (short)(POLLIN | (box_conn_events(c) & EPOLLOUT ? POLLOUT : 0)) };
		if (poll(&pf, 1, 50) > 0 &&
		    box_conn_io(c, (pf.revents & POLLOUT ? EPOLLOUT : 0) |
				       (pf.revents & (POLLIN | POLLHUP | POLLERR) ? EPOLLIN : 0)) < 0)
			return;
		box_conn_tick(c);
	}
}

static const char *outcome(const struct run *r)
{
	const char *o = cJSON_GetStringValue(cJSON_GetObjectItem(r->res, "outcome"));
	return o ? o : "(none)";
}

static int exit_code(const struct run *r)
{
	const cJSON *x = cJSON_GetObjectItem(r->res, "exit_code");
	return cJSON_IsNumber(x) ? x->valueint : -1;
}

static const struct box_call_cbs cbs = { .output = on_out, .result = on_result, .output_err = on_err };

static int start(struct box_conn *c, struct run *r, const char *cmd, bool input, int64_t limit_ms, uint32_t *id)
{
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "command", cmd);
	struct box_call_req rq = { .tool = "bash", .args = args, .left_ms = -1, .limit_ms = limit_ms,
				   .stream = true, .input = input };
	struct err e = { 0 };
	int k = box_call_start(c, &rq, &cbs, r, id, &e);
	cJSON_Delete(args);
	if (k < 0)
		diag("box_call_start: %s", e.msg);
	return k;
}

/* Queue all of p, driving the connection while its queue is full. */
static int input_all(struct box_conn *c, uint32_t id, const char *p, size_t n)
{
	size_t off = 0;
	int64_t until = now_ms() + 60000;
	while (off < n && now_ms() < until) {
		size_t k = n - off < BOX_INPUT_MAX ? n - off : BOX_INPUT_MAX;
		int r = box_call_input(c, id, p + off, k);
		if (r == -ENOBUFS) {
			drive(c, NULL, 20, NULL);
			continue;
		}
		if (r < 0)
			return r;
		off += k;
	}
	return off == n ? 0 : -ETIMEDOUT;
}

static long guest_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "re");
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* ward-guest's CPU time so far (utime + stime), in clock ticks. */
static long guest_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	/* Past the command name, which may hold spaces: field 3 on. */
	const char *p = strrchr(buf, ')');
	long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st) != 2)
		return -1;
	return ut + st;
}

static bool has_line(struct run *r)
{
	return r->out.len && memchr(r->out.data, '\n', r->out.len) != NULL;
}

int main(int argc, char **argv)
{
	const char *backend = argc > 1 ? argv[1] : "ns";
	bool vm = !strcmp(backend, "vm");
	if (geteuid() != 0)
		tap_skip_all("needs root (the box's workspace is loop-mounted)");
	if (!getenv("WARD_GUEST") || !getenv("WARD_KEEPER"))
		tap_skip_all("WARD_GUEST or WARD_KEEPER is not set");
	if (vm) {
		glob_t g;
		int gr = glob("/boot/vmlinuz-*", 0, NULL, &g);
		globfree(&g);
		if (system("command -v qemu-system-x86_64 >/dev/null") != 0 || gr != 0)
			tap_skip_all("QEMU or a kernel in /boot is missing (see tests/integration/vm.sh)");
	}
	char tmp[] = "/tmp/ward-test.XXXXXX", path[128];
	if (!mkdtemp(tmp))
		return 1;
	snprintf(path, sizeof(path), "%s/state", tmp);
	setenv("XDG_STATE_HOME", path, 1);
	snprintf(path, sizeof(path), "%s/config", tmp);
	setenv("XDG_CONFIG_HOME", path, 1);
	signal(SIGPIPE, SIG_IGN);

	struct box_opts o;
	box_opts_default(&o);
	o.backend = backend;
	o.guest_path = getenv("WARD_GUEST");
	o.keeper_path = getenv("WARD_KEEPER");
	o.owner = getpid();
	char name[BOX_NAME_MAX + 1];
	struct err e = { 0 };
	struct box_conn *c = NULL;
	if (box_create(&o, name, sizeof(name), &e) < 0 || box_connect(name, &c, &e) < 0) {
		diag("%s", e.msg);
		ok(0, "a %s box is created", backend);
		return tap_done();
	}
	ok(1, "a %s box is created", backend);
	cJSON *info = NULL;
	pid_t guest = 0;
	if (box_info(c, &info, &e) == 0)
		guest = (pid_t)cJSON_GetNumberValue(cJSON_GetObjectItem(info, "guest_pid"));
	cJSON_Delete(info);

	/* cat echoes 3 MiB (frames split at PROTO_MAX_PAYLOAD), in order. */
	struct run r;
	uint32_t id;
	run_init(&r);
	size_t big = 3u << 20;
	char *data = malloc(big);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)('a' + (i * 7 + i / 4099) % 26);
	ok(start(c, &r, "ls /proc/self/fd | tr '\\n' ' '; echo; cat", true, 0, &id) == 0, "a stdin call starts");
	drive(c, &r, 20000, has_line);
	is_str(r.out.data ? r.out.data : "", "0 1 2 3 \n", "its command holds fds 0, 1, 2 only (3: ls's own directory)");
	if (!vm && guest > 0) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "python3 %s %d >/dev/null", argc > 2 ? argv[2] : "fd-audit.py", (int)guest);
		ok(system(cmd) == 0, "the fd audit passes with a stdin call running");
	}
	if (!vm && guest > 0) {
		/* Of the command's stdin pipe, ward-guest holds one end: the
		 * write end. */
		struct run q;
		uint32_t qid;
		run_init(&q);
		start(c, &q, "readlink /proc/self/fd/0; exec cat", true, 0, &qid);
		drive(c, &q, 20000, has_line);
		buf_cstr(&q.out);
		char pipe_name[64] = "";
		sscanf(q.out.data ? q.out.data : "", "%63s", pipe_name);
		int ends = 0, writers = 0;
		for (int fd = 0; fd < 4096 && pipe_name[0]; fd++) {
			char lp[64], target[64] = "", fi[64], line[128];
			snprintf(lp, sizeof(lp), "/proc/%d/fd/%d", (int)guest, fd);
			ssize_t k = readlink(lp, target, sizeof(target) - 1);
			if (k <= 0 || (target[k] = 0, strcmp(target, pipe_name)))
				continue;
			ends++;
			snprintf(fi, sizeof(fi), "/proc/%d/fdinfo/%d", (int)guest, fd);
			FILE *f = fopen(fi, "re");
			unsigned flags = 0;
			while (f && fgets(line, sizeof(line), f))
				sscanf(line, "flags: %o", &flags);
			if (f)
				fclose(f);
			writers += (flags & O_ACCMODE) == O_WRONLY;
		}
		ok(!strncmp(pipe_name, "pipe:", 5), "the command's stdin is a pipe (%s)", pipe_name);
		ok(ends == 1 && writers == 1, "ward-guest holds one end of it, the write end (%d ends, %d writing)", ends,
		   writers);
		box_call_input_close(c, qid);
		drive(c, &q, 20000, NULL);
		run_free(&q);
	}
	r.out.len = 0;
	ok(input_all(c, id, data, big) == 0, "3 MiB of INPUT are queued");
	ok(box_call_input(c, id, "tail\n", 5) == 0, "and a small one after");
	ok(box_call_input_close(c, id) == 0, "EOF is queued");
	is_int(box_call_input(c, id, "x", 1), -EPIPE, "INPUT after EOF is refused here");
	drive(c, &r, 120000, NULL);
	ok(r.out.len == big + 5 && !memcmp(r.out.data, data, big) && !memcmp(r.out.data + big, "tail\n", 5),
	   "cat echoed every byte, in order (%zu of %zu)", r.out.len, big + 5);
	is_str(outcome(&r), "ok", "EOF: cat exits and the call is ok");
	is_int(exit_code(&r), 0, "with exit code 0");
	is_int(box_call_input(c, id, "x", 1), -ENOENT, "INPUT to the ended call: -ENOENT");
	run_free(&r);
	free(data);

	/* stderr apart from stdout. */
	run_init(&r);
	start(c, &r, "echo out; echo err >&2; echo out2", true, 0, &id);
	box_call_input_close(c, id);
	drive(c, &r, 60000, NULL);
	buf_cstr(&r.out);
	buf_cstr(&r.err);
	is_str(r.out.data ? r.out.data : "", "out\nout2\n", "stdout comes through output");
	is_str(r.err.data ? r.err.data : "", "err\n", "stderr through output_err, apart");
	is_str(outcome(&r), "ok", "and the call is ok");
	run_free(&r);

	/* INPUT racing the end of a call that never reads it: harmless. */
	run_init(&r);
	start(c, &r, "sleep 0.5; exit 3", true, 0, &id);
	int sent = 0;
	while (!r.res && sent < 2000) {
		if (box_call_input(c, id, "noise\n", 6) == 0)
			sent++;
		drive(c, &r, 5, NULL);
	}
	drive(c, &r, 30000, NULL);
	is_int(exit_code(&r), 3, "a call whose command ignores INPUT ends as it would (%d frames sent)", sent);
	ok(r.err.len == 0, "with no error for INPUT that came after it ended");
	run_free(&r);

	/* 64 MB to a reader that starts late and reads slowly: no byte lost.
	 * More than every queue on the way holds together (the keeper's for
	 * the client, 16 MiB; the guest's, GUEST_STREAM_QUEUE and a little),
	 * so the command itself must have been held back. */
	long hwm0 = !vm && guest > 0 ? guest_hwm_kb(guest) : -1;
	run_init(&r);
	r.keep = false;
	const char *gen = "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 64000000";
	start(c, &r, gen, true, 0, &id);
	box_call_input_close(c, id);
	sleep(3);	/* not read at all: every queue fills */
	r.slow_us = 300;
	drive(c, &r, 300000, NULL);
	uint64_t want = 14695981039346656037ULL;
	const char line[] = "0123456789abcdefghijklmnopqrstuvwxyz\n";
	for (size_t i = 0; i < 64000000; i++)
		want = (want ^ (uint8_t)line[i % (sizeof(line) - 1)]) * 1099511628211ULL;
	is_int(r.out_total, 64000000, "all 64 MB of stdout arrived");
	ok(r.out_hash == want, "byte for byte (checksum)");
	is_str(outcome(&r), "ok", "and the call is ok");
	if (hwm0 > 0) {
		long hwm1 = guest_hwm_kb(guest);
		ok(hwm1 - hwm0 < GUEST_HWM_KB, "the guest's memory stayed bounded (peak grew %ld KiB; at most %d)",
		   hwm1 - hwm0, GUEST_HWM_KB);
	}
	run_free(&r);

	/* Cancel ends a stdin call and its children: the canary never writes. */
	run_init(&r);
	int64_t t0 = now_ms();
	start(c, &r, "sleep 1000 & (sleep 3; touch /workspace/canary) & echo up; cat", true, 0, &id);
	drive(c, &r, 20000, has_line);
	box_call_cancel(c, id);
	drive(c, &r, 20000, NULL);
	is_str(outcome(&r), "cancelled", "a cancel ends the stdin call");
	int64_t ms = now_ms() - t0;
	ok(ms < 3000, "well before its child's canary is due (%lld ms)", (long long)ms);
	run_free(&r);
	sleep(4);
	run_init(&r);
	start(c, &r, "test -e /workspace/canary && echo ALIVE; ps -eo args | grep -c '^sleep'", false, 0, &id);
	drive(c, &r, 30000, NULL);
	buf_cstr(&r.out);
	ok(r.out.data && !strstr(r.out.data, "ALIVE"), "the canary never appeared: its child died");
	run_free(&r);
	/* Twin: the same child, not cancelled, does write. */
	run_init(&r);
	start(c, &r, "(sleep 1; touch /workspace/canary2) & sleep 2; test -e /workspace/canary2 && echo ALIVE", true, 0,
	      &id);
	drive(c, &r, 30000, NULL);
	buf_cstr(&r.out);
	ok(r.out.data && strstr(r.out.data, "ALIVE"), "twin: not cancelled, the canary appears");
	run_free(&r);

	/* Without input: stdin /dev/null, output merged, as before. */
	run_init(&r);
	start(c, &r, "readlink /proc/self/fd/0; cat; echo e >&2", false, 0, &id);
	drive(c, &r, 30000, NULL);
	buf_cstr(&r.out);
	is_str(r.out.data ? r.out.data : "", "/dev/null\ne\n", "a call without input: stdin /dev/null, stderr merged");
	is_int(r.nerr_cb, 0, "and nothing through output_err");
	run_free(&r);

	/* A command that closes its stdin: ward-guest closes its end at once
	 * rather than being woken for it again and again (EPOLLERR). */
	if (guest > 0 && !vm) {
		long t0 = guest_cpu_ticks(guest);
		run_init(&r);
		start(c, &r, "exec 0<&-; sleep 2", true, 0, &id);
		drive(c, &r, 30000, NULL);
		long used = guest_cpu_ticks(guest) - t0;
		is_str(outcome(&r), "ok", "a command that closes its stdin ends as it should");
		ok(used >= 0 && used < 50, "and ward-guest stayed idle meanwhile (%ld clock ticks in 2 s)", used);
		run_free(&r);
	}

	/* Many stdin calls and a host that reads nothing for a while: each
	 * call's pipes leave the loop before the queue passes its mark, so the
	 * queue stays under its ceiling and the box lives. */
	if (!vm) {
		enum { NCALLS = 80 };
		static struct run many[NCALLS];
		static uint32_t ids[NCALLS];
		int begun = 0, nok = 0, whole = 0;
		for (int i = 0; i < NCALLS; i++) {
			run_init(&many[i]);
			many[i].keep = false;
			begun += start(c, &many[i], "head -c 1000000 /dev/zero", true, 0, &ids[i]) == 0;
		}
		sleep(4);
		int64_t until = now_ms() + 120000;
		for (int done = 0; done < NCALLS && now_ms() < until;) {
			drive(c, NULL, 100, NULL);
			done = 0;
			for (int i = 0; i < NCALLS; i++)
				done += many[i].res != NULL;
		}
		for (int i = 0; i < NCALLS; i++) {
			nok += many[i].res && !strcmp(outcome(&many[i]), "ok");
			whole += many[i].out_total == 1000000;
			run_free(&many[i]);
		}
		is_int(begun, NCALLS, "%d stdin calls at once are started", NCALLS);
		is_int(nok, NCALLS, "all end ok though the host read nothing for 4 s");
		is_int(whole, NCALLS, "each with all of its 1 MB");
	}

	/* A long-lived call: a 7-day limit is taken, and runs. */
	run_init(&r);
	int64_t week = 7LL * 24 * 3600 * 1000;
	ok(start(c, &r, "cat", true, week, &id) == 0, "a 7-day limit is accepted");
	drive(c, &r, 1000, NULL);
	box_call_input(c, id, "hello\n", 6);
	drive(c, &r, 20000, has_line);
	is_str(r.out.data ? r.out.data : "", "hello\n", "and the call runs");
	box_call_input_close(c, id);
	drive(c, &r, 20000, NULL);
	is_str(outcome(&r), "ok", "and ends at EOF");
	run_free(&r);
	run_init(&r);
	ok(start(c, &r, "cat", true, BUDGET_LIMIT_MAX_MS + 1, &id) == -EINVAL, "twin: past the maximum limit is refused");
	ok(start(c, &r, "", false, 0, &id) == 0, "and a plain call still is not");
	drive(c, &r, 20000, NULL);
	run_free(&r);

	box_disconnect(c);
	box_destroy(name, &e);
	char rm[200];
	snprintf(rm, sizeof(rm), "rm -rf %s", tmp);
	if (system(rm) != 0)
		diag("could not remove %s", tmp);
	return tap_done();
}
