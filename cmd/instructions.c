#include "cmd/instructions.h"
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

/* A directory's file beneath the workspace: AGENTS.md, or CLAUDE.md where
 * there is none. rel: "" for the root, or "a/b/". */
static void add_dir(struct loader *L, int rootfd, const char *rel)
{
	static const char *const names[] = { "AGENTS.md", "CLAUDE.md" };
	for (size_t i = 0; i < ARRAY_SIZE(names) && !L->out->cut; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s%s", rel, names[i]);
		int fd = open_beneath(rootfd, path);
		if (fd == -ENOENT)
			continue;
		if (fd < 0) {
			snprintf(L->out->why, sizeof(L->out->why), "%s: %s%s; it was not read", path, strerror(-fd),
				 fd == -EXDEV ? " (a link out of the workspace)" : "");
			return;
		}
		add_file(L, fd, path);
		return;
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
	if (fd >= 0)
		add_file(&L, fd, path);
	int rootfd = workspace && *workspace ? open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (rootfd >= 0) {
		add_dir(&L, rootfd, "");
		/* Down to the working directory, one directory at a time. */
		size_t wl = strlen(workspace);
		while (wl > 1 && workspace[wl - 1] == '/')
			wl--;
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
					add_dir(&L, rootfd, rel);
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
