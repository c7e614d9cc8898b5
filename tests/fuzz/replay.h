/* Included last by each fuzz target: without libFuzzer, main() replays a
 * corpus directory through LLVMFuzzerTestOneInput as a TAP test. */
#pragma once
#ifndef WARD_LIBFUZZER
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
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
