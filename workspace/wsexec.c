#include "workspace/wsexec.h"
#include "base/cleanup.h"
#include "base/gitdir.h"
#include "workspace/wsfs.h"
#include "workspace/wslayer.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* A pattern is matched at any depth, case-insensitively (a file system
 * may fold case): "NAME" or "DIR/NAME" is the path's last components;
 * "DIR/" is every file below a directory of that name; "*.EXT" is the
 * last component's end. */
static const struct {
	const char *pat, *why;
} wsexec_table[] = {
	{ ".envrc", "direnv runs it when a shell enters the directory" },
	{ ".env", "direnv's dotenv loads it into the shell's environment" },
	{ "mise.toml", "mise runs its hooks and env scripts when a shell enters the directory" },
	{ ".mise.toml", "mise runs its hooks and env scripts when a shell enters the directory" },
	{ ".vscode/tasks.json", "VS Code runs its tasks (one with runOn folderOpen when the folder opens)" },
	{ ".vscode/settings.json", "VS Code runs the programs its settings name (interpreters, linters, shells)" },
	{ ".vscode/launch.json", "VS Code runs its launch configurations and their preLaunchTask" },
	{ ".vscode/mcp.json", "VS Code starts the MCP servers it names" },
	{ "*.code-workspace", "VS Code takes tasks, launch configurations and settings from it" },
	{ ".idea/", "JetBrains IDEs run the tools and run configurations it names" },
	{ ".devcontainer/", "a dev container runs its lifecycle commands (postCreateCommand and others)" },
	{ ".gitattributes", "git runs the filter and diff drivers it names for matching files" },
	{ ".gitmodules", "git submodule fetches its URLs and runs its update commands" },
	{ ".gitconfig", "git runs the programs it names where a config includes it" },
	{ ".pre-commit-config.yaml", "pre-commit runs its hooks at git commit" },
	{ ".husky/", "husky's hooks run at git commit and push (core.hooksPath)" },
	{ ".githooks/", "a common core.hooksPath: git runs its hooks" },
	{ "lefthook.yml", "lefthook runs its commands at git commit and push" },
	{ ".lefthook.yml", "lefthook runs its commands at git commit and push" },
	{ ".npmrc", "npm reads it at every command (node-options, script-shell)" },
	{ ".yarnrc", "yarn reads it at every command (yarn-path runs a program as yarn)" },
	{ ".yarnrc.yml", "yarn runs its yarnPath as yarn itself at every command" },
	{ ".pnpmfile.cjs", "pnpm runs it at install" },
	{ ".cargo/config.toml", "cargo runs the programs it names (rustc-wrapper, runner, linker)" },
	{ ".cargo/config", "cargo runs the programs it names (rustc-wrapper, runner, linker)" },
	{ ".hg/hgrc", "Mercurial runs its hooks and loads its extensions" },
	{ ".mcp.json", "Claude Code and ward start the MCP servers it names (once it is trusted)" },
	{ ".claude/settings.json", "Claude Code runs the hooks it names" },
	{ ".claude/settings.local.json", "Claude Code runs the hooks it names" },
	{ ".cursor/mcp.json", "Cursor starts the MCP servers it names" },
	{ ".bashrc", "a shell runs it" },
	{ ".bash_profile", "a login shell runs it" },
	{ ".bash_login", "a login shell runs it" },
	{ ".bash_logout", "a login shell runs it at exit" },
	{ ".profile", "a login shell runs it" },
	{ ".zshrc", "zsh runs it" },
	{ ".zshenv", "zsh runs it" },
	{ ".zprofile", "a zsh login shell runs it" },
	{ ".zlogin", "a zsh login shell runs it" },
	{ ".ssh/", "ssh takes keys that let someone in, and programs to run (ProxyCommand), from it" },
	{ ".config/autostart/", "the desktop runs it at login" },
	{ ".config/systemd/user/", "systemd runs the user's units" },
};

/* rel ends with the components of tail (whole components). */
static bool ends_with(const char *rel, const char *tail, size_t tl)
{
	size_t rl = strlen(rel);
	return rl >= tl && !strncasecmp(rel + rl - tl, tail, tl) && (rl == tl || rel[rl - tl - 1] == '/');
}

/* Some directory of rel is dir/ (whole components; dir ends with '/'). */
static bool below(const char *rel, const char *dir, size_t dl)
{
	for (const char *p = rel; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
		if (!strncasecmp(p, dir, dl) && p[dl])
			return true;
	return false;
}

const char *wsexec_why(const char *rel)
{
	const char *last = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	for (size_t i = 0; i < ARRAY_SIZE(wsexec_table); i++) {
		const char *p = wsexec_table[i].pat;
		size_t l = strlen(p);
		bool hit = p[0] == '*'	      ? strlen(last) >= l - 1 && !strcasecmp(last + strlen(last) - (l - 1), p + 1)
			   : p[l - 1] == '/' ? below(rel, p, l)
					      : ends_with(rel, p, l);
		if (hit)
			return wsexec_table[i].why;
	}
	return NULL;
}

/* The box's view (the overlay's merge of the layers) holds name in dir:
 * a directory, or a file or symlink. (An opaque directory's lower
 * entries count too: a repository is seen where there may be none.) */
struct view {
	enum wslayer_writer w;
	int lroot, uroot;
	const char *dir;
};

static bool view_has(void *ud, const char *name, bool dir)
{
	const struct view *v = ud;
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s%s%s", v->dir, v->dir[0] ? "/" : "", name) >= (int)sizeof(p))
		return false;
	struct stat st;
	int k = wslayer_lookup(v->w, v->uroot, p, &st);
	if (k == WSLAYER_WHITEOUT || (k < 0 && ws_lstat(v->lroot, p, &st) < 0))
		return false;
	return dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
}

/* The last directory asked about, and whether it or one above it is a
 * repository of the box's view: changes come in the walk's order, so
 * siblings ask about the same one. */
struct repo_memo {
	enum wslayer_writer w;
	char dir[PATH_MAX];
	bool valid, repo;
};

static bool in_repo(int lroot, int uroot, const char *dir, struct repo_memo *m)
{
	if (m->valid && !strcmp(m->dir, dir))
		return m->repo;
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s", dir);
	bool repo = false;
	for (;;) {
		struct view v = { m->w, lroot, uroot, d };
		if ((repo = gitdir_looks_bare(view_has, &v)) || !d[0])
			break;
		char *slash = strrchr(d, '/');
		*(slash ? slash : d) = 0;
	}
	snprintf(m->dir, sizeof(m->dir), "%s", dir);
	m->valid = true;
	m->repo = repo;
	return repo;
}

static int found_one(int dfd, const char *name, const char *path, void *ud)
{
	return 1;
}

/* A directory of the tree the box deleted holds a git directory, or is
 * one (or is too deep to tell). The user's tree is walked whole, as the
 * diff and the patch of the deletion walk it: only its depth is bounded. */
static bool deletes_repo(int lroot, const char *p)
{
	_cleanup_close_ int d = ws_open(lroot, p, O_RDONLY | O_DIRECTORY);
	if (d < 0)
		return false;
	struct gitdir_walk w = { .max_entries = UINT_MAX };
	return gitdir_bare_at(d) || gitdir_walk(d, p, found_one, NULL, &w) > 0 || w.cut;
}

void wsexec_mark(int lroot, int uroot, struct ws_changes *c)
{
	struct repo_memo memo = { .w = wslayer_writer_of(uroot), .valid = false };
	for (size_t i = 0; i < c->n; i++) {
		struct ws_change *ch = &c->v[i];
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", ch->path);
		char *slash = strrchr(dir, '/');
		*(slash ? slash : dir) = 0;
		ch->git = gitdir_in_path(ch->path) || in_repo(lroot, uroot, dir, &memo) ||
			  (ch->dir && ch->kind == WS_ADDED && in_repo(lroot, uroot, ch->path, &memo)) ||
			  (ch->dir && ch->kind == WS_DELETED && deletes_repo(lroot, ch->path));
		ch->runs = !ch->git && !ch->dir && ch->kind != WS_DELETED ? wsexec_why(ch->path) : NULL;
	}
}
