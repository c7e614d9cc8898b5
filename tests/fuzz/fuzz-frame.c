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

#include "proto/proto.h"

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
		(void)sink;
		(void)proto_type_name(f.type);
		off += used;
	}
	return 0;
}

#include "replay.h"
