/* Background jobs: a bash call with "background": true starts its command
 * as a process tree of its own (the PID namespace, and in a VM the cgroup,
 * a call's tree has: proc_start), which no call owns. It lives until it
 * ends, is killed (job_kill), its own limit passes, or the box goes: the
 * box's PID namespace or VM ends it with everything else. Its output goes
 * to a bounded log (base/logbuf.h) read by offset; its end is an event to
 * the host, which tells the model. */
#include "guest/guest.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/logbuf.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "proto/proto.h"
#include "tools/job.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A job's process tree's call id (its cgroup's name in a VM): apart from
 * the host's ids. */
#define BGJOB_ID_BASE 0x80000000u
#define BGJOB_WAITERS_MAX 64
#define BGJOB_PORTS_MAX 16
#define BGJOB_CMD_SHOWN 200
#define BGJOB_STR_(x) #x
#define BGJOB_STR(x) BGJOB_STR_(x)

struct bgjob {
	unsigned id;
	char *command;
	struct call *pc;	/* its process tree (proc_start's) */
	struct logbuf out;
	uint64_t read_off;	/* where the model's last read stopped */
	int64_t start_ms, end_ms, limit_ms, kill_at_ms;
	bool stopping, ended;
	const char *why;	/* who ended it: NULL when it ended by itself */
	char why_buf[80];
	struct bgjob *next;
};

static struct {
	const struct guest_cfg *cfg;
	struct loop *loop;
	struct bgjob *jobs;	/* newest first */
	unsigned next_id;
	struct call *waiters[BGJOB_WAITERS_MAX];	/* job_output with a wait, job_kill */
	size_t nwait;
} J;

void bgjob_init(struct loop *l, const struct guest_cfg *cfg)
{
	J.loop = l;
	J.cfg = cfg;
}

static unsigned bgjob_running(void)
{
	unsigned n = 0;
	for (struct bgjob *j = J.jobs; j; j = j->next)
		n += !j->ended;
	return n;
}

static struct bgjob *bgjob_find(unsigned id)
{
	for (struct bgjob *j = J.jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

static void bgjob_close_fds(struct call *pc)
{
	if (pc->out_fd >= 0) {
		loop_del(J.loop, pc->out_fd);
		close(pc->out_fd);
		pc->out_fd = -1;
	}
	if (pc->status_fd >= 0) {
		close(pc->status_fd);
		pc->status_fd = -1;
	}
	if (pc->cg_fd >= 0) {
		close(pc->cg_fd);
		pc->cg_fd = -1;
		char name[32];
		snprintf(name, sizeof(name), "call-%u", pc->id);
		unlinkat(J.cfg->cgroup_fd, name, AT_REMOVEDIR);
	}
}

static void bgjob_free(struct bgjob *j)
{
	bgjob_close_fds(j->pc);
	capture_free(&j->pc->cap);
	buf_free(&j->pc->in_pend);
	free(j->pc);
	logbuf_free(&j->out);
	free(j->command);
	free(j);
}

/* The command as shown: its first line, cut. */
static void bgjob_cmd_shown(const struct bgjob *j, char *out, size_t n)
{
	size_t l = strcspn(j->command, "\n");
	bool cut = l > BGJOB_CMD_SHOWN || j->command[l];
	if (l > BGJOB_CMD_SHOWN)
		l = BGJOB_CMD_SHOWN;
	snprintf(out, n, "%.*s%s", (int)l, j->command, cut ? " ..." : "");
}

/* How it ended, as the model reads it: "exited with status 0 after 1.2 s". */
static void bgjob_end_text(const struct bgjob *j, char *out, size_t n)
{
	const struct call *pc = j->pc;
	double s = (double)(j->end_ms - j->start_ms) / 1000.0;
	if (!pc->have_status)
		snprintf(out, n, "was killed after %.1f s%s%s", s, j->why ? ": " : "", j->why ? j->why : "");
	else if (WIFSIGNALED(pc->wstatus))
		snprintf(out, n, "was killed by signal %d (%s) after %.1f s%s%s", WTERMSIG(pc->wstatus),
			 sigabbrev_np(WTERMSIG(pc->wstatus)) ? sigabbrev_np(WTERMSIG(pc->wstatus)) : "?", s,
			 j->why ? ": " : "", j->why ? j->why : "");
	else
		snprintf(out, n, "exited with status %d after %.1f s%s%s", WEXITSTATUS(pc->wstatus), s,
			 j->why ? " (" : "", j->why ? j->why : "");
	if (pc->have_status && !WIFSIGNALED(pc->wstatus) && j->why)
		strncat(out, ")", n - strlen(out) - 1);
}

/* The TCP sockets in LISTEN state that the job's processes hold, from the
 * box's own /proc/net (the box's network namespace, or the VM's). */
struct bgjob_port {
	unsigned port;
	char addr[48];
};

static bool hexval(const char *p, size_t n, uint32_t *ret)
{
	uint32_t v = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*ret = v;
	return true;
}

/* The socket inodes of the job's processes (those of its PID namespace). */
static size_t bgjob_sockets(const struct bgjob *j, unsigned long *inos, size_t cap)
{
	size_t n = 0;
	if (!j->pc->pidns)
		return 0;
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;
	int procs = 0;
	while (d && (de = readdir(d)) && procs < 4096) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		procs++;
		char p[64];
		struct stat st;
		snprintf(p, sizeof(p), "/proc/%s/ns/pid", de->d_name);
		if (stat(p, &st) < 0 || st.st_ino != j->pc->pidns)
			continue;
		snprintf(p, sizeof(p), "/proc/%s/fd", de->d_name);
		_cleanup_closedir_ DIR *fds = opendir(p);
		struct dirent *fe;
		while (fds && (fe = readdir(fds)) && n < cap) {
			char link[64];
			ssize_t k = readlinkat(dirfd(fds), fe->d_name, link, sizeof(link) - 1);
			if (k <= 8 || strncmp(link, "socket:[", 8))
				continue;
			link[k] = 0;
			unsigned long ino = strtoul(link + 8, NULL, 10);
			inos[n++] = ino;
		}
	}
	return n;
}

/* One line of /proc/net/tcp or tcp6: "sl local rem st ... uid timeout
 * inode". */
static bool bgjob_tcp_line(char *line, bool v6, const unsigned long *inos, size_t ninos, struct bgjob_port *ret)
{
	char *f[12];
	size_t nf = 0;
	for (char *p = line; *p && nf < ARRAY_SIZE(f);) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		f[nf++] = p;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = 0;
	}
	if (nf < 10 || strcmp(f[3], "0A"))	/* TCP_LISTEN */
		return false;
	unsigned long ino = strtoul(f[9], NULL, 10);
	bool ours = false;
	for (size_t i = 0; i < ninos && !ours; i++)
		ours = inos[i] == ino;
	char *colon = strchr(f[1], ':');
	uint32_t port;
	size_t alen = v6 ? 32 : 8;
	if (!ours || !colon || (size_t)(colon - f[1]) != alen || !hexval(colon + 1, strlen(colon + 1), &port) || port > 65535)
		return false;
	uint32_t words[4];
	for (size_t i = 0; i < alen / 8; i++)
		if (!hexval(f[1] + 8 * i, 8, &words[i]))
			return false;
	/* Each 32-bit word is in the kernel's byte order, which is this one's. */
	char a[INET6_ADDRSTRLEN];
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, words, a, sizeof(a)))
		return false;
	ret->port = port;
	snprintf(ret->addr, sizeof(ret->addr), v6 ? "[%s]" : "%s", a);
	return true;
}

static size_t bgjob_ports(const struct bgjob *j, struct bgjob_port *out, size_t cap)
{
	if (j->ended)
		return 0;
	unsigned long inos[256];
	size_t ninos = bgjob_sockets(j, inos, ARRAY_SIZE(inos)), n = 0;
	if (!ninos)
		return 0;
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
		_cleanup_free_ char *text = NULL;
		if (fdio_read_file(AT_FDCWD, files[f], 1u << 20, &text, NULL) < 0)
			continue;
		char *save = strchr(text, '\n');	/* the header */
		while (save && *++save && n < cap) {
			char *line = save;
			save = strchr(line, '\n');
			if (save)
				*save = 0;
			struct bgjob_port p;
			if (!bgjob_tcp_line(line, f == 1, inos, ninos, &p))
				continue;
			bool dup = false;
			for (size_t i = 0; i < n; i++)
				dup |= out[i].port == p.port && !strcmp(out[i].addr, p.addr);
			if (!dup)
				out[n++] = p;
			if (!save)
				break;
		}
	}
	return n;
}

/* The job as JSON: what job_list, job_output and the events carry. ports:
 * look for them (a job just started has none yet: its start is not
 * slowed by a walk of /proc). */
static cJSON *bgjob_json(const struct bgjob *j, bool ports_too)
{
	cJSON *o = cJSON_CreateObject();
	char cmd[BGJOB_CMD_SHOWN + 8];
	bgjob_cmd_shown(j, cmd, sizeof(cmd));
	cJSON_AddNumberToObject(o, "id", j->id);
	cJSON_AddStringToObject(o, "command", cmd);
	cJSON_AddStringToObject(o, "state", j->ended ? "ended" : "running");
	int64_t end = j->ended ? j->end_ms : now_ms();
	cJSON_AddNumberToObject(o, "elapsed_ms", (double)(end - j->start_ms));
	if (j->limit_ms)
		cJSON_AddNumberToObject(o, "limit_ms", (double)j->limit_ms);
	if (j->ended) {
		if (j->pc->have_status && !WIFSIGNALED(j->pc->wstatus))
			cJSON_AddNumberToObject(o, "exit_code", WEXITSTATUS(j->pc->wstatus));
		else
			cJSON_AddNumberToObject(o, "signal", j->pc->have_status ? WTERMSIG(j->pc->wstatus) : SIGKILL);
		if (j->why)
			cJSON_AddStringToObject(o, "why", j->why);
	}
	cJSON_AddNumberToObject(o, "output_bytes", (double)j->out.total);
	cJSON_AddNumberToObject(o, "dropped_bytes", (double)logbuf_dropped(&j->out));
	struct bgjob_port ports[BGJOB_PORTS_MAX];
	size_t np = ports_too ? bgjob_ports(j, ports, ARRAY_SIZE(ports)) : 0;
	cJSON *pa = cJSON_AddArrayToObject(o, "ports");
	for (size_t i = 0; i < np; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "port", ports[i].port);
		cJSON_AddStringToObject(p, "addr", ports[i].addr);
		cJSON_AddItemToArray(pa, p);
	}
	return o;
}

/* One line: "1  running 12.0 s  ports 0.0.0.0:8000  python3 -m http.server". */
static void bgjob_line(const struct bgjob *j, struct buf *t)
{
	char cmd[BGJOB_CMD_SHOWN + 8], st[200];
	bgjob_cmd_shown(j, cmd, sizeof(cmd));
	if (j->ended)
		bgjob_end_text(j, st, sizeof(st));
	else
		snprintf(st, sizeof(st), "running for %.1f s%s", (double)(now_ms() - j->start_ms) / 1000.0,
			 j->stopping ? ", being killed" : "");
	buf_printf(t, "job %u: %s", j->id, st);
	struct bgjob_port ports[BGJOB_PORTS_MAX];
	size_t np = bgjob_ports(j, ports, ARRAY_SIZE(ports));
	for (size_t i = 0; i < np; i++)
		buf_printf(t, "%s%s:%u", i ? ", " : "; listening on ", ports[i].addr, ports[i].port);
	buf_printf(t, "\n  $ %s\n", cmd);
}

static void bgjob_event(const char *what, const struct bgjob *j)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "job");
	cJSON_AddStringToObject(ev, "event", what);
	cJSON *jj = bgjob_json(j, false);
	cJSON_AddItemToObject(ev, "job", jj);
	cJSON_AddNumberToObject(ev, "running", bgjob_running());
	if (j->ended) {
		char end[200];
		bgjob_end_text(j, end, sizeof(end));
		cJSON_AddStringToObject(ev, "how", end);
		/* The end of its output, whole UTF-8 (the cut may split one). */
		char tail[JOB_TOLD_TAIL];
		uint64_t from, at = j->out.total > sizeof(tail) ? j->out.total - sizeof(tail) : 0;
		size_t n = logbuf_read(&j->out, at, tail, sizeof(tail), &from);
		struct buf clean;
		buf_init(&clean, sizeof(tail) * 4);
		utf8_sanitize(tail, n, &clean);
		cJSON_AddStringToObject(ev, "tail", clean.data ? clean.data : "");
		buf_free(&clean);
	}
	guest_send_json(PROTO_EVENT, 0, ev);
	cJSON_Delete(ev);
}

static void bgjob_stop(struct bgjob *j, const char *why)
{
	if (j->stopping || j->ended)
		return;
	j->stopping = true;
	snprintf(j->why_buf, sizeof(j->why_buf), "%s", why);
	j->why = j->why_buf;
	j->kill_at_ms = now_ms() + JOB_KILL_GRACE_MS;
	proc_signal(j->pc, SIGTERM);
}

static void bgjob_waiter_drop(struct call *c)
{
	for (size_t i = 0; i < J.nwait; i++)
		if (J.waiters[i] == c) {
			J.waiters[i] = J.waiters[--J.nwait];
			return;
		}
}

/* job_output's answer: the state, then output from an offset. */
static void bgjob_answer_output(struct call *c, struct bgjob *j)
{
	struct buf t;
	buf_init(&t, TOOL_TEXT_MAX);
	bgjob_line(j, &t);
	const cJSON *oa = cJSON_GetObjectItemCaseSensitive(c->args, "offset");
	uint64_t off = cJSON_IsNumber(oa) ? (uint64_t)oa->valuedouble : j->read_off, from;
	_cleanup_free_ char *tmp = malloc(JOB_READ_MAX);
	size_t n = tmp ? logbuf_read(&j->out, off, tmp, JOB_READ_MAX, &from) : 0;
	if (!tmp)
		from = off;
	uint64_t next = from + n;
	if (from > off && off < j->out.total)
		buf_printf(&t, "[ward: %llu bytes of output between offsets %llu and %llu were dropped (a job keeps "
			   "its first %u KiB and last %u KiB); reading on from %llu]\n",
			   (unsigned long long)(from - off), (unsigned long long)off, (unsigned long long)from,
			   JOB_OUT_HEAD >> 10, JOB_OUT_TAIL >> 10, (unsigned long long)from);
	if (!n)
		buf_printf(&t, "[ward: no output %s offset %llu; the job has written %llu bytes]\n",
			   j->out.total ? "past" : "at", (unsigned long long)from, (unsigned long long)j->out.total);
	else
		buf_printf(&t, "[ward: output bytes %llu to %llu of %llu]\n", (unsigned long long)from,
			   (unsigned long long)next, (unsigned long long)j->out.total);
	buf_append(&t, tmp, n);
	if (n && tmp[n - 1] != '\n')
		buf_append(&t, "\n", 1);
	if (next < j->out.total)
		buf_printf(&t, "[ward: more output follows: read on with offset %llu]\n", (unsigned long long)next);
	j->read_off = next;
	cJSON *x = cJSON_CreateObject();
	cJSON *jj = bgjob_json(j, true);
	cJSON_AddNumberToObject(jj, "offset", (double)from);
	cJSON_AddNumberToObject(jj, "next_offset", (double)next);
	cJSON_AddItemToObject(x, "job", jj);
	guest_result(c, OUTCOME_OK, &t, x);
	buf_free(&t);
}

static void bgjob_answer_kill(struct call *c, struct bgjob *j, bool was_ended)
{
	struct buf t;
	buf_init(&t, TOOL_TEXT_MAX);
	char end[200];
	bgjob_end_text(j, end, sizeof(end));
	buf_printf(&t, "job %u %s%s\n", j->id, was_ended ? "had ended already: it " : "", end);
	char tail[2000];
	uint64_t from, at = j->out.total > sizeof(tail) ? j->out.total - sizeof(tail) : 0;
	size_t n = logbuf_read(&j->out, at, tail, sizeof(tail), &from);
	if (n) {
		buf_printf(&t, "the end of its output (bytes %llu to %llu):\n", (unsigned long long)from,
			   (unsigned long long)(from + n));
		buf_append(&t, tail, n);
		if (tail[n - 1] != '\n')
			buf_append(&t, "\n", 1);
	}
	cJSON *x = cJSON_CreateObject();
	cJSON_AddItemToObject(x, "job", bgjob_json(j, true));
	guest_result(c, OUTCOME_OK, &t, x);
	buf_free(&t);
}

static void bgjob_answer_waiter(struct call *c, struct bgjob *j)
{
	bgjob_waiter_drop(c);
	c->jobwait = false;
	if (c->tool == &tool_job_kill)
		bgjob_answer_kill(c, j, false);
	else
		bgjob_answer_output(c, j);
}

static void bgjob_maybe_end(struct bgjob *j)
{
	if (j->ended || !j->pc->init_reaped || !j->pc->out_eof)
		return;
	j->ended = true;
	j->end_ms = now_ms();
	bgjob_close_fds(j->pc);
	bgjob_event("ended", j);
	for (size_t i = 0; i < J.nwait;) {
		struct call *c = J.waiters[i];
		if (c->job_id == j->id)
			bgjob_answer_waiter(c, j);	/* drops it from waiters */
		else
			i++;
	}
}

static void on_job_output(struct loop *l, int fd, uint32_t events, void *data)
{
	struct bgjob *j = data;
	char tmp[65536];
	ssize_t n = fdio_read_some(fd, tmp, sizeof(tmp));
	if (n == -EAGAIN)
		return;
	if (n <= 0) {
		loop_del(l, fd);
		close(fd);
		j->pc->out_fd = -1;
		j->pc->out_eof = true;
		bgjob_maybe_end(j);
		return;
	}
	logbuf_add(&j->out, tmp, (size_t)n);
}

bool bgjob_reaped(pid_t pid)
{
	for (struct bgjob *j = J.jobs; j; j = j->next) {
		struct call *pc = j->pc;
		if (pc->init_pid != pid || pc->init_reaped)
			continue;
		pc->init_reaped = true;
		int s;
		if (pc->status_fd >= 0 && read(pc->status_fd, &s, sizeof(s)) == sizeof(s)) {
			pc->wstatus = s;
			pc->have_status = true;
		}
		bgjob_maybe_end(j);
		return true;
	}
	return false;
}

/* Room for one more: the oldest ended job is forgotten. */
static bool bgjob_make_room(void)
{
	unsigned n = 0;
	struct bgjob **oldest = NULL;
	for (struct bgjob **p = &J.jobs; *p; p = &(*p)->next) {
		n++;
		if ((*p)->ended)
			oldest = p;
	}
	if (n < JOB_KEPT_MAX)
		return true;
	if (!oldest)
		return false;
	struct bgjob *j = *oldest;
	for (size_t i = 0; i < J.nwait; i++)
		if (J.waiters[i]->job_id == j->id)
			return false;
	*oldest = j->next;
	bgjob_free(j);
	return true;
}

void bgjob_start(struct call *c, const char *command)
{
	if (bgjob_running() >= JOB_RUNNING_MAX) {
		guest_result_simple(c, OUTCOME_REFUSED,
				    "not started: the box runs " BGJOB_STR(JOB_RUNNING_MAX) " jobs already, the most at once; "
				    "end one with job_kill first (job_list shows them)");
		return;
	}
	if (!bgjob_make_room()) {
		guest_result_simple(c, OUTCOME_REFUSED, "not started: the box keeps " BGJOB_STR(JOB_KEPT_MAX) " jobs at most "
				    "and none of them can be forgotten yet");
		return;
	}
	struct bgjob *j = calloc(1, sizeof(*j));
	struct call *pc = calloc(1, sizeof(*pc));
	char *cmd = strdup(command);
	if (!j || !pc || !cmd || logbuf_init(&j->out, JOB_OUT_HEAD, JOB_OUT_TAIL) < 0) {
		free(j);
		free(pc);
		free(cmd);
		guest_result_simple(c, OUTCOME_FAILED, "the box could not start the job: out of memory");
		return;
	}
	j->id = ++J.next_id;
	j->command = cmd;
	j->pc = pc;
	j->start_ms = now_ms();
	j->limit_ms = tool_arg_int(c->args, "timeout", 0) * 1000;
	pc->id = BGJOB_ID_BASE + j->id;
	snprintf(pc->key, sizeof(pc->key), "%s", c->key);
	pc->out_fd = pc->status_fd = pc->cg_fd = pc->in_fd = pc->err_fd = -1;
	pc->err_eof = true;
	buf_init(&pc->in_pend, 1);
	capture_init(&pc->cap, 1024, 1024);
	int r = proc_start(pc, J.cfg, command);
	if (r < 0 && pc->init_pid <= 0) {
		char msg[200];
		snprintf(msg, sizeof(msg), "the box could not start the job: %s", strerror(-r));
		J.next_id--;
		j->pc->out_fd = -1;
		bgjob_free(j);
		guest_result_simple(c, OUTCOME_FAILED, msg);
		return;
	}
	/* A start that failed half-way says why in its output, and ends. */
	if (pc->cap.total) {
		char line[1024];
		size_t n = capture_tail(&pc->cap, line, sizeof(line));
		logbuf_add(&j->out, line, n);
	}
	if (pc->out_fd >= 0)
		loop_add(J.loop, pc->out_fd, EPOLLIN, on_job_output, j);
	else
		pc->out_eof = true;
	j->next = J.jobs;
	J.jobs = j;
	struct buf t;
	buf_init(&t, TOOL_TEXT_MAX);
	char cmdshown[BGJOB_CMD_SHOWN + 8];
	bgjob_cmd_shown(j, cmdshown, sizeof(cmdshown));
	buf_printf(&t, "started job %u in the background: %s\n", j->id, cmdshown);
	if (j->limit_ms)
		buf_printf(&t, "Its time limit is %lld s; ", (long long)(j->limit_ms / 1000));
	else
		buf_printf(&t, "It has no time limit of its own; ");
	buf_printf(&t, "it ends with the box. Read its output with job_output {\"id\": %u} (add \"wait\": N to wait "
		   "up to N s for it to end), stop it with job_kill {\"id\": %u}. You are told when it ends.\n",
		   j->id, j->id);
	cJSON *x = cJSON_CreateObject();
	cJSON_AddItemToObject(x, "job", bgjob_json(j, false));
	guest_result(c, OUTCOME_OK, &t, x);
	buf_free(&t);
	bgjob_event("started", j);
}

static void bgjob_answer_list(struct call *c)
{
	struct buf t;
	buf_init(&t, TOOL_TEXT_MAX);
	cJSON *x = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(x, "jobs");
	if (!J.jobs)
		buf_printf(&t, "no jobs: start one with bash {\"command\": ..., \"background\": true}\n");
	/* Oldest first, as they were started. */
	struct bgjob *order[JOB_KEPT_MAX + 1];
	size_t n = 0;
	for (struct bgjob *j = J.jobs; j && n < ARRAY_SIZE(order); j = j->next)
		order[n++] = j;
	while (n--) {
		bgjob_line(order[n], &t);
		cJSON_AddItemToArray(arr, bgjob_json(order[n], true));
	}
	guest_result(c, OUTCOME_OK, &t, x);
	buf_free(&t);
}

void bgjob_call(struct call *c)
{
	if (c->tool == &tool_job_list) {
		bgjob_answer_list(c);
		return;
	}
	unsigned id = (unsigned)tool_arg_int(c->args, "id", 0);
	struct bgjob *j = bgjob_find(id);
	if (!j) {
		char msg[300];
		int k = snprintf(msg, sizeof(msg), "there is no job %u in this box", id);
		if (!J.jobs)
			snprintf(msg + k, sizeof(msg) - (size_t)k, ": none was started (bash with \"background\": true starts one)");
		else
			snprintf(msg + k, sizeof(msg) - (size_t)k, "; its jobs are %u to %u (job_list shows them)",
				 J.jobs->id - (J.jobs->id > JOB_KEPT_MAX ? JOB_KEPT_MAX - 1 : J.jobs->id - 1), J.jobs->id);
		guest_result_simple(c, OUTCOME_BAD_INPUT, msg);
		return;
	}
	bool kill = c->tool == &tool_job_kill;
	int64_t wait_ms = tool_arg_int(c->args, "wait", 0) * 1000;
	if (j->ended || (!kill && !wait_ms)) {
		if (kill)
			bgjob_answer_kill(c, j, true);
		else
			bgjob_answer_output(c, j);
		return;
	}
	if (J.nwait >= BGJOB_WAITERS_MAX) {
		guest_result_simple(c, OUTCOME_REFUSED, "the box has " BGJOB_STR(BGJOB_WAITERS_MAX) " calls waiting on jobs "
				    "already; try again when one has its answer");
		return;
	}
	if (kill)
		bgjob_stop(j, "killed by job_kill");
	c->jobwait = true;
	c->job_id = j->id;
	c->wait_until = kill ? 0 : now_ms() + wait_ms;
	J.waiters[J.nwait++] = c;
}

void bgjob_call_stop(struct call *c, enum outcome why)
{
	bgjob_waiter_drop(c);
	c->jobwait = false;
	char msg[200];
	snprintf(msg, sizeof(msg), "%s while waiting on job %u; the job goes on (job_output reads it)",
		 why == OUTCOME_TIMED_OUT ? "timed out" : "cancelled", c->job_id);
	guest_result_simple(c, why, msg);
}

int64_t bgjob_tick(int64_t now)
{
	int64_t next = -1;
#define NEXT(t) do { if (next < 0 || (t) < next) next = (t); } while (0)
	for (struct bgjob *j = J.jobs; j; j = j->next) {
		if (j->ended)
			continue;
		if (!j->stopping && j->limit_ms) {
			if (now >= j->start_ms + j->limit_ms) {
				char why[80];
				snprintf(why, sizeof(why), "its time limit (%lld s) ran out", (long long)(j->limit_ms / 1000));
				bgjob_stop(j, why);
			} else {
				NEXT(j->start_ms + j->limit_ms);
			}
		}
		if (j->stopping && !j->pc->init_reaped) {
			if (now >= j->kill_at_ms) {
				proc_signal(j->pc, SIGKILL);
				j->kill_at_ms = now + 1000;	/* again, if it is still there */
			}
			NEXT(j->kill_at_ms);
		}
	}
	for (size_t i = 0; i < J.nwait;) {
		struct call *c = J.waiters[i];
		struct bgjob *j = bgjob_find(c->job_id);
		if (j && c->wait_until && now >= c->wait_until) {
			bgjob_answer_waiter(c, j);
			continue;
		}
		if (c->wait_until)
			NEXT(c->wait_until);
		i++;
	}
	return next;
#undef NEXT
}

void bgjob_kill_all(void)
{
	for (struct bgjob *j = J.jobs; j; j = j->next)
		if (!j->ended)
			proc_signal(j->pc, SIGKILL);
}
