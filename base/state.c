#include "base/state.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool state_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > BOX_NAME_MAX || name[0] == '-' || name[0] == '.')
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

int state_mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode | 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int state_private_dir(const char *path, struct err *e)
{
	int r = state_mkdir_p(path, 0700);
	if (r < 0)
		return err_setc(e, r, "cannot create %s", path);
	struct stat st;
	if (lstat(path, &st) < 0)
		return err_setc(e, -errno, "cannot stat %s", path);
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid())
		return err_set(e, -EPERM, "%s is not a directory owned by you; remove it or set XDG_RUNTIME_DIR", path);
	if ((st.st_mode & 0077) && chmod(path, 0700) < 0)
		return err_setc(e, -errno, "cannot chmod %s", path);
	return 0;
}

int state_runtime_dir(char *out, size_t n, struct err *e)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	if (x && x[0] == '/' && access(x, W_OK) == 0)
		snprintf(out, n, "%s/ward", x);
	else if (getuid() == 0)
		snprintf(out, n, "/run/ward");
	else
		snprintf(out, n, "/tmp/ward-%u", getuid());
	return state_private_dir(out, e);
}

int state_data_dir(char *out, size_t n, struct err *e)
{
	const char *x = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	if (x && x[0] == '/')
		snprintf(out, n, "%s/ward", x);
	else {
		if (!home || home[0] != '/') {
			struct passwd *pw = getpwuid(getuid());
			home = pw ? pw->pw_dir : NULL;
		}
		if (!home)
			return err_set(e, -ENOENT, "no home directory: set HOME or XDG_STATE_HOME");
		snprintf(out, n, "%s/.local/state/ward", home);
	}
	return state_private_dir(out, e);
}

int state_box_dir(const char *name, char *out, size_t n, struct err *e)
{
	char rt[PATH_MAX - 64];
	int r = state_runtime_dir(rt, sizeof(rt), e);
	if (r < 0)
		return r;
	snprintf(out, n, "%s/boxes/%s", rt, name);
	return 0;
}

/* NAME under the state dir's sub. */
static int state_data_sub(const char *sub, const char *name, char *out, size_t n, struct err *e)
{
	char d[PATH_MAX - 64];
	int r = state_data_dir(d, sizeof(d), e);
	if (r < 0)
		return r;
	snprintf(out, n, "%s/%s/%s", d, sub, name);
	return 0;
}

int state_layers_dir(const char *name, char *out, size_t n, struct err *e)
{
	return state_data_sub("workspaces", name, out, n, e);
}

int state_hib_dir(const char *name, char *out, size_t n, struct err *e)
{
	return state_data_sub("hibernated", name, out, n, e);
}

int state_disk_path(const char *name, char *out, size_t n, struct err *e)
{
	char leaf[BOX_NAME_MAX + 8];
	snprintf(leaf, sizeof(leaf), "%s.img", name);
	return state_data_sub("disks", leaf, out, n, e);
}

/* Remove name below dfd and everything under it, by descriptors: no path
 * grows past PATH_MAX however deep the box made its tree, a directory the
 * box made unreadable (chmod 000) is opened up first, and nothing on
 * another mount is entered. */
static int rm_at(int dfd, const char *name, dev_t dev, int depth)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth > 4096)
		return -ELOOP;
	/* Overlay work dirs hold a root-owned "work" subdir with mode 000. */
	fchmodat(dfd, name, 0700, 0);
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_dev != dev) {
		close(fd);
		return -EXDEV;	/* a mount: unmount it first */
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			int k = rm_at(dirfd(d), de->d_name, dev, depth + 1);
			if (k < 0 && !r)
				r = k;
		}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !r)
		r = -errno;
	return r;
}

int state_rm_rf(const char *path)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return -EINVAL;
	const char *name = path + (slash - parent) + 1;
	if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	_cleanup_close_ int dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	return rm_at(dfd, name, st.st_dev, 0);
}

bool state_keeper_alive(pid_t pid)
{
	/* Alive means running and named ward-keeper: a zombie (its parent has
	 * not reaped it yet) or a reused pid is not a keeper. */
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	_cleanup_free_ char *s = NULL;
	if (fdio_read_file(AT_FDCWD, p, 4096, &s, NULL) < 0)
		return false;
	char *lp = strchr(s, '('), *rp = strrchr(s, ')');
	if (!lp || !rp || rp[1] != ' ')
		return false;
	*rp = 0;
	return !strcmp(lp + 1, "ward-keeper") && rp[2] != 'Z' && rp[2] != 'X';
}

pid_t state_keeper_pid(const char *boxdir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/keeper.pid", boxdir);
	_cleanup_free_ char *s = NULL;
	if (fdio_read_file(AT_FDCWD, p, 32, &s, NULL) < 0)
		return 0;
	char *end;
	long pid = strtol(s, &end, 10);
	if (pid <= 1 || (*end && *end != '\n'))
		return 0;
	return state_keeper_alive((pid_t)pid) ? (pid_t)pid : 0;
}
