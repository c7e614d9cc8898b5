/* Warm-box call latency: N calls over one connection, median and p90 in
 * microseconds, next to fork+exec of /bin/true measured the same way.
 * usage: bench-call BOX N */
#include <spawn.h>
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

/* n calls of one tool over one connection; latencies into t. */
static int time_calls(struct box_conn *c, const char *tool, const char *args_json, int64_t *t, int n)
{
	struct err e = { 0 };
	cJSON *args = cJSON_Parse(args_json);
	int r = 0;
	for (int i = 0; i < n && r >= 0; i++) {
		cJSON *res = NULL;
		int64_t t0 = now_us();
		r = box_call(c, tool, args, false, NULL, NULL, -1, &res, &e);
		t[i] = now_us() - t0;
		cJSON_Delete(res);
	}
	if (r < 0)
		fprintf(stderr, "%s: %s\n", tool, e.msg);
	cJSON_Delete(args);
	return r;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 64;
	int n = atoi(argv[2]);
	int64_t *t = calloc((size_t)n, sizeof(*t));
	struct err e = { 0 };
	struct box_conn *c;
	if (box_connect(argv[1], &c, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	if (time_calls(c, "bash", "{\"command\":\"true\"}", t, n) < 0)
		return 1;
	report("bash true (warm box)", t, n);
	cJSON *w = cJSON_CreateObject();
	char content[4097];
	memset(content, 'x', 4096);
	for (int i = 63; i < 4096; i += 64)
		content[i] = '\n';
	content[4096] = 0;
	cJSON_AddStringToObject(w, "path", "/tmp/bench-4k");
	cJSON_AddStringToObject(w, "content", content);
	cJSON *res = NULL;
	int r = box_call(c, "write", w, false, NULL, NULL, -1, &res, &e);
	cJSON_Delete(res);
	cJSON_Delete(w);
	if (r < 0 || time_calls(c, "read", "{\"path\":\"/tmp/bench-4k\"}", t, n) < 0)
		return 1;
	report("read 4 KiB (warm box)", t, n);
	box_disconnect(c);
	for (int i = 0; i < n; i++) {
		pid_t p;
		char *av[] = { "/bin/true", NULL };
		int64_t t0 = now_us();
		posix_spawn(&p, "/bin/true", NULL, NULL, av, environ);
		waitpid(p, NULL, 0);
		t[i] = now_us() - t0;
	}
	report("spawn /bin/true (host)", t, n);
	free(t);
	return 0;
}
