#include <stdbool.h>
#include <string.h>

#include "base/logbuf.h"
#include "tap.h"

static const char *rd(const struct logbuf *l, uint64_t off, size_t max, uint64_t *from)
{
	static char out[64];
	size_t n = logbuf_read(l, off, out, max < sizeof(out) - 1 ? max : sizeof(out) - 1, from);
	out[n] = 0;
	return out;
}

int main(void)
{
	struct logbuf l;
	uint64_t from;
	is_int(logbuf_init(&l, 4, 6), 0, "init");
	logbuf_add(&l, "abc", 3);
	is_str(rd(&l, 0, 10, &from), "abc", "a short stream reads whole");
	is_int((long long)logbuf_dropped(&l), 0, "nothing dropped");
	logbuf_add(&l, "defgh", 5);
	is_str(rd(&l, 0, 10, &from), "abcdefgh", "head and tail read on from one another");
	is_str(rd(&l, 3, 2, &from), "de", "a read from an offset, bounded");
	is_int((long long)from, 3, "from where it was asked");
	logbuf_add(&l, "ijklmnop", 8);
	is_int((long long)l.total, 16, "every byte counted");
	is_int((long long)logbuf_dropped(&l), 6, "what neither head nor tail holds is counted as dropped");
	is_str(rd(&l, 0, 10, &from), "abcd", "the head stops at what was dropped");
	is_str(rd(&l, 4, 10, &from), "klmnop", "an offset in what was dropped reads from the tail's start");
	is_int((long long)from, 10, "and says where that is");
	is_str(rd(&l, 12, 10, &from), "mnop", "an offset in the tail");
	is_str(rd(&l, 16, 10, &from), "", "at the end: nothing");
	is_str(rd(&l, 99, 10, &from), "", "past the end: nothing");
	is_int((long long)from, 16, "and the end is where it is");
	/* A write larger than the ring keeps its end. */
	logbuf_add(&l, "0123456789ABCDEFGHIJ", 20);
	is_str(rd(&l, 10, 10, &from), "EFGHIJ", "a write larger than the tail keeps its last bytes");
	is_int((long long)logbuf_dropped(&l), 26, "and counts the rest");
	logbuf_free(&l);
	/* A stream far larger than the buffer stays within it. */
	logbuf_init(&l, 16, 32);
	char blk[4096];
	memset(blk, 'x', sizeof(blk));
	for (int i = 0; i < 1000; i++)
		logbuf_add(&l, blk, sizeof(blk));
	logbuf_add(&l, "END", 3);
	is_int((long long)l.total, 4096003, "4 MB through a 48-byte buffer: counted");
	is_int((long long)logbuf_dropped(&l), 4096003 - 48, "all but head and tail dropped");
	is_str(rd(&l, l.total - 3, 10, &from), "END", "the last bytes are there");
	logbuf_free(&l);
	return tap_done();
}
