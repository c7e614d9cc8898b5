#include "task/instructions.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct loader {
	struct instructions *out;
	struct buf text;
	size_t cap;
	const char *from;	/* where the files being added come from: user, repository, workspace */
};

/* Open path beneath dirfd, never through a symlink that leaves it; a
 * regular file only. -errno. */
static int open_beneath(int dirfd, const char *path)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

static int open_plain(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

/* Cut n at a UTF-8 character's start. */
static size_t utf8_floor(const char *p, size_t n)
{
	while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Add one file (fd >= 0) under its display name. */
static void add_file(struct loader *L, int fd, const char *name)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(L->out->why, sizeof(L->out->why), "%s is not a regular file; it was not read", name);
		close(fd);
		return;
	}
	buf_printf(&L->text, "\n\n## %s\n\n", name);
	/* Read one byte past the room left, to know whether it was cut. */
	size_t room = L->text.len < L->cap ? L->cap - L->text.len : 0;
	_cleanup_free_ char *data = malloc(room + 1);
	size_t n = 0;
	while (data && n < room + 1) {
		ssize_t r = read(fd, data + n, room + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (!data)
		return;
	bool cut = n > room || (size_t)st.st_size > room;
	size_t keep = cut ? utf8_floor(data, n < room ? n : room) : n;
	char hex[HASH_SHA256_HEX];
	hash_sha256_hex(data, n > room ? room : n, hex);
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "path", name);
	cJSON_AddStringToObject(f, "sha256", hex);
	cJSON_AddNumberToObject(f, "bytes", (double)st.st_size);
	cJSON_AddStringToObject(f, "from", L->from);
	if (cut)
		cJSON_AddBoolToObject(f, "cut", 1);
	cJSON_AddItemToArray(L->out->files, f);
	buf_append(&L->text, data, keep);
	if (cut && !L->out->cut) {
		L->out->cut = true;
		buf_printf(&L->text,
			   "\n\n[ward: the project instructions were cut here, at %u KiB; the rest of %s (%lld bytes in "
			   "all) and any deeper file were not read]",
			   (unsigned)(L->cap >> 10), name, (long long)st.st_size);
	}
}

/* A directory's file beneath rootfd (the workspace, or the repository's
 * root above it): AGENTS.md, or CLAUDE.md where there is none. rel: ""
 * for the root, or "a/b/"; shown as rel + the name, or where shown is
 * given (above the workspace) as shown + the name. */
static void add_dir(struct loader *L, int rootfd, const char *rel, const char *shown)
{
	static const char *const names[] = { "AGENTS.md", "CLAUDE.md" };
	for (size_t i = 0; i < ARRAY_SIZE(names) && !L->out->cut; i++) {
		char path[PATH_MAX], name[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s%s", rel, names[i]);
		/* Above the workspace, by its way from there (../AGENTS.md). */
		snprintf(name, sizeof(name), "%s%s", shown, *shown ? names[i] : path);
		int fd = open_beneath(rootfd, path);
		if (fd == -ENOENT)
			continue;
		if (fd < 0) {
			snprintf(L->out->why, sizeof(L->out->why), "%s: %s%s; it was not read", name, strerror(-fd),
				 fd == -EXDEV ? (*shown ? " (a link out of the repository)" : " (a link out of the workspace)")
					      : "");
			return;
		}
		add_file(L, fd, name);
		return;
	}
}

/* The repository the workspace is in: the nearest directory above it
 * (not itself) that holds a .git (a directory, or a worktree's file),
 * within INSTRUCTIONS_UP levels. Its length in ws, or 0 for none. */
static size_t repo_root(const char *ws, size_t wl)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%.*s/.git", (int)wl, ws);
	if (lstat(p, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
		return 0;	/* the workspace is the repository's root */
	size_t n = wl;
	for (int up = 0; up < INSTRUCTIONS_UP && n > 1; up++) {
		while (n > 0 && ws[n - 1] != '/')
			n--;
		if (n > 1)
			n--;	/* the slash before it */
		snprintf(p, sizeof(p), "%.*s/.git", (int)n, ws);
		if (lstat(p, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			return n;
		if (n <= 1)
			break;
	}
	return 0;
}

/* The repository's files above the workspace, its root's first, each
 * opened beneath the root (no link leaves the repository), shown by
 * their path from the workspace ("../../AGENTS.md"). */
static void add_repo(struct loader *L, const char *ws, size_t wl)
{
	size_t rl = repo_root(ws, wl);
	if (!rl)
		return;
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%.*s", (int)(rl == 1 ? 1 : rl), ws);
	_cleanup_close_ int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return;
	/* The directories between: ws[rl..wl) is "/a/b"; the root, then a/, a/b/ less the last (the workspace). */
	const char *below = ws + (rl == 1 ? 1 : rl + 1);
	size_t bl = wl - (size_t)(below - ws), depth = 1;
	for (size_t i = 0; i < bl; i++)
		depth += below[i] == '/';
	L->from = "repository";
	for (size_t k = 0, at = 0; k < depth && !L->out->cut; k++) {
		char rel[PATH_MAX], shown[PATH_MAX];
		snprintf(rel, sizeof(rel), "%.*s", (int)at, below);
		size_t sl = 0;
		shown[0] = 0;
		for (size_t u = k; u < depth && sl + 4 < sizeof(shown); u++)
			sl += (size_t)snprintf(shown + sl, sizeof(shown) - sl, "../");
		add_dir(L, rfd, rel, shown);
		while (at < bl && below[at] != '/')
			at++;
		at += at < bl;
	}
}

void instructions_load(const char *workspace, const char *cwd, size_t cap, struct instructions *out)
{
	*out = (struct instructions){ .files = cJSON_CreateArray() };
	struct loader L = { .out = out, .cap = cap ? cap : INSTRUCTIONS_CAP };
	/* The note about a cut goes past the cap, and a heading may. */
	buf_init(&L.text, L.cap + 2 * PATH_MAX + 512);
	char path[PATH_MAX];
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	if (xdg && *xdg == '/')
		snprintf(path, sizeof(path), "%s/ward/AGENTS.md", xdg);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.config/ward/AGENTS.md", home);
	else
		path[0] = 0;
	int fd = path[0] ? open_plain(path) : -ENOENT;
	L.from = "user";
	if (fd >= 0)
		add_file(&L, fd, path);
	int rootfd = workspace && *workspace ? open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (rootfd >= 0) {
		size_t wl = strlen(workspace);
		while (wl > 1 && workspace[wl - 1] == '/')
			wl--;
		/* A package of a monorepo: its repository's files first. */
		add_repo(&L, workspace, wl);
		L.from = "workspace";
		add_dir(&L, rootfd, "", "");
		/* Down to the working directory, one directory at a time. */
		if (cwd && !strncmp(cwd, workspace, wl) && cwd[wl] == '/') {
			char rel[PATH_MAX];
			size_t n = 0;
			for (const char *p = cwd + wl + 1; *p && !out->cut;) {
				size_t c = strcspn(p, "/");
				if (c && n + c + 2 < sizeof(rel)) {
					memcpy(rel + n, p, c);
					n += c;
					rel[n++] = '/';
					rel[n] = 0;
					add_dir(&L, rootfd, rel, "");
				}
				p += c;
				p += *p == '/';
			}
		}
		close(rootfd);
	}
	if (L.text.len && buf_cstr(&L.text) == 0)
		out->text = strdup(L.text.data);
	buf_free(&L.text);
}

void instructions_free(struct instructions *in)
{
	free(in->text);
	cJSON_Delete(in->files);
	*in = (struct instructions){ 0 };
}
