#include "net/chunked.h"

#include <errno.h>
#include <stdio.h>

#include "base/cleanup.h"

enum {
	CH_SIZE,	/* hex digits */
	CH_EXT,		/* ;extension up to CR */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,	/* at the start of a trailer line, or the blank line */
	CH_TRAILER_LINE,
	CH_TRAILER_LF,
	CH_END_LF,
	CH_DONE,
};

#define CH_MAX_DIGITS 15	/* sizes below 2^60 */
#define CH_FRAME 24		/* room a chunk's framing takes: 16 hex digits, 2 CRLFs */

void net_chunked_init(struct net_chunked *c)
{
	*c = (struct net_chunked){ .state = CH_SIZE };
}

static int ch_hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A byte of an extension or trailer line: visible, space, tab or obs-text. */
static bool ch_text(unsigned char ch)
{
	return ch == '\t' || (ch >= 0x20 && ch != 0x7f);
}

int net_chunked_feed(struct net_chunked *c, const char *in, size_t n, struct buf *out, size_t *ret_used)
{
	size_t i = 0;
	int rc = 0;
	while (i < n && c->state != CH_DONE) {
		char ch = in[i];
		switch (c->state) {
		case CH_SIZE: {
			int d = ch_hex(ch);
			if (d >= 0) {
				if (++c->digits > CH_MAX_DIGITS)
					return -EBADMSG;
				c->size = c->size << 4 | (uint64_t)d;
			} else if (c->digits && ch == ';') {
				c->state = CH_EXT;
				c->line = c->digits + 1;
			} else if (c->digits && ch == '\r') {
				c->state = CH_SIZE_LF;
			} else {
				return -EBADMSG;
			}
			i++;
			break;
		}
		case CH_EXT:
			if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (!ch_text((unsigned char)ch) || ++c->line > NET_CHUNKED_MAX_LINE)
				return -EBADMSG;
			i++;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return -EBADMSG;
			i++;
			c->digits = 0;
			c->line = 0;
			c->state = c->size ? CH_DATA : CH_TRAILER;
			break;
		case CH_DATA: {
			size_t room = out->cap - out->len;
			if (room <= CH_FRAME)
				goto out;
			size_t k = MIN(n - i, room - CH_FRAME);
			if (k > c->size)
				k = (size_t)c->size;
			rc = c->raw ? 0 : buf_printf(out, "%zx\r\n", k);
			if (rc >= 0)
				rc = buf_append(out, in + i, k);
			if (rc >= 0 && !c->raw)
				rc = buf_append(out, "\r\n", 2);
			if (rc < 0)
				return rc;
			i += k;
			c->size -= k;
			if (!c->size)
				c->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
		case CH_TRAILER_LF:
		case CH_DATA_LF:
		case CH_END_LF:
			if (ch != (c->state == CH_DATA_CR ? '\r' : '\n'))
				return -EBADMSG;
			if (c->state == CH_END_LF && out->cap - out->len < 5)
				goto out;
			i++;
			if (c->state == CH_END_LF) {
				if (!c->raw)
					buf_append(out, "0\r\n\r\n", 5);
				c->state = CH_DONE;
			} else {
				c->state = c->state == CH_DATA_CR ? CH_DATA_LF
					   : c->state == CH_DATA_LF ? CH_SIZE : CH_TRAILER;
			}
			break;
		case CH_TRAILER:
			if (ch == '\r') {
				c->state = CH_END_LF;
				i++;
				break;
			}
			c->state = CH_TRAILER_LINE;
			/* fall through */
		case CH_TRAILER_LINE:
			if (ch == '\r')
				c->state = CH_TRAILER_LF;
			else if (!ch_text((unsigned char)ch) || ++c->trailers > NET_CHUNKED_MAX_TRAILERS)
				return -EBADMSG;
			i++;
			break;
		}
	}
out:
	*ret_used = i;
	return c->state == CH_DONE ? 1 : 0;
}
