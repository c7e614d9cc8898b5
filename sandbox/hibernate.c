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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long saving or putting back /tmp may take: what a client waits
 * for a hibernate or a wake, less the rest of the step. */
#define HIB_TAR_MS (BOX_HIBERNATE_TIMEOUT_MS - BOX_HIBERNATE_REST_MS)
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

/* The step that runs: a hibernate's save of /tmp, a wake's pieces and
 * its unpacking, each a call on the keeper's one call path (kcall_start)
 * that the loop waits on; keeper_step_advance takes the next part once
 * the call is over. */
enum hib_phase {
	HP_IDLE,
	HP_SAVE_TMP,	/* a hibernate's tar of /tmp, into tmp.tar */
	HP_PIECE,	/* a wake's piece of tmp.tar, into the box */
	HP_RESTORE,	/* a wake's unpacking of it */
};
static struct {
	enum hib_phase phase;
	int64_t t0;
	cJSON *ret;		/* the answer so far */
	int fd;			/* tmp.tar: written by a save, read by a wake */
	bool kept;		/* a wake's: the machine went on where it stopped */
	struct kcall *k;	/* the call that runs, until its result */
	bool over;		/* it is over: the next part's turn */
	int r;			/* how it ended (or what stopped it first) */
	struct err e;
	uint64_t out, fed;	/* a save's bytes out; a piece's in */
	char errtail[HIB_ERR_MAX + 1];	/* the last of its stderr */
} S = { .fd = -1 };

/* What a saved /tmp may take on disk at most: the box's memory (its /tmp
 * is memory) and a margin; past it the hibernate is refused. */
static uint64_t hib_cap(void)
{
	return (K.o->lim.memory ? K.o->lim.memory : BOX_DEFAULT_MEMORY) + (64u << 20);
}

static void hib_call_frame(struct kcall *k, const struct frame *f)
{
	if (k != S.k || f->type != PROTO_OUTPUT)
		return;
	if (f->flags == 1) {
		/* stdout: a save's archive; a wake's commands have none */
		if (S.phase != HP_SAVE_TMP || S.r < 0)
			return;
		S.out += f->len;
		int w = 0;
		if (S.out > hib_cap())
			S.r = err_set(&S.e, -EFBIG, "the box's /tmp is over %llu MiB, more than its memory",
				      (unsigned long long)(hib_cap() >> 20));
		else if ((w = fdio_write_full(S.fd, f->payload, f->len)) < 0)
			S.r = err_setc(&S.e, w, "writing the saved state");
		if (S.r < 0)
			kcall_cancel(k);	/* its result ends the step */
		return;
	}
	/* stderr: the last of it says what went wrong */
	size_t have = strlen(S.errtail), n = MIN(f->len, (uint32_t)HIB_ERR_MAX);
	if (have + n > HIB_ERR_MAX) {
		size_t drop = have + n - HIB_ERR_MAX;
		memmove(S.errtail, S.errtail + drop, have - drop + 1);
		have -= drop;
	}
	memcpy(S.errtail + have, f->payload + f->len - n, n);
	S.errtail[have + n] = 0;
}

static void hib_call_result(struct kcall *k, const cJSON *res)
{
	if (k != S.k)
		return;
	S.k = NULL;
	S.over = true;
	if (S.r < 0)
		return;	/* what stopped it says why */
	const char *oc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "outcome"));
	if (oc && !strcmp(oc, "ok"))
		return;
	/* Its stderr's last line, else the keeper's own text (the guest
	 * gone, the call past its deadline), first line. */
	char why[HIB_ERR_MAX + 1];
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "text"));
	snprintf(why, sizeof(why), "%s", S.errtail[0] ? S.errtail : text && *text ? text : "tar failed");
	why[strcspn(why, "\n")] = 0;
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(res, "exit_code");
	S.r = err_set(&S.e, -EIO, "%s (%s, exit code %d)", why, oc ? oc : "no outcome",
		      cJSON_IsNumber(x) ? (int)x->valuedouble : -1);
}

static const struct kcall_own hib_own = { .frame = hib_call_frame, .result = hib_call_result };

/* One bash command in the guest, the keeper its client: stdin the next
 * piece of S.fd (HIB_PIECE at most) for a piece, none for the others. */
static int hib_call_start(enum hib_phase phase, const char *cmd, struct err *e)
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
	S.phase = phase;
	S.over = false;
	S.r = 0;
	S.e = (struct err){ 0 };
	S.out = S.fed = 0;
	S.errtail[0] = 0;
	S.k = s ? kcall_start(NULL, 0, &b, true, s, strlen(s), &hib_own) : NULL;
	if (!S.k)
		return err_set(e, -ENOMEM, "cannot start the call");
	uint32_t gid = S.k->gid;
	static char chunk[256u << 10];
	while (phase == HP_PIECE && S.fed < HIB_PIECE) {
		ssize_t n = fdio_read_some(S.fd, chunk, MIN(sizeof(chunk), HIB_PIECE - S.fed));
		if (n < 0) {
			kcall_cancel(S.k);
			return S.r = err_setc(&S.e, (int)n, "reading the saved state");
		}
		if (n == 0)
			break;
		keeper_guest_send(PROTO_INPUT, 0, gid, chunk, (size_t)n);
		S.fed += (uint64_t)n;
	}
	keeper_guest_send(PROTO_INPUT, PROTO_F_EOF, gid, NULL, 0);
	return 0;
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

void keeper_step_event(enum box_step s, enum box_step_event ev, const char *why)
{
	keeper_box_event(box_step_event_name(s, ev), why);
}

/* A step done, in ms. */
static void hib_event(enum box_step s, int64_t ms)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "box");
	cJSON_AddStringToObject(ev, "event", box_step_event_name(s, BOX_EV_DONE));
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

/* The step over: its waiter answered (keeper.c), a failure told to every
 * client (a step started: its start event was sent). */
static void hib_end(enum box_step step, int r, struct err *e)
{
	if (S.fd >= 0)
		close(S.fd);
	S.fd = -1;
	S.phase = HP_IDLE;
	S.k = NULL;
	S.over = false;
	cJSON *ret = S.ret;
	S.ret = NULL;
	if (r < 0)
		keeper_step_event(step, BOX_EV_FAILED, e->msg);
	keeper_step_answer(r, ret, e);
}

/* A hibernate's last part, once /tmp is saved (or needs no saving). */
static void hib_hibernated(void)
{
	struct err e = { 0 };
	/* The manifest while the box still runs: a state that cannot be
	 * made whole leaves the box as it was. */
	int r = hib_manifest_write(K.hib.kept ? "kept" : "ended", &e);
	if (r < 0 && K.hib.kept) {
		/* The machine stopped for the save: it ends with its state. */
		K.hib.kept = false;
		keeper_guest_down();
	}
	if (r < 0) {
		state_rm_rf(K.hib.dir);
		keeper_state_set(K.up ? BOX_ST_RUNNING : BOX_ST_LOST);
		hib_end(BOX_STEP_HIBERNATE, r, &e);
		return;
	}
	cJSON *ret = S.ret;
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
	K.hib.at_ms = now_ms();
	keeper_state_set(BOX_ST_HIBERNATED);
	int64_t ms = now_ms() - S.t0;
	keeper_log("keeper: box %s hibernated in %lld ms (%llu bytes saved)", K.name, (long long)ms,
		   (unsigned long long)K.hib.bytes);
	hib_event(BOX_STEP_HIBERNATE, ms);
	cJSON_AddNumberToObject(ret, "ms", (double)ms);
	cJSON_AddNumberToObject(ret, "state_bytes", (double)K.hib.bytes);
	cJSON_AddStringToObject(ret, "processes", K.hib.kept ? "kept" : "ended");
	if (!K.hib.kept && K.hib.why[0])
		cJSON_AddStringToObject(ret, "why", K.hib.why);
	hib_end(BOX_STEP_HIBERNATE, 0, NULL);
}

/* A hibernate's save of /tmp over (r < 0: failed, e says why). */
static void hib_tmp_saved(int r, struct err *e)
{
	if (r >= 0 && fsync(S.fd) < 0)
		r = err_setc(e, -errno, "saving /tmp");
	if (r < 0) {
		/* The box goes on as it was; nothing half-saved is left. */
		state_rm_rf(K.hib.dir);
		keeper_state_set(K.up ? BOX_ST_RUNNING : BOX_ST_LOST);
		err_wrap(e, "cannot save box %s's /tmp", K.name);
		if (K.up)
			err_append(e, "; the box still runs");
		hib_end(BOX_STEP_HIBERNATE, r, e);
		return;
	}
	hib_hibernated();
}

/* The clients hold their calls' clocks from the first event to the last
 * (box-conn.c). */
void keeper_hibernate(void)
{
	struct err e = { 0 };
	S.ret = cJSON_CreateObject();
	if (keeper_saved()) {
		cJSON_AddBoolToObject(S.ret, "already", 1);
		hib_end(BOX_STEP_HIBERNATE, 0, NULL);
		return;
	}
	int r = 0;
	unsigned n = 0;
	for (struct kcall *k = K.calls; k; k = k->next)
		n += !k->evidence;
	if (K.inst.pooled)
		r = err_set(&e, -EBUSY, "box %s waits in a pool; a create takes it", K.name);
	else if (n)
		r = err_set(&e, -EBUSY, "%u call%s running in box %s; hibernate it when %s ended (or cancel %s)", n,
			    n == 1 ? " is" : "s are", K.name, n == 1 ? "it has" : "they have", n == 1 ? "it" : "them");
	if (r < 0) {
		/* refused: at once, no step started */
		cJSON *ret = S.ret;
		S.ret = NULL;
		keeper_step_answer(r, ret, &e);
		return;
	}
	keeper_step_event(BOX_STEP_HIBERNATE, BOX_EV_START, NULL);
	S.t0 = now_ms();
	r = state_hib_dir(K.name, K.hib.dir, sizeof(K.hib.dir), &e);
	if (r < 0) {
		hib_end(BOX_STEP_HIBERNATE, r, &e);
		return;
	}
	state_rm_rf(K.hib.dir);
	if (state_mkdir_p(K.hib.dir, 0700) < 0) {
		r = err_setc(&e, -errno, "cannot make %s", K.hib.dir);
		hib_end(BOX_STEP_HIBERNATE, r, &e);
		return;
	}
	keeper_state_set(BOX_ST_HIBERNATING);
	/* A block workspace's changes since the last call (a job's), for
	 * whoever reads them while the box sleeps; they are on its disk
	 * either way. */
	struct err we = { 0 };
	if (keeper_ws_sync_now(KEEPER_WS_SYNC_MS, &we) < 0)
		keeper_log("keeper: before the hibernate: %s", we.msg);
	K.hib.kept = false;
	K.hib.why[0] = 0;
	if (K.up && K.be->save && K.inst.keeps_ram) {
		r = hib_save_machine(&e);
		if (r < 0) {
			snprintf(K.hib.why, sizeof(K.hib.why), "its machine could not be saved (%s)", e.msg);
			keeper_log("keeper: box %s: %s; its processes end", K.name, K.hib.why);
			e = (struct err){ 0 };
		}
	} else if (K.up) {
		snprintf(K.hib.why, sizeof(K.hib.why), "%s",
			 K.inst.ram_why ? K.inst.ram_why
					: "an ns box's processes cannot be saved: they end at a hibernate (its files are kept)");
	}
	/* A box whose /tmp is on its own disk (a vm's) keeps it there; else
	 * the box's tar saves it, a call the loop waits on. */
	if (K.up && !K.hib.kept && !K.inst.tmp_on_disk) {
		char p[PATH_MAX + 32];
		hib_paths("tmp.tar", p, sizeof(p));
		S.fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		r = S.fd < 0 ? err_setc(&e, -errno, "cannot write %s", p) : hib_call_start(HP_SAVE_TMP, hib_save_cmd, &e);
		if (r < 0)
			hib_tmp_saved(r, &e);
		return;
	}
	hib_hibernated();
}

/* A wake over (r < 0: failed, e says why; the saved state kept). */
static void hib_woken(int r, struct err *e)
{
	bool cold = K.hib.from_cold;
	if (r < 0) {
		/* The saved state stays as it was: a later wake may do better. */
		if (K.up)
			keeper_guest_down();
		cgroup_remove(&K.cg);
		layers_release(&K.layers);
		if (K.state == BOX_ST_WAKING)
			keeper_state_set(cold ? BOX_ST_COLD : BOX_ST_HIBERNATED);
		err_wrap(e, "cannot wake box %s", K.name);
		err_append(e, "; its saved state is kept");
		hib_end(BOX_STEP_WAKE, r, e);
		return;
	}
	if (cold)
		keeper_cold_drop();
	K.hib.from_cold = false;
	state_rm_rf(K.hib.dir);
	K.hib.bytes = K.hib.stored = 0;
	K.hib.kept = false;	/* the machine runs again: nothing of it is saved */
	K.hib.wakes++;
	K.last_activity = now_ms();
	keeper_state_set(BOX_ST_RUNNING);
	int64_t ms = now_ms() - S.t0;
	keeper_log("keeper: box %s woken in %lld ms", K.name, (long long)ms);
	hib_event(BOX_STEP_WAKE, ms);
	cJSON_AddNumberToObject(S.ret, "ms", (double)ms);
	cJSON_AddStringToObject(S.ret, "processes", S.kept ? "kept" : "ended");
	hib_end(BOX_STEP_WAKE, 0, NULL);
}

void keeper_wake(void)
{
	struct err e = { 0 };
	S.ret = cJSON_CreateObject();
	if (!keeper_saved()) {
		cJSON_AddBoolToObject(S.ret, "already", 1);
		hib_end(BOX_STEP_WAKE, 0, NULL);
		return;
	}
	keeper_step_event(BOX_STEP_WAKE, BOX_EV_START, NULL);
	S.t0 = now_ms();
	bool cold = K.hib.from_cold = K.state == BOX_ST_COLD;
	int r = cold ? keeper_cold_fetch(&e) : 0;
	if (r >= 0)
		r = hib_manifest_check(&e);
	if (r < 0) {
		hib_end(BOX_STEP_WAKE, r, &e);
		return;
	}
	keeper_state_set(BOX_ST_WAKING);
	r = keeper_layers_take(&e);
	keeper_guest_cgroup_create();
	bool ram_restored = false;
	S.kept = r >= 0 && hib_manifest_kept(&ram_restored);
	if (r >= 0 && S.kept && !K.be->resume)
		r = err_set(&e, -ENOTSUP, "its state holds a machine that the %s backend cannot restore", K.be->name);
	if (r >= 0 && S.kept) {
		/* The machine goes on where it stopped: its guest opens its port
		 * again and says hello. */
		char vs[PATH_MAX + 32];
		hib_paths("vm.state", vs, sizeof(vs));
		struct box_spec spec;
		keeper_spec(&spec);
		r = K.be->resume(&spec, vs, ram_restored, &K.inst, &e);
		if (r >= 0)
			r = keeper_guest_attach(&e);
	} else if (r >= 0) {
		r = keeper_guest_up(&e);
	}
	/* /tmp goes back in pieces, each a call the loop waits on, then is
	 * unpacked (keeper_step_advance). */
	char p[PATH_MAX + 32];
	hib_paths("tmp.tar", p, sizeof(p));
	S.fd = r < 0 ? -1 : open(p, O_RDONLY | O_CLOEXEC);
	if (r >= 0 && S.fd >= 0)
		r = hib_call_start(HP_PIECE, hib_piece_cmd, &e);
	if (r < 0 || S.fd < 0)
		hib_woken(r, &e);
}

bool keeper_step_advance(void)
{
	if (!S.over)
		return false;
	S.over = false;
	struct err e = { 0 };
	int r = S.r;
	if (r < 0)
		e = S.e;
	switch (S.phase) {
	case HP_SAVE_TMP:
		hib_tmp_saved(r, &e);
		break;
	case HP_PIECE:
		/* A whole piece: there may be more. */
		if (r >= 0)
			r = S.fed == HIB_PIECE ? hib_call_start(HP_PIECE, hib_piece_cmd, &e)
					       : hib_call_start(HP_RESTORE, hib_restore_cmd, &e);
		if (r < 0)
			hib_woken(r, &e);
		break;
	case HP_RESTORE:
		hib_woken(r, &e);
		break;
	case HP_IDLE:
		break;
	}
	return true;
}

void keeper_step_abort(const char *why)
{
	if (S.phase == HP_IDLE)
		return;
	bool wake = S.phase != HP_SAVE_TMP;
	struct err e = { 0 };
	int r = err_set(&e, -ECANCELED, "box %s was destroyed during its %s: %s", K.name,
			wake ? "wake" : "hibernate", why);
	hib_end(wake ? BOX_STEP_WAKE : BOX_STEP_HIBERNATE, r, &e);
}

void keeper_hib_drop(void)
{
	if (K.state == BOX_ST_COLD || (K.state == BOX_ST_WAKING && K.hib.from_cold))
		keeper_cold_drop();
	if (K.hib.dir[0])
		state_rm_rf(K.hib.dir);
}

static uint64_t du_sum;
static size_t du_n;
#define DU_MAX 1000000
/* How often the layer is walked again for its size, at most. */
#define DU_EVERY_MS 5000
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
	if (at >= 0 && now_ms() - at < DU_EVERY_MS)
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
