/* A box's options as the keeper receives them: ward writes them as JSON
 * into a sealed memfd, the keeper program reads them from its descriptor
 * (never from its command line or environment, which other processes can
 * read). Every field of struct box_opts makes the trip. */
#include "sandbox/box.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A field added to struct box_opts has to reach the keeper: carry it in
 * box_opts_to_json and box_opts_from_json, check it in
 * tests/unit/test-boxopts.c, then change this size. */
_Static_assert(sizeof(struct box_opts) == 200, "struct box_opts changed: carry the new field to the keeper here");

/* The largest integer a JSON number (a double) holds exactly. */
#define BOX_OPTS_INT_MAX 9007199254740992.0

static void add_str(cJSON *j, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(j, key, v);
}

static void add_list(cJSON *j, const char *key, const char *const *v, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(j, key);
	for (size_t i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
}

cJSON *box_opts_to_json(const struct box_opts *o)
{
	cJSON *j = cJSON_CreateObject();
	if (!j)
		return NULL;
	add_str(j, "name", o->name);
	add_str(j, "backend", o->backend);
	cJSON_AddNumberToObject(j, "ttl_ms", (double)o->ttl_ms);
	cJSON_AddNumberToObject(j, "idle_ms", (double)o->idle_ms);
	cJSON_AddNumberToObject(j, "on_idle", (double)o->on_idle);
	cJSON_AddNumberToObject(j, "cold_after_ms", (double)o->cold_after_ms);
	add_str(j, "store", o->store);
	cJSON_AddBoolToObject(j, "persistent", o->persistent);
	cJSON_AddBoolToObject(j, "keep_layers", o->keep_layers);
	cJSON_AddBoolToObject(j, "no_snapshot", o->no_snapshot);
	cJSON_AddNumberToObject(j, "memory", (double)o->lim.memory);
	cJSON_AddNumberToObject(j, "pids", (double)o->lim.pids);
	cJSON_AddNumberToObject(j, "cpus_milli", (double)o->lim.cpus_milli);
	cJSON_AddNumberToObject(j, "disk", (double)o->lim.disk);
	cJSON_AddNumberToObject(j, "net", (double)o->net);
	add_list(j, "allow", o->allow, o->nallow);
	cJSON_AddNumberToObject(j, "net_max_bytes", (double)o->net_max_bytes);
	add_str(j, "workspace", o->workspace);
	cJSON_AddBoolToObject(j, "rw", o->rw);
	cJSON_AddNumberToObject(j, "grace_ms", (double)o->grace_ms);
	add_str(j, "guest_path", o->guest_path);
	add_str(j, "keeper_path", o->keeper_path);
	cJSON_AddNumberToObject(j, "owner", (double)o->owner);
	add_list(j, "labels", o->labels, o->nlabels);
	cJSON_AddBoolToObject(j, "pool", o->pool);
	return j;
}

/* A non-negative integer a double holds exactly, or -EINVAL. */
static int get_num(const cJSON *j, const char *key, double max, double *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > max ||
	    v->valuedouble != (double)(int64_t)v->valuedouble)
		return -EINVAL;
	*ret = v->valuedouble;
	return 0;
}

/* A string member, absent or a string; the copy is the caller's. */
static int get_str(const cJSON *j, const char *key, const char **ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	*ret = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return -EINVAL;
	*ret = strdup(v->valuestring);
	return *ret ? 0 : -ENOMEM;
}

static int get_bool(const cJSON *j, const char *key, bool *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!cJSON_IsBool(v))
		return -EINVAL;
	*ret = cJSON_IsTrue(v);
	return 0;
}

static int get_list(const cJSON *j, const char *key, size_t max, const char *const **ret, size_t *ret_n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key), *v;
	int n = cJSON_GetArraySize(a);
	if (!cJSON_IsArray(a) || (size_t)n > max)
		return -EINVAL;
	char **l = calloc((size_t)n + 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	size_t i = 0;
	cJSON_ArrayForEach(v, a) {
		if (!cJSON_IsString(v) || !(l[i] = strdup(v->valuestring))) {
			while (i > 0)
				free(l[--i]);
			free(l);
			return cJSON_IsString(v) ? -ENOMEM : -EINVAL;
		}
		i++;
	}
	*ret = (const char *const *)l;
	*ret_n = i;
	return 0;
}

int box_opts_from_json(const cJSON *j, struct box_opts *ret, struct err *e)
{
	struct box_opts o = { 0 };
	double d[12];
	int r = cJSON_IsObject(j) ? 0 : -EINVAL;
	const char *bad = "the options are not a JSON object";
#define STEP(what, call) if (r >= 0 && (r = (call)) < 0) bad = what
	STEP("name", get_str(j, "name", &o.name));
	STEP("backend", get_str(j, "backend", &o.backend));
	STEP("ttl_ms", get_num(j, "ttl_ms", BOX_OPTS_INT_MAX, &d[0]));
	STEP("idle_ms", get_num(j, "idle_ms", BOX_OPTS_INT_MAX, &d[1]));
	STEP("on_idle", get_num(j, "on_idle", BOX_IDLE_HIBERNATE, &d[2]));
	STEP("cold_after_ms", get_num(j, "cold_after_ms", BOX_OPTS_INT_MAX, &d[3]));
	STEP("store", get_str(j, "store", &o.store));
	STEP("persistent", get_bool(j, "persistent", &o.persistent));
	STEP("keep_layers", get_bool(j, "keep_layers", &o.keep_layers));
	STEP("no_snapshot", get_bool(j, "no_snapshot", &o.no_snapshot));
	STEP("memory", get_num(j, "memory", BOX_OPTS_INT_MAX, &d[4]));
	STEP("pids", get_num(j, "pids", BOX_OPTS_INT_MAX, &d[5]));
	STEP("cpus_milli", get_num(j, "cpus_milli", UINT32_MAX, &d[6]));
	STEP("disk", get_num(j, "disk", BOX_OPTS_INT_MAX, &d[7]));
	STEP("net", get_num(j, "net", BOX_NET_ALLOW, &d[8]));
	STEP("allow", get_list(j, "allow", BOX_ALLOW_MAX, &o.allow, &o.nallow));
	STEP("net_max_bytes", get_num(j, "net_max_bytes", BOX_OPTS_INT_MAX, &d[9]));
	STEP("workspace", get_str(j, "workspace", &o.workspace));
	STEP("rw", get_bool(j, "rw", &o.rw));
	STEP("grace_ms", get_num(j, "grace_ms", BOX_OPTS_INT_MAX, &d[10]));
	STEP("guest_path", get_str(j, "guest_path", &o.guest_path));
	STEP("keeper_path", get_str(j, "keeper_path", &o.keeper_path));
	STEP("owner", get_num(j, "owner", INT32_MAX, &d[11]));
	STEP("labels", get_list(j, "labels", BOX_LABELS_MAX, &o.labels, &o.nlabels));
	STEP("pool", get_bool(j, "pool", &o.pool));
#undef STEP
	if (r >= 0 && !o.backend) {
		r = -EINVAL;
		bad = "backend";
	}
	if (r < 0) {
		box_opts_release(&o);
		return err_set(e, r, "the box's options from ward: %s%s", bad, r == -ENOMEM ? ": out of memory" : " is missing or wrong");
	}
	o.ttl_ms = (int64_t)d[0];
	o.idle_ms = (int64_t)d[1];
	o.on_idle = (enum box_on_idle)d[2];
	o.cold_after_ms = (int64_t)d[3];
	o.lim = (struct limits){ .memory = (uint64_t)d[4], .pids = (uint64_t)d[5], .cpus_milli = (uint32_t)d[6],
				 .disk = (uint64_t)d[7] };
	o.net = (enum box_net)d[8];
	o.net_max_bytes = (uint64_t)d[9];
	o.grace_ms = (int64_t)d[10];
	o.owner = (pid_t)d[11];
	*ret = o;
	return 0;
}

static void free_list(const char *const *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)l[i]);
	free((void *)l);
}

void box_opts_release(struct box_opts *o)
{
	free((char *)o->name);
	free((char *)o->backend);
	free((char *)o->store);
	free((char *)o->workspace);
	free((char *)o->guest_path);
	free((char *)o->keeper_path);
	free_list(o->allow, o->nallow);
	free_list(o->labels, o->nlabels);
	*o = (struct box_opts){ 0 };
}
