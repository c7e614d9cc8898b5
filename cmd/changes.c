/* ward diff and ward apply: the workspace changes a run or a session left,
 * in its own layers or (--box) in the box's, shown or applied to the tree. */
#include "cmd/cmd.h"
#include "base/json.h"
#include "cmd/flagtab.h"
#include "cmd/session.h"
#include "cmd/term.h"
#include "base/cleanup.h"
#include "workspace/layers.h"
#include "workspace/wsdiff.h"
#include "turn/journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ward diff SESSION / ward apply [--force] SESSION: the changes a run
 * left, in its own layers or (--box) in the box's. --allow-git-changes:
 * the changes under .git too (applied; diffed in full). */
static int changes_cmd(int argc, char **argv, bool apply)
{
	const char *cmd = apply ? "apply" : "diff";
	const struct flag_cmd *t = apply ? &flagtab_apply : &flagtab_diff;
	bool force = false, allow_git = false;
	struct flags_getopt g;
	flags_getopt_init(&g, t);
	optind = 1;
	opterr = 0;
	int c;
	/* Flags before or after SESSION. */
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, t);
			return EXIT_OKAY;
		}
		if (c == 'f')
			force = true;
		else if (c == 'g')
			allow_git = true;
		else
			return cmd_bad_flag(cmd, c, argv);
	}
	if (optind + 1 != argc) {
		cmd_error("%s: give one session (see `ward sessions`); usage: %s", cmd, t->synopsis);
		return EXIT_USAGE;
	}
	const char *id = argv[optind];
	struct err e = { 0 };
	struct journal_state st;
	if (journal_load(id, &st, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_USAGE;
	}
	const char *ws = json_str(st.header, "workspace"), *box = json_str(st.header, "box");
	_cleanup_free_ char *workspace = ws ? strdup(ws) : NULL;
	_cleanup_free_ char *box_name = box ? strdup(box) : NULL;
	journal_state_free(&st);
	struct session_ws sw = { .session = id, .workspace = workspace, .box = box_name };
	struct layers L = { .lock_fd = -1 };
	struct ws_changes ch = { 0 };
	int k = session_changes_read(&sw, &L, apply ? NULL : &ch, &e);
	if (k == 0) {
		if (box_name)
			cmd_error("session %s has no workspace changes kept in box %s (none were made, or the box is gone)",
				  id, box_name);
		else
			cmd_error("session %s has no workspace changes kept (none were made, or they were applied)", id);
		return EXIT_FAIL;
	}
	if (k > 0 && apply)
		layers_release(&L);
	if (!apply) {
		/* At a terminal, for a person (the terminal rule); to a pipe or a
		 * file, data: the exact bytes, for git apply. */
		ch.apply_git = allow_git;
		FILE *out = k >= 0 && term_is(stdout) ? term_stream(stdout) : stdout;
		int r = k < 0 ? -1 : !out ? err_set(&e, -ENOMEM, "out of memory") : ws_diff(workspace, L.upper, &ch, out, &e);
		if (out && out != stdout && fclose(out) != 0 && r >= 0)
			r = errno == EPIPE ? -EPIPE : err_setc(&e, -errno, "writing the diff");
		if (k > 0)
			layers_release(&L);
		ws_changes_free(&ch);
		if (r == -EPIPE)
			return EXIT_OKAY;	/* the reader had enough (ward diff | head) */
		if (r < 0) {
			cmd_error("%s", e.msg);
			return EXIT_FAIL;
		}
		return EXIT_OKAY;
	}
	struct session_changes_opts co = { .apply = true, .force = force, .allow_git = allow_git };
	return session_changes(&sw, &co, NULL);
}

static int diff_run(int argc, char **argv)
{
	return changes_cmd(argc, argv, false);
}

static int apply_run(int argc, char **argv)
{
	return changes_cmd(argc, argv, true);
}

const struct command cmd_diff = {
	.name = "diff", .args = "[--allow-git-changes] SESSION", .summary = "show the workspace changes a run left", .run = diff_run,
};

const struct command cmd_apply = {
	.name = "apply", .args = "[--force] [--allow-git-changes] SESSION", .summary = "apply the workspace changes a run left", .run = apply_run,
};

/* A subagent's session whose parent's is in the list: printed under it. */
