/* The session's workspace changes, at a terminal: the diff (coloured,
 * term-safe, cut at TUI_DIFF_LINES), applying them, and the question at
 * the end. */
#include "cmd/tui.h"
#include "base/cleanup.h"
#include "cmd/cmd.h"
#include "cmd/session.h"
#include "sandbox/layers.h"
#include "sandbox/wsdiff.h"

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
	struct session_changes_opts co = { .json = true, .apply = true, .force = force, .files = files };
	if (session_changes(&sw, &co, NULL) == EXIT_OKAY) {
		int n = cJSON_GetArraySize(files);
		_cleanup_free_ char *wsn = tui_short(u->ws, sizeof(u->ws));
		if (n)
			tui_putf(u, "Applied %d change%s to %s.\n", n, n == 1 ? "" : "s", wsn ? wsn : "");
		else
			tui_put(u, "No changes to apply.\n");
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
		for (size_t i = 0; i < ch.n && i < 20; i++) {
			_cleanup_free_ char *s = tui_short(ch.v[i].path, 200);
			tui_putf(u, "  %-9s %s\n", ws_kind_name(ch.v[i].kind), s ? s : "");
		}
		if (ch.n > 20)
			tui_putf(u, "  … and %zu more\n", ch.n - 20);
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
