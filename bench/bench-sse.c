/* SSE parse throughput: a stream shaped like a model's (text deltas of
 * Anthropic's Messages API, CRLF and LF line ends mixed) fed in 16 KiB
 * reads, as libcurl hands them over. Prints MB/s, the median of 5 runs.
 * usage: bench-sse [MB] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timeutil.h"
#include "http/sse.h"

static int on_event(void *ud, const struct sse_event *ev)
{
	*(size_t *)ud += ev->data_len;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 64;
	size_t cap = mb << 20, len = 0;
	char *body = malloc(cap + 4096);
	const char *words[] = { "the ", "model ", "streams ", "tokens ", "of ", "text, ", "quickly ", "\\n" };
	for (unsigned i = 0; len < cap; i++) {
		char text[128] = "";
		for (int k = 0; k < 4; k++)
			strcat(text, words[(i * 7 + k * 3) % 8]);
		len += (size_t)sprintf(body + len,
			"event: content_block_delta%s"
			"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}%s%s",
			i % 2 ? "\r\n" : "\n", text, i % 2 ? "\r\n" : "\n", i % 2 ? "\r\n" : "\n");
	}
	double runs[5];
	size_t got = 0;
	for (int r = 0; r < 5; r++) {
		struct sse p;
		sse_init(&p, 1 << 20, on_event, &got);
		int64_t t0 = now_us();
		for (size_t i = 0; i < len; i += 16384) {
			size_t n = len - i < 16384 ? len - i : 16384;
			if (sse_feed(&p, body + i, n) < 0)
				return 1;
		}
		sse_finish(&p);
		int64_t us = now_us() - t0;
		sse_free(&p);
		runs[r] = (double)len / (double)us;	/* bytes per µs = MB/s */
	}
	qsort(runs, 5, sizeof(runs[0]), cmp);
	printf("%.0f\n", runs[2]);
	free(body);
	return got ? 0 : 1;
}
