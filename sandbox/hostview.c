#include "sandbox/hostview.h"
#include "base/state.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* /etc entries a box's tools expect: what the dynamic linker, bash,
 * python, git and dpkg read. */
static const char *const hostview_etc[] = {
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
	"localtime", "nsswitch.conf", "protocols", "services", "mime.types", "bash.bashrc",
	"inputrc", "profile", "gitconfig", "python3", "python3.11", "perl", "debian_version",
	"os-release", "magic", "magic.mime", "terminfo", "environment", "login.defs", "dpkg",
};
static const char *const hostview_tops[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };
/* Mount points and the directories a root is expected to have. */
static const struct {
	const char *path;
	mode_t mode;
} hostview_dirs[] = {
	{ "usr", 0755 }, { "dev", 0755 }, { "proc", 0555 }, { "tmp", 01777 }, { "workspace", 0755 },
	{ "run", 0755 }, { "home", 0755 }, { "root", 0700 }, { "opt", 0755 }, { "srv", 0755 }, { "mnt", 0755 },
	{ "var", 0755 }, { "var/lib", 0755 }, { "var/lib/dpkg", 0755 }, { "var/log", 0755 },
	{ "var/cache", 0755 }, { "var/tmp", 01777 }, { "etc", 0755 },
};
/* The box's accounts: root, ward and nobody, and the host's system
 * accounts and groups (ids 1 to 999: what its packages made, which
 * dpkg's statoverride file and the packages' files name), without group
 * members or password fields: never a person's account. */
static const char hostview_passwd[] =
	"root:x:0:0:root:/tmp:/bin/bash\n"
	"ward:x:1000:1000:ward:/tmp:/bin/bash\n"
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char hostview_group[] = "root:x:0:\nward:x:1000:\nnogroup:x:65534:\n";
#define HOSTVIEW_ACCOUNTS_MAX (1u << 20)
/* What ns.c binds over these in every box (sandbox/nsroot.c). */
static const char hostview_placeholder[] = "";

/* Bounds on the walk of the host's /etc: a host with an unusual one makes
 * a smaller copy, never a long create. */
#define HOSTVIEW_DEPTH 6
#define HOSTVIEW_ENTRIES 20000
#define HOSTVIEW_FILE_MAX (32u << 20)
/* Bump when the skeleton's layout changes. */
#define HOSTVIEW_LAYOUT "hostview-2"

struct hv {
	uint64_t h;
	unsigned entries;
	bool copy;		/* else only hash */
	int err;		/* the first error copying */
};

static uint64_t hv_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static void hv_note(struct hv *v, const char *rel, const struct stat *st, const char *link)
{
	v->h = hv_fnv(v->h, rel, strlen(rel) + 1);
	v->h = hv_fnv(v->h, &st->st_mode, sizeof(st->st_mode));
	v->h = hv_fnv(v->h, &st->st_size, sizeof(st->st_size));
	v->h = hv_fnv(v->h, &st->st_mtim, sizeof(st->st_mtim));
	if (link)
		v->h = hv_fnv(v->h, link, strlen(link) + 1);
}

static bool hv_open_to_all(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return true;
	return (st->st_mode & S_IROTH) && (!S_ISDIR(st->st_mode) || (st->st_mode & S_IXOTH));
}

static int hv_copy_file(const char *src, const char *dst, mode_t mode)
{
	_cleanup_close_ int in = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return errno == EACCES || errno == ENOENT ? 0 : -errno;
	_cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (out < 0)
		return -errno;
	char buf[65536];
	size_t total = 0;
	for (;;) {
		ssize_t n = fdio_read_some(in, buf, sizeof(buf));
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > HOSTVIEW_FILE_MAX)
			return -EFBIG;
		int r = fdio_write_full(out, buf, (size_t)n);
		if (r < 0)
			return r;
	}
	return fchmod(out, mode) < 0 ? -errno : 0;
}

/* One host entry (src, its path under the skeleton rel) into dst. */
static void hv_walk(struct hv *v, const char *src, const char *dst, const char *rel, int depth)
{
	struct stat st;
	if (++v->entries > HOSTVIEW_ENTRIES || lstat(src, &st) < 0 || !hv_open_to_all(&st))
		return;	/* not for everyone: not for the box */
	char link[PATH_MAX] = "";
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(src, link, sizeof(link) - 1);
		if (n < 0)
			return;
		link[n] = 0;
	}
	if (!S_ISLNK(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return;
	hv_note(v, rel, &st, S_ISLNK(st.st_mode) ? link : NULL);
	int r = 0;
	mode_t mode = st.st_mode & (S_ISDIR(st.st_mode) ? 01777 : 0777);	/* never setuid or setgid */
	if (S_ISLNK(st.st_mode)) {
		if (v->copy && symlink(link, dst) < 0)
			r = -errno;
	} else if (S_ISREG(st.st_mode)) {
		if (v->copy)
			r = hv_copy_file(src, dst, mode);
	} else {
		if (v->copy && mkdir(dst, 0700) < 0)
			r = -errno;
		_cleanup_closedir_ DIR *d = depth < HOSTVIEW_DEPTH ? opendir(src) : NULL;
		struct dirent *de;
		/* Sorted would make the hash independent of readdir's order;
		 * a host's /etc keeps its order between two creates, and a
		 * changed order only costs a second copy. */
		while (r >= 0 && d && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char s2[PATH_MAX], d2[PATH_MAX], r2[PATH_MAX];
			snprintf(s2, sizeof(s2), "%s/%s", src, de->d_name);
			snprintf(d2, sizeof(d2), "%s/%s", dst, de->d_name);
			snprintf(r2, sizeof(r2), "%s/%s", rel, de->d_name);
			hv_walk(v, s2, d2, r2, depth + 1);
		}
		if (v->copy && r >= 0 && chmod(dst, mode) < 0)
			r = -errno;
	}
	if (r < 0 && !v->err)
		v->err = r;
}

static int hv_write(const char *dir, const char *rel, const char *content)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	return fdio_write_full(fd, content, strlen(content));
}

/* etc/NAME: ward's lines, then the host's system ones (id 1..999 in the
 * third field), cut to their first fields (passwd: all seven but the
 * password; group: no members). */
static int hv_accounts(const char *dir, const char *name, const char *ours)
{
	char src[64], p[PATH_MAX];
	snprintf(src, sizeof(src), "/etc/%s", name);
	snprintf(p, sizeof(p), "%s/etc/%s", dir, name);
	bool group = !strcmp(name, "group");
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	if (fdio_read_file(AT_FDCWD, src, HOSTVIEW_ACCOUNTS_MAX, &txt, &len) < 0)
		len = 0;
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int r = fdio_write_full(fd, ours, strlen(ours));
	for (char *line = txt, *end; r >= 0 && txt && line < txt + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(txt + len - line));
		if (!end)
			end = txt + len;
		*end = 0;
		char *f[7] = { 0 };
		int nf = 0;
		for (char *q = line; nf < 7; nf++) {
			f[nf] = q;
			q = strchr(q, ':');
			if (!q) {
				nf++;
				break;
			}
			*q++ = 0;
		}
		char *idend;
		long id = nf >= 3 ? strtol(f[2], &idend, 10) : 0;
		if (nf < (group ? 3 : 7) || !*f[2] || *idend || id < 1 || id > 999 || !*f[0] ||
		    !strcmp(f[0], "root") || !strcmp(f[0], "ward") || !strcmp(f[0], "nobody") || !strcmp(f[0], "nogroup"))
			continue;
		char out[1024];
		int k = group ? snprintf(out, sizeof(out), "%s:x:%s:\n", f[0], f[2])
			      : snprintf(out, sizeof(out), "%s:x:%s:%s:%s:%s:%s\n", f[0], f[2], f[3], f[4], f[5], f[6]);
		if (k > 0 && (size_t)k < sizeof(out))
			r = fdio_write_full(fd, out, (size_t)k);
	}
	return r;
}

/* The skeleton's own part (everything but the copied /etc entries). */
static int hv_layout(struct hv *v, const char *dir)
{
	v->h = hv_fnv(v->h, HOSTVIEW_LAYOUT, sizeof(HOSTVIEW_LAYOUT));
	static const char *const accounts[] = { "/etc/passwd", "/etc/group" };
	for (size_t i = 0; i < ARRAY_SIZE(accounts); i++) {
		struct stat st;
		if (stat(accounts[i], &st) == 0)
			hv_note(v, accounts[i], &st, NULL);
	}
	for (size_t i = 0; i < ARRAY_SIZE(hostview_tops); i++) {
		char host[32], dst[PATH_MAX], link[PATH_MAX];
		snprintf(host, sizeof(host), "/%s", hostview_tops[i]);
		snprintf(dst, sizeof(dst), "%s/%s", dir, hostview_tops[i]);
		struct stat st;
		if (lstat(host, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(host, link, sizeof(link) - 1);
			if (n < 0)
				return -errno;
			link[n] = 0;
			hv_note(v, hostview_tops[i], &(struct stat){ .st_mode = S_IFLNK }, link);
			if (v->copy && symlink(link, dst) < 0)
				return -errno;
		} else if (S_ISDIR(st.st_mode)) {
			hv_note(v, hostview_tops[i], &(struct stat){ .st_mode = S_IFDIR }, NULL);
			if (v->copy && mkdir(dst, 0755) < 0)
				return -errno;
		}
	}
	if (!v->copy)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(hostview_dirs); i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, hostview_dirs[i].path);
		if (mkdir(p, 0700) < 0 || chmod(p, hostview_dirs[i].mode) < 0)
			return -errno;
	}
	int r = hv_accounts(dir, "passwd", hostview_passwd);
	if (r >= 0)
		r = hv_accounts(dir, "group", hostview_group);
	static const char *const placeholders[] = { "etc/hosts", "etc/hostname", "etc/resolv.conf" };
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(placeholders); i++)
		r = hv_write(dir, placeholders[i], hostview_placeholder);
	return r;
}

static int hv_build(struct hv *v, const char *dir)
{
	int r = hv_layout(v, dir);
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(hostview_etc); i++) {
		char src[PATH_MAX], dst[PATH_MAX], rel[PATH_MAX];
		snprintf(src, sizeof(src), "/etc/%s", hostview_etc[i]);
		snprintf(dst, sizeof(dst), "%s/etc/%s", dir, hostview_etc[i]);
		snprintf(rel, sizeof(rel), "etc/%s", hostview_etc[i]);
		hv_walk(v, src, dst, rel, 0);
	}
	return r < 0 ? r : v->err;
}

static int hv_cache_dir(char *out, size_t n, struct err *e)
{
	const char *x = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (x && *x)
		snprintf(out, n, "%s/ward/hostview", x);
	else if (home && *home)
		snprintf(out, n, "%s/.cache/ward/hostview", home);
	else
		return err_set(e, -ENOENT, "no cache directory for the host view: set HOME or XDG_CACHE_HOME");
	if (state_mkdir_p(out, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", out);
	return 0;
}

int hostview_get(char *out, size_t n, struct err *e)
{
	char dir[PATH_MAX - 64];
	int r = hv_cache_dir(dir, sizeof(dir), e);
	if (r < 0)
		return r;
	struct hv v = { .h = 1469598103934665603ULL };
	hv_build(&v, "");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%016llx", dir, (unsigned long long)v.h);
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(out, n, "%s", path);
		return 0;
	}
	/* Made beside and renamed into place whole: two keepers making it at
	 * once each make one, and the second's rename finds the first's. */
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	state_rm_rf(tmp);
	if (mkdir(tmp, 0755) < 0)
		return err_setc(e, -errno, "cannot create %s", tmp);
	struct hv c = { .h = 1469598103934665603ULL, .copy = true };
	r = hv_build(&c, tmp);
	if (r < 0) {
		state_rm_rf(tmp);
		return err_setc(e, r, "cannot build the host view in %s", tmp);
	}
	if (rename(tmp, path) < 0) {
		int k = errno;
		state_rm_rf(tmp);
		if (k != EEXIST && k != ENOTEMPTY)
			return err_setc(e, -k, "cannot put the host view in place at %s", path);
	}
	snprintf(out, n, "%s", path);
	return 0;
}

size_t hostview_host_dirs(const char **out, size_t max)
{
	static const char *const always[] = { "/usr", "/var/lib/dpkg" };
	static const char *const tops[] = { "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32" };
	_Static_assert(ARRAY_SIZE(tops) == ARRAY_SIZE(hostview_tops), "the same tops as the skeleton's");
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(always) && n < max; i++)
		out[n++] = always[i];
	for (size_t i = 0; i < ARRAY_SIZE(tops) && n < max; i++) {
		struct stat st;
		if (lstat(tops[i], &st) == 0 && S_ISDIR(st.st_mode))
			out[n++] = tops[i];
	}
	return n;
}
