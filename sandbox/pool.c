/* A warm pool: boxes made ahead, each a keeper whose VM is restored and
 * waits for START, so that a create is a hand-over (CLAIM) instead of a
 * restore. A pool box carries a "pool" file in its runtime dir: the kind
 * it is (box_pool_key) and the pool's pid; a claim removes it. */
#include "sandbox/backend.h"
#include "sandbox/box.h"
#include "sandbox/state.h"
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
#include <unistd.h>

/* How often the pool looks for boxes taken. */
#define POOL_TICK_MS 100

void box_pool_key(const struct box_opts *o, char *out, size_t n)
{
	char ws[PATH_MAX] = "";
	if (o->workspace && !realpath(o->workspace, ws))
		snprintf(ws, sizeof(ws), "%s", o->workspace);
	char k[PATH_MAX * 2 + 512];
	const struct box_backend *be = box_backend_find(o->backend);
	int len = snprintf(k, sizeof(k), "%s|%llu|%llu|%llu|%u|%s|%d|%d|%llu|%s|%d", be ? be->name : "?",
			   (unsigned long long)o->lim.memory, (unsigned long long)o->lim.pids,
			   (unsigned long long)o->lim.disk, o->lim.cpus_milli, ws, o->rw, (int)o->net,
			   (unsigned long long)o->net_max_bytes, o->guest_path ? o->guest_path : "", o->no_snapshot);
	for (size_t i = 0; i < o->nallow && len > 0 && (size_t)len < sizeof(k); i++)
		len += snprintf(k + len, sizeof(k) - (size_t)len, "|%s", o->allow[i]);
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
