/* A fork, from both of its keepers (box_fork). The parent's answers a
 * FORK with its options and freezes its box (cgroup.freeze, where v2 has
 * it) until the client that asked goes: nothing in it writes while its
 * layers are copied. The fork's keeper, made with the parent's options
 * and fork_of, copies the parent's layers into its own before its guest
 * starts: the workspace's changes and each of the root's overlays' upper
 * directories, as a checkpoint copies a layer (checkpoint_copy). The
 * parent's processes, its /tmp and its ports are not carried.
 *
 * A vm box (a backend with a fork) forks its running machine instead: its
 * keeper has the backend save it and copy its disk beside its own
 * (NAME.img.fork*) and lets it go on, then answers; the fork's keeper
 * takes the files as its own and resumes the machine from them. The
 * processes go on in both; the ports and the egress proxy's streams are
 * each keeper's own.
 *
 * Where the parent's layers are on a mounted image and the keeper is
 * root, the fork's keeper copies that image whole before it opens its
 * own layers (keeper_fork_image, layers_copy_image): a freeze of the
 * parent's file system, an extent copy, a thaw; hundreds of milliseconds
 * for ten thousand files, where a file-by-file copy takes seconds. Every
 * file keeps its inode and times, and the root's changes come with it.
 * The parent's keeper thaws the image too when the fork's client goes
 * (a fork's keeper that died between the freeze and the thaw). */
#include "sandbox/box.h"
#include "workspace/checkpoint.h"
#include "sandbox/keeper-int.h"
#include "sandbox/box-state.h"
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

/* What the fork copied (keeper_fork_image or keeper_fork_copy), for
 * info; imaged: the parent's layers image was copied whole. */
static struct checkpoint_stats forked;
static bool imaged;
/* A vm fork's: the machine's state (its size), the disk's bytes on the
 * host, how long the parent stood still, and how the machine's memory is
 * laid out (the backend's resume takes it). */
static struct {
	bool on, ram_restored;
	uint64_t state_bytes, disk_bytes;
	int64_t paused_ms;
	char state[PATH_MAX + 16];
} vmf;

/* What a vm box's fork leaves for the fork's keeper, beside box name's
 * disk: ".fork" (the disk's copy), ".fork.state", ".fork.json". */
static int fork_vm_path(const char *name, const char *sfx, char *out, size_t n, struct err *e)
{
	char d[PATH_MAX];
	int r = state_disk_path(name, d, sizeof(d), e);
	if (r >= 0 && (size_t)snprintf(out, n, "%s%s", d, sfx) >= n)
		r = err_set(e, -ENAMETOOLONG, "the box's disk path is too long");
	return r;
}

static void fork_vm_unlink(const char *name)
{
	static const char *const sfx[] = { ".fork", ".fork.state", ".fork.json" };
	for (size_t i = 0; i < ARRAY_SIZE(sfx); i++) {
		char p[PATH_MAX + 16];
		if (fork_vm_path(name, sfx[i], p, sizeof(p), NULL) == 0)
			unlink(p);
	}
}

void keeper_fork_thaw(void)
{
	if (!K.freezer)
		return;
	if (K.be->fork)
		fork_vm_unlink(K.name);	/* what a fork did not take */
	else
		cgroup_freeze(&K.cg, false, 0);
	if (!K.be->fork)
		layers_thaw(K.name);
	K.freezer = NULL;
}

static uint64_t fork_file_bytes(const char *p, bool blocks)
{
	struct stat st;
	if (stat(p, &st) < 0)
		return 0;
	return blocks ? (uint64_t)st.st_blocks * 512 : (uint64_t)st.st_size;
}

/* The parent's side of a vm fork: the machine saved and its disk copied
 * while it stands still, then it goes on. 0, or -errno with e set (the
 * box runs on; lost, it is made again at its next call). */
static int fork_vm_save(struct err *e)
{
	if (box_state_saved(K.state))
		return err_set(e, -EBUSY, "box %s is hibernated: a vm box forks from its running machine; wake it first "
			       "(ward box wake %s)", K.name, K.name);
	if (!K.up)
		return err_set(e, -EBUSY, "box %s has no running machine (it was lost, and is made again at its next call)",
			       K.name);
	unsigned n = 0;
	for (struct kcall *k = K.calls; k; k = k->next)
		n += !k->evidence;
	if (n)
		return err_set(e, -EBUSY, "%u call%s running in box %s; fork it when %s ended (jobs may run)", n,
			       n == 1 ? " is" : "s are", K.name, n == 1 ? "it has" : "they have");
	if (!K.inst.keeps_ram) {
		/* The backend's one line on why. */
		struct box_spec spec;
		keeper_spec(&spec);
		return K.be->fork(&spec, &K.inst, "", "", e);
	}
	char st[PATH_MAX + 16], dk[PATH_MAX + 16], js[PATH_MAX + 16];
	int r = fork_vm_path(K.name, ".fork.state", st, sizeof(st), e);
	if (r >= 0)
		r = fork_vm_path(K.name, ".fork", dk, sizeof(dk), e);
	if (r >= 0)
		r = fork_vm_path(K.name, ".fork.json", js, sizeof(js), e);
	if (r < 0)
		return r;
	fork_vm_unlink(K.name);
	struct box_spec spec;
	keeper_spec(&spec);
	bool restored = K.inst.restored;
	int64_t t0 = now_ms();
	keeper_guest_detach();
	loop_del(K.loop, K.inst.pidfd);
	if (K.inst.log_fd >= 0)
		loop_del(K.loop, K.inst.log_fd);
	r = K.be->fork(&spec, &K.inst, st, dk, e);
	int64_t paused = now_ms() - t0;
	/* The guest again, as after a wake; a frame half read or queued
	 * before is the old channel's. */
	proto_reader_free(&K.grd);
	proto_writer_free(&K.gwr);
	struct err ae = { 0 };
	int a = K.inst.chan_fd >= 0 ? keeper_guest_attach(&ae) : -EPIPE;
	if (a < 0) {
		keeper_log("keeper: box %s was lost at a fork: %s", K.name, ae.msg[0] ? ae.msg : "its channels are gone");
		keeper_guest_down();
		fork_vm_unlink(K.name);
		if (r >= 0)
			r = err_set(e, a, "box %s was lost at the fork (%s); it is made again at its next call", K.name,
				    ae.msg);
	}
	if (r < 0)
		return r;
	cJSON *m = cJSON_CreateObject();
	cJSON_AddBoolToObject(m, "ram_restored", restored);
	cJSON_AddNumberToObject(m, "paused_ms", (double)paused);
	cJSON_AddNumberToObject(m, "state_bytes", (double)fork_file_bytes(st, false));
	cJSON_AddNumberToObject(m, "disk_bytes", (double)fork_file_bytes(dk, true));
	_cleanup_free_ char *txt = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	r = txt ? fdio_write_atomic(js, txt, strlen(txt), 0600) : -ENOMEM;
	if (r < 0) {
		fork_vm_unlink(K.name);
		return err_setc(e, r, "cannot write %s", js);
	}
	keeper_log("keeper: box %s saved for a fork in %lld ms", K.name, (long long)paused);
	return 0;
}

void keeper_fork_request(struct kclient *c, const struct frame *f)
{
	cJSON *j = cJSON_CreateObject();
	struct err e = { 0 };
	int r;
	if (strcmp(K.be->name, "ns") && !K.be->fork) {
		cJSON_AddStringToObject(j, "error", "boxes of this backend cannot be forked");
		cJSON_AddNumberToObject(j, "code", -EOPNOTSUPP);
	} else if (K.freezer) {
		cJSON_AddStringToObject(j, "error", "another fork is copying this box now; try again when it is done");
		cJSON_AddNumberToObject(j, "code", -EBUSY);
	} else if (K.inst.pooled) {
		cJSON_AddStringToObject(j, "error", "the box waits in a pool: a create takes it");
		cJSON_AddNumberToObject(j, "code", -EBUSY);
	} else if (K.be->fork && (r = fork_vm_save(&e)) < 0) {
		cJSON_AddStringToObject(j, "error", e.msg);
		cJSON_AddNumberToObject(j, "code", r);
	} else {
		/* A vm's machine stood still for its save; an ns box stays
		 * frozen while its layers are copied. */
		bool frozen = K.be->fork || (K.up && cgroup_freeze(&K.cg, true, KEEPER_FORK_STOP_MS));
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

/* The fork's side of a vm fork: the parent's saved machine and disk
 * copy, taken as this box's own (renamed: nobody else takes them). */
static int fork_vm_take(struct err *e)
{
	char st[PATH_MAX + 16], dk[PATH_MAX + 16], js[PATH_MAX + 16];
	int r = fork_vm_path(K.o->fork_of, ".fork.state", st, sizeof(st), e);
	if (r >= 0)
		r = fork_vm_path(K.o->fork_of, ".fork", dk, sizeof(dk), e);
	if (r >= 0)
		r = fork_vm_path(K.o->fork_of, ".fork.json", js, sizeof(js), e);
	if (r >= 0)
		r = fork_vm_path(K.name, ".fork.state", vmf.state, sizeof(vmf.state), e);
	if (r < 0)
		return r;
	_cleanup_free_ char *txt = NULL;
	if (fdio_read_file(AT_FDCWD, js, 1 << 12, &txt, NULL) < 0)
		return err_set(e, -ENOENT, "box %s's saved machine is not there (its keeper did not save it)", K.o->fork_of);
	cJSON *m = cJSON_Parse(txt);
	vmf.ram_restored = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "ram_restored"));
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, "paused_ms");
	vmf.paused_ms = cJSON_IsNumber(x) ? (int64_t)x->valuedouble : 0;
	cJSON_Delete(m);
	unlink(js);
	if (rename(dk, K.disk) < 0 || rename(st, vmf.state) < 0) {
		r = err_setc(e, -errno, "cannot take box %s's saved machine", K.o->fork_of);
		unlink(vmf.state);
		unlink(st);
		unlink(dk);
		return r;
	}
	vmf.on = true;
	vmf.state_bytes = fork_file_bytes(vmf.state, false);
	vmf.disk_bytes = fork_file_bytes(K.disk, true);
	forked.bytes_copied = vmf.state_bytes + vmf.disk_bytes;
	return 0;
}

int keeper_fork_up(struct err *e)
{
	if (!vmf.on)
		return keeper_guest_up(e);
	int64_t t0 = now_ms();
	struct box_spec spec;
	keeper_spec(&spec);
	int r = K.be->resume(&spec, vmf.state, vmf.ram_restored, &K.inst, e);
	unlink(vmf.state);
	if (r >= 0)
		r = keeper_guest_attach(e);
	forked.ms += now_ms() - t0;
	if (r >= 0)
		keeper_log("keeper: forked from %s's running machine (%llu bytes of state, %llu of disk) in %lld ms",
			   K.o->fork_of, (unsigned long long)vmf.state_bytes, (unsigned long long)vmf.disk_bytes,
			   (long long)forked.ms);
	return r;
}

int keeper_fork_image(struct err *e)
{
	if (!K.o->fork_of || K.be->fork || !K.layered)
		return 0;
	if (!state_name_valid(K.o->fork_of))
		return err_set(e, -EINVAL, "the box to fork from is not a box name");
	int64_t t0 = now_ms();
	uint64_t bytes, entries;
	int r = layers_copy_image(K.o->fork_of, K.name, &bytes, &entries, e);
	if (r <= 0) {
		if (r < 0)
			err_wrap(e, "cannot copy box %s's layers", K.o->fork_of);
		return r;
	}
	imaged = true;
	forked.entries = (size_t)entries;
	forked.bytes_copied = bytes;
	forked.ms = now_ms() - t0;
	return 1;
}

/* The parent's layers keeper_fork_peek found, and the descriptors its
 * paths name. */
static struct layers peeked = { .lock_fd = -1 };
static int peek_fd[2] = { -1, -1 };

static void fork_peek_release(void)
{
	layers_release(&peeked);
	for (size_t i = 0; i < ARRAY_SIZE(peek_fd); i++)
		if (peek_fd[i] >= 0) {
			close(peek_fd[i]);
			peek_fd[i] = -1;
		}
}

/* p (a directory of the parent's layers) as /proc/self/fd/N of an open
 * of it: 0, or -errno. */
static int fork_peek_fd(char *p, size_t n, int *ret_fd)
{
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	snprintf(p, n, "/proc/self/fd/%d", fd);
	return 0;
}

int keeper_fork_peek(struct err *e)
{
	if (!K.o->fork_of || K.be->fork || !K.layered)
		return 0;
	if (!state_name_valid(K.o->fork_of))
		return err_set(e, -EINVAL, "the box to fork from is not a box name");
	int r = layers_find(K.o->fork_of, &peeked, e);
	if (r == 0)
		return err_set(e, -ENOENT, "box %s has no layers to fork", K.o->fork_of);
	if (r < 0)
		return r;
	/* A mount of its own, which could not be ended from the namespace
	 * this keeper goes into: only a running box's keeper's is taken. */
	if (peeked.fuse_holder > 0) {
		fork_peek_release();
		return err_set(e, -EBUSY, "box %s's layers image is not served (it is hibernated): wake it to fork it "
			       "(ward box wake %s)", K.o->fork_of, K.o->fork_of);
	}
	if (!peeked.fuse)
		return 0;
	r = fork_peek_fd(peeked.upper, sizeof(peeked.upper), &peek_fd[0]);
	if (r >= 0 && K.root_layer)
		r = fork_peek_fd(peeked.root, sizeof(peeked.root), &peek_fd[1]);
	if (r < 0) {
		fork_peek_release();
		return err_setc(e, r, "cannot reach box %s's layers", K.o->fork_of);
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
	if (K.be->fork) {
		int r = fork_vm_take(e);
		forked.ms = now_ms() - t0;
		return r;
	}
	struct layers pl = { .lock_fd = -1 };
	int r = 0;
	if (peeked.lock_fd >= 0) {
		pl = peeked;
		peeked = (struct layers){ .lock_fd = -1 };
	} else if (!imaged) {
		r = layers_find(K.o->fork_of, &pl, e);
		if (r == 0)
			return err_set(e, -ENOENT, "box %s has no layers to fork", K.o->fork_of);
		if (r < 0)
			return r;
	}
	if (K.o->workspace && !K.o->rw) {
		struct checkpoint_stats s = { 0 };
		if (!imaged)
			r = checkpoint_copy(pl.upper, K.layers.upper, &s, e);
		fork_add(&s);
		/* What the parent's changes are changes from, if it says: beside
		 * the layers, so not on the image. */
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
	if (r >= 0 && K.root_layer && !imaged)
		r = fork_root(pl.root, K.layers.root, e);
	layers_release(&pl);
	fork_peek_release();
	forked.ms += now_ms() - t0;
	if (r < 0) {
		err_wrap(e, "cannot copy box %s's layers", K.o->fork_of);
		return r;
	}
	if (imaged)
		keeper_log("keeper: forked from %s: its layers image whole, %zu entries, %llu bytes in %lld ms",
			   K.o->fork_of, forked.entries, (unsigned long long)forked.bytes_copied, (long long)forked.ms);
	else
		keeper_log("keeper: forked from %s: %zu files, %llu bytes copied in %lld ms", K.o->fork_of,
			   forked.files, (unsigned long long)forked.bytes_copied, (long long)forked.ms);
	return 0;
}

void keeper_fork_info(cJSON *j)
{
	if (!K.o->fork_of)
		return;
	cJSON *f = cJSON_AddObjectToObject(j, "forked_from");
	cJSON_AddStringToObject(f, "box", K.o->fork_of);
	cJSON_AddNumberToObject(f, "ms", (double)forked.ms);
	cJSON_AddStringToObject(f, "copied", vmf.on ? "machine" : imaged ? "image" : "files");
	cJSON_AddNumberToObject(f, "entries", (double)forked.entries);
	cJSON_AddNumberToObject(f, "files", (double)forked.files);
	cJSON_AddNumberToObject(f, "bytes_copied", (double)forked.bytes_copied);
	cJSON_AddNumberToObject(f, "skipped", (double)forked.skipped);
	cJSON_AddStringToObject(f, "processes", vmf.on ? "carried" : "not carried");
	if (vmf.on) {
		cJSON_AddNumberToObject(f, "state_bytes", (double)vmf.state_bytes);
		cJSON_AddNumberToObject(f, "disk_bytes", (double)vmf.disk_bytes);
		cJSON_AddNumberToObject(f, "parent_paused_ms", (double)vmf.paused_ms);
	}
}
