/* A vm box's workspace changes, sent to the host (proto/changeset.h): the
 * workspace's overlay upper on the box's own disk (guest/vm-root.c),
 * walked whole at a CHANGES request (its entries' metadata, bounded) and
 * then streamed as CHANGES frames, a file's bytes read as the channel
 * takes them, so that a large file never sits in memory and the calls'
 * output goes on meanwhile. A file whose inode has not changed since the
 * last sync the host took is sent as 'k' (the host links it from its
 * previous copy): a sync costs what changed, and a walk. */
#include "guest/guest.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/state.h"
#include "base/timeutil.h"
#include "proto/changeset.h"
#include "proto/proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* One frame's bytes of the stream. */
#define GCS_CHUNK (256u << 10)
/* How long a fresh box waits for the host's seed (a large one crosses
 * the serial port). */
#define GCS_SEED_MS 300000

struct gcs_entry {
	char *path;
	char op;
	mode_t mode;
	bool opaque;
	int64_t mtime_ns;
	uint64_t size;
	char *target;
};

static struct {
	int upper;	/* the workspace's overlay upper, or -1: no block workspace */
	bool busy;
	uint32_t id;
	struct gcs_entry *v;
	size_t n, cap, i;
	int fd;		/* the file whose bytes are being sent */
	uint64_t left;
	bool head_sent, end_sent, pumping;
	int64_t last_ns, this_ns;	/* CLOCK_REALTIME_COARSE at the start of the last sync the host took, this one's */
} S = { .upper = -1, .fd = -1 };

void changeset_guest_init(int upper_fd)
{
	S.upper = upper_fd;
}

static void gcs_clear(void)
{
	for (size_t i = 0; i < S.n; i++) {
		free(S.v[i].path);
		free(S.v[i].target);
	}
	free(S.v);
	S.v = NULL;
	S.n = S.cap = S.i = 0;
	if (S.fd >= 0)
		close(S.fd);
	S.fd = -1;
	S.busy = S.head_sent = S.end_sent = false;
}

void changeset_guest_abort(void)
{
	gcs_clear();
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int gcs_add(const struct gcs_entry *x)
{
	if (S.n >= CHANGESET_ENTRIES_MAX)
		return -E2BIG;
	if (S.n == S.cap) {
		size_t c = S.cap ? S.cap * 2 : 256;
		struct gcs_entry *v = realloc(S.v, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		S.v = v;
		S.cap = c;
	}
	S.v[S.n++] = *x;
	return 0;
}

/* dfd's entries (rel its path), preorder: a directory before what is in
 * it, as the host's reader wants them. */
static int gcs_walk(int dfd, const char *rel, int depth, bool full)
{
	static const struct changeset_limits lim = { .path_bytes = CHANGESET_PATH_MAX, .depth = CHANGESET_DEPTH_MAX };
	int d2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		return -errno;
	}
	/* The duplicate shares the descriptor's offset: from the start. */
	rewinddir(d);
	int r = 0;
	struct dirent *de;
	while (r >= 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char path[CHANGESET_PATH_MAX + 2];
		int pl = snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (pl < 0 || changeset_path_check(path, (size_t)pl, &lim) < 0) {
			vm_log("the workspace's %.200s... is past a change set's bounds: not sent", path);
			continue;
		}
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		struct gcs_entry x = { .mode = st.st_mode & 07777, .mtime_ns = ts_ns(&st.st_mtim) };
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			char v[4] = "";
			x.op = CHANGESET_DIR;
			x.opaque = fgetxattr(sub, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
			if (!(x.path = strdup(path)) || (r = gcs_add(&x)) < 0) {
				free(x.path);
				r = r < 0 ? r : -ENOMEM;
				break;
			}
			r = gcs_walk(sub, path, depth + 1, full);
			continue;
		} else if (S_ISREG(st.st_mode)) {
			x.op = !full && ts_ns(&st.st_ctim) < S.last_ns ? CHANGESET_KEEP : CHANGESET_FILE;
			x.size = (uint64_t)st.st_size;
		} else if (S_ISLNK(st.st_mode)) {
			char t[CHANGESET_PATH_MAX + 1];
			ssize_t tl = readlinkat(dfd, de->d_name, t, sizeof(t));
			if (tl <= 0 || (size_t)tl > CHANGESET_PATH_MAX)
				continue;
			t[tl] = 0;
			x.op = CHANGESET_LINK;
			if (!(x.target = strdup(t)))
				r = -ENOMEM;
		} else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
			x.op = CHANGESET_WHITEOUT;
		} else {
			continue;	/* a FIFO, a socket, a device: nothing a workspace's changes carry */
		}
		if (r >= 0 && !(x.path = strdup(path)))
			r = -ENOMEM;
		if (r >= 0)
			r = gcs_add(&x);
		if (r < 0) {
			free(x.path);
			free(x.target);
		}
	}
	closedir(d);
	return r;
}

/* Fill one chunk from where the stream stands: 0 with the chunk's bytes
 * in b (empty: nothing left), or -errno. */
static int gcs_fill(struct buf *b)
{
	if (!S.head_sent) {
		S.head_sent = true;
		if (changeset_put_magic(b) < 0)
			return -ENOBUFS;
	}
	while (b->len + CHANGESET_PATH_MAX * 2 + 64 < GCS_CHUNK) {
		if (S.fd >= 0 || S.left) {
			size_t room = (size_t)MIN((uint64_t)(GCS_CHUNK - b->len), S.left);
			char *p = b->data + b->len;
			ssize_t k = S.fd >= 0 ? read(S.fd, p, room) : 0;
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				/* The file shrank while it was sent: zeros to the size
				 * its head said (the next sync sends it again). */
				if (S.fd >= 0)
					close(S.fd);
				S.fd = -1;
				memset(p, 0, room);
				k = (ssize_t)room;
			}
			b->len += (size_t)k;
			S.left -= (uint64_t)k;
			if (!S.left && S.fd >= 0) {
				close(S.fd);
				S.fd = -1;
			}
			if (b->len >= GCS_CHUNK)
				break;
			continue;
		}
		if (S.i == S.n) {
			if (!S.end_sent) {
				S.end_sent = true;
				return changeset_put_end(b);
			}
			return 0;
		}
		struct gcs_entry *x = &S.v[S.i++];
		int r = 0;
		switch (x->op) {
		case CHANGESET_DIR:
			r = changeset_put_dir(b, x->path, x->mode, x->opaque, x->mtime_ns);
			break;
		case CHANGESET_KEEP:
			r = changeset_put_keep(b, x->path);
			break;
		case CHANGESET_LINK:
			r = changeset_put_link(b, x->path, x->target);
			break;
		case CHANGESET_WHITEOUT:
			r = changeset_put_whiteout(b, x->path);
			break;
		case CHANGESET_FILE: {
			struct stat st;
			S.fd = openat(S.upper, x->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (S.fd >= 0 && (fstat(S.fd, &st) < 0 || !S_ISREG(st.st_mode))) {
				close(S.fd);
				S.fd = -1;
			}
			/* Gone since the walk: an empty file (the next sync has
			 * the truth). */
			uint64_t size = S.fd >= 0 ? (uint64_t)st.st_size : 0;
			r = changeset_put_file(b, x->path, x->mode, x->mtime_ns, size);
			S.left = size;
			if (!size && S.fd >= 0) {
				close(S.fd);
				S.fd = -1;
			}
			break;
		}
		}
		if (r < 0)
			return r;
	}
	return 0;
}

void changeset_guest_pump(void)
{
	if (!S.busy || S.pumping)
		return;
	S.pumping = true;
	/* The chunk is written in place (a file's bytes are read into it):
	 * its allocation is its ceiling. */
	struct buf b = { .data = malloc(GCS_CHUNK + 1), .alloc = GCS_CHUNK + 1, .cap = GCS_CHUNK };
	while (S.busy && guest_queued() < GUEST_STREAM_QUEUE / 2) {
		b.len = 0;
		int r = b.data ? gcs_fill(&b) : -ENOMEM;
		if (r < 0) {
			char msg[160];
			int n = snprintf(msg, sizeof(msg), "the workspace's changes could not be sent: %s", strerror(-r));
			guest_send_frame(PROTO_ERROR, 0, S.id, msg, (size_t)n);
			gcs_clear();
			break;
		}
		bool last = S.end_sent && S.fd < 0 && !S.left;
		guest_send_frame(PROTO_CHANGES, last ? PROTO_F_EOF : 0, S.id, b.data, b.len);
		if (last) {
			/* The host takes it unless it says otherwise (a refusal's
			 * next request asks for everything). */
			S.last_ns = S.this_ns;
			gcs_clear();
		}
	}
	free(b.data);
	S.pumping = false;
}

void changeset_guest_request(uint32_t id, const uint8_t *payload, size_t len)
{
	if (S.upper < 0) {
		static const char m[] = "this box's workspace is not a block image";
		guest_send_frame(PROTO_ERROR, 0, id, m, sizeof(m) - 1);
		return;
	}
	if (S.busy) {
		static const char m[] = "a sync of the workspace's changes is under way already";
		guest_send_frame(PROTO_ERROR, 0, id, m, sizeof(m) - 1);
		return;
	}
	cJSON *j = cJSON_ParseWithLength((const char *)payload, len);
	bool full = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "full"));
	cJSON_Delete(j);
	/* The clock a ctime is stamped from (the kernel's coarse one, which
	 * a finer stamp never precedes): an inode changed after this moment
	 * has a ctime of at least it, and is sent next time. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	S.this_ns = ts_ns(&now);
	/* A clock that went back (a host's START set it) makes every ctime
	 * suspect: everything. */
	if (!S.last_ns || S.this_ns < S.last_ns)
		full = true;
	S.id = id;
	int r = gcs_walk(S.upper, "", 0, full);
	if (r < 0) {
		gcs_clear();
		char msg[160];
		int n = snprintf(msg, sizeof(msg), "the workspace's changes could not be listed: %s%s", strerror(-r),
				 r == -E2BIG ? " (more entries than a change set may have)" : "");
		guest_send_frame(PROTO_ERROR, 0, id, msg, (size_t)n);
		return;
	}
	S.busy = true;
	changeset_guest_pump();
}

/* A fresh box over changes the host kept: they are asked for (a CHANGES
 * request of the guest's own, at START, before any call) and written into
 * the workspace's upper at upper, which is made anew, before the overlay
 * is mounted on it. */
int changeset_guest_seed(int chan, const char *upper)
{
	state_rm_rf(upper);
	if (mkdir(upper, 0755) < 0)
		return -errno;
	_cleanup_close_ int fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	static const char req[] = "{\"seed\":true}";
	int r = proto_send(chan, PROTO_CHANGES, 0, 0, req, sizeof(req) - 1);
	if (r < 0)
		return r;
	const struct changeset_limits lim = { .entries = CHANGESET_ENTRIES_MAX, .file_bytes = UINT64_MAX,
					      .total_bytes = UINT64_MAX, .opaque_xattr = "trusted.overlay.opaque" };
	struct changeset_reader *rd = NULL;
	if ((r = changeset_reader_new(fd, -1, &lim, &rd)) < 0)
		return r;
	struct err e = { 0 };
	int64_t until = now_ms() + GCS_SEED_MS;
	for (;;) {
		struct frame f;
		uint8_t *payload = NULL;
		r = proto_recv(chan, until, &f, &payload);
		if (r == 0 && f.type != PROTO_CHANGES)
			r = -EPROTO;
		if (r == 0)
			r = changeset_reader_feed(rd, payload, f.len, &e);
		free(payload);
		if (r == 0 && (f.flags & PROTO_F_EOF)) {
			r = changeset_reader_finish(rd, NULL, &e);
			break;
		}
		if (r < 0)
			break;
	}
	if (r < 0 && e.msg[0])
		vm_log("%s", e.msg);
	changeset_reader_free(rd);
	return r;
}
