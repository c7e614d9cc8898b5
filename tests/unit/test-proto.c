/* The box protocol's framing: round trips, partial frames, oversize and
 * malformed headers, many frames in one buffer, the blocking helpers. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "proto/proto.h"
#include "tap.h"

static size_t enc(uint8_t *out, uint8_t type, uint32_t id, const char *p, size_t n)
{
	proto_encode_hdr(out, type, 0, id, (uint32_t)n);
	memcpy(out + PROTO_HDR, p, n);
	return PROTO_HDR + n;
}

int main(void)
{
	uint8_t b[256];
	struct frame f;
	size_t used;

	size_t n = enc(b, PROTO_CALL, 7, "{\"a\":1}", 7);
	is_int(proto_decode(b, n, &f, &used), 0, "a whole frame decodes");
	is_int(f.type, PROTO_CALL, "type survives");
	is_int(f.id, 7, "call id survives");
	is_int(f.len, 7, "length survives");
	ok(!memcmp(f.payload, "{\"a\":1}", 7), "payload survives");
	is_int(used, n, "consumed exactly one frame");

	for (size_t k = 0; k < n; k++)
		if (proto_decode(b, k, &f, &used) != -EAGAIN) {
			ok(false, "truncated frame at %zu bytes asks for more", k);
			goto next;
		}
	ok(true, "every truncation of a frame asks for more bytes");
next:;
	uint8_t bin[4] = { 0, 0xff, '\n', 0 };
	n = enc(b, PROTO_OUTPUT, 1, (const char *)bin, 4);
	is_int(proto_decode(b, n, &f, &used), 0, "binary payload with NULs decodes");
	ok(!memcmp(f.payload, bin, 4), "binary payload is byte-exact");

	proto_encode_hdr(b, PROTO_OUTPUT, 0, 1, PROTO_MAX_PAYLOAD + 1);
	is_int(proto_decode(b, PROTO_HDR, &f, &used), -EMSGSIZE, "a length over the maximum is refused before reading it");
	proto_encode_hdr(b, PROTO_OUTPUT, 0, 1, PROTO_MAX_PAYLOAD);
	is_int(proto_decode(b, PROTO_HDR, &f, &used), -EAGAIN, "a length at the maximum is accepted (waits for bytes)");

	proto_encode_hdr(b, PROTO_PING, 0, 1, 0);
	b[6] = 1;
	is_int(proto_decode(b, PROTO_HDR, &f, &used), -EPROTO, "a non-zero reserved field is malformed");
	proto_encode_hdr(b, 0, 0, 1, 0);
	is_int(proto_decode(b, PROTO_HDR, &f, &used), -EPROTO, "type 0 is malformed");
	proto_encode_hdr(b, 200, 0, 1, 0);
	is_int(proto_decode(b, PROTO_HDR, &f, &used), 0, "an unknown type decodes (the peer answers it with an error)");
	is_str(proto_type_name(200), "unknown", "and is named unknown");
	is_int(PROTO_INPUT, 14, "INPUT is type 14");
	is_int(PROTO_HIBERNATE, 15, "HIBERNATE is type 15");
	is_int(PROTO_WAKE, 16, "WAKE is type 16");
	is_int(PROTO_CLAIM, 17, "CLAIM is type 17");
	is_int(PROTO_PORT, 18, "PORT is type 18");
	is_int(PROTO_FORK, 19, "FORK is type 19");
	is_int(PROTO_CHANGES, 20, "CHANGES is type 20");
	is_int(PROTO_TYPE_MAX, PROTO_OWN, "and the last type");
	is_str(proto_type_name(PROTO_CLAIM), "claim", "every type has a name");
	is_str(proto_type_name(PROTO_PORT), "port", "PORT has a name");
	is_str(proto_type_name(PROTO_FORK), "fork", "FORK has a name");
	is_str(proto_type_name(PROTO_INPUT), "input", "INPUT has a name");
	proto_encode_hdr(b, PROTO_INPUT, PROTO_F_EOF, 7, 0);
	ok(proto_decode(b, PROTO_HDR, &f, &used) == 0 && f.type == PROTO_INPUT && f.flags == PROTO_F_EOF && f.id == 7,
	   "an empty INPUT with EOF decodes with its flag and call id");

	/* Many frames through a socket, read by the incremental reader. */
	int sv[2];
	ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	for (uint32_t i = 1; i <= 100; i++)
		proto_send(sv[0], PROTO_OUTPUT, 1, i, "xyz", i % 4);
	close(sv[0]);
	struct proto_reader r;
	proto_reader_init(&r);
	uint32_t seen = 0;
	bool order = true;
	for (;;) {
		int k;
		while ((k = proto_reader_next(&r, &f)) == 0) {
			seen++;
			if (f.id != seen || f.len != seen % 4)
				order = false;
		}
		if (proto_reader_fill(&r, sv[1]) <= 0)
			break;
	}
	is_int(seen, 100, "the reader yields all 100 frames");
	ok(order, "in order, with their lengths");
	proto_reader_free(&r);
	close(sv[1]);

	/* Blocking helpers and hello. */
	ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	uint8_t h[8];
	proto_hello_payload(h);
	proto_send(sv[0], PROTO_HELLO, 0, 0, h, 8);
	uint8_t *p = NULL;
	is_int(proto_recv(sv[1], -1, &f, &p), 0, "proto_recv reads a frame");
	is_int(proto_hello_check(&f), 0, "hello checks out");
	free(p);
	h[4] = 99;
	proto_send(sv[0], PROTO_HELLO, 0, 0, h, 8);
	proto_recv(sv[1], -1, &f, &p);
	is_int(proto_hello_check(&f), -EPROTONOSUPPORT, "another protocol version is refused");
	free(p);
	proto_send(sv[0], PROTO_OUTPUT, 0, 1, "ab", 2);
	close(sv[0]);
	proto_recv(sv[1], -1, &f, &p);
	free(p);
	is_int(proto_recv(sv[1], -1, &f, &p), -EPIPE, "EOF between frames is reported");
	close(sv[1]);

	/* A peer that never speaks: the wait ends at its bound. */
	ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	int64_t t0 = now_ms();
	is_int(proto_recv(sv[1], t0 + 200, &f, &p), -ETIMEDOUT, "a silent peer: proto_recv times out");
	int64_t ms = now_ms() - t0;
	ok(ms >= 190 && ms < 1000, "at its bound (%lld ms for 200)", (long long)ms);
	proto_send(sv[0], PROTO_HELLO, 0, 0, h, 8);
	is_int(proto_recv(sv[1], now_ms() + 200, &f, &p), 0, "twin: a peer that speaks is read within the bound");
	free(p);
	close(sv[0]);
	close(sv[1]);

	struct proto_writer w;
	proto_writer_init(&w, 64);
	is_int(proto_queue(&w, PROTO_OUTPUT, 0, 1, "0123456789", 10), 0, "queue within its ceiling");
	is_int(proto_queue(&w, PROTO_OUTPUT, 0, 1, b, 60), -ENOBUFS, "queue past its ceiling is refused");
	proto_writer_free(&w);

	/* A peer that takes a little: what was written is skipped, and the
	 * room it leaves is used once the queue is compacted. */
	int pp[2];
	ok(pipe2(pp, O_NONBLOCK) == 0 && fcntl(pp[1], F_SETPIPE_SZ, 4096) >= 0, "a pipe of 4096 bytes");
	static char one[6000], two[10000];
	for (size_t i = 0; i < sizeof(one); i++)
		one[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < sizeof(two); i++)
		two[i] = (char)('A' + i % 26);
	proto_writer_init(&w, 12288);
	proto_queue(&w, PROTO_OUTPUT, 0, 1, one, sizeof(one));
	is_int(proto_flush(&w, pp[1]), -EAGAIN, "a flush the peer takes 4096 bytes of");
	is_int((int)proto_queued(&w), 6012 - 4096, "the rest still queued");
	/* A writer let go with a part written holds nothing queued (the
	 * keeper paces its clients on it while the box is down). */
	struct proto_writer w2;
	proto_writer_init(&w2, 12288);
	proto_queue(&w2, PROTO_OUTPUT, 0, 1, one, sizeof(one));
	w2.off = 100;
	proto_writer_free(&w2);
	is_int((int)proto_queued(&w2), 0, "a freed writer with a part written has nothing queued");
	ok(!proto_pending(&w2), "and nothing pending");
	is_int(proto_queue(&w, PROTO_OUTPUT, 0, 2, two, sizeof(two)), 0,
	       "10,012 more fit beside them under 12,288, the written part dropped to make room");
	struct proto_reader rd;
	proto_reader_init(&rd);
	for (int k = 0; k < 100 && (proto_pending(&w) || rd.in.len < 6012 + 10012); k++) {
		proto_flush(&w, pp[1]);
		proto_reader_fill(&rd, pp[0]);
	}
	struct frame f1, f2;
	ok(proto_reader_next(&rd, &f1) == 0 && f1.id == 1 && f1.len == sizeof(one) && !memcmp(f1.payload, one, sizeof(one)),
	   "the first frame arrives whole");
	ok(proto_reader_next(&rd, &f2) == 0 && f2.id == 2 && f2.len == sizeof(two) && !memcmp(f2.payload, two, sizeof(two)),
	   "and the second, after it");
	proto_reader_free(&rd);
	proto_writer_free(&w);
	close(pp[0]);
	close(pp[1]);
	return tap_done();
}
