#include "proto/netmux.h"
#include "proto/proto.h"
#include "base/buf.h"
#include "base/fdio.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One DATA frame carries at most this. */
#define NETMUX_CHUNK (64u << 10)
/* Above this much queued for the port, no stream reads its socket until
 * the port takes it (the queue's ceiling is far above: every stream's
 * window fits). */
#define NETMUX_HIGH (1u << 20)
#define NETMUX_QUEUE (NETMUX_HIGH + NETMUX_MAX_STREAMS * (NETMUX_CHUNK + PROTO_HDR + 64))
/* Credit is given back in batches of at least this, or when the buffer
 * empties. */
#define NETMUX_CREDIT_BATCH (32u << 10)

struct mstream {
	struct netmux *m;
	uint32_t id;
	int fd;
	struct buf in;		/* from the peer, not yet written to fd */
	uint32_t credit;	/* what we may still send */
	uint32_t owed;		/* written to fd, not yet credited back */
	uint32_t allow;		/* what the peer may still send */
	bool rd_eof;		/* fd said EOF; EOF sent */
	bool peer_eof;		/* the peer's EOF; fd shut for writing once in drains */
	bool shut;
	bool hup;		/* the local peer has gone: HUP stays reported */
	bool reg;		/* fd in the loop */
	bool connecting;	/* made for the peer's OPEN: fd not yet connected */
	bool opened;		/* (ours) the peer said OPENED */
	struct netmux_tally *t;	/* (ours, netmux_connect) its figures, or NULL */
	uint32_t ev;
	struct mstream *next;
};

struct netmux {
	struct loop *l;
	int fd;
	enum netmux_side side;
	netmux_open_cb *on_open;
	void *ud;
	struct proto_reader rd;
	struct proto_writer wr;
	uint32_t ev;
	bool dead, congested;
	uint32_t next_id;
	unsigned n;
	struct mstream *streams;
};

static void mux_arm(struct netmux *m);
static void stream_arm(struct mstream *s);

static struct mstream *stream_find(struct netmux *m, uint32_t id)
{
	for (struct mstream *s = m->streams; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static void mux_send(struct netmux *m, uint8_t type, uint32_t id, const void *p, size_t n)
{
	if (m->dead)
		return;
	/* The ceiling holds every stream's window: a refusal here is a bug,
	 * and the port is given up rather than a stream silently cut. */
	if (proto_queue(&m->wr, type, 0, id, p, n) < 0) {
		m->dead = true;
		return;
	}
	mux_arm(m);
}

static void stream_free(struct mstream *s, bool tell)
{
	struct netmux *m = s->m;
	if (tell)
		mux_send(m, NETMUX_CLOSE, s->id, NULL, 0);
	if (s->t)
		s->t->open--;
	for (struct mstream **p = &m->streams; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	if (s->reg)
		loop_del(m->l, s->fd);
	close(s->fd);
	buf_free(&s->in);
	m->n--;
	free(s);
}

/* Both directions done: the stream goes. */
static bool stream_done(struct mstream *s)
{
	if (s->rd_eof && s->peer_eof && s->in.len == 0) {
		stream_free(s, true);
		return true;
	}
	return false;
}

static void stream_credit(struct mstream *s, bool force)
{
	if (!s->owed || (!force && s->owed < NETMUX_CREDIT_BATCH))
		return;
	uint8_t c[4] = { (uint8_t)s->owed, (uint8_t)(s->owed >> 8), (uint8_t)(s->owed >> 16), (uint8_t)(s->owed >> 24) };
	mux_send(s->m, NETMUX_CREDIT, s->id, c, sizeof(c));
	s->allow += s->owed;
	s->owed = 0;
}

/* Write what the peer sent to the local socket. false: the stream is gone. */
static bool stream_drain(struct mstream *s)
{
	while (s->in.len) {
		ssize_t n = send(s->fd, s->in.data, s->in.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			stream_free(s, true);
			return false;
		}
		buf_consume(&s->in, (size_t)n);
		s->owed += (uint32_t)n;
		if (s->t)
			s->t->out += (uint64_t)n;
	}
	stream_credit(s, s->in.len == 0);
	if (s->in.len == 0 && s->peer_eof && !s->shut) {
		shutdown(s->fd, SHUT_WR);
		s->shut = true;
	}
	return !stream_done(s);
}

/* What was read from a TCP socket acknowledged now, not at the delayed
 * ACK's timer: the bytes go on as frames, and their answer, if any, comes
 * late or never (a TLS server that sends no ticket after its handshake),
 * so nothing would carry the ACK soon, and a client that writes its next
 * bytes in a segment of their own (Nagle) would wait for it, up to 40 ms.
 * A unix socket refuses the option: nothing to do. */
static void stream_ack_now(int fd)
{
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

/* Read from the local socket into DATA frames, within the credit. */
static bool stream_pump(struct mstream *s)
{
	struct netmux *m = s->m;
	char b[NETMUX_CHUNK];
	while (!s->rd_eof && s->credit && !m->congested) {
		size_t want = s->credit < sizeof(b) ? s->credit : sizeof(b);
		ssize_t n = recv(s->fd, b, want, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			stream_ack_now(s->fd);
			break;
		}
		if (n < 0) {
			stream_free(s, true);
			return false;
		}
		if (n == 0) {
			s->rd_eof = true;
			mux_send(m, NETMUX_EOF, s->id, NULL, 0);
			return !stream_done(s);
		}
		mux_send(m, NETMUX_DATA, s->id, b, (size_t)n);
		s->credit -= (uint32_t)n;
		if (s->t)
			s->t->in += (uint64_t)n;
		if (proto_queued(&m->wr) > NETMUX_HIGH)
			m->congested = true;
	}
	return true;
}

static void stream_cb(struct loop *l, int fd, uint32_t events, void *data)
{
	struct mstream *s = data;
	if (s->connecting) {
		/* Writable or failed: the connect has its answer. */
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err || events & (EPOLLERR | EPOLLHUP)) {
			stream_free(s, true);
			return;
		}
		s->connecting = false;
		mux_send(s->m, NETMUX_OPENED, s->id, NULL, 0);
		if (stream_drain(s) && stream_pump(s))
			stream_arm(s);
		return;
	}
	if (events & EPOLLERR) {
		stream_free(s, true);
		return;
	}
	if (events & EPOLLOUT && !stream_drain(s))
		return;
	if (events & (EPOLLIN | EPOLLHUP) && !stream_pump(s))
		return;
	if (events & EPOLLHUP) {
		/* Nothing more can be written to it: what the peer still sends
		 * has nowhere to go. What it left unread waits for credit. */
		if (s->in.len || !s->peer_eof) {
			if (s->rd_eof) {
				stream_free(s, true);
				return;
			}
		}
		s->hup = true;
	}
	stream_arm(s);
}

/* Level-triggered interest in what the stream can do now. A socket whose
 * peer has gone reports HUP whatever is asked: it leaves the loop while
 * it waits for credit. */
static void stream_arm(struct mstream *s)
{
	uint32_t ev = 0;
	if (s->connecting)
		ev = EPOLLOUT;
	else if (!s->rd_eof && s->credit && !s->m->congested)
		ev |= EPOLLIN;
	if (s->in.len && !s->hup)
		ev |= EPOLLOUT;
	if (s->hup && !ev) {
		if (s->reg)
			loop_del(s->m->l, s->fd);
		s->reg = false;
		return;
	}
	if (!s->reg) {
		if (loop_add(s->m->l, s->fd, ev, stream_cb, s) < 0) {
			stream_free(s, true);
			return;
		}
		s->reg = true;
	} else if (ev != s->ev) {
		loop_mod(s->m->l, s->fd, ev);
	}
	s->ev = ev;
}

static struct mstream *stream_new(struct netmux *m, uint32_t id, int fd, bool connecting)
{
	struct mstream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	*s = (struct mstream){ .m = m, .id = id, .fd = fd, .credit = NETMUX_WINDOW, .allow = NETMUX_WINDOW,
				.ev = connecting ? EPOLLOUT : EPOLLIN, .connecting = connecting };
	buf_init(&s->in, NETMUX_WINDOW);
	fdio_set_nonblock(fd, true);
	if (loop_add(m->l, fd, s->ev, stream_cb, s) < 0) {
		buf_free(&s->in);
		free(s);
		return NULL;
	}
	s->reg = true;
	s->next = m->streams;
	m->streams = s;
	m->n++;
	return s;
}

static void mux_frame(struct netmux *m, const struct frame *f)
{
	struct mstream *s = stream_find(m, f->id);
	switch (f->type) {
	case NETMUX_OPEN: {
		int fd = -1;
		/* Only in the peer's id space (the top bit is the host's). */
		bool theirs = f->id && (f->id & NETMUX_HOST_ID) == (m->side == NETMUX_SIDE_HOST ? 0 : NETMUX_HOST_ID);
		if (s || !theirs || !m->on_open || m->n >= NETMUX_MAX_STREAMS ||
		    m->on_open(m->ud, f->payload, f->len, &fd) < 0) {
			mux_send(m, NETMUX_CLOSE, f->id, NULL, 0);
			return;
		}
		if (!stream_new(m, f->id, fd, true)) {
			close(fd);
			mux_send(m, NETMUX_CLOSE, f->id, NULL, 0);
		}
		return;
	}
	case NETMUX_DATA:
		if (!s)
			return;	/* a stream already closed here */
		if (s->peer_eof || f->len > s->allow || buf_append(&s->in, f->payload, f->len) < 0) {
			stream_free(s, true);	/* past its window: the peer is broken */
			return;
		}
		s->allow -= f->len;
		if (s->connecting || stream_drain(s))
			stream_arm(s);
		return;
	case NETMUX_EOF:
		if (!s)
			return;
		s->peer_eof = true;
		if (s->connecting || stream_drain(s))
			stream_arm(s);
		return;
	case NETMUX_CLOSE:
		if (!s)
			return;
		if (s->t && !s->opened)
			s->t->refused++;
		stream_free(s, false);
		return;
	case NETMUX_OPENED:
		/* Said once, of a stream of ours. */
		if (s && s->t && !s->opened)
			s->t->conns++;
		if (s)
			s->opened = true;
		return;
	case NETMUX_CREDIT:
		if (!s || f->len != 4)
			return;
		uint32_t c = (uint32_t)f->payload[0] | (uint32_t)f->payload[1] << 8 | (uint32_t)f->payload[2] << 16 |
			     (uint32_t)f->payload[3] << 24;
		if (c > NETMUX_WINDOW - s->credit) {
			stream_free(s, true);
			return;
		}
		s->credit += c;
		if (s->connecting || stream_pump(s))
			stream_arm(s);
		return;
	default:
		m->dead = true;
	}
}

static void mux_kill(struct netmux *m)
{
	m->dead = true;
	while (m->streams)
		stream_free(m->streams, false);
	if (m->fd >= 0) {
		loop_del(m->l, m->fd);
		close(m->fd);
		m->fd = -1;
	}
}

static void mux_cb(struct loop *l, int fd, uint32_t events, void *data)
{
	struct netmux *m = data;
	if (events & EPOLLOUT || proto_pending(&m->wr)) {
		int r = proto_flush(&m->wr, m->fd);
		if (r < 0 && r != -EAGAIN)
			m->dead = true;
		if (m->congested && proto_queued(&m->wr) <= NETMUX_HIGH / 2) {
			m->congested = false;
			for (struct mstream *s = m->streams, *next; s; s = next) {
				next = s->next;
				if (s->connecting || stream_pump(s))
					stream_arm(s);
			}
		}
	}
	if (!m->dead && events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		int r = proto_reader_fill(&m->rd, m->fd);
		if (r == 0 || (r < 0 && r != -EAGAIN))
			m->dead = true;
		struct frame f;
		while (!m->dead && (r = proto_reader_next(&m->rd, &f)) == 0)
			mux_frame(m, &f);
		if (r != -EAGAIN && r != 0)
			m->dead = true;
	}
	if (m->dead) {
		mux_kill(m);
		return;
	}
	mux_arm(m);
}

static void mux_arm(struct netmux *m)
{
	if (m->fd < 0)
		return;
	uint32_t ev = EPOLLIN | (proto_pending(&m->wr) ? EPOLLOUT : 0);
	if (ev != m->ev) {
		loop_mod(m->l, m->fd, ev);
		m->ev = ev;
	}
}

int netmux_new(struct loop *l, int fd, enum netmux_side side, netmux_open_cb *on_open, void *ud,
	       struct netmux **ret)
{
	struct netmux *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	*m = (struct netmux){ .l = l, .fd = fd, .side = side, .on_open = on_open, .ud = ud, .ev = EPOLLIN,
			      .next_id = (side == NETMUX_SIDE_HOST ? NETMUX_HOST_ID : 0) | 1 };
	proto_reader_init(&m->rd);
	proto_writer_init(&m->wr, NETMUX_QUEUE);
	fdio_set_nonblock(fd, true);
	int r = loop_add(l, fd, m->ev, mux_cb, m);
	if (r < 0) {
		proto_reader_free(&m->rd);
		proto_writer_free(&m->wr);
		free(m);
		return r;
	}
	*ret = m;
	return 0;
}

void netmux_free(struct netmux *m)
{
	if (!m)
		return;
	mux_kill(m);
	proto_reader_free(&m->rd);
	proto_writer_free(&m->wr);
	free(m);
}

static int mux_open(struct netmux *m, int local_fd, const void *what, size_t n, struct netmux_tally *t)
{
	/* Ids run out (2^31 streams) rather than wrap into the peer's. */
	if (m->dead || m->n >= NETMUX_MAX_STREAMS || !(m->next_id & ~NETMUX_HOST_ID)) {
		close(local_fd);
		return m->dead ? -EPIPE : -EMFILE;
	}
	uint32_t id = m->next_id++;
	struct mstream *s = stream_new(m, id, local_fd, false);
	if (!s) {
		close(local_fd);
		return -ENOMEM;
	}
	s->t = t;
	if (t)
		t->open++;
	mux_send(m, NETMUX_OPEN, id, what, n);
	return 0;
}

int netmux_open(struct netmux *m, int local_fd)
{
	return mux_open(m, local_fd, NULL, 0, NULL);
}

int netmux_connect(struct netmux *m, int local_fd, uint16_t port, struct netmux_tally *t)
{
	uint8_t p[2] = { (uint8_t)port, (uint8_t)(port >> 8) };
	return mux_open(m, local_fd, p, sizeof(p), t);
}

bool netmux_dead(const struct netmux *m)
{
	return m->dead;
}

unsigned netmux_streams(const struct netmux *m)
{
	return m->n;
}
