/* Fuzz target for the SSE parser: any input, fed whole and fed in pieces
 * whose sizes come from the input itself, must give the same events and
 * the same end-of-stream answer. Built with libFuzzer when -Dfuzz=true
 * (clang); otherwise main() replays the corpus as a test. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "http/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *ud, const struct sse_event *ev)
{
	struct buf *b = ud;
	if (ev->data[ev->data_len] != 0 || ev->type[ev->type_len] != 0)
		abort();
	buf_printf(b, "%zu:", ev->type_len);
	buf_append(b, ev->type, ev->type_len);
	buf_printf(b, ":%zu:", ev->data_len);
	buf_append(b, ev->data, ev->data_len);
	buf_printf(b, ":%s;", ev->id);
	return 0;
}

static void run(const uint8_t *data, size_t size, bool split, struct buf *out, int *feed, int *fin)
{
	struct sse p;
	sse_init(&p, 4096, on_event, out);
	size_t i = 0;
	*feed = 0;
	while (i < size && !*feed) {
		size_t n = split ? (size_t)(1 + data[i] % 13) : size;
		if (n > size - i)
			n = size - i;
		*feed = sse_feed(&p, data + i, n);
		i += n;
	}
	*fin = sse_finish(&p);
	sse_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf a, b;
	buf_init(&a, 1 << 24);
	buf_init(&b, 1 << 24);
	buf_append(&a, "", 0);
	buf_append(&b, "", 0);
	int fa, fb, ea, eb;
	run(data, size, false, &a, &fa, &ea);
	run(data, size, true, &b, &fb, &eb);
	/* A cap hit may come at a different byte, but never silently. */
	if (fa == 0 && fb == 0 && (ea != eb || a.len != b.len || memcmp(a.data, b.data, a.len)))
		abort();
	if ((fa == 0) != (fb == 0))
		abort();
	buf_free(&a);
	buf_free(&b);
	return 0;
}

#include "replay.h"
