/* Fuzz target for the frame decoder and reader. Built with libFuzzer when
 * -Dfuzz=true (clang); otherwise main() replays the corpus as a test. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	struct frame f;
	size_t used;
	while (off < size) {
		int r = proto_decode(data + off, size - off, &f, &used);
		if (r < 0)
			break;
		if (used < PROTO_HDR || used > size - off || f.len != used - PROTO_HDR)
			abort();
		volatile uint8_t sink = 0;
		for (uint32_t i = 0; i < f.len; i++)
			sink ^= f.payload[i];
		(void)proto_type_name(f.type);
		off += used;
	}
	return 0;
}

#ifndef WARD_LIBFUZZER
int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz-frame CORPUS_DIR\n");
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", argv[1], de->d_name);
		FILE *f = fopen(p, "rb");
		if (!f)
			continue;
		static uint8_t buf[1 << 21];
		size_t len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		printf("ok %d - %s\n", ++n, de->d_name);
	}
	closedir(d);
	printf("1..%d\n", n);
	return n ? 0 : 1;
}
#endif
