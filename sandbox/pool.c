/* A warm pool: boxes made ahead, so that a create is a hand-over (CLAIM)
 * instead of a making. A vm pool box is a keeper whose VM is restored and
 * waits for START (the backend's go, at the claim); an ns pool box is made
 * whole, its guest attached, and serves no call until it is claimed. A
 * pool box carries a "pool" file in its runtime dir: the kind it is
 * (box_pool_key) and the pool's pid; a claim removes it. */
#include "sandbox/backend.h"
#include "sandbox/box-int.h"
#include "sandbox/box.h"
#include "sandbox/keeper-int.h"
#include "base/state.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How often the pool looks for boxes taken. */
#define POOL_TICK_MS 100

void box_pool_key(const struct box_opts *o, char *out, size_t n)
{
	char ws[PATH_MAX] = "";
	if (o->workspace && !realpath(o->workspace, ws))
		snprintf(ws, sizeof(ws), "%s", o->workspace);
	char k[PATH_MAX * 2 + 512];
	const struct box_backend *be = backend_find(o->backend);
	int len = snprintf(k, sizeof(k), "%s|%llu|%llu|%llu%s|%u|%s|%d|%d|%d|%llu|%s|%d", be ? be->name : "?",
			   (unsigned long long)o->lim.memory, (unsigned long long)o->lim.pids,
			   (unsigned long long)o->lim.disk, o->disk_given ? "+" : "", o->lim.cpus_milli, ws, o->rw, o->git_rw, (int)o->net,
			   (unsigned long long)o->net_max_bytes, o->guest_path ? o->guest_path : "", o->no_snapshot);
	for (size_t i = 0; i < o->nallow && len > 0 && (size_t)len < sizeof(k); i++)
		len += snprintf(k + len, sizeof(k) - (size_t)len, "|%s", o->allow[i]);
	/* The root: a box of another image (or of none) is another kind; and a
	 * box whose workspace changes outlive it (ward run's) is another. */
	if (len > 0 && (size_t)len < sizeof(k))
		len += snprintf(k + len, sizeof(k) - (size_t)len, "|image=%s|keep=%d", o->image ? o->image : "",
				o->keep_layers);
	uint64_t h = 1469598103934665603ULL;
	for (const char *p = k; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	snprintf(out, n, "%016llx", (unsigned long long)h);
}

/* The pool boxes in the runtime dir: each one's name, kind and pool. */
static int pool_each(bool (*fn)(void *ud, const char *name, const char *key, pid_t pool), void *ud)
{
	char rt[PATH_MAX - 32], dir[PATH_MAX];
	if (state_runtime_dir(rt, sizeof(rt), NULL) < 0)
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%s/boxes", rt);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!state_name_valid(de->d_name))
			continue;
		char p[PATH_MAX + 80];
		snprintf(p, sizeof(p), "%s/%s/pool", dir, de->d_name);
		_cleanup_free_ char *txt = NULL;
		if (fdio_read_file(AT_FDCWD, p, 256, &txt, NULL) < 0)
			continue;
		cJSON *j = cJSON_Parse(txt);
		const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "key"));
		const cJSON *pp = cJSON_GetObjectItemCaseSensitive(j, "pool");
		bool stop = key && cJSON_IsNumber(pp) && fn(ud, de->d_name, key, (pid_t)pp->valuedouble);
		cJSON_Delete(j);
		if (stop)
			return 1;
	}
	return 0;
}

struct take {
	const char *key, *json;
	char *name;
	size_t n;
};

static bool take_one(void *ud, const char *name, const char *key, pid_t pool)
{
	struct take *t = ud;
	struct box_conn *c;
	if (strcmp(key, t->key) || box_connect(name, &c, NULL) < 0)
		return false;
	int r = box_claim(c, t->json, NULL);
	box_disconnect(c);
	if (r < 0)
		return false;	/* another create took it first: the next one */
	snprintf(t->name, t->n, "%s", name);
	return true;
}

int box_pool_take(const struct box_opts *o, char *ret_name, size_t n, struct err *e)
{
	char key[32];
	box_pool_key(o, key, sizeof(key));
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "owner", o->owner);
	cJSON_AddBoolToObject(j, "persistent", o->persistent);
	cJSON_AddNumberToObject(j, "ttl_ms", (double)o->ttl_ms);
	cJSON_AddNumberToObject(j, "idle_ms", (double)o->idle_ms);
	cJSON_AddBoolToObject(j, "hibernate_on_idle", o->on_idle == BOX_IDLE_HIBERNATE);
	cJSON_AddNumberToObject(j, "grace_ms", (double)o->grace_ms);
	cJSON_AddNumberToObject(j, "cold_after_ms", (double)o->cold_after_ms);
	if (o->store)
		cJSON_AddStringToObject(j, "store", o->store);
	cJSON *l = cJSON_AddArrayToObject(j, "labels");
	for (size_t i = 0; i < o->nlabels; i++)
		cJSON_AddItemToArray(l, cJSON_CreateString(o->labels[i]));
	_cleanup_free_ char *json = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	struct take t = { .key = key, .json = json, .name = ret_name, .n = n };
	if (json && pool_each(take_one, &t) == 1)
		return 0;
	return err_set(e, -ENOENT, "no pool box of this kind");
}

struct count {
	pid_t pool;
	unsigned n;
	bool destroy;
};

static bool count_one(void *ud, const char *name, const char *key, pid_t pool)
{
	struct count *c = ud;
	if (pool != c->pool)
		return false;
	char boxdir[PATH_MAX];
	if (state_box_dir(name, boxdir, sizeof(boxdir), NULL) < 0 || !state_keeper_pid(boxdir))
		return false;
	c->n++;
	if (c->destroy)
		box_destroy_if_pooled(name);
	return false;
}

int box_pool(const struct box_opts *o, unsigned size, int stop_fd, void (*say)(const char *msg), struct err *e)
{
	if (o->nsecrets)
		return err_set(e, -EINVAL, "a pool's boxes hold no secrets (a box with --secret is made on its own)");
	struct box_opts po = *o;
	po.pool = true;
	po.name = NULL;
	po.owner = getpid();
	po.persistent = false;
	po.ttl_ms = po.idle_ms = 0;	/* a waiting box lives as long as its pool */
	po.nlabels = 0;
	char msg[128];
	unsigned made = 0, ready_was = 0;
	int r = 0;
	for (;;) {
		struct count c = { .pool = getpid() };
		pool_each(count_one, &c);
		if (c.n < ready_was && say) {
			snprintf(msg, sizeof(msg), "%u taken; %u ready, making %u", ready_was - c.n, c.n, size - c.n);
			say(msg);
		}
		ready_was = c.n;
		struct pollfd pf = { .fd = stop_fd, .events = POLLIN };
		if (poll(&pf, 1, c.n < size ? 0 : POOL_TICK_MS) > 0)
			break;
		if (c.n >= size)
			continue;
		char name[BOX_NAME_MAX + 1];
		int64_t t0 = now_ms();
		r = box_create(&po, name, sizeof(name), e);
		if (r < 0) {
			if (!made)
				break;	/* the first one: nothing will work */
			if (say) {
				snprintf(msg, sizeof(msg), "a box could not be made (%.80s); trying again", e->msg);
				say(msg);
			}
			usleep(1000 * 1000);
			continue;
		}
		made++;
		ready_was++;
		if (say) {
			snprintf(msg, sizeof(msg), "%s ready in %lld ms (%u of %u)", name, (long long)(now_ms() - t0),
				 ready_was, size);
			say(msg);
		}
	}
	struct count c = { .pool = getpid(), .destroy = true };
	pool_each(count_one, &c);
	return r < 0 && !made ? r : 0;
}

/* The keeper's side. */

/* A pool box taken by a create: its lifetime, owner and labels are the
 * create's; a VM's guest gets START now (fresh entropy and clock), an ns
 * box's guest, attached since it was made, its first call. */
int keeper_claim(const struct frame *f, struct err *e)
{
	if (!K.inst.pooled || K.quit)
		return err_set(e, -EBUSY, "box %s is not waiting in a pool (another create took it, or it is ending)", K.name);
	cJSON *j = cJSON_ParseWithLength((const char *)f->payload, f->len);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return err_set(e, -EINVAL, "a claim without its JSON");
	}
	/* K.o is the keeper's own, read from ward at its start (keeper-main.c). */
	struct box_opts *o = (struct box_opts *)K.o;
	const cJSON *v;
#define NUM(key, dst) if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, key)) && v->valuedouble >= 0) dst = (int64_t)v->valuedouble
	NUM("ttl_ms", o->ttl_ms);
	NUM("idle_ms", o->idle_ms);
	NUM("grace_ms", o->grace_ms);
	NUM("cold_after_ms", o->cold_after_ms);
#undef NUM
	o->persistent = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "persistent"));
	o->on_idle = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "hibernate_on_idle")) ? BOX_IDLE_HIBERNATE
											     : BOX_IDLE_DESTROY;
	static char *store, *labels[BOX_LABELS_MAX];
	if ((v = cJSON_GetObjectItemCaseSensitive(j, "store")) && cJSON_IsString(v))
		o->store = store = strdup(v->valuestring);
	size_t nl = 0;
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "labels"))
		if (cJSON_IsString(v) && nl < BOX_LABELS_MAX && box_label_check(v->valuestring, NULL) == 0)
			labels[nl++] = strdup(v->valuestring);
	o->labels = (const char *const *)labels;
	o->nlabels = nl;
	pid_t owner = cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "owner")) ? (pid_t)v->valuedouble : 0;
	cJSON_Delete(j);
	/* The new owner's first: a claim that fails leaves the box the pool's. */
	int ofd = -1;
	if (!o->persistent && owner > 0 && (ofd = (int)syscall(SYS_pidfd_open, owner, 0)) < 0)
		return err_setc(e, -errno, "the ward that took the box is gone");
	if (K.ownerfd >= 0) {	/* the pool's: the box is not the pool's now */
		loop_del(K.loop, K.ownerfd);
		close(K.ownerfd);
		K.ownerfd = -1;
	}
	if (ofd >= 0) {
		K.ownerfd = ofd;
		K.owner = owner;
		loop_add(K.loop, K.ownerfd, EPOLLIN, keeper_owner_exit, NULL);
	}
	o->pool = false;	/* a box made again later (lost, woken) starts at once */
	int r = 0;
	if (K.be->go) {	/* a VM: its guest's START now, then attached */
		r = K.be->go(&K.inst, K.o, e);
		K.inst.hello_done = r >= 0;
	}
	bool attach = K.inst.pooled && K.be->go;
	K.inst.pooled = false;
	if (r >= 0 && attach)
		r = keeper_guest_attach(e);	/* its state RUNNING with it */
	if (r < 0)
		return r;
	if (!attach)
		keeper_state_set(BOX_ST_RUNNING);
	K.created_ms = K.last_activity = now_ms();
	K.created_wall = time(NULL);
	K.ttl_at = o->ttl_ms ? K.created_ms + o->ttl_ms : 0;
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/pool", K.boxdir);
	unlink(p);
	keeper_write_files();
	return 0;
}

/* The box's host cgroup, with the limits its backend asks of the host. */
