/* A box's options as the keeper receives them: ward writes them as JSON
 * into a sealed memfd, the keeper program reads them from its descriptor
 * (never from its command line or environment, which other processes can
 * read). Every field of struct box_opts makes the trip. */
#include "sandbox/box.h"
#include "base/cleanup.h"
#include "net/secret.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Every field of struct box_opts, once: what it is called in the JSON, its
 * kind, where it lives, and its largest value. A field added to struct
 * box_opts gets its row here and a check in tests/unit/test-boxopts.c;
 * then change the size below (a bool can hide in padding: the row is what
 * counts, the size only a tripwire). */
_Static_assert(sizeof(struct box_opts) == 280, "struct box_opts changed: give the new field its row in box_opts_fields");

/* The largest integer a JSON number (a double) holds exactly. */
#define BOX_OPTS_INT_MAX 9007199254740992.0

enum field_kind { F_STR, F_BOOL, F_I64, F_U64, F_U32, F_INT, F_PID, F_LIST };
struct field {
	const char *key;
	enum field_kind kind;
	size_t off, off_n;	/* F_LIST: the array, and its count */
	double max;		/* numbers; F_LIST: the most entries */
};
#define AT(f) offsetof(struct box_opts, f)
static const struct field box_opts_fields[] = {
	{ "name", F_STR, AT(name) },
	{ "backend", F_STR, AT(backend) },
	{ "ttl_ms", F_I64, AT(ttl_ms), 0, BOX_OPTS_INT_MAX },
	{ "idle_ms", F_I64, AT(idle_ms), 0, BOX_OPTS_INT_MAX },
	{ "on_idle", F_INT, AT(on_idle), 0, BOX_IDLE_HIBERNATE },
	{ "cold_after_ms", F_I64, AT(cold_after_ms), 0, BOX_OPTS_INT_MAX },
	{ "store", F_STR, AT(store) },
	{ "persistent", F_BOOL, AT(persistent) },
	{ "keep_layers", F_BOOL, AT(keep_layers) },
	{ "no_snapshot", F_BOOL, AT(no_snapshot) },
	{ "memory", F_U64, AT(lim.memory), 0, BOX_OPTS_INT_MAX },
	{ "pids", F_U64, AT(lim.pids), 0, BOX_OPTS_INT_MAX },
	{ "cpus_milli", F_U32, AT(lim.cpus_milli), 0, UINT32_MAX },
	{ "disk", F_U64, AT(lim.disk), 0, BOX_OPTS_INT_MAX },
	{ "disk_given", F_BOOL, AT(disk_given) },
	{ "net", F_INT, AT(net), 0, BOX_NET_ALLOW },
	{ "allow", F_LIST, AT(allow), AT(nallow), BOX_ALLOW_MAX },
	{ "net_max_bytes", F_U64, AT(net_max_bytes), 0, BOX_OPTS_INT_MAX },
	{ "secrets", F_LIST, AT(secrets), AT(nsecrets), NET_SECRET_MAX },
	{ "secret_values", F_LIST, AT(secret_values), AT(nsecret_values), NET_SECRET_MAX },
	{ "secret_ca", F_STR, AT(secret_ca) },
	{ "secret_other_ok", F_BOOL, AT(secret_other_ok) },
	{ "workspace", F_STR, AT(workspace) },
	{ "image", F_STR, AT(image) },
	{ "rw", F_BOOL, AT(rw) },
	{ "git_rw", F_BOOL, AT(git_rw) },
	{ "grace_ms", F_I64, AT(grace_ms), 0, BOX_OPTS_INT_MAX },
	{ "guest_path", F_STR, AT(guest_path) },
	{ "keeper_path", F_STR, AT(keeper_path) },
	{ "owner", F_PID, AT(owner), 0, INT32_MAX },
	{ "labels", F_LIST, AT(labels), AT(nlabels), BOX_LABELS_MAX },
	{ "pool", F_BOOL, AT(pool) },
	{ "publish", F_LIST, AT(publish), AT(npublish), BOX_PORTS_MAX },
	{ "fork_of", F_STR, AT(fork_of) },
};
#undef AT
_Static_assert(sizeof(enum box_on_idle) == sizeof(int) && sizeof(enum box_net) == sizeof(int),
	       "F_INT fields are stored as int");

#define FIELD(o, f, type) ((type *)((char *)(o) + (f)->off))

static void add_field(cJSON *j, const struct box_opts *o, const struct field *f)
{
	double d = 0;
	switch (f->kind) {
	case F_STR: {
		const char *v = *FIELD(o, f, const char *const);
		if (v)
			cJSON_AddStringToObject(j, f->key, v);
		return;
	}
	case F_BOOL:
		cJSON_AddBoolToObject(j, f->key, *FIELD(o, f, const bool));
		return;
	case F_LIST: {
		const char *const *v = *FIELD(o, f, const char *const *const);
		size_t n = *(const size_t *)((const char *)o + f->off_n);
		cJSON *a = cJSON_AddArrayToObject(j, f->key);
		for (size_t i = 0; a && i < n; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
		return;
	}
	case F_I64: d = (double)*FIELD(o, f, const int64_t); break;
	case F_U64: d = (double)*FIELD(o, f, const uint64_t); break;
	case F_U32: d = (double)*FIELD(o, f, const uint32_t); break;
	case F_INT: d = (double)*FIELD(o, f, const int); break;
	case F_PID: d = (double)*FIELD(o, f, const pid_t); break;
	}
	cJSON_AddNumberToObject(j, f->key, d);
}

cJSON *box_opts_to_json(const struct box_opts *o)
{
	cJSON *j = cJSON_CreateObject();
	for (size_t i = 0; j && i < ARRAY_SIZE(box_opts_fields); i++)
		add_field(j, o, &box_opts_fields[i]);
	return j;
}

/* A non-negative integer a double holds exactly, at most max. */
static int get_num(const cJSON *v, double max, double *ret)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > max ||
	    v->valuedouble != (double)(int64_t)v->valuedouble)
		return -EINVAL;
	*ret = v->valuedouble;
	return 0;
}

static int get_list(const cJSON *a, size_t max, const char *const **ret, size_t *ret_n)
{
	const cJSON *v;
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

/* One field from j into o: 0, or <0 (it is missing or wrong). Strings may
 * be absent; everything else must be there. */
static int get_field(const cJSON *j, struct box_opts *o, const struct field *f)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, f->key);
	double d;
	int r;
	switch (f->kind) {
	case F_STR:
		if (!v)
			return 0;
		if (!cJSON_IsString(v))
			return -EINVAL;
		return (*FIELD(o, f, const char *) = strdup(v->valuestring)) ? 0 : -ENOMEM;
	case F_BOOL:
		if (!cJSON_IsBool(v))
			return -EINVAL;
		*FIELD(o, f, bool) = cJSON_IsTrue(v);
		return 0;
	case F_LIST:
		return get_list(v, (size_t)f->max, FIELD(o, f, const char *const *), (size_t *)((char *)o + f->off_n));
	default:
		break;
	}
	if ((r = get_num(v, f->max, &d)) < 0)
		return r;
	switch (f->kind) {
	case F_I64: *FIELD(o, f, int64_t) = (int64_t)d; break;
	case F_U64: *FIELD(o, f, uint64_t) = (uint64_t)d; break;
	case F_U32: *FIELD(o, f, uint32_t) = (uint32_t)d; break;
	case F_INT: *FIELD(o, f, int) = (int)d; break;
	case F_PID: *FIELD(o, f, pid_t) = (pid_t)d; break;
	default: break;
	}
	return 0;
}

int box_opts_from_json(const cJSON *j, struct box_opts *ret, struct err *e)
{
	struct box_opts o = { 0 };
	int r = cJSON_IsObject(j) ? 0 : -EINVAL;
	const char *bad = "the options are not a JSON object";
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(box_opts_fields); i++)
		if ((r = get_field(j, &o, &box_opts_fields[i])) < 0)
			bad = box_opts_fields[i].key;
	if (r >= 0 && !o.backend) {
		r = -EINVAL;
		bad = "backend";
	}
	if (r < 0) {
		box_opts_release(&o);
		return err_set(e, r, "the box's options from ward: %s%s", bad, r == -ENOMEM ? ": out of memory" : " is missing or wrong");
	}
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
	for (size_t i = 0; i < ARRAY_SIZE(box_opts_fields); i++) {
		const struct field *f = &box_opts_fields[i];
		if (f->kind == F_STR)
			free((char *)*FIELD(o, f, const char *));
		else if (f->kind == F_LIST)
			free_list(*FIELD(o, f, const char *const *), *(size_t *)((char *)o + f->off_n));
	}
	*o = (struct box_opts){ 0 };
}
