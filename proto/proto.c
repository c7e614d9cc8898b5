#include "proto/proto.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

void proto_encode_hdr(uint8_t hdr[PROTO_HDR], uint8_t type, uint8_t flags, uint32_t id, uint32_t len)
{
	put_le32(hdr, len);
	hdr[4] = type;
	hdr[5] = flags;
	hdr[6] = 0;
	hdr[7] = 0;
	put_le32(hdr + 8, id);
}

int proto_decode(const uint8_t *buf, size_t len, struct frame *ret, size_t *ret_used)
{
	if (len < PROTO_HDR)
		return -EAGAIN;
	uint32_t plen = get_le32(buf);
	if (plen > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (buf[6] || buf[7] || buf[4] == 0)
		return -EPROTO;
	if (len - PROTO_HDR < plen)
		return -EAGAIN;
	*ret = (struct frame){
		.type = buf[4],
		.flags = buf[5],
		.id = get_le32(buf + 8),
		.len = plen,
		.payload = buf + PROTO_HDR,
	};
	*ret_used = PROTO_HDR + plen;
	return 0;
}

const char *proto_type_name(uint8_t type)
{
	static const char *const names[] = {
		[PROTO_HELLO] = "hello", [PROTO_CALL] = "call", [PROTO_CANCEL] = "cancel",
		[PROTO_EVIDENCE] = "evidence", [PROTO_PING] = "ping", [PROTO_PONG] = "pong",
		[PROTO_OUTPUT] = "output", [PROTO_RESULT] = "result", [PROTO_EVENT] = "event",
		[PROTO_ERROR] = "error", [PROTO_DESTROY] = "destroy", [PROTO_INFO] = "info", [PROTO_START] = "start",
		[PROTO_INPUT] = "input", [PROTO_HIBERNATE] = "hibernate", [PROTO_WAKE] = "wake", [PROTO_CLAIM] = "claim",
		[PROTO_PORT] = "port", [PROTO_FORK] = "fork", [PROTO_CHANGES] = "changes",
		[PROTO_OWN] = "own",
	};
	if (type > PROTO_TYPE_MAX || !names[type])
		return "unknown";
	return names[type];
}

void proto_reader_init(struct proto_reader *r)
{
	buf_init(&r->in, PROTO_HDR + PROTO_MAX_PAYLOAD + 65536);
	r->off = 0;
}

void proto_reader_free(struct proto_reader *r)
{
	buf_free(&r->in);
}

int proto_reader_fill(struct proto_reader *r, int fd)
{
	if (r->off) {
		buf_consume(&r->in, r->off);
		r->off = 0;
	}
	char tmp[65536];
	size_t room = r->in.cap - r->in.len;
	if (room == 0)
		return -ENOBUFS;
	ssize_t n;
	do
		n = read(fd, tmp, room < sizeof(tmp) ? room : sizeof(tmp));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	int rr = buf_append(&r->in, tmp, (size_t)n);
	if (rr < 0)
		return rr;
	return (int)n;
}

int proto_reader_next(struct proto_reader *r, struct frame *ret)
{
	size_t used;
	int rr = proto_decode((const uint8_t *)r->in.data + r->off, r->in.len - r->off, ret, &used);
	if (rr < 0)
		return rr;
	r->off += used;
	return 0;
}

void proto_writer_init(struct proto_writer *w, size_t cap)
{
	buf_init(&w->out, cap);
	w->off = 0;
}

static void writer_compact(struct proto_writer *w)
{
	buf_consume(&w->out, w->off);
	w->off = 0;
}

void proto_writer_free(struct proto_writer *w)
{
	buf_free(&w->out);
	w->off = 0;	/* nothing queued: not what was written of the old buffer */
}

int proto_queue(struct proto_writer *w, uint8_t type, uint8_t flags, uint32_t id,
		const void *payload, size_t len)
{
	if (len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (!proto_room(w, PROTO_HDR + len))
		return -ENOBUFS;
	if (w->off && w->out.len + PROTO_HDR + len > w->out.cap)
		writer_compact(w);
	uint8_t hdr[PROTO_HDR];
	proto_encode_hdr(hdr, type, flags, id, (uint32_t)len);
	int r = buf_append(&w->out, hdr, sizeof(hdr));
	if (r < 0)
		return r;
	return buf_append(&w->out, payload, len);
}

int proto_flush(struct proto_writer *w, int fd)
{
	while (proto_pending(w)) {
		/* A peer gone mid-write is an error to return, not a SIGPIPE. */
		ssize_t n = send(fd, w->out.data + w->off, proto_queued(w), MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, w->out.data + w->off, proto_queued(w));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (w->off > w->out.len / 2)
				writer_compact(w);
			return -errno;
		}
		w->off += (size_t)n;
	}
	w->out.len = w->off = 0;
	return 0;
}

int proto_send(int fd, uint8_t type, uint8_t flags, uint32_t id, const void *payload, size_t len)
{
	if (len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	uint8_t hdr[PROTO_HDR];
	proto_encode_hdr(hdr, type, flags, id, (uint32_t)len);
	int r = fdio_write_full(fd, hdr, sizeof(hdr));
	if (r < 0 || !len)
		return r;
	return fdio_write_full(fd, payload, len);
}

/* len bytes from fd by until_ms (monotonic; <0: no bound). */
static int proto_read_until(int fd, void *buf, size_t len, int64_t until_ms)
{
	uint8_t *p = buf;
	while (len > 0) {
		int64_t left = until_ms < 0 ? -1 : until_ms - now_ms();
		if (until_ms >= 0 && left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int pr = poll(&pf, 1, left < 0 ? -1 : (int)left);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr <= 0)
			continue;
		ssize_t n = read(fd, p, len);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int proto_recv(int fd, int64_t until_ms, struct frame *ret, uint8_t **ret_payload)
{
	uint8_t hdr[PROTO_HDR];
	int r = proto_read_until(fd, hdr, sizeof(hdr), until_ms);
	if (r < 0)
		return r;
	uint32_t len = get_le32(hdr);
	if (len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (hdr[6] || hdr[7] || hdr[4] == 0)
		return -EPROTO;
	uint8_t *p = malloc(len + 1);
	if (!p)
		return -ENOMEM;
	r = proto_read_until(fd, p, len, until_ms);
	if (r < 0) {
		free(p);
		return r;
	}
	p[len] = 0;
	*ret = (struct frame){ .type = hdr[4], .flags = hdr[5], .id = get_le32(hdr + 8), .len = len, .payload = p };
	*ret_payload = p;
	return 0;
}

int proto_hello_payload(uint8_t out[8])
{
	put_le32(out, PROTO_MAGIC);
	put_le32(out + 4, PROTO_VERSION);
	return 8;
}

int proto_hello_check(const struct frame *f)
{
	if (f->type != PROTO_HELLO || f->len < 8)
		return -EPROTO;
	if (get_le32(f->payload) != PROTO_MAGIC)
		return -EPROTO;
	if (get_le32(f->payload + 4) != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	return 0;
}
