/* What git takes for a repository's own directory, the one place that
 * says so: the box makes each one read-only (ns.c, guest/vm.c), and the
 * workspace's changes under one are never applied unless the user asks
 * (workspace/wsdiff.c). Its hooks and its config (core.fsmonitor,
 * core.pager, a filter's command) are programs git runs on the host the
 * next time the user runs git in the tree.
 *
 * A git directory is
 *  - an entry whose name git would take for ".git" on some file system:
 *    ".git" in any case, with trailing dots or spaces (NTFS), with the
 *    code points HFS+ ignores inside it, or "git~1" (NTFS's short name),
 *    as git's own verify_path refuses them; a directory or a file (a
 *    worktree's or a submodule's "gitdir:" pointer);
 *  - a directory git would use as a repository by itself (a bare one, or a
 *    worktree's): a HEAD, and objects/ and refs/ or a commondir file
 *    (git's is_git_directory). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* The walk for git directories, bounded: at most this many directory
 * entries looked at, and this many levels deep; a git directory found is
 * not walked into. */
#define GITDIR_WALK_ENTRIES 100000
#define GITDIR_WALK_DEPTH 32

/* One path component (len bytes, no '/'). */
bool gitdir_name(const char *name, size_t len);
/* Some component of rel ("a/b/c") is a git directory's name. */
bool gitdir_in_path(const char *rel);
/* Whether a directory is one git would use as a repository by itself;
 * has(ud, name, dir) says whether it holds name (a directory, or a file
 * or symlink). */
bool gitdir_looks_bare(bool (*has)(void *ud, const char *name, bool dir), void *ud);
/* The same for a directory open as dfd. */
bool gitdir_bare_at(int dfd);

struct gitdir_walk {
	unsigned max_entries;	/* the entries' bound; 0: GITDIR_WALK_ENTRIES */
	unsigned found;		/* git directories found */
	unsigned entries;	/* directory entries looked at */
	bool cut;		/* a bound stopped it: what lies past it was not looked at */
};
/* Every git directory below dir (a directory's descriptor; dir itself is
 * not one of them), with no symlink followed: fn(dfd, name, path, ud) for
 * each, name being its entry in the directory dfd and path rel/.../name.
 * fn returns 0 to go on, <0 to stop with that error, >0 to stop there
 * (returned). Unreadable directories are passed over. w counts. */
int gitdir_walk(int dir, const char *rel, int (*fn)(int dfd, const char *name, const char *path, void *ud), void *ud,
		struct gitdir_walk *w);
/* Bind every git directory below root (an absolute path) read-only over
 * itself, with everything mounted below it, or root itself when it is one
 * (a caller with CAP_SYS_ADMIN over its mount namespace: the box's setup,
 * before anything of the box runs). 0, or -errno with the path that
 * failed in bad (PATH_MAX). */
int gitdir_ro(const char *root, struct gitdir_walk *w, char *bad, size_t n);
