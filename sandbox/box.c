/* ward's side of a box's life: starting its keeper, listing boxes and
 * sweeping the dead ones. The connection and its calls are box-conn.c. */
#include "sandbox/backend.h"
#include "sandbox/box-int.h"
#include "sandbox/box-state.h"
#include "sandbox/vm.h"
#include "sandbox/box.h"
#include "sandbox/sdscope.h"
#include "sandbox/cgroup.h"
#include "image/image.h"
#include "workspace/layers.h"
#include "sandbox/spawn-env.h"
#include "proto/budget.h"
#include "base/child.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "tools/bash.h"
#include "tools/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void box_opts_default(struct box_opts *o)
{
	*o = (struct box_opts){
		.backend = BOX_DEFAULT_BACKEND,
		.ttl_ms = BOX_DEFAULT_TTL_MS,
		.idle_ms = BOX_DEFAULT_IDLE_MS,
		.lim = { .memory = BOX_DEFAULT_MEMORY, .pids = BOX_DEFAULT_PIDS, .disk = BOX_DEFAULT_DISK },
		.grace_ms = BUDGET_GRACE_MS,
	};
}

bool box_backend_known(const char *name)
{
	return backend_find(name) != NULL;
}

int box_vm_available(bool *ret_kvm, struct err *e)
{
	*ret_kvm = vm_kvm_usable();
	return vm_available(e);
}

static void box_gen_name(char *out, size_t n)
{
	uint8_t r[4] = { 0 };
	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		r[0] = (uint8_t)getpid();
	snprintf(out, n, "box-%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
}

int box_label_check(const char *kv, struct err *e)
{
	const char *eq = strchr(kv, '=');
	size_t kl = eq ? (size_t)(eq - kv) : 0;
	bool ok = eq && kl >= 1 && kl <= 63 && strlen(eq + 1) <= 255 && ((kv[0] >= 'a' && kv[0] <= 'z') ||
									      (kv[0] >= '0' && kv[0] <= '9'));
	for (size_t i = 0; ok && i < kl; i++)
		ok = (kv[i] >= 'a' && kv[i] <= 'z') || (kv[i] >= '0' && kv[i] <= '9') || strchr("._/-", kv[i]);
	for (const char *v = eq ? eq + 1 : ""; ok && *v; v++)
		ok = *v >= 0x20 && *v < 0x7f;
	if (!ok)
		return err_set(e, -EINVAL, "label \"%.80s\": give key=value, the key 1 to 63 of a-z 0-9 . _ / - (from a "
			       "letter or digit), the value up to 255 printable ASCII characters", kv);
	return 0;
}

bool box_has_label(const cJSON *info, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return false;
	char key[64];
	snprintf(key, sizeof(key), "%.*s", (int)(eq - kv) < 63 ? (int)(eq - kv) : 63, kv);
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(info,
												"labels"), key));
	return v && !strcmp(v, eq + 1);
}

/* After a stop signal: how long the keeper's answer is still waited for. */
#define BOX_CANCEL_WAIT_MS 2000

/* Exec ward-keeper for the box: detached (a new session; init adopts it,
 * as the process forked here exits at once), holding nothing of ward's
 * but what the descriptors carry: its options and the ready pipe. A
 * journal's lock, a CI step's pipe, a task's files are not the box's to
 * keep open; ward's memory, environment and command line (the API key,
 * the task) are not the keeper's to hold. */
static int box_spawn_keeper(const struct box_opts *o, const char *name, const char *boxdir, int ready_w,
			    struct err *e)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "boxdir", boxdir);
	cJSON_AddItemToObject(j, "opts", box_opts_to_json(o));
	_cleanup_free_ char *txt = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	_cleanup_close_ int optfd = txt ? fdio_sealed_memfd("ward-box-opts", txt, strlen(txt)) : -ENOMEM;
	if (optfd < 0)
		return err_setc(e, optfd, "cannot hand the box's keeper its options");
	_cleanup_free_ char **envp = spawn_env_keeper(o);
	if (!envp)
		return err_set(e, -ENOMEM, "out of memory");
	char *argv[] = { KEEPER_ARGV0, (char *)name, NULL };
	int fds[] = { -1, -1, -1, [KEEPER_OPTS_FD] = optfd, [KEEPER_READY_FD] = ready_w };
	/* Out of a delegated v2 group's way, so that it may enable its
	 * controllers for the box's group: this process, and so the keeper. */
	cgroup_leave();
	fflush(NULL);
	pid_t mid = fork();
	if (mid < 0)
		return err_setc(e, -errno, "fork");
	if (mid == 0) {
		setsid();
		pid_t k;
		/* In a scope systemd delegates, where it would give one
		 * (sandbox/sdscope.h); else as it is. */
		struct cgroup_caps caps;
		char run[PATH_MAX], why[160];
		cgroup_probe(&caps);
		if (sdscope_wanted(&caps, run, why, sizeof(why)) &&
		    sdscope_start(run, o->keeper_path, argv, envp, fds, ARRAY_SIZE(fds), &k, why, sizeof(why)) == 0)
			_exit(0);
		int r = child_start_env(o->keeper_path, argv, envp, fds, ARRAY_SIZE(fds), &k);
		if (r < 0) {
			char m[PATH_MAX + 128];
			int mn = snprintf(m, sizeof(m), "cannot start the box's keeper %s: %s", o->keeper_path, strerror(-r));
			fdio_write_full(ready_w, m, (size_t)MIN(mn, (int)sizeof(m) - 1));
		}
		_exit(r < 0);
	}
	waitpid(mid, NULL, 0);
	return 0;
}

/* One of ward's programs, by its whole path. */
static int box_program(const char *path, char out[PATH_MAX], const char *what, const char *var, struct err *e)
{
	if (path && access(path, X_OK) == 0 && realpath(path, out))
		return 0;
	return err_setc(e, path ? -errno : -ENOENT, "%s not found at %s (set %s)", what, path ? path : "(none)", var);
}

int box_create(const struct box_opts *given, char *ret_name, size_t n, struct err *e)
{
	/* The keeper runs in /: what it is given are whole paths. */
	struct box_opts ko = *given;
	const struct box_opts *o = &ko;
	char name[BOX_NAME_MAX + 1], boxdir[PATH_MAX], ws[PATH_MAX], guest[PATH_MAX], keeper[PATH_MAX];
	if (o->name) {
		if (!state_name_valid(o->name))
			return err_set(e, -EINVAL, "invalid box name \"%s\": use 1-%d letters, digits, '-', '_' or '.'",
				       o->name, BOX_NAME_MAX);
		snprintf(name, sizeof(name), "%s", o->name);
	} else {
		box_gen_name(name, sizeof(name));
	}
	if (!backend_find(o->backend))
		return err_set(e, -EINVAL, "unknown backend \"%s\": use ns, vm or auto", o->backend);
	/* A box is tied to an image's digest, never to a name that can move. */
	if (o->image && !image_ref_digest_valid(o->image))
		return err_set(e, -EINVAL, "the box's image \"%.80s\" is not a digest (sha256: and 64 hex digits)", o->image);
	if (o->workspace) {
		struct stat st;
		if (stat(o->workspace, &st) < 0 || !S_ISDIR(st.st_mode) || !realpath(o->workspace, ws))
			return err_set(e, -ENOENT, "workspace %s is not a directory", o->workspace);
		ko.workspace = ws;
		/* The copy-on-write layer cannot live inside the tree it covers. */
		char data[PATH_MAX - 64], dreal[PATH_MAX];
		if (!o->rw && state_data_dir(data, sizeof(data), NULL) == 0 &&
		    realpath(data, dreal) && !strncmp(dreal, ws, strlen(ws)) &&
		    (dreal[strlen(ws)] == '/' || !dreal[strlen(ws)] || !strcmp(ws, "/")))
			return err_set(e, -EINVAL,
				       "workspace %s holds ward's state directory (%s), where its changes would go; "
				       "use another workspace, --rw, or set XDG_STATE_HOME elsewhere", o->workspace, dreal);
	}
	int r = box_program(o->guest_path, guest, "ward-guest", "WARD_GUEST", e);
	if (r < 0 || (r = box_program(o->keeper_path, keeper, "ward-keeper", "WARD_KEEPER", e)) < 0)
		return r;
	/* A vm box's image reaches the VM as erofs: made here, once for every
	 * box of the image (a big one takes seconds), rather than within the
	 * bound the keeper has to bring the box up. */
	if (o->image && backend_find(o->backend) == &vm_backend) {
		struct image_info img = { .hold_fd = -1 };
		char erofs[PATH_MAX];
		r = image_find(o->image, &img, e);
		if (r >= 0)
			r = image_erofs(&img, erofs, sizeof(erofs), e);
		image_info_release(&img);
		if (r < 0)
			return r;
	}
	ko.guest_path = guest;
	ko.keeper_path = keeper;
	/* A warm pool's box of this kind, if one waits: a hand-over. */
	if (!o->name && !o->pool && !o->no_snapshot && !o->npublish && !o->fork_of && !o->nsecrets &&
	    !(o->store && !strncmp(o->store, "s3://", 5)) &&	/* its keeper's environment is the pool's */
	    box_pool_take(o, ret_name, n, NULL) == 0)
		return 0;
	r = state_box_dir(name, boxdir, sizeof(boxdir), e);
	if (r < 0)
		return r;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", boxdir);
	*strrchr(parent, '/') = 0;
	if ((r = state_mkdir_p(parent, 0700)) < 0)
		return err_setc(e, r, "cannot create %s", parent);
	if (mkdir(boxdir, 0700) < 0) {
		if (errno != EEXIST)
			return err_setc(e, -errno, "cannot create %s", boxdir);
		if (state_keeper_pid(boxdir))
			return err_set(e, -EEXIST, "a box named %s already exists; destroy it or pick another name", name);
		state_rm_rf(boxdir);
		if (mkdir(boxdir, 0700) < 0)
			return err_setc(e, -errno, "cannot create %s", boxdir);
	}
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) < 0)
		return err_setc(e, -errno, "pipe");
	r = box_spawn_keeper(o, name, boxdir, ready[1], e);
	close(ready[1]);
	if (r < 0) {
		close(ready[0]);
		return r;
	}
	char msg[600];
	size_t got = 0;
	int64_t until = now_ms() + BOX_CREATE_TIMEOUT_MS + 2000;
	bool cancelled = false;
	for (;;) {
		int64_t left = until - now_ms();
		/* A box owned by its maker: a stop signal the maker holds
		 * blocked (for its loop) ends the wait; the keeper, watching its
		 * owner, destroys the box when the maker exits. */
		sigset_t pend;
		if (!cancelled && o->owner > 0 && !o->persistent && sigpending(&pend) == 0 &&
		    (sigismember(&pend, SIGTERM) || sigismember(&pend, SIGINT) || sigismember(&pend, SIGHUP))) {
			/* The keeper's answer is waited for a moment more, so that a
			 * box that comes up is destroyed here, whole. */
			cancelled = true;
			until = now_ms() + BOX_CANCEL_WAIT_MS;
			continue;
		}
		struct pollfd pf = { .fd = ready[0], .events = POLLIN };
		int pr = left <= 0 ? 0 : poll(&pf, 1, (int)(left < 100 ? left : 100));
		if (pr == 0 && left > 100)
			continue;
		if (pr <= 0) {
			close(ready[0]);
			if (cancelled)
				return err_set(e, -ECANCELED, "ward was asked to stop while the box was made");
			return err_set(e, -ETIMEDOUT, "the box did not come up within %d s", BOX_CREATE_TIMEOUT_MS / 1000 + 2);
		}
		ssize_t k = read(ready[0], msg + got, sizeof(msg) - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got >= sizeof(msg) - 1)
			break;
	}
	close(ready[0]);
	msg[got] = 0;
	if (cancelled) {
		/* Up after all: destroyed now, not left to its keeper. */
		struct err e2 = { 0 };
		if (!strcmp(msg, "ok\n"))
			box_destroy(name, &e2);
		return err_set(e, -ECANCELED, "ward was asked to stop while the box was made");
	}
	if (strcmp(msg, "ok\n")) {
		msg[strcspn(msg, "\n")] = 0;
		return err_set(e, -EIO, "%s", got ? msg : "the box's keeper died during setup");
	}
	snprintf(ret_name, n, "%s", name);
	return 0;
}

/* A live box's info, asked of its keeper: a listing asks them all at
 * once, a few threads each taking the next, so that one box's round trip
 * does not wait on another's (each keeper answers in its own process). */
struct info_ask {
	char name[BOX_NAME_MAX + 1];
	char boxdir[PATH_MAX + 64];
	cJSON *entry;	/* its entry in the listing ({name, alive}) */
	cJSON *info;	/* the keeper's answer, or NULL */
};

struct info_asks {
	struct info_ask *a;
	size_t n;
	size_t next;	/* the next one a thread takes (atomically) */
};

#define BOX_LIST_THREADS 8

static void *info_ask_run(void *ud)
{
	struct info_asks *q = ud;
	for (size_t i; (i = __atomic_fetch_add(&q->next, 1, __ATOMIC_RELAXED)) < q->n;) {
		struct box_conn *c;
		if (box_connect_quick(q->a[i].name, &c, NULL) == 0) {
			box_info(c, &q->a[i].info, NULL);
			box_disconnect(c);
		}
	}
	return NULL;
}

static void info_ask_all(struct info_asks *q)
{
	pthread_t t[BOX_LIST_THREADS];
	size_t nt = 0, want = q->n < BOX_LIST_THREADS ? q->n : BOX_LIST_THREADS;
	for (; nt + 1 < want; nt++)
		if (pthread_create(&t[nt], NULL, info_ask_run, q) != 0)
			break;
	info_ask_run(q);	/* this thread too (and alone, where none could start) */
	for (size_t i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
}

static int box_each(cJSON *arr, bool reap, unsigned *ret_n, struct err *e)
{
	char rt[PATH_MAX - 32], dir[PATH_MAX];
	int r = state_runtime_dir(rt, sizeof(rt), e);
	if (r < 0)
		return r;
	snprintf(dir, sizeof(dir), "%s/boxes", rt);
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	unsigned n = 0;
	struct info_asks q = { 0 };
	size_t cap = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !state_name_valid(de->d_name))
			continue;
		char boxdir[PATH_MAX + 64];
		snprintf(boxdir, sizeof(boxdir), "%s/%s", dir, de->d_name);
		pid_t k = state_keeper_pid(boxdir);
		if (reap) {
			if (k)
				continue;
			/* A box being created has no keeper.pid yet: leave young
			 * directories alone. */
			char pidf[PATH_MAX + 80];
			struct stat st;
			snprintf(pidf, sizeof(pidf), "%s/keeper.pid", boxdir);
			if (stat(pidf, &st) < 0 && stat(boxdir, &st) == 0 &&
			    time(NULL) - st.st_mtime < BOX_CREATE_TIMEOUT_MS / 1000 + 5)
				continue;
			/* The keeper is gone: so is the box (PDEATHSIG). Remove what
			 * it left: cgroups named in info.json, the layers of a
			 * non-persistent box, the runtime dir. */
			char p[PATH_MAX + 80];
			snprintf(p, sizeof(p), "%s/info.json", boxdir);
			_cleanup_free_ char *txt = NULL;
			if (fdio_read_file(AT_FDCWD, p, 65536, &txt, NULL) == 0) {
				cJSON *j = cJSON_Parse(txt);
				struct cgroup_set cg = { 0 };
				const char *v;
				if ((v = cJSON_GetStringValue(cJSON_GetObjectItem(j, "cgroup_v2"))))
					snprintf(cg.v2, sizeof(cg.v2), "%s", v);
				if ((v = cJSON_GetStringValue(cJSON_GetObjectItem(j, "cgroup_memory"))))
					snprintf(cg.mem1, sizeof(cg.mem1), "%s", v);
				if ((v = cJSON_GetStringValue(cJSON_GetObjectItem(j, "cgroup_pids"))))
					snprintf(cg.pids1, sizeof(cg.pids1), "%s", v);
				cg.v2_kill = true;
				cgroup_kill(&cg);
				cgroup_remove(&cg);
				/* A session's layers outlive its box: they are its
				 * changes, kept until applied or dropped. */
				if (!cJSON_IsTrue(cJSON_GetObjectItem(j, "keep_layers")))
					layers_drop(de->d_name);
				else
					layers_root_drop(de->d_name);	/* the root's changes are the box's */
				cJSON_Delete(j);
			}
			state_rm_rf(boxdir);
			/* Its own disk, as its keeper would have removed it. */
			char disk[PATH_MAX];
			if (state_disk_path(de->d_name, disk, sizeof(disk), NULL) == 0)
				unlink(disk);
			/* What it saved when it hibernated goes too: whole or torn,
			 * nobody can wake it without its keeper. */
			char hib[PATH_MAX];
			if (state_hib_dir(de->d_name, hib, sizeof(hib), NULL) == 0) {
				box_cold_drop(hib);
				state_rm_rf(hib);
			}
			n++;
			continue;
		}
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "name", de->d_name);
		cJSON_AddBoolToObject(b, "alive", k != 0);
		cJSON_AddItemToArray(arr, b);
		n++;
		if (!k)
			continue;
		if (q.n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct info_ask *na = realloc(q.a, nc * sizeof(*na));
			if (!na)
				continue;	/* listed without its info */
			q.a = na;
			cap = nc;
		}
		struct info_ask *a = &q.a[q.n++];
		snprintf(a->name, sizeof(a->name), "%s", de->d_name);
		snprintf(a->boxdir, sizeof(a->boxdir), "%s", boxdir);
		a->entry = b;
		a->info = NULL;
	}
	info_ask_all(&q);
	/* In the listing's order: each live box's answer over its entry. */
	for (size_t i = 0; i < q.n; i++) {
		cJSON *b = q.a[i].entry;
		if (q.a[i].info) {
			cJSON_AddBoolToObject(q.a[i].info, "alive", 1);
			cJSON_ReplaceItemViaPointer(arr, b, q.a[i].info);
			continue;
		}
		/* A keeper busy hibernating or waking the box does not answer:
		 * the state it left says what it is doing. One that is silent
		 * otherwise (stopped) leaves it unknown: the file says where the
		 * box was, not where it is. */
		char p[PATH_MAX + 80];
		snprintf(p, sizeof(p), "%s/state", q.a[i].boxdir);
		_cleanup_free_ char *st = NULL;
		if (fdio_read_file(AT_FDCWD, p, 64, &st, NULL) == 0 && box_state_name_busy(st))
			cJSON_AddStringToObject(b, "state", st);
	}
	free(q.a);
	if (ret_n)
		*ret_n = n;
	return 0;
}

int box_list(cJSON **ret, struct err *e)
{
	cJSON *arr = cJSON_CreateArray();
	int r = box_each(arr, false, NULL, e);
	if (r < 0) {
		cJSON_Delete(arr);
		return r;
	}
	*ret = arr;
	return 0;
}

int box_reap(unsigned *ret_n, struct err *e)
{
	int r = box_each(NULL, true, ret_n, e);
	/* Images of kept changes that nobody uses need no mount. */
	layers_sweep();
	return r;
}
