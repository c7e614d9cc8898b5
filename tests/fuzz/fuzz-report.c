/* Fuzz target for the readers of what a fleet's tasks left and of its
 * task file (task/report.h), both files another party may have written:
 * the input is a task's result.json (DIR/t/result.json) and the task file
 * (JSON Lines) at once. Whatever the bytes, report_read gives every task
 * a known state, ids of [A-Za-z0-9._-] and strings of valid UTF-8, sorted
 * by id, and totals that count each task once; or it refuses with a
 * message. Built with libFuzzer when -Dfuzz=true (clang); otherwise main()
 * replays the corpus as a test. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/utf8.h"
#include "task/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
}

static void utf8_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
		if (!k)
			abort();
		i += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[256], p[512], tf[512];
	snprintf(dir, sizeof(dir), "%s/fuzz-report.XXXXXX", P_tmpdir);
	if (!mkdtemp(dir))
		abort();
	snprintf(p, sizeof(p), "%s/out", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/out/t", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/out/t/result.json", dir);
	put(p, data, size);
	snprintf(tf, sizeof(tf), "%s/tasks.jsonl", dir);
	put(tf, data, size);
	snprintf(p, sizeof(p), "%s/out", dir);
	struct report r = { 0 };
	struct err e = { 0 };
	if (report_read(p, tf, &r, &e) < 0) {
		if (!e.msg[0])
			abort();
	} else {
		size_t done = 0;
		for (size_t i = 0; i < r.n; i++) {
			const struct report_task *t = &r.t[i];
			if (t->state > REPORT_UNREADABLE || !t->id[0] ||
			    strspn(t->id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(t->id))
				abort();
			if (i && strcmp(r.t[i - 1].id, t->id) >= 0)
				abort();	/* sorted, each id once */
			utf8_ok(t->why);
			utf8_ok(t->task);
			utf8_ok(t->model);
			done += report_done(t);
		}
		if (r.tot.tasks != r.n || r.tot.done != done || !r.n)
			abort();	/* t is there, read or not */
		report_free(&r);
	}
	static const char *const made[] = { "out/t/result.json", "out/t", "out", "tasks.jsonl" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, made[i]);
		if (remove(p))
			abort();	/* the reader leaves nothing of its own there */
	}
	rmdir(dir);
	return 0;
}

#include "replay.h"
