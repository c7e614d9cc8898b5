#include <errno.h>
#include <stdbool.h>

#include "base/capture.h"
#include "base/parse.h"
#include "base/utf8.h"
#include <stdlib.h>
#include "tap.h"

int main(void)
{
	struct buf b;
	buf_init(&b, 8);
	is_int(buf_append(&b, "1234", 4), 0, "append within the ceiling");
	is_int(buf_append(&b, "56789", 5), -ENOBUFS, "append past the ceiling fails");
	is_int(b.len, 4, "and appends nothing");
	is_int(buf_append(&b, "5678", 4), 0, "up to the ceiling exactly");
	buf_free(&b);

	struct capture c;
	capture_init(&c, 4, 6);
	capture_add(&c, "abcdefghijklmnop", 16);
	ok(capture_cut(&c), "a stream longer than head+tail is cut");
	is_int(c.total, 16, "total counted");
	char t[16];
	size_t n = capture_tail(&c, t, 6);
	t[n] = 0;
	is_str(t, "klmnop", "tail keeps the last bytes");
	capture_add(&c, "QR", 2);
	n = capture_tail(&c, t, 3);
	t[n] = 0;
	is_str(t, "pQR", "tail follows the ring around");
	capture_free(&c);
	capture_init(&c, 4, 6);
	capture_add(&c, "abcdef", 6);
	ok(!capture_cut(&c), "a short stream is whole");
	n = capture_tail(&c, t, 5);
	t[n] = 0;
	is_str(t, "bcdef", "tail spans head and ring");
	capture_free(&c);

	int64_t ms;
	uint64_t v;
	ok(parse_duration_ms("2s", &ms) == 0 && ms == 2000, "2s");
	ok(parse_duration_ms("250ms", &ms) == 0 && ms == 250, "250ms");
	ok(parse_duration_ms("3", &ms) < 0, "a bare number is refused (seconds or minutes?)");
	ok(parse_duration_ms("0", &ms) == 0 && ms == 0, "but 0, which means none");
	ok(parse_duration_ms("1h30m", &ms) == 0 && ms == 5400000, "1h30m");
	ok(parse_duration_ms("1.5s", &ms) == 0 && ms == 1500, "1.5s");
	ok(parse_duration_ms("2m30s", &ms) == 0 && ms == 150000, "2m30s");
	ok(parse_duration_ms("1s500ms", &ms) == 0 && ms == 1500, "1s500ms");
	ok(parse_duration_ms("1.5", &ms) < 0, "1.5 without a unit refused");
	ok(parse_duration_ms("1h30", &ms) < 0, "a trailing number without a unit refused");
	ok(parse_duration_ms("1..5s", &ms) < 0 && parse_duration_ms("s", &ms) < 0, "malformed numbers refused");
	ok(parse_duration_ms("1h", &ms) == 0 && ms == 3600000, "1h");
	ok(parse_duration_ms("2x", &ms) < 0, "unknown unit refused");
	ok(parse_duration_ms("-1s", &ms) < 0, "negative refused");
	ok(parse_size("512M", &v) == 0 && v == 512ull << 20, "512M");
	ok(parse_size("99999999999999999999", &v) == -ERANGE, "overflow refused");
	ok(parse_u64("12a", &v) < 0, "trailing junk refused");

	buf_init(&b, 100);
	utf8_sanitize("a\xff" "b\0c\xe2\x82\xac", 8, &b);
	is_str(b.data, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xe2\x82\xac", "invalid bytes and NUL become U+FFFD, valid UTF-8 stays");
	buf_free(&b);
	buf_init(&b, 100);
	utf8_sanitize("\xed\xa0\x80", 3, &b);
	is_str(b.data, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "a UTF-16 surrogate is invalid");
	buf_free(&b);

	/* Text for a terminal: tests/unit/test-term.c. */
	return tap_done();
}
