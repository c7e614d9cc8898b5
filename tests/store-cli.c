/* A test driver for the store layer, built for the tests only:
 *   store-cli SPEC put KEY FILE | get KEY FILE | del KEY | describe
 *   store-cli compress LEVEL IN OUT | decompress IN OUT
 * Prints the error line on stderr; exits 0, 2 for -ENOENT, else 1.
 * compress and decompress print "in N out N ms N". */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"

static long long ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static int zstd_verb(int argc, char **argv, struct err *e)
{
	bool comp = !strcmp(argv[1], "compress");
	if (argc != (comp ? 5 : 4))
		return err_set(e, -EINVAL, "usage: compress LEVEL IN OUT | decompress IN OUT");
	const char *in = argv[comp ? 3 : 2], *out = argv[comp ? 4 : 3];
	int ifd = open(in, O_RDONLY | O_CLOEXEC);
	int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (ifd < 0 || ofd < 0)
		return err_setc(e, -errno, "%s or %s", in, out);
	uint64_t nin = 0, nout = 0;
	long long t0 = ms_now();
	int r = comp ? store_compress(ifd, ofd, atoi(argv[2]), &nin, &nout, e)
		     : store_decompress(ifd, ofd, &nout, e);
	if (r >= 0)
		printf("in %llu out %llu ms %lld\n", (unsigned long long)(comp ? nin : 0),
		       (unsigned long long)nout, ms_now() - t0);
	close(ifd);
	close(ofd);
	return r;
}

int main(int argc, char **argv)
{
	struct err e = { 0 };
	int r;
	if (argc >= 2 && (!strcmp(argv[1], "compress") || !strcmp(argv[1], "decompress"))) {
		r = zstd_verb(argc, argv, &e);
	} else if (argc < 3) {
		r = err_set(&e, -EINVAL, "usage: store-cli SPEC put|get|del|describe ...");
	} else {
		struct store *s = NULL;
		r = store_open(argv[1], &s, &e);
		const char *verb = argv[2];
		if (r < 0)
			;
		else if (!strcmp(verb, "put") && argc == 5)
			r = store_put(s, argv[3], argv[4], &e);
		else if (!strcmp(verb, "get") && argc == 5)
			r = store_get(s, argv[3], argv[4], &e);
		else if (!strcmp(verb, "del") && argc == 4)
			r = store_del(s, argv[3], &e);
		else if (!strcmp(verb, "describe") && argc == 3)
			printf("%s\n", store_describe(s));
		else
			r = err_set(&e, -EINVAL, "usage: store-cli SPEC put KEY FILE | get KEY FILE | del KEY | describe");
		store_free(s);
	}
	if (r < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return r == -ENOENT ? 2 : 1;
	}
	return 0;
}
