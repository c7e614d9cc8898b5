/* The session's workspace changes, at a terminal: the diff (coloured,
 * term-safe, cut at TUI_DIFF_LINES), applying them, and the question at
 * the end. */
#include "cmd/tui.h"
#include "base/cleanup.h"
#include "cmd/cmd.h"
#include "cmd/session.h"
#include "workspace/layers.h"
#include "workspace/wsdiff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the session's own boxes keep its changes (with --box there are
 * none to show or apply here). */
struct session_ws tui_changes_at(const struct tui *u)
{
	return (struct session_ws){ .session = u->s.j.id, .workspace = u->ws };
}

/* The changes as a diff, coloured, every line term-safe. 0 when there
 * are none. */
int tui_show_diff(struct tui *u, bool quiet)
{
	struct err e = { 0 };
	struct layers L = { .lock_fd = -1 };
	if (u->f.rw || !u->own_box) {
		if (!quiet)
			tui_put(u, "The box works on the directory directly (--rw or --box): there is no diff to show.\n");
		return 0;
	}
	struct ws_changes ch = { 0 };
	struct session_ws sw = tui_changes_at(u);
	int k = session_changes_read(&sw, &L, &ch, &e);
	if (k < 0) {
		tui_putf(u, RED "ward: %s" RESET "\n", e.msg);
		return 0;
	}
	int n = (int)ch.n;
	if (n == 0) {
		if (!quiet)
			tui_put(u, "No changes to the workspace.\n");
		if (k > 0)
			layers_release(&L);
		ws_changes_free(&ch);
		return 0;
	}
	ch.apply_git = u->f.allow_git;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m) {
		ws_diff(u->ws, L.upper, &ch, m, &e);
		fclose(m);
	}
	layers_release(&L);
	size_t shown = 0, more = 0;
	for (char *p = text, *end = text + len; p && p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (shown >= TUI_DIFF_LINES) {
			more++;
			p += l + 1;
			continue;
		}
		shown++;
		const char *col = *p == '+' ? GREEN : *p == '-' ? RED : *p == '@' ? CYAN : "";
		tui_put(u, col);
		tui_put_safe(u, p, l);
		tui_put(u, RESET "\n");
		p += l + 1;
	}
	if (more)
		tui_putf(u, DIM "… %zu more lines; the whole diff: ward diff %s" UNDIM "\n", more, u->s.j.id);
	free(text);
	ws_changes_free(&ch);
	return n;
}

void tui_apply_now(struct tui *u, bool force)
{
	cJSON *files = cJSON_CreateArray();
	fflush(stdout);
	struct session_ws sw = tui_changes_at(u);
	struct session_changes_opts co = { .json = true, .apply = true, .force = force, .allow_git = u->f.allow_git,
					   .files = files };
	if (session_changes(&sw, &co, NULL) == EXIT_OKAY) {
		int n = 0, left = 0;
		const cJSON *f;
		cJSON_ArrayForEach(f, files) {
			bool git = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "git")) && !u->f.allow_git;
			left += git;
			n += !git;
		}
		if (n) {
			_cleanup_free_ char *wsn = tui_short(u->ws, sizeof(u->ws));
			tui_putf(u, "Applied %d change%s to %s.\n", n, n == 1 ? "" : "s", wsn ? wsn : "");
		} else if (!left)
			tui_put(u, "No changes to apply.\n");
		if (left)
			tui_putf(u, "Not applied: %d change%s under .git (git would run what %s on this machine: hooks, "
				 "config). They are kept: ward apply --allow-git-changes %s applies them.\n", left,
				 left == 1 ? "" : "s", left == 1 ? "it holds" : "they hold", u->s.j.id);
	}
	cJSON_Delete(files);
}

/* At the end: the changes are offered for review and applying. */
void tui_offer_changes(struct tui *u)
{
	for (;;) {
		struct err e = { 0 };
		struct layers L = { .lock_fd = -1 };
		struct ws_changes ch = { 0 };
		struct session_ws sw = tui_changes_at(u);
		if (u->f.rw || !u->own_box || session_changes_read(&sw, &L, &ch, &e) <= 0)
			return;
		layers_release(&L);
		if (ch.n == 0) {
			ws_changes_free(&ch);
			session_layers_drop(&sw);
			return;
		}
		_cleanup_free_ char *wsn = tui_short(u->ws, sizeof(u->ws));
		tui_putf(u, "\nThe session changed %zu file%s in its copy of %s:\n", ch.n, ch.n == 1 ? "" : "s", wsn ? wsn : "");
		/* Those the user's tools run and those under .git come first
		 * (a directory added whole under .git on one line): they are
		 * what a look must not miss. */
		size_t lines = 0, more = 0, git = 0, runs = 0;
		for (int pass = 0; pass < 3; pass++)
			for (size_t i = 0; i < ch.n; i++) {
				const struct ws_change *c = &ch.v[i];
				int kind = c->runs ? 0 : c->git ? 1 : 2;
				if (kind != pass)
					continue;
				size_t below = 0, l = strlen(c->path);
				while (c->git && c->dir && c->kind == WS_ADDED && i + below + 1 < ch.n &&
				       !strncmp(ch.v[i + below + 1].path, c->path, l) && ch.v[i + below + 1].path[l] == '/')
					below++;
				i += below;
				git += (pass == 1) * (below + 1);
				runs += pass == 0;
				if (lines == 20) {
					more += below + 1;
					continue;
				}
				lines++;
				_cleanup_free_ char *s = tui_short(c->path, 200);
				tui_putf(u, "  %-9s %s", ws_kind_name(c->kind), s ? s : "");
				if (below)
					tui_putf(u, "/ and the %zu entr%s below it", below, below == 1 ? "y" : "ies");
				if (pass == 0)
					tui_putf(u, YELLOW "  ⚑ %s" RESET, c->runs);
				else if (pass == 1)
					tui_put(u, u->f.allow_git ? YELLOW "  ⚑ under .git (--allow-git-changes: applied)" RESET
								  : YELLOW "  ⚑ under .git: not applied" RESET);
				tui_put(u, "\n");
			}
		if (more)
			tui_putf(u, "  … and %zu more\n", more);
		if (git && !u->f.allow_git)
			tui_putf(u, "  ⚑ %zu under .git: git would run what they hold on this machine (hooks, config); "
				 "a applies the rest, and keeps them for ward apply --allow-git-changes %s\n", git, u->s.j.id);
		if (runs)
			tui_putf(u, "  ⚑ %zu your tools run by themselves: read them before you use those tools\n", runs);
		ws_changes_free(&ch);
		tui_put(u, "  " BOLD "d" RESET " show the diff   " BOLD "a" RESET " apply them   " BOLD "k" RESET
		       " keep them for later\n");
		fflush(stdout);
		tui_tty_turn(u);
		/* Not an approval: a key typed as the question appears answers it. */
		int k = tui_read_key(u, 0, false);
		if (k == 'd' || k == 'D') {
			tui_show_diff(u, true);
			continue;
		}
		if (k == 'a' || k == 'A') {
			tui_apply_now(u, false);
			return;
		}
		tui_putf(u, "Kept. Later: ward diff %s, ward apply %s\n", u->s.j.id, u->s.j.id);
		return;
	}
}
