/* The SSE parser gives the same events whether a body arrives whole, byte
 * by byte, or cut at random places. */
#include <errno.h>
#include <stdlib.h>

#include "base/buf.h"
#include "http/sse.h"
#include "tap.h"

struct sink {
	struct buf out;
};

static int on_event(void *ud, const struct sse_event *ev)
{
	struct sink *s = ud;
	buf_printf(&s->out, "[%.*s|", (int)ev->type_len, ev->type);
	buf_append(&s->out, ev->data, ev->data_len);
	buf_printf(&s->out, "|%s]", ev->id);
	return 0;
}

/* Feeds body in pieces: cut < 0 whole, 0 byte by byte, else random cuts
 * from that seed. Returns the events as text; *fin is sse_finish's answer. */
static char *parse(const char *body, size_t len, int cut, int *fin, int *feed)
{
	struct sink s;
	buf_init(&s.out, 1 << 20);
	buf_append(&s.out, "", 0);
	struct sse p;
	sse_init(&p, 1 << 16, on_event, &s);
	*feed = 0;
	size_t i = 0;
	unsigned seed = (unsigned)cut;
	while (i < len && *feed == 0) {
		size_t n = cut < 0 ? len : cut == 0 ? 1 : 1 + (size_t)(rand_r(&seed) % 7);
		if (n > len - i)
			n = len - i;
		*feed = sse_feed(&p, body + i, n);
		i += n;
	}
	*fin = sse_finish(&p);
	sse_free(&p);
	return s.out.data;
}

struct tcase {
	const char *name;
	const char *body;
	size_t len;	/* 0: strlen */
	const char *want;
	int fin;
	size_t want_len;	/* 0: strlen */
};

static const struct tcase cases[] = {
	{ "simple", "event: a\ndata: 1\n\n", 0, "[a|1|]", 0 },
	{ "CRLF", "data: x\r\n\r\n", 0, "[message|x|]", 0 },
	{ "CR only", "data: x\r\rdata: y\r\r", 0, "[message|x|][message|y|]", 0 },
	{ "mixed line ends", "data: a\r\n\r\ndata: b\n\rdata: c\r\n\n", 0, "[message|a|][message|b|][message|c|]", 0 },
	{ "multi-line data", "data: a\ndata: b\n\n", 0, "[message|a\nb|]", 0 },
	{ "comments", ": ping\n\n:\ndata: z\n: mid\n\n", 0, "[message|z|]", 0 },
	{ "BOM", "\xEF\xBB\xBF" "data: bom\n\n", 0, "[message|bom|]", 0 },
	{ "BOM only at the start", "data: a\n\n\xEF\xBB\xBF" "data: b\n\n", 0, "[message|a|]", 0 },
	{ "not a BOM", "\xEF\xBB" "data: b\n\ndata: c\n\n", 0, "[message|c|]", 0 },
	{ "event without data", "event: nothing\n\nevent: x\ndata: y\n\n", 0, "[x|y|]", 0 },
	{ "type resets after dispatch", "event: x\ndata: 1\n\ndata: 2\n\n", 0, "[x|1|][message|2|]", 0 },
	{ "no space after colon", "data:nospace\n\n", 0, "[message|nospace|]", 0 },
	{ "only one space dropped", "data:  two\n\n", 0, "[message| two|]", 0 },
	{ "field without colon", "data\n\n", 0, "[message||]", 0 },
	{ "unknown field", "foo: bar\ndata: d\n\n", 0, "[message|d|]", 0 },
	{ "UTF-8", "data: h\xC3\xA9llo \xE2\x9C\x93\n\n", 0, "[message|h\xC3\xA9llo \xE2\x9C\x93|]", 0 },
	{ "id and retry", "id: 7\nretry: 1500\ndata: r\n\ndata: s\n\n", 0, "[message|r|7][message|s|7]", 0 },
	{ "NUL in data", "data: a\0b\n\n", 11, "[message|a\0b|]", 0, 14 },
	{ "cut mid-event", "data: whole\n\ndata: partial", 0, "[message|whole|]", -ENODATA },
	{ "cut before the blank line", "data: whole\n\ndata: partial\n", 0, "[message|whole|]", -ENODATA },
	{ "empty", "", 0, "", 0 },
	{ "anthropic",
	  "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
	  "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	  "event: content_block_delta\ndata: {\"delta\":{\"partial_json\":\"{\\\"a\\\"\"}}\n\n"
	  "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", 0,
	  "[message_start|{\"type\":\"message_start\"}|][ping|{\"type\": \"ping\"}|]"
	  "[content_block_delta|{\"delta\":{\"partial_json\":\"{\\\"a\\\"\"}}|][message_stop|{\"type\":\"message_stop\"}|]", 0 },
	{ "openai",
	  "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n", 0,
	  "[message|{\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}|][message|[DONE]|]", 0 },
};

static int cap_cb(void *ud, const struct sse_event *ev)
{
	(void)ev;
	(*(int *)ud)++;
	return 0;
}

int main(void)
{
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct tcase *c = &cases[k];
		size_t len = c->len ? c->len : strlen(c->body);
		size_t wlen = c->want_len ? c->want_len : strlen(c->want);
		int fin, feed;
		char *whole = parse(c->body, len, -1, &fin, &feed);
		bool ok_whole = feed == 0 && fin == c->fin &&
				!memcmp(whole, c->want, wlen + 1);
		ok(ok_whole, "%s: whole", c->name);
		if (!ok_whole)
			printf("#   got \"%s\" (feed %d, finish %d)\n", whole, feed, fin);
		char *bytes = parse(c->body, len, 0, &fin, &feed);
		ok(feed == 0 && fin == c->fin && !memcmp(bytes, whole, wlen + 1), "%s: byte by byte, the same", c->name);
		bool same = true;
		for (int seed = 1; seed <= 200 && same; seed++) {
			char *cut = parse(c->body, len, seed, &fin, &feed);
			same = feed == 0 && fin == c->fin && !memcmp(cut, whole, wlen + 1);
			if (!same)
				printf("#   seed %d: \"%s\"\n", seed, cut);
			free(cut);
		}
		ok(same, "%s: 200 random cuttings, the same", c->name);
		free(whole);
		free(bytes);
	}

	/* The cap: a line or an event past max_event is refused, not grown. */
	int n = 0;
	struct sse p;
	sse_init(&p, 64, cap_cb, &n);
	char big[200];
	memset(big, 'x', sizeof(big));
	memcpy(big, "data: ", 6);
	is_int(sse_feed(&p, big, sizeof(big)), -EMSGSIZE, "a line over the cap is refused");
	sse_free(&p);
	sse_init(&p, 64, cap_cb, &n);
	is_int(sse_feed(&p, "data: 0123456789\n\n", 18), 0, "positive twin: an event under the cap is fine");
	is_int(n, 1, "and dispatched");
	int r = 0;
	for (int i = 0; i < 10 && r == 0; i++)
		r = sse_feed(&p, "data: 0123456789\n", 17);
	is_int(r, -EMSGSIZE, "many data lines past the cap in one event are refused");
	sse_free(&p);
	return tap_done();
}
