/* ward diff, ward apply and ward sessions: what runs and sessions left
 * behind, looked at and applied after. */
#include "cmd/cmd.h"
#include "base/json.h"
#include "cmd/flagtab.h"
#include "cmd/session.h"
#include "cmd/sessions-prune.h"
#include "cmd/term.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "workspace/layers.h"
#include "workspace/wsdiff.h"
#include "turn/journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
static bool has_parent(const cJSON *list, const cJSON *x)
{
	const char *p = json_str(x, "parent_session");
	const cJSON *y;
	cJSON_ArrayForEach(y, list)
		if (p && y != x && json_str(y, "session") && !strcmp(json_str(y, "session"), p))
			return true;
	return false;
}

static int by_agent(const void *a, const void *b)
{
	const char *x = json_str(*(const cJSON *const *)a, "agent"), *y = json_str(*(const cJSON *const *)b, "agent");
	return strverscmp(x ? x : "", y ? y : "");
}

/* One session's row, then its children's, each level indented ("└ a1 "
 * before a child's id, the agent it was). */
static void print_session(const cJSON *list, const cJSON *x, int depth)
{
	const cJSON *nc = cJSON_GetObjectItemCaseSensitive(x, "compactions");
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(x, "mtime");
	char c[16] = "-", when[32] = "-", name[160];
	if (cJSON_IsNumber(nc) && nc->valueint > 0)
		snprintf(c, sizeof(c), "%d", nc->valueint);
	/* The last time it was written to, in the machine's time zone. */
	struct tm tm;
	time_t t = cJSON_IsNumber(mt) ? (time_t)mt->valuedouble : 0;
	if (t && localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	const char *id = json_str(x, "session") ? json_str(x, "session") : "?";
	if (depth)
		snprintf(name, sizeof(name), "%*s└ %s %s", 2 * (depth - 1), "", json_str(x, "agent") ? json_str(x, "agent") : "?", id);
	else
		snprintf(name, sizeof(name), "%s", id);
	term_printf(stdout, "%-24s %-16s %-14s %-16.16s %-9s %s\n", name, when, json_str(x, "stop"), json_str(x, "model"), c,
		    json_str(x, "workspace"));
	/* Its children in the order they were started (a1, a2, ..., a10). */
	const cJSON *kids[128], *y;
	size_t n = 0;
	cJSON_ArrayForEach(y, list) {
		const char *p = json_str(y, "parent_session");
		if (p && y != x && !strcmp(p, id) && depth < 8 && n < ARRAY_SIZE(kids))
			kids[n++] = y;
	}
	qsort(kids, n, sizeof(kids[0]), by_agent);
	for (size_t i = 0; i < n; i++)
		print_session(list, kids[i], depth + 1);
}

/* ward sessions [--json] | ward sessions prune ...: the journals, newest
 * last, with how each ended and when each was last written to. */
static int sessions_run(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "prune"))
		return sessions_prune(argc - 1, argv + 1);
	bool json = false;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_sessions);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, &flagtab_sessions);
			return 0;
		}
		if (c != 'j')
			return cmd_bad_flag("sessions", c, argv);
		json = true;
	}
	if (optind != argc) {
		cmd_error("sessions takes no arguments; usage: %s (or ward sessions prune ...)", flagtab_sessions.synopsis);
		return EXIT_USAGE;
	}
	struct err e = { 0 };
	cJSON *list = NULL;
	if (session_list(&list, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	if (json) {
		/* Data: printed one way (base/jsonprint.h), whole. */
		_cleanup_free_ char *s = jsonprint_text(list);
		cJSON_Delete(list);
		if (!s)
			return EXIT_FAIL;
		puts(s);
		return 0;
	}
	term_printf(stdout, "%-24s %-16s %-14s %-16s %-9s %s\n", "SESSION", "TIME", "STOP", "MODEL", "COMPACTED", "WORKSPACE");
	const cJSON *x;
	cJSON_ArrayForEach(x, list)
		if (!has_parent(list, x))
			print_session(list, x, 0);
	cJSON_Delete(list);
	return 0;
}

const struct command cmd_sessions = {
	.name = "sessions", .args = "[--json] | prune ...", .summary = "list the sessions (ward run's and the terminal's), or prune them", .run = sessions_run,
};
