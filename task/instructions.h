/* Project instructions: AGENTS.md files (CLAUDE.md where a directory has
 * no AGENTS.md), read for the system prompt. The user's own
 * ($XDG_CONFIG_HOME/ward/AGENTS.md) comes first; then, when the workspace
 * lies inside a git repository (a .git above it), the repository root's
 * and each directory's down to the workspace (a package of a monorepo
 * gets its repository's rules, as Codex reads them); then the workspace
 * root's, then each directory's down to the working directory when that
 * is inside the workspace, so nested files add to the outer ones.
 *
 * A repository's files are read beneath the workspace (or, above it,
 * beneath the repository's root) and nowhere else (openat2
 * RESOLVE_BENEATH: a symlink out, to ~/.ssh or /etc, is not followed), and
 * only regular files (a FIFO cannot hang ward). The whole
 * is capped at INSTRUCTIONS_CAP bytes; what is cut is said in the text. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define INSTRUCTIONS_CAP (32u << 10)
/* How far above the workspace a repository's root is looked for. */
#define INSTRUCTIONS_UP 32

struct instructions {
	char *text;	/* for the system prompt; NULL when no file was read */
	/* [{path, sha256, bytes, from, cut?}]: from is user, repository (above
	 * the workspace: path "../AGENTS.md") or workspace (path relative to it) */
	cJSON *files;
	bool cut;
	char why[256];	/* a file that was passed over, and why (the last one); "" if none */
};

/* workspace: absolute; cwd: the working directory (NULL: the root only);
 * cap: bytes (0: INSTRUCTIONS_CAP). Never fails: a file that cannot be
 * read is passed over and named in why. */
void instructions_load(const char *workspace, const char *cwd, size_t cap, struct instructions *out);
void instructions_free(struct instructions *in);
