/* Checkpoints: what one costs when a message changed a few files of a big
 * workspace layer. Makes a layer of FILES files of 4 KiB (in 100
 * directories) under DIR, takes a first checkpoint (all copied), then RUNS
 * times: CHANGED files appended to in place (bash's >>), a checkpoint.
 * Prints the medians of those checkpoints: µs, bytes copied, files copied;
 * then the first checkpoint's µs and bytes, and a restore's µs.
 * usage: bench-checkpoint DIR [FILES] [CHANGED] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/timeutil.h"
#include "workspace/checkpoint.h"

#define RUNS 9

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp64);
	return v[n / 2];
}

static int append(const char *upper, int i, const char *s)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/d%02d/f%05d.txt", upper, i % 100, i);
	int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	ssize_t k = write(fd, s, strlen(s));
	close(fd);
	return k < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench-checkpoint DIR [FILES] [CHANGED]\n");
		return 64;
	}
	uint64_t files = 10000, changed = 10;
	if ((argc > 2 && (parse_u64(argv[2], &files) < 0 || !files || files > 1000000)) ||
	    (argc > 3 && (parse_u64(argv[3], &changed) < 0 || changed > files))) {
		fprintf(stderr, "bench-checkpoint: FILES is 1 to 1000000, CHANGED at most FILES\n");
		return 64;
	}
	char upper[4096], ck[4096], d[4200];
	snprintf(upper, sizeof(upper), "%s/upper", argv[1]);
	snprintf(ck, sizeof(ck), "%s/ckpt", argv[1]);
	mkdir(upper, 0755);
	for (int i = 0; i < 100; i++) {
		snprintf(d, sizeof(d), "%s/d%02d", upper, i);
		mkdir(d, 0755);
	}
	char block[4097];
	memset(block, 'x', 4095);
	block[4095] = '\n';
	block[4096] = 0;
	for (int i = 0; i < (int)files; i++)
		if (append(upper, i, block) < 0) {
			perror("bench-checkpoint: making the layer");
			return 1;
		}
	struct checkpoint_stats st;
	struct err e = { 0 };
	int64_t t0 = now_us();
	if (checkpoint_take(ck, upper, 1, &st, &e) < 0) {
		fprintf(stderr, "bench-checkpoint: %s\n", e.msg);
		return 1;
	}
	int64_t first_us = now_us() - t0;
	uint64_t first_bytes = st.bytes_copied;
	/* The layer's and the first checkpoint's 80 MB written back now, not
	 * under the timed checkpoints' fsyncs. */
	sync();
	int64_t us[RUNS], bytes[RUNS], copied[RUNS];
	for (int r = 0; r < RUNS; r++) {
		for (int k = 0; k < (int)changed; k++)
			append(upper, (r * 997 + k * 101) % (int)files, "one more line\n");
		t0 = now_us();
		if (checkpoint_take(ck, upper, r + 2, &st, &e) < 0) {
			fprintf(stderr, "bench-checkpoint: %s\n", e.msg);
			return 1;
		}
		us[r] = now_us() - t0;
		bytes[r] = (int64_t)st.bytes_copied;
		copied[r] = (int64_t)st.copied;
	}
	t0 = now_us();
	if (checkpoint_restore(ck, 2, upper, NULL, &e) < 0) {
		fprintf(stderr, "bench-checkpoint: %s\n", e.msg);
		return 1;
	}
	int64_t restore_us = now_us() - t0;
	printf("%lld %lld %lld %lld %llu %lld\n", (long long)median(us, RUNS), (long long)median(bytes, RUNS),
	       (long long)median(copied, RUNS), (long long)first_us, (unsigned long long)first_bytes, (long long)restore_us);
	return 0;
}
