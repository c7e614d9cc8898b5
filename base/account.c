/* The account files are a box's (an image's): read beneath its root (no
 * magic link, no device or fifo), bounded, and parsed by position. */
#include "base/account.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int user_read(int rootfd, const char *path, char **ret, size_t *ret_len)
{
	struct open_how how = { .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return fdio_read_fd(fd, ACCOUNT_FILE_MAX, ret, ret_len);
}

/* A decimal id below 2^32 - 1 (-1 is "no id" to the kernel). */
static bool user_number(const char *s, size_t n, unsigned *ret)
{
	if (n == 0 || n > 10)
		return false;
	unsigned long long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v >= 0xffffffffULL)
		return false;
	*ret = (unsigned)v;
	return true;
}

/* Field f (0-based) of line, bounded by end. */
static bool user_field(const char *line, const char *end, int f, const char **ret, size_t *ret_n)
{
	const char *p = line;
	for (int i = 0; i < f; i++) {
		p = memchr(p, ':', (size_t)(end - p));
		if (!p)
			return false;
		p++;
	}
	const char *q = memchr(p, ':', (size_t)(end - p));
	*ret = p;
	*ret_n = (size_t)((q ? q : end) - p);
	return true;
}

/* The entry of an account file (name:x:id:gid:...) whose field key_f is
 * key (n bytes); its id and gid fields (gid_f < 0: none). */
static bool user_find(const char *txt, size_t len, int key_f, const char *key, size_t n, unsigned *id,
		      unsigned *gid, int gid_f, char *name, size_t name_n)
{
	for (const char *line = txt, *end; line < txt + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(txt + len - line));
		if (!end)
			end = txt + len;
		const char *k, *v;
		size_t kn, vn;
		unsigned a, b = 0;
		if (!user_field(line, end, key_f, &k, &kn) || kn != n || memcmp(k, key, n))
			continue;
		if (!user_field(line, end, 2, &v, &vn) || !user_number(v, vn, &a))
			continue;
		if (gid_f >= 0 && (!user_field(line, end, gid_f, &v, &vn) || !user_number(v, vn, &b)))
			continue;
		if (name && user_field(line, end, 0, &v, &vn) && vn < name_n) {
			memcpy(name, v, vn);
			name[vn] = 0;
		}
		*id = a;
		if (gid)
			*gid = b;
		return true;
	}
	return false;
}

int account_resolve(int rootfd, const char *spec, uid_t def, unsigned range, struct account *ret, char *why,
		    size_t n)
{
	_cleanup_free_ char *pw = NULL, *gr = NULL;
	size_t pwn = 0, grn = 0;
	bool have_pw = user_read(rootfd, "etc/passwd", &pw, &pwn) == 0;
	struct account a = { .uid = def, .gid = def };
	if (!spec || !*spec) {
		char num[16];
		int k = snprintf(num, sizeof(num), "%u", (unsigned)def);
		if (have_pw)
			user_find(pw, pwn, 2, num, (size_t)k, &(unsigned){ 0 }, NULL, -1, a.name, sizeof(a.name));
		*ret = a;
		return 0;
	}
	const char *colon = strchr(spec, ':');
	size_t un = colon ? (size_t)(colon - spec) : strlen(spec);
	unsigned uid, gid = 0;
	bool numeric = user_number(spec, un, &uid);
	bool found = have_pw && user_find(pw, pwn, numeric ? 2 : 0, spec, un, &uid, &gid, 3, a.name, sizeof(a.name));
	if (!numeric && !found) {
		snprintf(why, n, "the image's User \"%.80s\" names no account in its /etc/passwd (the image needs the "
			 "account, or a uid for its User)", spec);
		return -ENOENT;
	}
	/* A uid with no account: group 0, as a container runtime does. */
	if (colon) {
		const char *g = colon + 1;
		size_t gn = strlen(g);
		if (!user_number(g, gn, &gid)) {
			bool have_gr = user_read(rootfd, "etc/group", &gr, &grn) == 0;
			if (!have_gr || !user_find(gr, grn, 0, g, gn, &gid, NULL, -1, NULL, 0)) {
				snprintf(why, n, "the image's User \"%.80s\" names a group that is not in its /etc/group",
					 spec);
				return -ENOENT;
			}
		}
	}
	if (range && (uid >= range || gid >= range)) {
		snprintf(why, n, "the image's User \"%.80s\" is uid %u, gid %u: outside the box's %u uids", spec, uid, gid,
			 range);
		return -ERANGE;
	}
	a.uid = uid;
	a.gid = gid;
	*ret = a;
	return 0;
}
