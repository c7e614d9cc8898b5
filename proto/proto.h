/* The box protocol: length-prefixed frames multiplexed by call id.
 *
 * Header (12 bytes, little-endian): u32 payload length, u8 type, u8 flags,
 * u16 reserved (0), u32 call id. Payloads are bytes (OUTPUT) or JSON (CALL,
 * RESULT, EVENT, EVIDENCE, INFO). A payload larger than PROTO_MAX_PAYLOAD is
 * a protocol error: the reader stops and the peer is dropped. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define PROTO_VERSION 2
#define PROTO_MAGIC 0x44524157u /* "WARD" */
#define PROTO_HDR 12
#define PROTO_MAX_PAYLOAD (1u << 20)
/* Where a box's processes find the egress proxy (HTTP_PROXY): a port of
 * the box's own loopback. */
#define NET_PROXY_PORT 3128
#define NET_PROXY_PORT_S "3128"

enum proto_type {
	PROTO_HELLO = 1,	/* magic u32, version u32; from a keeper to a client, then
				 * JSON {grace_ms}: the box's cancel grace */
	PROTO_CALL = 2,		/* JSON {tool, args, budget (proto/budget.h), stream, key,
				 * stdin}: stdin true (bash only) gives the command a
				 * stdin fed by INPUT frames, stdout and stderr apart,
				 * and output that is never dropped */
	PROTO_CANCEL = 3,
	PROTO_EVIDENCE = 4,	/* request: empty; reply: JSON */
	PROTO_PING = 5,
	PROTO_PONG = 6,
	PROTO_OUTPUT = 7,	/* flags: 1 stdout, 2 stderr; payload: bytes */
	PROTO_RESULT = 8,	/* JSON, exactly one per call */
	PROTO_EVENT = 9,	/* JSON */
	PROTO_ERROR = 10,	/* text: what was wrong with a request */
	PROTO_DESTROY = 11,	/* client -> keeper */
	PROTO_INFO = 12,	/* client -> keeper: empty; reply JSON */
	PROTO_START = 13,	/* host -> a VM's guest waiting after boot: JSON
				 * {entropy (hex), time_ns, pids, mem, proxy_port,
				 * root: "image" | "host", git_rw, prepare} */
	PROTO_INPUT = 14,	/* client -> keeper -> guest, for a call made with
				 * "stdin": true: bytes for its command's stdin;
				 * PROTO_F_EOF closes it after what came before */
	PROTO_HIBERNATE = 15,	/* client -> keeper: empty, or JSON {keep: true} (the box
				 * outlives its owner); reply INFO {ok, ms, state_bytes}
				 * or {error} */
	PROTO_WAKE = 16,	/* client -> keeper: empty; reply INFO {ok, ms} or {error} */
	PROTO_CLAIM = 17,	/* client -> the keeper of a pool box: JSON {owner,
				 * persistent, ttl_ms, idle_ms, on_idle, grace_ms,
				 * cold_after_ms, store, labels}; reply INFO {ok} or {error} */
	PROTO_PORT = 18,	/* client -> keeper: JSON {port, host_port, addr} opens the
				 * box's port to the host; empty lists them; reply INFO
				 * {ok, port} or {ok, ports} or {error} */
	PROTO_FORK = 19,	/* client -> keeper: empty: the box's options and its
				 * cgroup frozen until the client goes (a fork copies its
				 * layers meanwhile); reply INFO {ok, opts, backend,
				 * frozen} or {error} */
	PROTO_CHANGES = 20,	/* keeper -> a vm guest whose workspace is a block image:
				 * JSON {full}; reply CHANGES frames of the workspace's
				 * change set (proto/changeset.h), the last with
				 * PROTO_F_EOF, or ERROR */
	PROTO_OWN = 21,		/* client -> the keeper of a box a hibernate kept
				 * (box_hibernate_keep): empty; the client's process (its
				 * peer credentials) owns it again, so the box dies with
				 * it unless another such hibernate keeps it; reply INFO
				 * {ok} or {error} */
	PROTO_TYPE_MAX = 21,
};

#define PROTO_F_OWNER 0x1
/* On a guest's HELLO: booted and waiting for PROTO_START (a VM; a
 * snapshot is taken at this point). */
#define PROTO_F_READY 0x2
/* A VM's block devices, by their serials: the root's read-only image (an
 * image's erofs; a stand-in on the host view) and the box's own disk. */
#define VM_SERIAL_ROOT "ward-root"
#define VM_SERIAL_DISK "ward-disk"
/* The workspace's tree as a read-only erofs image (a stand-in where the
 * box's workspace is not one): the lower layer of the guest's workspace
 * overlay, its upper on the box's disk. */
#define VM_SERIAL_WS "ward-ws"
/* A VM guest's EVENT after a pool's first START ({"prepare":true}): its
 * shares are mounted and its limits set; it waits for the second START. */
#define PROTO_PREPARED_EVENT "{\"prepared\":true}"
/* On an INPUT frame: the stdin ends once this frame's bytes are written. */
#define PROTO_F_EOF 0x1

struct frame {
	uint8_t type, flags;
	uint32_t id;
	uint32_t len;
	const uint8_t *payload;	/* points into the decoder's buffer */
};

/* Decode one frame from buf. 0: *ret and *ret_used set. -EAGAIN: need more
 * bytes. -EMSGSIZE: payload over the maximum. -EPROTO: malformed header. */
int proto_decode(const uint8_t *buf, size_t len, struct frame *ret, size_t *ret_used);
void proto_encode_hdr(uint8_t hdr[PROTO_HDR], uint8_t type, uint8_t flags, uint32_t id, uint32_t len);
const char *proto_type_name(uint8_t type);

/* Accumulates bytes from a stream fd and yields frames. */
struct proto_reader {
	struct buf in;
	size_t off;
};
void proto_reader_init(struct proto_reader *r);
void proto_reader_free(struct proto_reader *r);
/* Read what is available from fd (non-blocking fds). Returns bytes read,
 * 0 on EOF, -EAGAIN when nothing was available, or -errno. */
int proto_reader_fill(struct proto_reader *r, int fd);
/* Next complete frame, valid until the next fill. -EAGAIN when none. */
int proto_reader_next(struct proto_reader *r, struct frame *ret);

/* Outgoing queue with a ceiling. What is written is skipped, not moved:
 * the queue is compacted when the written part passes half of it, or to
 * make room, so a slow peer that takes a little at a time does not make
 * every write copy the whole queue. */
struct proto_writer {
	struct buf out;
	size_t off;		/* written so far, from out.data */
};
void proto_writer_init(struct proto_writer *w, size_t cap);
void proto_writer_free(struct proto_writer *w);
int proto_queue(struct proto_writer *w, uint8_t type, uint8_t flags, uint32_t id,
		const void *payload, size_t len);
/* Write as much as the fd takes. Returns 0 when empty, -EAGAIN when bytes
 * remain, -errno on error. */
int proto_flush(struct proto_writer *w, int fd);
/* Bytes queued and not yet written. */
static inline size_t proto_queued(const struct proto_writer *w) { return w->out.len - w->off; }
static inline bool proto_pending(const struct proto_writer *w) { return proto_queued(w) > 0; }
/* Whether n more bytes (frames and their headers) fit under the ceiling. */
static inline bool proto_room(const struct proto_writer *w, size_t n) { return proto_queued(w) + n <= w->out.cap; }

/* Blocking helpers for simple peers. */
int proto_send(int fd, uint8_t type, uint8_t flags, uint32_t id, const void *payload, size_t len);
/* Read one frame into a malloc'd payload (NUL-terminated), waiting until
 * until_ms at most (monotonic, now_ms(); <0: no bound): -ETIMEDOUT. */
int proto_recv(int fd, int64_t until_ms, struct frame *ret, uint8_t **ret_payload);
int proto_hello_payload(uint8_t out[8]);
int proto_hello_check(const struct frame *f);
