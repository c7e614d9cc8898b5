/* A vm box's workspace changes, sent to the host (proto/changeset.h): the
 * workspace's overlay upper on the box's own disk (guest/vm-root.c),
 * walked whole at a CHANGES request (its entries' metadata, bounded) and
 * then streamed as CHANGES frames, a file's bytes read as the channel
 * takes them, so that a large file never sits in memory and the calls'
 * output goes on meanwhile. A file whose inode has not changed since the
 * last sync the host took is sent as 'k' (the host links it from its
 * previous copy): a sync costs what changed, and a walk. The stream is
 * made by proto/changeset-writer.c, the host's seed's maker too. */
#include "guest/guest.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/state.h"
#include "base/timeutil.h"
#include "proto/changeset.h"
#include "proto/proto.h"

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

static struct {
	int upper;	/* the workspace's overlay upper, or -1: no block workspace */
	uint32_t id;
	struct changeset_writer *w;	/* the sync under way, or NULL */
	bool pumping;
	int64_t last_ns, this_ns;	/* CLOCK_REALTIME_COARSE at the start of the last sync the host took, this one's */
} S = { .upper = -1 };

void changeset_guest_init(int upper_fd)
{
	S.upper = upper_fd;
}

static void gcs_clear(void)
{
	changeset_writer_free(S.w);
	S.w = NULL;
}

void changeset_guest_abort(void)
{
	gcs_clear();
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* The kernel overlayfs's marks, as the guest's overlay writes them: a
 * whiteout is a character device 0/0, an opaque directory carries
 * trusted.overlay.opaque = "y". */
static enum changeset_mark gcs_entry(void *arg, const char *name, const struct stat *st, const char **gone)
{
	(void)arg;
	(void)name;
	(void)gone;
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0) ? CHANGESET_MARK_WHITEOUT : CHANGESET_MARK_NONE;
}

static bool gcs_opaque(void *arg, int dfd, const char *name, int fd)
{
	(void)arg;
	(void)dfd;
	(void)name;
	char v[4] = "";
	return fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

static const struct changeset_marks gcs_marks = { .entry = gcs_entry, .opaque = gcs_opaque };

void changeset_guest_pump(void)
{
	if (!S.w || S.pumping)
		return;
	S.pumping = true;
	/* The chunk is written in place (a file's bytes are read into it):
	 * its allocation is its ceiling. */
	struct buf b = { .data = malloc(GCS_CHUNK + 1), .alloc = GCS_CHUNK + 1, .cap = GCS_CHUNK };
	while (S.w && guest_queued() < GUEST_STREAM_QUEUE / 2) {
		b.len = 0;
		int r = b.data ? changeset_writer_fill(S.w, &b) : -ENOMEM;
		if (r < 0) {
			char msg[160];
			int n = snprintf(msg, sizeof(msg), "the workspace's changes could not be sent: %s", strerror(-r));
			guest_send_frame(PROTO_ERROR, 0, S.id, msg, (size_t)n);
			gcs_clear();
			break;
		}
		guest_send_frame(PROTO_CHANGES, r ? PROTO_F_EOF : 0, S.id, b.data, b.len);
		if (r) {
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
	if (S.w) {
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
	int r = changeset_writer_new(S.upper, &gcs_marks, full ? INT64_MIN : S.last_ns, &S.w);
	if (r < 0) {
		S.w = NULL;
		char msg[160];
		int n = snprintf(msg, sizeof(msg), "the workspace's changes could not be listed: %s%s", strerror(-r),
				 r == -E2BIG ? " (more entries than a change set may have)" : "");
		guest_send_frame(PROTO_ERROR, 0, id, msg, (size_t)n);
		return;
	}
	const char *first;
	uint64_t skipped = changeset_writer_skipped(S.w, &first);
	if (skipped)
		vm_log("%llu of the workspace's entries are past a change set's bounds: not sent (the first: %.200s)",
		       (unsigned long long)skipped, first);
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
