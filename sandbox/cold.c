/* Cold storage, the keeper's side: a box hibernated longer than
 * --cold-after has its saved state compressed (zstd) and moved to a store
 * (--store: a directory, by default the state dir's cold/, or an
 * S3-compatible bucket); what is left on the machine is cold.json, which
 * names the objects. A wake fetches and decompresses them, checks the
 * manifest that came with them, and deletes the objects once the box is
 * up. The workspace layer stays where it is. */
#include "sandbox/keeper-int.h"
#include "sandbox/box-int.h"
#include "base/state.h"
#include "store/store.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* zstd's level for a saved state: fast (hundreds of MB/s), most of the
 * gain (README's figures). */
#define COLD_LEVEL 3

static int cold_open_spec(const char *spec, struct store **ret, struct err *e)
{
	char def[PATH_MAX];
	if (!spec || !*spec) {
		char d[PATH_MAX - 16];
		int r = state_data_dir(d, sizeof(d), e);
		if (r < 0)
			return r;
		snprintf(def, sizeof(def), "%s/cold", d);
		spec = def;
	}
	return store_open(spec, ret, e);
}

static int cold_open(struct store **ret, struct err *e)
{
	return cold_open_spec(K.o->store, ret, e);
}

static void cold_path(const char *leaf, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", K.hib.dir, leaf);
}

/* Objects of this box's life: its name, its keeper, when it was made. */
static void cold_key(const char *file, char *out, size_t n)
{
	snprintf(out, n, "%s-%d-%lld/%s.zst", K.name, (int)getpid(), (long long)K.created_wall, file);
}

/* The files of a saved state as the manifest's directory holds them. */
static const char *const cold_files[] = { "state.json", "tmp.tar", "vm.state", NULL };

static int cold_move(struct err *e);

int keeper_cold(struct err *e)
{
	if (K.state != BOX_ST_HIBERNATED)
		return 0;
	keeper_state_set(BOX_ST_GOING_COLD);
	keeper_step_event(BOX_STEP_COLD, BOX_EV_START, NULL);
	int r = cold_move(e);
	keeper_state_set(r < 0 ? BOX_ST_HIBERNATED : BOX_ST_COLD);
	keeper_step_event(BOX_STEP_COLD, r < 0 ? BOX_EV_FAILED : BOX_EV_DONE, r < 0 ? e->msg : NULL);
	return r;
}

static int cold_move(struct err *e)
{
	int64_t t0 = now_ms();
	struct store *st = NULL;
	int r = cold_open(&st, e);
	if (r < 0)
		return r;
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "store", store_describe(st));
	cJSON_AddStringToObject(c, "spec", K.o->store ? K.o->store : "");
	cJSON *objs = cJSON_AddObjectToObject(c, "objects"), *sums = cJSON_AddObjectToObject(c, "sha256");
	uint64_t in_total = 0, out_total = 0;
	for (const char *const *f = cold_files; *f && r >= 0; f++) {
		char p[PATH_MAX + 32], z[PATH_MAX + 40], key[160];
		cold_path(*f, p, sizeof(p));
		snprintf(z, sizeof(z), "%s.zst", p);
		_cleanup_close_ int in = open(p, O_RDONLY | O_CLOEXEC);
		if (in < 0 && errno == ENOENT)
			continue;	/* a box lost before it hibernated has no /tmp saved */
		_cleanup_close_ int out = in < 0 ? -1 : open(z, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (in < 0 || out < 0) {
			r = err_setc(e, -errno, "cannot read %s", p);
			break;
		}
		uint64_t bi = 0, bo = 0;
		r = store_compress(in, out, COLD_LEVEL, &bi, &bo, e);
		if (r >= 0 && fsync(out) < 0)
			r = err_setc(e, -errno, "writing %s", z);
		cold_key(*f, key, sizeof(key));
		/* What comes back from the store must be what went: cold.json,
		 * which stays here, holds its hash. */
		char hex[HASH_SHA256_HEX];
		_cleanup_close_ int zr = r < 0 ? -1 : open(z, O_RDONLY | O_CLOEXEC);
		if (r >= 0 && (zr < 0 || hash_sha256_fd_hex(zr, hex) < 0))
			r = err_setc(e, -EIO, "reading %s back", z);
		if (r >= 0)
			r = store_put(st, key, z, e);
		unlink(z);
		if (r >= 0) {
			cJSON_AddStringToObject(objs, *f, key);
			cJSON_AddStringToObject(sums, *f, hex);
			in_total += bi;
			out_total += bo;
		}
	}
	if (r >= 0) {
		cJSON_AddNumberToObject(c, "bytes", (double)in_total);
		cJSON_AddNumberToObject(c, "stored_bytes", (double)out_total);
		_cleanup_free_ char *txt = cJSON_Print(c);
		char p[PATH_MAX + 32];
		cold_path("cold.json", p, sizeof(p));
		/* Once cold.json is whole the store holds the state: then the
		 * local copies go. */
		r = txt ? fdio_write_atomic(p, txt, strlen(txt), 0600) : -ENOMEM;
		if (r < 0)
			err_setc(e, r, "writing %s", p);
	}
	if (r < 0) {
		/* Nothing changes here; what reached the store is removed. */
		const cJSON *o;
		cJSON_ArrayForEach(o, objs)
			store_del(st, o->valuestring, NULL);
	} else {
		for (const char *const *f = cold_files; *f; f++) {
			char p[PATH_MAX + 32];
			cold_path(*f, p, sizeof(p));
			unlink(p);
		}
		char p[PATH_MAX + 32];
		cold_path("cold.json", p, sizeof(p));
		struct stat sb;
		K.hib.bytes = stat(p, &sb) == 0 ? (uint64_t)sb.st_blocks * 512 : 0;
		K.hib.stored = out_total;
		keeper_log("keeper: box %s's saved state went cold in %lld ms: %llu bytes as %llu in %s", K.name,
			   (long long)(now_ms() - t0), (unsigned long long)in_total, (unsigned long long)out_total,
			   store_describe(st));
	}
	cJSON_Delete(c);
	store_free(st);
	return r;
}

/* dir's cold.json, parsed, or NULL and why. */
static cJSON *cold_read_at(const char *dir, struct err *e)
{
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/cold.json", dir);
	_cleanup_free_ char *txt = NULL;
	cJSON *c = fdio_read_file(AT_FDCWD, p, 1 << 16, &txt, NULL) == 0 ? cJSON_Parse(txt) : NULL;
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c, "objects"))) {
		cJSON_Delete(c);
		err_set(e, -EBADMSG, "the saved state in %s is torn: its cold.json is missing or malformed; it cannot be "
			"woken (ward box destroy removes it)", dir);
		return NULL;
	}
	return c;
}

static cJSON *cold_read(struct err *e)
{
	return cold_read_at(K.hib.dir, e);
}

int keeper_cold_fetch(struct err *e)
{
	cJSON *c = cold_read(e);
	if (!c)
		return -EBADMSG;
	struct store *st = NULL;
	int r = cold_open(&st, e);
	const cJSON *o, *objs = r < 0 ? NULL : cJSON_GetObjectItemCaseSensitive(c, "objects");
	cJSON_ArrayForEach(o, objs) {
		char p[PATH_MAX + 32], z[PATH_MAX + 40];
		if (!cJSON_IsString(o) || strchr(o->string, '/')) {
			r = err_set(e, -EBADMSG, "box %s's cold.json is malformed", K.name);
			break;
		}
		cold_path(o->string, p, sizeof(p));
		snprintf(z, sizeof(z), "%s.zst", p);
		r = store_get(st, o->valuestring, z, e);
		if (r < 0)
			break;
		const char *want = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "sha256"), o->string));
		char hex[HASH_SHA256_HEX];
		_cleanup_close_ int zr = open(z, O_RDONLY | O_CLOEXEC);
		if (!want || zr < 0 || hash_sha256_fd_hex(zr, hex) < 0 || strcmp(hex, want)) {
			unlink(z);
			r = err_set(e, -EBADMSG, "box %s's saved state in the store is torn (%s): not what was stored "
				    "(its SHA-256 differs)", K.name, o->valuestring);
			break;
		}
		_cleanup_close_ int in = open(z, O_RDONLY | O_CLOEXEC);
		_cleanup_close_ int out = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		r = in < 0 || out < 0 ? err_setc(e, -errno, "cannot write %s", p) : store_decompress(in, out, NULL, e);
		unlink(z);
		if (r < 0) {
			err_wrap(e, "box %s's saved state in the store is torn (%s)", K.name, o->valuestring);
			break;
		}
	}
	store_free(st);
	cJSON_Delete(c);
	/* The files are back: the manifest decides the rest; the objects stay
	 * until the box is up (keeper_cold_drop). */
	return r;
}

void box_cold_drop(const char *hibdir)
{
	struct err e = { 0 };
	cJSON *c = cold_read_at(hibdir, &e);
	if (!c)
		return;
	struct store *st = NULL;
	const char *spec = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "spec"));
	if (cold_open_spec(spec && *spec ? spec : NULL, &st, &e) == 0) {
		const cJSON *o;
		cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(c, "objects"))
			if (cJSON_IsString(o) && store_del(st, o->valuestring, &e) < 0)
				fprintf(stderr, "ward: could not remove %s from the store: %s\n", o->valuestring, e.msg);
		store_free(st);
	}
	cJSON_Delete(c);
}

void keeper_cold_drop(void)
{
	if (K.hib.dir[0])
		box_cold_drop(K.hib.dir);
}
