/* The floor of a hook: what it costs to run its command at all, as any
 * program that runs it must (a pipe for its stdin, fork, exec of
 * sh -c CMD, the input written, the exit waited for), with nothing of
 * ward's. Prints the median of RUNS, in µs.
 * usage: bench-spawn RUNS INPUT CMD */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/timeutil.h"

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t runs;
	if (argc != 4 || parse_u64(argv[1], &runs) < 0 || !runs || runs > 100000) {
		fprintf(stderr, "usage: bench-spawn RUNS INPUT CMD (RUNS 1 to 100000)\n");
		return 64;
	}
	int64_t *us = calloc(runs, sizeof(*us));
	if (!us)
		return 1;
	size_t len = strlen(argv[2]);
	for (uint64_t i = 0; i < runs; i++) {
		int64_t t0 = now_us();
		int in[2];
		if (pipe(in) < 0) {
			perror("bench-spawn: pipe");
			return 1;
		}
		pid_t pid = fork();
		if (pid == 0) {
			dup2(in[0], 0);
			close(in[0]);
			close(in[1]);
			execl("/bin/sh", "sh", "-c", argv[3], (char *)NULL);
			_exit(127);
		}
		close(in[0]);
		if (pid < 0 || write(in[1], argv[2], len) != (ssize_t)len) {
			perror("bench-spawn: fork or write");
			return 1;
		}
		close(in[1]);
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "bench-spawn: %s did not exit 0\n", argv[3]);
			return 1;
		}
		us[i] = now_us() - t0;
	}
	qsort(us, runs, sizeof(*us), cmp64);
	printf("%lld\n", (long long)us[runs / 2]);
	return 0;
}
