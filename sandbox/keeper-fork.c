/* A fork, from both of its keepers (box_fork). The parent's answers a
 * FORK with its options and freezes its box (cgroup.freeze, where v2 has
 * it) until the client that asked goes: nothing in it writes while its
 * layers are copied. The fork's keeper, made with the parent's options
 * and fork_of, copies the parent's layers into its own before its guest
 * starts: the workspace's changes and each of the root's overlays' upper
 * directories, as a checkpoint copies a layer (checkpoint_copy). The
 * parent's processes, its /tmp and its ports are not carried. */
#include "sandbox/box.h"
#include "workspace/checkpoint.h"
#include "sandbox/keeper-int.h"
#include "workspace/layers.h"
#include "base/state.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long a freeze lasts at most if its client never goes: the bound of
 * the fork's create, and some. */
#define KEEPER_FORK_FREEZE_MS (BOX_CREATE_TIMEOUT_MS + 5000)
/* How long the box has to stop once frozen. */
#define KEEPER_FORK_STOP_MS 1000

/* What the fork copied (keeper_fork_copy), for info. */
static struct checkpoint_stats forked;

void keeper_fork_thaw(void)
{
	if (!K.freezer)
		return;
	cgroup_freeze(&K.cg, false, 0);
	K.freezer = NULL;
}

void keeper_fork_request(struct kclient *c, const struct frame *f)
{
	cJSON *j = cJSON_CreateObject();
	if (strcmp(K.be->name, "ns")) {
		cJSON_AddStringToObject(j, "error", "only ns boxes can be forked yet (this box is a vm box)");
		cJSON_AddNumberToObject(j, "code", -EOPNOTSUPP);
	} else if (K.freezer) {
		cJSON_AddStringToObject(j, "error", "another fork is copying this box now; try again when it is done");
		cJSON_AddNumberToObject(j, "code", -EBUSY);
	} else if (K.inst.pooled) {
		cJSON_AddStringToObject(j, "error", "the box waits in a pool: a create takes it");
		cJSON_AddNumberToObject(j, "code", -EBUSY);
	} else {
		bool frozen = K.up && cgroup_freeze(&K.cg, true, KEEPER_FORK_STOP_MS);
		K.freezer = c;
		K.thaw_at = now_ms() + KEEPER_FORK_FREEZE_MS;
		/* A fork gets no secret: its values stay with this keeper. */
		cJSON *fo = box_opts_to_json(K.o);
		cJSON_ReplaceItemInObjectCaseSensitive(fo, "secrets", cJSON_CreateArray());
		cJSON_ReplaceItemInObjectCaseSensitive(fo, "secret_values", cJSON_CreateArray());
		cJSON_AddItemToObject(j, "opts", fo);
		cJSON_AddStringToObject(j, "backend", K.be->name);
		cJSON_AddBoolToObject(j, "frozen", frozen || !K.up);
		cJSON_AddBoolToObject(j, "ok", 1);
	}
	kclient_send_json(c, PROTO_INFO, f->id, j);
	cJSON_Delete(j);
}

static void fork_add(const struct checkpoint_stats *s)
{
	forked.entries += s->entries;
	forked.files += s->files;
	forked.copied += s->copied;
	forked.bytes_copied += s->bytes_copied;
	forked.skipped += s->skipped;
}

/* A directory made for the fork's layers, owned as given. */
static int fork_mkdir(const char *p, mode_t mode, uid_t uid, gid_t gid, struct err *e)
{
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return err_setc(e, -errno, "cannot create %s", p);
	struct stat st;
	if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_setc(e, -ENOTDIR, "%s is not a directory", p);
	if ((st.st_uid != uid || st.st_gid != gid) && lchown(p, uid, gid) < 0)
		return err_setc(e, -errno, "cannot give %s to uid %u", p, (unsigned)uid);
	if (chmod(p, mode) < 0)
		return err_setc(e, -errno, "chmod %s", p);
	return 0;
}

/* Each overlay of the parent's root (root/LAYER/upper): its changes
 * copied; its work directory made empty (overlayfs's scratch). */
static int fork_root(const char *from, const char *to, struct err *e)
{
	_cleanup_closedir_ DIR *d = opendir(from);
	if (!d)
		return errno == ENOENT ? 0 : err_setc(e, -errno, "cannot read the parent's root layer %s", from);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char src[PATH_MAX], dst[PATH_MAX], p[PATH_MAX];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", to, de->d_name);
		if ((size_t)snprintf(src, sizeof(src), "%s/%s/upper", from, de->d_name) >= sizeof(src) ||
		    (size_t)snprintf(dst, sizeof(dst), "%s/upper", p) >= sizeof(dst))
			return err_set(e, -ENAMETOOLONG, "the root layer's path is too long");
		if (lstat(src, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		int r = fork_mkdir(p, 0700, K.root_uid, K.root_uid, e);
		if (r >= 0)
			r = fork_mkdir(dst, st.st_mode & 07777, st.st_uid, st.st_gid, e);
		struct checkpoint_stats s = { 0 };
		if (r >= 0 && (r = checkpoint_copy(src, dst, &s, e)) < 0)
			return r;
		if (r < 0)
			return r;
		fork_add(&s);
		snprintf(dst, sizeof(dst), "%s/work", p);
		if ((r = fork_mkdir(dst, 0700, K.root_uid, K.root_uid, e)) < 0)
			return r;
	}
	return 0;
}

int keeper_fork_copy(struct err *e)
{
	if (!K.o->fork_of)
		return 0;
	int64_t t0 = now_ms();
	if (!state_name_valid(K.o->fork_of))
		return err_set(e, -EINVAL, "the box to fork from is not a box name");
	struct layers pl;
	int r = layers_find(K.o->fork_of, &pl, e);
	if (r == 0)
		return err_set(e, -ENOENT, "box %s has no layers to fork", K.o->fork_of);
	if (r < 0)
		return r;
	if (K.o->workspace && !K.o->rw) {
		struct checkpoint_stats s = { 0 };
		r = checkpoint_copy(pl.upper, K.layers.upper, &s, e);
		fork_add(&s);
		/* What the parent's changes are changes from, if it says. */
		char from[PATH_MAX], to[PATH_MAX];
		char *txt = NULL;
		size_t n = 0;
		if (r >= 0 && layers_base_path(K.o->fork_of, from, sizeof(from), NULL) == 0 &&
		    layers_base_path(K.name, to, sizeof(to), NULL) == 0 &&
		    fdio_read_file(AT_FDCWD, from, 1u << 20, &txt, &n) == 0) {
			if (fdio_write_atomic(to, txt, n, 0600) < 0)
				r = err_setc(e, -EIO, "cannot copy the workspace's base record to %s", to);
			free(txt);
		}
	}
	if (r >= 0 && K.root_layer)
		r = fork_root(pl.root, K.layers.root, e);
	layers_release(&pl);
	forked.ms = now_ms() - t0;
	if (r < 0) {
		err_wrap(e, "cannot copy box %s's layers", K.o->fork_of);
		return r;
	}
	keeper_log("keeper: forked from %s: %zu files, %llu bytes copied in %lld ms", K.o->fork_of, forked.files,
		   (unsigned long long)forked.bytes_copied, (long long)forked.ms);
	return 0;
}

void keeper_fork_info(cJSON *j)
{
	if (!K.o->fork_of)
		return;
	cJSON *f = cJSON_AddObjectToObject(j, "forked_from");
	cJSON_AddStringToObject(f, "box", K.o->fork_of);
	cJSON_AddNumberToObject(f, "ms", (double)forked.ms);
	cJSON_AddNumberToObject(f, "files", (double)forked.files);
	cJSON_AddNumberToObject(f, "bytes_copied", (double)forked.bytes_copied);
	cJSON_AddNumberToObject(f, "skipped", (double)forked.skipped);
}
