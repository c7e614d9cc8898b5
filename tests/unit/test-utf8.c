/* The terminal rule (base/utf8.h): every class of byte and character, one
 * by one and in the streams a printer feeds it in pieces. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "tap.h"

static size_t enc(unsigned cp, unsigned char *o)
{
	if (cp < 0x80)
		return o[0] = (unsigned char)cp, 1;
	if (cp < 0x800)
		return o[0] = (unsigned char)(0xc0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3f)), 2;
	if (cp < 0x10000)
		return o[0] = (unsigned char)(0xe0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
		       o[2] = (unsigned char)(0x80 | (cp & 0x3f)), 3;
	return o[0] = (unsigned char)(0xf0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
	       o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)), o[3] = (unsigned char)(0x80 | (cp & 0x3f)), 4;
}

static bool bidi(unsigned cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* What a terminal may be sent: valid UTF-8 with no control (but newline
 * and tab), no DEL, no C1 and no bidirectional control. */
static bool term_clean(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq_len(p + i, n - i);
		if (!k)
			return false;
		unsigned cp = k == 1 ? p[i] : p[i] & (0xff >> (k + 1));
		for (size_t j = 1; j < k; j++)
			cp = cp << 6 | (p[i + j] & 0x3f);
		if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) || bidi(cp))
			return false;
		i += k;
	}
	return true;
}

static char *fed(const char *in, size_t len, size_t piece)
{
	struct buf b;
	buf_init(&b, len * 4 + 16);
	buf_append(&b, "", 0);
	struct utf8_term t = { 0 };
	for (size_t i = 0; i < len; i += piece)
		utf8_term_feed(&t, in + i, len - i < piece ? len - i : piece, &b);
	utf8_term_end(&t, &b);
	return b.data;
}

static char *sgr(const char *s)
{
	return utf8_term_safe_sgr(s, strlen(s));
}

int main(void)
{
	char want[32], *s;
	bool all;

	/* ASCII, byte by byte. */
	all = true;
	for (unsigned c = 0; c < 0x80; c++) {
		char in = (char)c;
		s = utf8_term_safe(&in, 1);
		if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f))
			snprintf(want, sizeof(want), "%c", c);
		else
			snprintf(want, sizeof(want), "^%c", c == 0x7f ? '?' : c + 0x40);
		if (!s || strcmp(s, want)) {
			printf("# byte 0x%02x: got \"%s\", want \"%s\"\n", c, s ? s : "(null)", want);
			all = false;
		}
		free(s);
	}
	ok(all, "C0 controls and DEL in caret notation (ESC ^[, CR ^M, BS ^H, NUL ^@, DEL ^?); newline, tab and printable ASCII as they are");

	/* A byte of 0x80..0xff alone is not UTF-8: a raw C1 (0x9b is CSI to
	 * an 8-bit terminal) included. */
	all = true;
	for (unsigned c = 0x80; c < 0x100; c++) {
		char in = (char)c;
		s = utf8_term_safe(&in, 1);
		all &= s && !strcmp(s, "\xef\xbf\xbd");
		free(s);
	}
	ok(all, "each byte 0x80..0xff alone (raw 0x9b, 0x9d, 0x90 included) is shown as U+FFFD");

	/* Every code point, encoded. */
	bool named = true, kept = true, clean = true;
	for (unsigned cp = 0; cp <= 0x10ffff; cp++) {
		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		unsigned char in[4];
		size_t n = enc(cp, in);
		s = utf8_term_safe((const char *)in, n);
		if (!s) {
			clean = false;
			break;
		}
		clean &= term_clean(s, strlen(s));
		if ((cp >= 0x80 && cp <= 0x9f) || bidi(cp)) {
			snprintf(want, sizeof(want), "<U+%04X>", cp);
			if (strcmp(s, want)) {
				printf("# U+%04X: got \"%s\"\n", cp, s);
				named = false;
			}
		} else if (cp >= 0x20 && cp != 0x7f) {
			if (strlen(s) != n || memcmp(s, in, n)) {
				printf("# U+%04X changed to \"%s\"\n", cp, s);
				kept = false;
			}
		}
		free(s);
	}
	ok(clean, "no code point comes out as a control, a C1, DEL or a bidirectional control");
	ok(named, "the C1 controls U+0080..U+009F and the bidirectional controls are shown by name (<U+009B>, <U+202E>)");
	ok(kept, "positive twin: every other code point (accents, CJK, emoji, U+FFFD itself) is as it is");

	/* Sequences that are not UTF-8: U+FFFD for each byte. */
	static const struct {
		const char *in, *why;
		size_t n;
	} bad[] = {
		{ "\xc0\x80", "an overlong NUL", 2 },
		{ "\xc1\xbf", "an overlong DEL", 2 },
		{ "\xc0\x9b", "an overlong ESC-like form", 2 },
		{ "\xe0\x80\x9b", "an overlong CSI", 3 },
		{ "\xf0\x80\x80\x9b", "a 4-byte overlong", 4 },
		{ "\xed\xa0\x80", "a UTF-16 surrogate", 3 },
		{ "\xf4\x90\x80\x80", "past U+10FFFF", 4 },
		{ "\xf8\x88\x80\x80", "a 5-byte form", 4 },
		{ "\xe2\x82", "a sequence cut short at the end", 2 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = utf8_term_safe(bad[i].in, bad[i].n);
		char w[32] = "";
		for (size_t k = 0; k < bad[i].n; k++)
			strcat(w, "\xef\xbf\xbd");
		is_str(s, w, "%s: U+FFFD for each of its bytes", bad[i].why);
		free(s);
	}
	s = utf8_term_safe("\xe2\x82" "A", 3);
	is_str(s, "\xef\xbf\xbd\xef\xbf\xbd" "A", "a sequence broken by ASCII: U+FFFD for its bytes, the ASCII kept");
	free(s);

	/* What an attacker sends. */
	const char evil[] = "up \x1b[1A\x1b[2K osc52 \x1b]52;c;cHduZWQ=\x07 link \x1b]8;;http://x\x1b\\t\x1b]8;;\x1b\\"
			    " dcs \x1bP1$r\x1b\\ apc \x1b_x\x1b\\ c1 \xc2\x9b" "2J \xc2\x9d" "0;t\xc2\x9c raw \x9b" "31m del \x7f"
			    " cr a\rb crlf\r\n bs x\b rlo \xe2\x80\xae" "gpj.exe lri \xe2\x81\xa6x\xe2\x81\xa9 nul \0 end";
	s = utf8_term_safe(evil, sizeof(evil) - 1);
	is_str(s, "up ^[[1A^[[2K osc52 ^[]52;c;cHduZWQ=^G link ^[]8;;http://x^[\\t^[]8;;^[\\ dcs ^[P1$r^[\\ apc ^[_x^[\\"
		  " c1 <U+009B>2J <U+009D>0;t<U+009C> raw \xef\xbf\xbd" "31m del ^? cr a^Mb crlf^M\n bs x^H rlo <U+202E>gpj.exe"
		  " lri <U+2066>x<U+2069> nul ^@ end",
	       "cursor moves, erases, OSC 52 and OSC 8, DCS, APC, C1 CSI/OSC/ST, a raw 0x9b, DEL, CR, BS, bidi, NUL: all shown, none obeyed");
	ok(s && term_clean(s, strlen(s)), "and nothing in it reaches the terminal as a control");
	char *twice = s ? utf8_term_safe(s, strlen(s)) : NULL;
	is_str(twice, s, "the rule applied twice changes nothing more");
	free(twice);
	free(s);

	const char plain[] = "café naïve — 日本語のテキスト 한국어 emoji 😀👍🏽 math ∑ √ arrows → ⇄\n\tindented ⎿ ● ✗\n";
	s = utf8_term_safe(plain, sizeof(plain) - 1);
	is_str(s, plain, "positive twin: plain UTF-8 text (accents, CJK, emoji, symbols), newlines and tabs pass unchanged");
	free(s);

	/* In pieces, as a stream is written: the same as whole, whatever the
	 * cut (a character split between two writes is held, not broken). */
	const char mixed[] = "日本\x1b[2K😀\xc2\x9b\xe2\x80\xae\x9b\xe2\x82" "A é\xf0\x9f\x98";
	size_t ml = sizeof(mixed) - 1;
	_cleanup_free_ char *whole = utf8_term_safe(mixed, ml);
	bool same = whole != NULL;
	for (size_t piece = 1; piece <= ml && same; piece++) {
		_cleanup_free_ char *p = fed(mixed, ml, piece);
		if (!p || strcmp(p, whole)) {
			printf("# pieces of %zu: got \"%s\", want \"%s\"\n", piece, p ? p : "(null)", whole);
			same = false;
		}
	}
	ok(same, "fed in pieces of every size (byte by byte too): the same as fed whole");
	is_str(whole, "日本^[[2K😀<U+009B><U+202E>\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "A é\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
	       "a CJK and an emoji split across writes whole; a sequence the stream's end cuts: U+FFFD for each byte");

	/* A command's output: its colours kept, nothing else of its escapes. */
	s = sgr("\x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[39m");
	is_str(s, "\x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[39m", "colour and weight are kept as escapes");
	free(s);
	s = sgr("\x1b[38;5;208mo\x1b[38;2;1;2;3mt");
	is_str(s, "\x1b[38;5;208mo\x1b[38;2;1;2;3mt", "256 colours and true colour too");
	free(s);
	s = sgr("\x1b[2J\x1b]0;t\x07\x1b[?1049h\x1b[5A\x9b" "31m\xc2\x9b" "31m");
	is_str(s, "^[[2J^[]0;t^G^[[?1049h^[[5A\xef\xbf\xbd" "31m<U+009B>31m",
	       "every other escape by the rule: erase, title, alternate screen, cursor, C1 CSI");
	free(s);
	s = sgr("a\x1b[41mbg\x1b[8mhid\x1b[7mrev\x1b[5mblink\x1b[31;41;8mr\x1b[48;5;1mx");
	is_str(s, "abghidrevblink\x1b[31mrx",
	       "a background, concealed, reverse and blinking text are not set (text cannot hide); a colour beside them is");
	free(s);
	s = sgr("\x1b[31");
	is_str(s, "^[[31", "a sequence cut short is shown by the rule");
	free(s);
	s = sgr("plain \xe2\x80\xae text");
	is_str(s, "plain <U+202E> text", "the rest of the rule holds");
	free(s);

	/* The worst growth still fits: 4 bytes out for each byte in. */
	size_t nc = 1000;
	char *many = malloc(nc * 2);
	for (size_t i = 0; i < nc; i++)
		memcpy(many + 2 * i, "\xc2\x9b", 2);
	s = utf8_term_safe(many, nc * 2);
	is_int(s ? strlen(s) : 0, nc * 8, "1000 C1 controls: all 1000 shown, none dropped at the buffer's ceiling");
	free(s);
	free(many);
	return tap_done();
}
