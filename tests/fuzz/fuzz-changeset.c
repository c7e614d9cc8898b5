/* Fuzz target for the host's reader of a vm box's change set
 * (proto/changeset.h): whatever a guest sends, the reader writes nothing
 * outside its target (a sibling directory stays empty and the work
 * directory holds only the two), never reads or writes outside a buffer,
 * and stays within its bounds (entries, bytes). The input is fed in
 * pieces whose sizes come from its first byte, so heads and data cross a
 * feed's edge. Built with libFuzzer when -Dfuzz=true (clang); otherwise
 * main() replays the corpus as a test. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/state.h"
#include "proto/changeset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char work[64], target[96], outside[96];

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!work[0]) {
		snprintf(work, sizeof(work), "/tmp/ward-fuzz-changeset-%d", (int)getpid());
		snprintf(target, sizeof(target), "%s/target", work);
		snprintf(outside, sizeof(outside), "%s/outside", work);
		mkdir(work, 0700);
		mkdir(outside, 0700);
	}
	state_rm_rf(target);
	if (mkdir(target, 0700) < 0)
		abort();
	size_t step = size ? (size_t)(data[0] % 61) + 1 : 1;
	int dfd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const struct changeset_limits lim = { .file_bytes = 1 << 16, .total_bytes = 1 << 18, .entries = 256 };
	struct changeset_reader *r = NULL;
	if (dfd < 0 || changeset_reader_new(dfd, -1, &lim, &r) < 0)
		abort();
	struct err e = { 0 };
	int k = 0;
	for (size_t off = 0; off < size && k >= 0; off += step)
		k = changeset_reader_feed(r, data + off, size - off < step ? size - off : step, &e);
	struct changeset_stats st = { 0 };
	if (k >= 0 && changeset_reader_finish(r, &st, &e) >= 0 && (st.entries > lim.entries || st.bytes > lim.total_bytes))
		abort();
	changeset_reader_free(r);
	close(dfd);
	if (entries(outside) != 0 || entries(work) != 2)
		abort();	/* written outside the target */
	state_rm_rf(target);
	return 0;
}

#include "replay.h"
