/* Hibernate and wake, the keeper's side. A hibernated box keeps its
 * workspace layer (where it is already) and its /tmp, which is its home
 * (a tar of it saved beside the layer, in the state dir on disk, or on a
 * vm's own disk). A vm box with no 9p share mounted (an image's, without
 * a workspace) keeps its processes too: its whole machine, memory and
 * devices, goes to vm.state through QEMU's migration, and a wake feeds it
 * to a new VMM. Elsewhere every process of the box ends: the guest and
 * what it ran, the VMM, the egress proxy (QEMU 7.2 refuses to migrate a
 * guest with 9p mounts, and an ns box's processes have nowhere to be
 * kept), and the hibernate says why. The saved state is complete only
 * once its manifest (state.json) is written, last; a wake checks every
 * file the manifest names and refuses anything else. */
#include "sandbox/keeper-int.h"
#include "sandbox/box.h"
#include "base/state.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long saving or putting back /tmp may take. */
#define HIB_TAR_MS (10LL * 60 * 1000)
/* What of a tar's stderr a failure reports. */
#define HIB_ERR_MAX 400

/* The box's own tar (GNU's: sparse files, NUL-separated names), run as a
 * call: a root without one (an image of busybox alone) cannot be
 * hibernated, and says so. */
static const char hib_save_cmd[] =
	"case \"$(tar --version 2>/dev/null)\" in *'GNU tar'*) ;; *) echo \"this box's root has no GNU tar (an image "
	"without it): its /tmp cannot be saved, so it cannot be hibernated\" >&2; exit 3;; esac; "
	"cd /tmp && find . -mindepth 1 -maxdepth 1 -print0 | "
	"tar --create --file=- --sparse --null --files-from=- --ignore-failed-read --warning=no-file-ignored";
/* The archive goes into the box in pieces, each a call whose `cat` has
 * read all of it when it ends, so that what the guest holds for a command
 * that has not read it stays under HIB_PIECE (GUEST_STDIN_PENDING is the
 * limit); then tar unpacks it. /tmp holds the archive and its files for a
 * moment. */
#define HIB_PIECE (4u << 20)
static const char hib_piece_cmd[] = "cat >>/tmp/.ward-wake.tar";
static const char hib_restore_cmd[] = "tar --extract --file=/tmp/.ward-wake.tar --directory=/tmp --preserve-permissions; "
				      "r=$?; rm -f /tmp/.ward-wake.tar; exit $r";

/* Run one bash command in the guest with the keeper as its client, and
 * wait for it: stdin from in_fd (-1: none), stdout to out_fd (-1: the
 * command has none worth keeping). No other call runs (the callers check),
 * so every frame on the channel is this call's. */
static int hib_call(uint32_t gid, const char *cmd, int in_fd, uint64_t in_max, uint64_t *ret_fed, int out_fd,
		    struct err *e);

/* What a saved /tmp may take on disk at most: the box's memory (its /tmp
 * is memory) and a margin; past it the hibernate is refused. */
static uint64_t hib_cap(void)
{
	return (K.o->lim.memory ? K.o->lim.memory : BOX_DEFAULT_MEMORY) + (64u << 20);
}

static int hib_run(const char *cmd, int in_fd, uint64_t in_max, uint64_t *ret_fed, int out_fd, struct err *e)
{
	uint32_t gid = ++K.next_gid ? K.next_gid : ++K.next_gid;
	int r = hib_call(gid, cmd, in_fd, in_max, ret_fed, out_fd, e);
	if (r < 0 && r != -EIO && K.up) {
		/* Not ended by the guest: it is stopped, not left running. */
		proto_queue(&K.gwr, PROTO_CANCEL, 0, gid, NULL, 0);
		proto_flush(&K.gwr, K.inst.chan_fd);
	}
	return r;
}

static int hib_call(uint32_t gid, const char *cmd, int in_fd, uint64_t in_max, uint64_t *ret_fed, int out_fd,
		    struct err *e)
{
	struct budget b = budget_make(HIB_TAR_MS, 0, -1, K.o->grace_ms);
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "tool", "bash");
	cJSON *args = cJSON_AddObjectToObject(req, "args");
	cJSON_AddStringToObject(args, "command", cmd);
	cJSON_AddNumberToObject(args, "timeout", (double)(HIB_TAR_MS / 1000));
	cJSON_AddItemToObject(req, "budget", budget_to_json(&b));
	cJSON_AddBoolToObject(req, "stream", 1);
	cJSON_AddBoolToObject(req, "stdin", 1);
	cJSON_AddStringToObject(req, "key", "ward-hibernate");
	_cleanup_free_ char *s = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!s || proto_queue(&K.gwr, PROTO_CALL, 0, gid, s, strlen(s)) < 0)
		return err_set(e, -ENOMEM, "cannot queue the call");
	int fd = K.inst.chan_fd;
	int64_t until = now_ms() + budget_deadline(&b, BUDGET_KEEPER, 0, 0);
	bool in_done = in_fd < 0, eof_sent = false;
	if (in_done) {
		proto_queue(&K.gwr, PROTO_INPUT, PROTO_F_EOF, gid, NULL, 0);
		eof_sent = true;
	}
	char errtail[HIB_ERR_MAX + 1] = "";
	static char chunk[256u << 10];
	uint64_t fed = 0, out = 0;
	for (;;) {
		/* Feed stdin while the queue to the guest is short, in_max at
		 * most. */
		while (!in_done && proto_queued(&K.gwr) < (1u << 20)) {
			ssize_t n = fed < in_max ? fdio_read_some(in_fd, chunk, MIN(sizeof(chunk), in_max - fed)) : 0;
			if (n < 0)
				return err_setc(e, (int)n, "reading the saved state");
			if (n == 0) {
				in_done = true;
				break;
			}
			proto_queue(&K.gwr, PROTO_INPUT, 0, gid, chunk, (size_t)n);
			fed += (uint64_t)n;
		}
		if (ret_fed)
			*ret_fed = fed;
		if (in_done && !eof_sent) {
			proto_queue(&K.gwr, PROTO_INPUT, PROTO_F_EOF, gid, NULL, 0);
			eof_sent = true;
		}
		int64_t left = until - now_ms();
		if (left <= 0)
			return err_set(e, -ETIMEDOUT, "the box did not finish within %lld s", (long long)(HIB_TAR_MS / 1000));
		struct pollfd pf = { .fd = fd, .events = POLLIN | (proto_pending(&K.gwr) ? POLLOUT : 0) };
		if (poll(&pf, 1, (int)MIN(left, 1000)) < 0 && errno != EINTR)
			return err_setc(e, -errno, "poll");
		if (pf.revents & POLLOUT) {
			int w = proto_flush(&K.gwr, fd);
			if (w < 0 && w != -EAGAIN)
				return err_set(e, -EPIPE, "the box's guest is gone");
		}
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		int r = proto_reader_fill(&K.grd, fd);
		if (r == -EAGAIN)
			continue;
		if (r <= 0)
			return err_set(e, -EPIPE, "the box's guest is gone");
		struct frame f;
		while ((r = proto_reader_next(&K.grd, &f)) == 0) {
			if (f.id != gid)
				continue;
			if (f.type == PROTO_OUTPUT && f.flags == 1 && out_fd >= 0) {
				out += f.len;
				if (out > hib_cap())
					return err_set(e, -EFBIG, "the box's /tmp is over %llu MiB, more than its memory",
						       (unsigned long long)(hib_cap() >> 20));
				int w = fdio_write_full(out_fd, f.payload, f.len);
				if (w < 0)
					return err_setc(e, w, "writing the saved state");
			} else if (f.type == PROTO_OUTPUT) {
				/* stderr: the last of it says what went wrong */
				size_t have = strlen(errtail), n = MIN(f.len, (uint32_t)HIB_ERR_MAX);
				if (have + n > HIB_ERR_MAX) {
					size_t drop = have + n - HIB_ERR_MAX;
					memmove(errtail, errtail + drop, have - drop + 1);
					have -= drop;
				}
				memcpy(errtail + have, f.payload + f.len - n, n);
				errtail[have + n] = 0;
			} else if (f.type == PROTO_RESULT) {
				cJSON *j = cJSON_ParseWithLength((const char *)f.payload, f.len);
				const char *oc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "outcome"));
				bool ok = oc && !strcmp(oc, "ok");
				if (!ok) {
					const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "exit_code");
					errtail[strcspn(errtail, "\n")] = 0;
					err_set(e, -EIO, "%s (%s, exit code %d)", errtail[0] ? errtail : "tar failed",
						oc ? oc : "no outcome", cJSON_IsNumber(x) ? (int)x->valuedouble : -1);
				}
				cJSON_Delete(j);
				return ok ? 0 : -EIO;
			}
		}
		if (r != -EAGAIN)
			return err_set(e, -EPROTO, "a malformed frame from the box's guest");
	}
}

static void hib_paths(const char *leaf, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", K.hib.dir, leaf);
}

/* The files a saved state is made of, in the manifest's order. */
static const char *const hib_files[] = { "tmp.tar", "vm.state", NULL };

static uint64_t file_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

static int hib_manifest_write(const char *processes, struct err *e)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddNumberToObject(m, "version", 1);
	cJSON_AddStringToObject(m, "box", K.name);
	cJSON_AddStringToObject(m, "backend", K.be->name);
	cJSON_AddNumberToObject(m, "hibernated", (double)time(NULL));
	cJSON_AddStringToObject(m, "processes", processes);
	if (K.hib.kept)
		cJSON_AddBoolToObject(m, "ram_restored", K.hib.ram_restored);
	else if (K.hib.why[0])
		cJSON_AddStringToObject(m, "why", K.hib.why);
	cJSON *files = cJSON_AddObjectToObject(m, "files"), *sums = cJSON_AddObjectToObject(m, "sha256");
	K.hib.bytes = 0;
	for (const char *const *f = hib_files; *f; f++) {
		char p[PATH_MAX + 32];
		hib_paths(*f, p, sizeof(p));
		struct stat st;
		if (stat(p, &st) < 0)
			continue;
		cJSON_AddNumberToObject(files, *f, (double)st.st_size);
		K.hib.bytes += (uint64_t)st.st_blocks * 512;
		char hex[HASH_SHA256_HEX];
		_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || hash_sha256_fd_hex(fd, hex) < 0) {
			cJSON_Delete(m);
			return err_setc(e, -EIO, "reading %s back", p);
		}
		cJSON_AddStringToObject(sums, *f, hex);
	}
	_cleanup_free_ char *txt = cJSON_Print(m);
	cJSON_Delete(m);
	char p[PATH_MAX + 32];
	hib_paths("state.json", p, sizeof(p));
	int r = txt ? fdio_write_atomic(p, txt, strlen(txt), 0600) : -ENOMEM;
	if (r < 0)
		return err_setc(e, r, "writing the saved state's manifest");
	K.hib.bytes += file_bytes(p);
	return 0;
}

/* A state that is not whole is refused, with why. */
static int hib_manifest_check(struct err *e)
{
	char p[PATH_MAX + 32];
	hib_paths("state.json", p, sizeof(p));
	_cleanup_free_ char *txt = NULL;
	const char *why = NULL;
	char whybuf[200];
	cJSON *m = NULL;
	if (fdio_read_file(AT_FDCWD, p, 1 << 16, &txt, NULL) < 0)
		why = "its manifest is missing (the hibernate did not finish)";
	else if (!(m = cJSON_Parse(txt)) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(m, "files")))
		why = "its manifest is malformed";
	for (const cJSON *f = m ? cJSON_GetObjectItemCaseSensitive(m, "files")->child : NULL; f && !why; f = f->next) {
		char fp[PATH_MAX + 32];
		hib_paths(f->string, fp, sizeof(fp));
		struct stat st;
		if (!cJSON_IsNumber(f) || strchr(f->string, '/'))
			why = "its manifest is malformed";
		else if (stat(fp, &st) < 0)
			snprintf(whybuf, sizeof(whybuf), "%s is missing", f->string), why = whybuf;
		else if ((double)st.st_size != f->valuedouble)
			snprintf(whybuf, sizeof(whybuf), "%s has %lld bytes, not the %.0f it was saved with", f->string,
				 (long long)st.st_size, f->valuedouble), why = whybuf;
		else {
			const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(m, "sha256"), f->string));
			char hex[HASH_SHA256_HEX];
			_cleanup_close_ int fd = open(fp, O_RDONLY | O_CLOEXEC);
			if (!want || fd < 0 || hash_sha256_fd_hex(fd, hex) < 0 || strcmp(hex, want))
				snprintf(whybuf, sizeof(whybuf), "%s is not what was saved (its SHA-256 differs)", f->string),
					why = whybuf;
		}
	}
	cJSON_Delete(m);
	if (why)
		return err_set(e, -EBADMSG,
			       "box %s's saved state is torn: %s; it cannot be woken (ward box destroy %s removes it)",
			       K.name, why, K.name);
	return 0;
}

/* Whether the manifest (checked whole already) says the box's processes
 * were saved with it, and how its memory was laid out. */
static bool hib_manifest_kept(bool *ret_restored)
{
	char p[PATH_MAX + 32];
	hib_paths("state.json", p, sizeof(p));
	_cleanup_free_ char *txt = NULL;
	if (fdio_read_file(AT_FDCWD, p, 1 << 16, &txt, NULL) < 0)
		return false;
	cJSON *m = cJSON_Parse(txt);
	const char *pr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "processes"));
	bool kept = pr && !strcmp(pr, "kept") &&
		    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "files"), "vm.state"));
	*ret_restored = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "ram_restored"));
	cJSON_Delete(m);
	return kept;
}

void keeper_box_event(const char *what, const char *why)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "box");
	cJSON_AddStringToObject(ev, "event", what);
	cJSON_AddStringToObject(ev, "box", K.name);
	if (why)
		cJSON_AddStringToObject(ev, "why", why);
	keeper_broadcast(ev);
	cJSON_Delete(ev);
}

static void hib_event(const char *what, int64_t ms)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "box");
	cJSON_AddStringToObject(ev, "event", what);
	cJSON_AddStringToObject(ev, "box", K.name);
	cJSON_AddNumberToObject(ev, "ms", (double)ms);
	cJSON_AddNumberToObject(ev, "disk_bytes", (double)keeper_disk_bytes());
	keeper_broadcast(ev);
	cJSON_Delete(ev);
}

/* The box's whole machine to vm.state (the backend's save); on success
 * the VMM is stopped and keeper_guest_down ends it. Failed, the box's
 * helpers and channel are gone already: its processes end as they do
 * where nothing can be saved. */
static int hib_save_machine(struct err *e)
{
	char p[PATH_MAX + 32];
	hib_paths("vm.state", p, sizeof(p));
	struct box_spec spec;
	keeper_spec(&spec);
	bool restored = K.inst.restored;
	keeper_guest_detach();
	int r = K.be->save(&spec, &K.inst, p, e);
	if (r < 0) {
		unlink(p);
		keeper_guest_down();
		return r;
	}
	K.hib.kept = true;
	K.hib.ram_restored = restored;
	return 0;
}

static int hib_hibernate(cJSON *ret, struct err *e)
{
	if (K.hib.state != KH_NONE) {
		cJSON_AddBoolToObject(ret, "already", 1);
		return 0;
	}
	if (K.inst.pooled)
		return err_set(e, -EBUSY, "box %s waits in a pool; a create takes it", K.name);
	unsigned n = 0;
	for (struct kcall *k = K.calls; k; k = k->next)
		n += !k->evidence;
	if (n)
		return err_set(e, -EBUSY, "%u call%s running in box %s; hibernate it when %s ended (or cancel %s)", n,
			       n == 1 ? " is" : "s are", K.name, n == 1 ? "it has" : "they have", n == 1 ? "it" : "them");
	int64_t t0 = now_ms();
	int r = state_hib_dir(K.name, K.hib.dir, sizeof(K.hib.dir), e);
	if (r < 0)
		return r;
	state_rm_rf(K.hib.dir);
	if (state_mkdir_p(K.hib.dir, 0700) < 0)
		return err_setc(e, -errno, "cannot make %s", K.hib.dir);
	keeper_state_file("hibernating");
	/* A block workspace's changes since the last call (a job's), for
	 * whoever reads them while the box sleeps; they are on its disk
	 * either way. */
	struct err we = { 0 };
	if (keeper_ws_sync_now(KEEPER_WS_SYNC_MS, &we) < 0)
		keeper_log("keeper: before the hibernate: %s", we.msg);
	K.hib.kept = false;
	K.hib.why[0] = 0;
	if (K.up && K.be->save && K.inst.keeps_ram) {
		r = hib_save_machine(e);
		if (r < 0) {
			snprintf(K.hib.why, sizeof(K.hib.why), "its machine could not be saved (%s)", e->msg);
			keeper_log("keeper: box %s: %s; its processes end", K.name, K.hib.why);
			*e = (struct err){ 0 };
		}
	} else if (K.up) {
		snprintf(K.hib.why, sizeof(K.hib.why), "%s",
			 K.inst.ram_why ? K.inst.ram_why
					: "an ns box's processes cannot be saved: they end at a hibernate (its files are kept)");
	}
	/* A box whose /tmp is on its own disk (a vm's) keeps it there. */
	if (K.up && !K.hib.kept && !K.inst.tmp_on_disk) {
		char p[PATH_MAX + 32];
		hib_paths("tmp.tar", p, sizeof(p));
		_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		r = fd < 0 ? err_setc(e, -errno, "cannot write %s", p) : hib_run(hib_save_cmd, -1, 0, NULL, fd, e);
		if (r >= 0 && fsync(fd) < 0)
			r = err_setc(e, -errno, "saving /tmp");
		if (r < 0) {
			/* The box goes on as it was; nothing half-saved is left. */
			state_rm_rf(K.hib.dir);
			keeper_state_file("running");
			char m[sizeof(e->msg)];
			snprintf(m, sizeof(m), "%s", e->msg);
			return err_set(e, r, "cannot save box %s's /tmp: %s; the box still runs", K.name, m);
		}
	}
	/* The manifest while the box still runs: a state that cannot be
	 * made whole leaves the box as it was. */
	r = hib_manifest_write(K.hib.kept ? "kept" : "ended", e);
	if (r < 0 && K.hib.kept) {
		/* The machine stopped for the save: it ends with its state. */
		keeper_guest_down();
		K.hib.kept = false;
	}
	if (r < 0) {
		state_rm_rf(K.hib.dir);
		keeper_state_file(K.up ? "running" : "lost");
		return r;
	}
	/* Where the machine is not kept, every process of the box ends with
	 * its guest: so do its jobs, and every client is told which. */
	if (!K.hib.kept)
		keeper_jobs_end(K.hib.why[0] ? K.hib.why : "a hibernated box keeps its files, not its processes", ret);
	keeper_guest_down();
	cgroup_remove(&K.cg);
	/* Nothing mounts the workspace layer now: let it go (its image is
	 * unmounted if nobody else holds it), so a rewind or an apply can
	 * have it; a wake takes it again. */
	layers_release(&K.layers);
	K.hib.state = KH_HIBERNATED;
	K.hib.at_ms = now_ms();
	keeper_state_file("hibernated");
	int64_t ms = now_ms() - t0;
	keeper_log("keeper: box %s hibernated in %lld ms (%llu bytes saved)", K.name, (long long)ms,
		   (unsigned long long)K.hib.bytes);
	hib_event("hibernated", ms);
	cJSON_AddNumberToObject(ret, "ms", (double)ms);
	cJSON_AddNumberToObject(ret, "state_bytes", (double)K.hib.bytes);
	cJSON_AddStringToObject(ret, "processes", K.hib.kept ? "kept" : "ended");
	if (!K.hib.kept && K.hib.why[0])
		cJSON_AddStringToObject(ret, "why", K.hib.why);
	return 0;
}

/* The clients hold their calls' clocks from the first event to the last
 * (box-conn.c): the keeper's loop waits for these. */
int keeper_hibernate(cJSON *ret, struct err *e)
{
	if (K.hib.state != KH_NONE || K.inst.pooled || K.calls)
		return hib_hibernate(ret, e);	/* refused or nothing to do: at once */
	keeper_box_event("hibernating", NULL);
	int r = hib_hibernate(ret, e);
	if (r < 0)
		keeper_box_event("hibernate_failed", e->msg);
	return r;
}

static int hib_wake(cJSON *ret, struct err *e)
{
	if (K.hib.state == KH_NONE) {
		cJSON_AddBoolToObject(ret, "already", 1);
		return 0;
	}
	int64_t t0 = now_ms();
	bool cold = K.hib.state == KH_COLD;
	int r = cold ? keeper_cold_fetch(e) : 0;
	if (r >= 0)
		r = hib_manifest_check(e);
	if (r < 0)
		return r;
	keeper_state_file("waking");
	if (r >= 0)
		r = keeper_layers_take(e);
	keeper_guest_cgroup_create();
	bool ram_restored = false, kept = r >= 0 && hib_manifest_kept(&ram_restored);
	if (r >= 0 && kept && !K.be->resume)
		r = err_set(e, -ENOTSUP, "its state holds a machine that the %s backend cannot restore", K.be->name);
	if (r >= 0 && kept) {
		/* The machine goes on where it stopped: its guest opens its port
		 * again and says hello. */
		char vs[PATH_MAX + 32];
		hib_paths("vm.state", vs, sizeof(vs));
		struct box_spec spec;
		keeper_spec(&spec);
		r = K.be->resume(&spec, vs, ram_restored, &K.inst, e);
		if (r >= 0)
			r = keeper_guest_attach(e);
	} else if (r >= 0) {
		r = keeper_guest_up(e);
	}
	char p[PATH_MAX + 32];
	hib_paths("tmp.tar", p, sizeof(p));
	_cleanup_close_ int fd = r < 0 ? -1 : open(p, O_RDONLY | O_CLOEXEC);
	for (uint64_t fed = HIB_PIECE; r >= 0 && fd >= 0 && fed == HIB_PIECE;)
		r = hib_run(hib_piece_cmd, fd, HIB_PIECE, &fed, -1, e);
	if (r >= 0 && fd >= 0)
		r = hib_run(hib_restore_cmd, -1, 0, NULL, -1, e);
	if (r < 0) {
		/* The saved state stays as it was: a later wake may do better. */
		if (K.up)
			keeper_guest_down();
		cgroup_remove(&K.cg);
		layers_release(&K.layers);
		keeper_state_file(cold ? "cold" : "hibernated");
		char m[sizeof(e->msg)];
		snprintf(m, sizeof(m), "%s", e->msg);
		return err_set(e, r, "cannot wake box %s: %s; its saved state is kept", K.name, m);
	}
	if (cold)
		keeper_cold_drop();
	state_rm_rf(K.hib.dir);
	K.hib.state = KH_NONE;
	K.hib.bytes = K.hib.stored = 0;
	K.hib.wakes++;
	K.last_activity = now_ms();
	keeper_state_file("running");
	int64_t ms = now_ms() - t0;
	keeper_log("keeper: box %s woken in %lld ms", K.name, (long long)ms);
	hib_event("woken", ms);
	cJSON_AddNumberToObject(ret, "ms", (double)ms);
	cJSON_AddStringToObject(ret, "processes", kept ? "kept" : "ended");
	return 0;
}

int keeper_wake(cJSON *ret, struct err *e)
{
	if (K.hib.state == KH_NONE)
		return hib_wake(ret, e);
	keeper_box_event("waking", NULL);
	int r = hib_wake(ret, e);
	if (r < 0)
		keeper_box_event("wake_failed", e->msg);
	return r;
}

void keeper_hib_drop(void)
{
	if (K.hib.state == KH_COLD)
		keeper_cold_drop();
	if (K.hib.dir[0])
		state_rm_rf(K.hib.dir);
	K.hib.state = KH_NONE;
}

static uint64_t du_sum;
static size_t du_n;
#define DU_MAX 1000000
static int du_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	du_sum += (uint64_t)st->st_blocks * 512;
	return ++du_n > DU_MAX;	/* past that many, the sum so far */
}

uint64_t keeper_disk_bytes(void)
{
	/* A walk of the layer is the box's to make long: once in a while. */
	static int64_t at = -1;
	static uint64_t layer;
	if (at >= 0 && now_ms() - at < 5000)
		return layer + K.hib.bytes;
	at = now_ms();
	du_sum = 0;
	du_n = 0;
	char img[sizeof(K.layers.dir) + 8];
	snprintf(img, sizeof(img), "%s.img", K.layers.dir);
	struct stat st;
	if (K.layered && stat(img, &st) == 0)
		du_sum = (uint64_t)st.st_blocks * 512;	/* the layers' image, sparse */
	else if (K.layered)
		nftw(K.layers.dir, du_one, 16, FTW_PHYS | FTW_MOUNT);
	/* The box's own disk, sparse: what its root's changes hold (a vm's). */
	if (K.disk[0] && stat(K.disk, &st) == 0)
		du_sum += (uint64_t)st.st_blocks * 512;
	layer = du_sum;
	return layer + K.hib.bytes;
}
