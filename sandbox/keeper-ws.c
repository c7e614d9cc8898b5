/* The keeper's copy of a block workspace's changes (box_inst.ws_sync: a
 * vm box whose workspace is an image, sandbox/vm-ws.c): the host-side
 * upper that wsdiff, apply, --patch and checkpoints read is written here,
 * from the change set the guest sends (proto/changeset.h), never by
 * mounting the box's disk.
 *
 * When: after every call, before its result goes to its client, so that
 * whoever reads the upper after hearing a call ended (the session's diff,
 * its checkpoint at the next message, ward box diff) reads what the call
 * did; and before a hibernate and before the box ends (a background job
 * may have written since). These are the least that keep every reader
 * right: the readers are in other processes and read the directory when
 * they like, so the directory must be right whenever a call is over.
 *
 * How: each sync is built beside the upper (UPPER.sync) and swapped in
 * with one rename, so a reader sees the last sync or this one, never
 * half; a file unchanged since the last sync comes as 'k' and is linked
 * from the upper it replaces, so a sync costs what changed. One sync at
 * a time: results that end during one wait for the next. A refused
 * stream leaves the upper as it was, is logged and told to every client,
 * and the next sync asks for everything. */
#include "sandbox/keeper-int.h"
#include "sandbox/backend.h"
#include "sandbox/box.h"
#include "proto/changeset.h"
#include "proto/proto.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/state.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	struct changeset_reader *rd;
	int dirfd, oldfd;
	uint32_t gid;
	bool busy, again;
	/* The upper is the guest's last sync: it may send 'k'. */
	bool partial_ok;
	uint64_t started, done;
	char staging[PATH_MAX + 16];
} W = { .dirfd = -1, .oldfd = -1 };

bool keeper_ws_active(void)
{
	return K.up && K.inst.ws_sync && K.upper[0];
}

static void ws_close(void)
{
	changeset_reader_free(W.rd);
	W.rd = NULL;
	if (W.dirfd >= 0)
		close(W.dirfd);
	if (W.oldfd >= 0)
		close(W.oldfd);
	W.dirfd = W.oldfd = -1;
}

static int ws_start(struct err *e);

/* The results whose sync is done go to their clients. */
static void ws_release(void)
{
	for (struct kcall *k = K.calls, *n; k; k = n) {
		n = k->next;
		if (!k->held || k->ws_need > W.done)
			continue;
		struct frame f = { .type = PROTO_RESULT, .id = k->gid, .len = (uint32_t)k->nheld, .payload = k->held };
		keeper_guest_result(k, &f);
		kcall_remove(k);
	}
}

/* This sync is over (r < 0: refused, why says so). */
static void ws_end(int r, const char *why)
{
	ws_close();
	if (r >= 0 && renameat2(AT_FDCWD, W.staging, AT_FDCWD, K.upper, RENAME_EXCHANGE) < 0) {
		r = -errno;
		why = "the new copy could not be put in place";
	}
	/* After the swap, the old upper; else the refused copy. */
	state_rm_rf(W.staging);
	W.partial_ok = r >= 0;
	if (r < 0) {
		char msg[700];
		snprintf(msg, sizeof(msg), "the workspace's changes could not be read from the box (%s); ward diff and "
			 "apply show them as of the last sync", why);
		keeper_log("keeper: %s", msg);
		keeper_box_event("workspace_sync_failed", msg);
	}
	W.busy = false;
	W.done = W.started;
	ws_release();
	if (W.again) {
		W.again = false;
		struct err e = { 0 };
		if (ws_start(&e) < 0)
			ws_end(e.code, e.msg);
	}
}

static int ws_start(struct err *e)
{
	snprintf(W.staging, sizeof(W.staging), "%s.sync", K.upper);
	state_rm_rf(W.staging);
	W.started++;
	W.busy = true;
	if (mkdir(W.staging, 0755) < 0 || (W.dirfd = open(W.staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_setc(e, -errno, "cannot make %s", W.staging);
	W.oldfd = W.partial_ok ? open(K.upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	/* The box's changes live on its disk: no change set is larger. */
	uint64_t disk = K.o->lim.disk ? K.o->lim.disk : BOX_DEFAULT_DISK;
	const struct changeset_limits lim = { .entries = CHANGESET_ENTRIES_MAX, .file_bytes = disk, .total_bytes = disk,
					      .path_bytes = CHANGESET_PATH_MAX, .depth = CHANGESET_DEPTH_MAX };
	if (changeset_reader_new(W.dirfd, W.oldfd, &lim, &W.rd) < 0)
		return err_set(e, -ENOMEM, "out of memory");
	W.gid = ++K.next_gid ? K.next_gid : ++K.next_gid;
	const char *req = W.oldfd >= 0 ? "{\"full\":false}" : "{\"full\":true}";
	keeper_guest_send(PROTO_CHANGES, 0, W.gid, req, strlen(req));
	return 0;
}

static void ws_kick(void)
{
	if (W.busy) {
		W.again = true;
		return;
	}
	struct err e = { 0 };
	if (ws_start(&e) < 0)
		ws_end(e.code, e.msg);
}

int keeper_ws_hold(struct kcall *k, const struct frame *f)
{
	k->held = malloc(f->len ? f->len : 1);
	if (!k->held)
		return -ENOMEM;
	memcpy(k->held, f->payload, f->len);
	k->nheld = f->len;
	/* The sync that starts after this result came: the one to start now,
	 * or the one after the sync under way. */
	k->ws_need = W.started + 1;
	/* Its own clock now: the sync's (a guest that never sends it is
	 * destroyed at this deadline, as a call that never ends is). */
	k->deadline_ms = now_ms() + KEEPER_WS_HELD_MS;
	ws_kick();
	return 0;
}

bool keeper_ws_frame(const struct frame *f)
{
	if (!W.busy || f->id != W.gid || (f->type != PROTO_CHANGES && f->type != PROTO_ERROR))
		return false;
	if (f->type == PROTO_ERROR) {
		char why[300];
		snprintf(why, sizeof(why), "the box said: %.*s", (int)MIN(f->len, 250u), (const char *)f->payload);
		for (char *c = why; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		ws_end(-EIO, why);
		return true;
	}
	struct err e = { 0 };
	int r = changeset_reader_feed(W.rd, f->payload, f->len, &e);
	if (r >= 0 && (f->flags & PROTO_F_EOF)) {
		struct changeset_stats st;
		r = changeset_reader_finish(W.rd, &st, &e);
		if (r >= 0)
			ws_end(0, NULL);
	}
	if (r < 0)
		ws_end(r, e.msg);
	return true;
}

void keeper_ws_reset(void)
{
	if (!W.busy)
		return;
	ws_close();
	state_rm_rf(W.staging);
	W.busy = W.again = W.partial_ok = false;
	W.done = W.started;
}

int keeper_ws_sync_now(int64_t ms, struct err *e)
{
	if (!keeper_ws_active())
		return 0;
	uint64_t want = W.started + 1;
	ws_kick();
	int64_t until = now_ms() + ms;
	int fd = K.inst.chan_fd;
	while (W.busy || W.done < want) {
		if (!W.busy)
			ws_kick();
		int64_t left = until - now_ms();
		if (left <= 0) {
			keeper_ws_reset();
			return err_set(e, -ETIMEDOUT, "the box did not send its workspace's changes within %lld s",
				       (long long)(ms / 1000));
		}
		proto_flush(&K.gwr, fd);
		struct pollfd pf = { .fd = fd, .events = POLLIN | (proto_pending(&K.gwr) ? POLLOUT : 0) };
		if (poll(&pf, 1, (int)MIN(left, 1000)) < 0 && errno != EINTR)
			return err_setc(e, -errno, "poll");
		int r = proto_reader_fill(&K.grd, fd);
		if (r == 0 || (r < 0 && r != -EAGAIN)) {
			keeper_ws_reset();
			return err_set(e, -EPIPE, "the box's guest went away before it sent its workspace's changes");
		}
		struct frame f;
		while ((r = proto_reader_next(&K.grd, &f)) == 0)
			keeper_ws_frame(&f);	/* what else comes is dropped: the box is stopping */
		if (r != -EAGAIN) {
			keeper_ws_reset();
			return err_set(e, -EPROTO, "protocol error from the guest");
		}
	}
	return W.partial_ok ? 0 : err_set(e, -EIO, "the box's workspace changes were refused (see the keeper's log)");
}

void keeper_ws_info(cJSON *j)
{
	if (!K.inst.ws_sync)
		return;
	unsigned held = 0;
	for (struct kcall *k = K.calls; k; k = k->next)
		held += k->held != NULL;
	cJSON *w = cJSON_AddObjectToObject(j, "workspace_sync");
	cJSON_AddBoolToObject(w, "under_way", W.busy);
	cJSON_AddNumberToObject(w, "syncs", (double)W.done);
	cJSON_AddNumberToObject(w, "results_held", held);
}
