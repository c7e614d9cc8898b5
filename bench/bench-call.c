/* Warm-box call latency: N calls over one connection, median and p90 in
 * microseconds, next to spawning /bin/true and `bash -c true` on the host,
 * and to starting `true` as a background job (the call's answer: the job
 * started; its end is waited for outside the time), interleaved call by
 * call; and to `bash -c true` spawned in a PID, mount and user namespace of
 * its own (the isolation the bash tool gives each call: its floor; as root
 * only).
 * usage: bench-call BOX N */
#define _GNU_SOURCE 1
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/timeutil.h"
#include "sandbox/box.h"

extern char **environ;

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%s\t%lld\t%lld\n", what, (long long)v[n / 2], (long long)v[n * 9 / 10]);
}

static int64_t one_call(struct box_conn *c, const char *tool, const cJSON *args)
{
	struct err e = { 0 };
	cJSON *res = NULL;
	int64_t t0 = now_us();
	const struct box_call_req rq = { .tool = tool, .args = args, .left_ms = -1 };
	int r = box_call(c, &rq, NULL, NULL, -1, &res, &e);
	int64_t t = now_us() - t0;
	cJSON_Delete(res);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", tool, e.msg);
		return -1;
	}
	return t;
}

/* A job started: the call's time; then its end, untimed (a box runs 16 at
 * once at most). */
static int64_t one_job(struct box_conn *c, const cJSON *args)
{
	struct err e = { 0 };
	cJSON *res = NULL;
	int64_t t0 = now_us();
	const struct box_call_req rq = { .tool = "bash", .args = args, .left_ms = -1 };
	int r = box_call(c, &rq, NULL, NULL, -1, &res, &e);
	int64_t t = now_us() - t0;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "job"), "id");
	if (r < 0 || !cJSON_IsNumber(id)) {
		fprintf(stderr, "bash background: %s\n", r < 0 ? e.msg : "no job started");
		cJSON_Delete(res);
		return -1;
	}
	cJSON *w = cJSON_CreateObject();
	cJSON_AddNumberToObject(w, "id", id->valuedouble);
	cJSON_AddNumberToObject(w, "wait", 10);
	cJSON_Delete(res);
	r = one_call(c, "job_output", w) < 0 ? -1 : 0;
	cJSON_Delete(w);
	return r < 0 ? -1 : t;
}

static int64_t one_spawn(char *const *av)
{
	pid_t p;
	int64_t t0 = now_us();
	if (posix_spawn(&p, av[0], NULL, NULL, av, environ) != 0)
		return -1;
	waitpid(p, NULL, 0);
	return now_us() - t0;
}

/* The same spawn in what the bash tool gives each call: a PID and mount
 * namespace of its own with its own /proc, then a user namespace (no map
 * written: ward-guest's round trip for that is not counted), its init
 * forking the command. The floor of a call with the call's isolation. */
static int64_t one_ns_spawn(char *const *av)
{
	int64_t t0 = now_us();
	struct clone_args a = { .flags = CLONE_NEWPID | CLONE_NEWNS, .exit_signal = SIGCHLD };
	pid_t p = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (p < 0)
		return -1;
	if (p == 0) {
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 || unshare(CLONE_NEWUSER) < 0)
			_exit(126);
		pid_t q = fork();
		if (q == 0) {
			execv(av[0], av);
			_exit(127);
		}
		int st = 0;
		waitpid(q, &st, 0);
		_exit(q < 0 ? 125 : WEXITSTATUS(st));
	}
	int st = 0;
	waitpid(p, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? now_us() - t0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 64;
	int n = atoi(argv[2]);
	if (n < 1)
		return 64;
	int64_t *t[6];
	for (int k = 0; k < 6; k++)
		t[k] = calloc((size_t)n, sizeof(int64_t));
	struct err e = { 0 };
	struct box_conn *c;
	if (box_connect(argv[1], &c, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	cJSON *w = cJSON_CreateObject();
	char content[4097];
	memset(content, 'x', 4096);
	for (int i = 63; i < 4096; i += 64)
		content[i] = '\n';
	content[4096] = 0;
	cJSON_AddStringToObject(w, "path", "/tmp/bench-4k");
	cJSON_AddStringToObject(w, "content", content);
	if (one_call(c, "write", w) < 0)
		return 1;
	cJSON_Delete(w);
	cJSON *bash = cJSON_Parse("{\"command\":\"true\"}");
	cJSON *job = cJSON_Parse("{\"command\":\"true\",\"background\":true}");
	cJSON *read = cJSON_Parse("{\"path\":\"/tmp/bench-4k\"}");
	char *true_av[] = { "/bin/true", NULL };
	char *bash_av[] = { "/bin/bash", "-c", "true", NULL };
	/* The namespaced spawn needs root (CAP_SYS_ADMIN for the PID and mount
	 * namespaces): without it, that row is left out, not the others. */
	bool ns_ok = one_ns_spawn(bash_av) >= 0;
	/* Interleaved, so the machine's noise falls on every row alike. */
	for (int i = 0; i < n; i++) {
		t[0][i] = one_call(c, "bash", bash);
		t[1][i] = one_call(c, "read", read);
		t[2][i] = one_spawn(true_av);
		t[3][i] = one_spawn(bash_av);
		t[4][i] = one_job(c, job);
		t[5][i] = ns_ok ? one_ns_spawn(bash_av) : 0;
		for (int k = 0; k < 6; k++)
			if (t[k][i] < 0) {
				fprintf(stderr, "bench-call: row %d failed\n", k);
				return 1;
			}
	}
	box_disconnect(c);
	report("bash true (warm box)", t[0], n);
	report("read 4 KiB (warm box)", t[1], n);
	report("spawn /bin/true (host)", t[2], n);
	report("spawn bash -c true (host)", t[3], n);
	report("job start true (warm box)", t[4], n);
	if (ns_ok)
		report("spawn bash -c true in namespaces of its own (host)", t[5], n);
	cJSON_Delete(bash);
	cJSON_Delete(job);
	cJSON_Delete(read);
	for (int k = 0; k < 6; k++)
		free(t[k]);
	return 0;
}
