/* The approval question: the call (a write or an edit as the diff it
 * makes; a command in full; other fields cut and marked), then three
 * choices, picked by 1/2/3, y/a/n, the arrows and Enter, or Esc to stop
 * the turn. What was typed before the question is kept as the draft and
 * answers nothing. */
#include "cmd/tui.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "cmd/edit.h"
#include "cmd/term.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASK_CHOICES 3

static void choices(struct tui *u, int sel, const char *scope, bool redraw)
{
	int cols = tui_cols() - 1;
	if (redraw)
		printf("\r\033[%dA\033[J", ASK_CHOICES);
	char line[3][400];
	snprintf(line[0], sizeof(line[0]), "1. Yes");
	snprintf(line[1], sizeof(line[1]), "2. Yes, and from now on %s", scope);
	snprintf(line[2], sizeof(line[2]), "3. No, and tell the model why");
	for (int i = 0; i < ASK_CHOICES; i++) {
		_cleanup_free_ char *fit = tui_fit(line[i], cols - 3);
		if (i == sel)
			printf(CYAN "❯ " BOLD "%s" RESET "\n", fit ? fit : "");
		else
			printf("  %s\n", fit ? fit : "");
	}
	fflush(stdout);
}

int tui_ask(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap)
{
	struct tui *u = ud;
	tui_live_clear(u);
	tui_newline(u);
	_cleanup_free_ char *tn = tui_short(tool, 31);
	bool change = !strcmp(tool, "write") || !strcmp(tool, "edit");
	if (change) {
		const char *path = json_str(input, "path") ? json_str(input, "path") : "";
		_cleanup_free_ char *pn = tui_fit(path, MAX(tui_cols() - 30, 10));
		tui_putf(u, YELLOW "? " RESET BOLD "%s" RESET " %s needs your approval\n", tn ? tn : "", pn ? pn : "");
		/* The change itself, as its card will show it. */
		char *before = NULL;
		size_t bl = 0;
		int r = tui_file_read(u, path, &before, &bl);
		struct buf d;
		buf_init(&d, 1u << 22);
		tui_diff_call(tool, input, r == 0 ? before : r == -ENOENT ? "" : NULL, bl, tui_cols() - 1, TUI_DIFF_ROWS, &d);
		buf_cstr(&d);
		tui_put(u, d.data ? d.data : "");
		buf_free(&d);
		if (r != 0 && r != -ENOENT)
			tui_put(u, DIM "    (the file as it is now is not known here: the change alone)" UNDIM "\n");
		free(before);
	} else {
		tui_putf(u, YELLOW "? " RESET BOLD "%s" RESET " needs your approval\n", tn ? tn : "");
		const cJSON *f;
		cJSON_ArrayForEach(f, input) {
			if (cJSON_IsString(f)) {
				tui_show_field(u, f->string, f->valuestring);
			} else {
				_cleanup_free_ char *j = jsonprint_text(f);
				tui_show_field(u, f->string, j ? j : "");
			}
		}
	}
	/* What "always" would allow: the gate's own words. */
	char rules[GATE_ALWAYS_MAX][GATE_SPEC_MAX], scope[200];
	int nrules = gate_always(tool, input, rules, scope, sizeof(scope));
	_cleanup_free_ char *sc = tui_short(scope, 120);
	int sel = 0;
	choices(u, sel, sc ? sc : "", false);
	tui_put(u, DIM "  esc stops the turn" UNDIM "\n");
	tui_flush(u);
	for (;;) {
		/* The message's deadline holds while the question waits. */
		int k = tui_read_key(u, u->deadline, true);
		if (k == TUI_KEY_UP || k == TUI_KEY_DOWN) {
			sel = (sel + (k == TUI_KEY_UP ? ASK_CHOICES - 1 : 1)) % ASK_CHOICES;
			printf("\r\033[1A\033[J");	/* the esc line */
			choices(u, sel, sc ? sc : "", true);
			tui_put(u, DIM "  esc stops the turn" UNDIM "\n");
			tui_flush(u);
			continue;
		}
		if (k == '\r' || k == '\n')
			k = "yan"[sel];
		switch (k) {
		case -1:
			tui_put(u, RED "  → no answer before the deadline" RESET "\n");
			tui_flush(u);
			snprintf(reason, cap, "no answer came before the deadline");
			return 'n';
		case 'y':
		case 'Y':
		case '1':
			tui_put(u, GREEN "  → yes, once" RESET "\n");
			tui_flush(u);
			return 'y';
		case 'a':
		case 'A':
		case '2':
			if (nrules)
				tui_putf(u, GREEN "  → yes, and from now on %s" RESET "\n", sc ? sc : "");
			else
				tui_put(u, GREEN "  → yes, once (no rule fits this call)" RESET "\n");
			tui_flush(u);
			return 'a';
		case 'n':
		case 'N':
		case '3': {
			tui_put(u, RED "  → no" RESET "\n");
			tui_flush(u);
			tui_tty_turn(u);
			_cleanup_free_ char *why = editor_line(u->ed, "  why (Enter to skip): ", false);
			tui_tty_turn(u);
			if (why && !u->ctrl_c)
				snprintf(reason, cap, "%s", why);
			u->ctrl_c = false;
			return 'n';
		}
		case 033:
		case 3:
		case 0:
			tui_put(u, YELLOW "  → stop the turn" RESET "\n");
			tui_flush(u);
			return 'q';
		default:
			break;
		}
	}
}
