/* The terminal session's parts, shared by tui.c (the session: messages,
 * slash commands, the box and its changes), tui-draw.c (what is printed:
 * cards, the live line, approvals) and tui-keys.c (the terminal: its modes,
 * keys, pastes, typeahead). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>
#include <limits.h>

#include "cmd/session.h"
#include "cmd/mcpconf.h"
#include "sandbox/box.h"

/* Lines of a call's output shown on its card; the rest are counted. */
#define TUI_OUT_LINES 12
/* An argument shown in an approval is cut here, and marked. */
#define TUI_ASK_SHOW 1500
/* Lines of the workspace diff shown by /diff; the rest are counted. */
#define TUI_DIFF_LINES 3000
#define TUI_TICK_MS 100
#define TUI_QUEUE 65536
#define TUI_PASTES 32
#define TUI_MSG_MAX (1u << 20)

#define DIM "\033[2m"
#define UNDIM "\033[22m"
#define BOLD "\033[1m"
#define RED "\033[31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define CYAN "\033[36m"
#define RESET "\033[0m"
#define PASTE_ON "\033[?2004h"
#define PASTE_OFF "\033[?2004l"

struct tui {
	struct run_flags f;
	struct session s;
	char ws[PATH_MAX];
	char box[BOX_NAME_MAX + 1];
	bool own_box;
	struct editor *ed;
	int in, sfd;
	struct termios saved;

	/* Input, after paste handling: what the prompt reads next. */
	unsigned char q[TUI_QUEUE];
	size_t qh, qt;
	/* Bytes typed while a turn ran, fed to the next prompt. */
	struct buf ahead;
	char pend[8];		/* a possible paste marker, split across reads */
	size_t npend;
	bool pasting;
	struct buf paste;
	char *pastes[TUI_PASTES];
	int npastes;
	bool gone;		/* the terminal hung up */
	int quit_sig;		/* SIGTERM or SIGHUP seen */
	bool ctrl_c;		/* Ctrl-C ended the line being edited */

	/* Rendering. */
	bool bol;		/* the cursor is at the start of a line */
	bool live;		/* the live line is drawn */
	bool thinking_open;
	bool streamed;		/* text came since the last round or call */
	bool waiting;		/* for the model's first bytes */
	int64_t since;		/* of the wait, or of the running call */
	char call_name[112];	/* tui_short(name, 24): 24 bytes, each shown in up to 4 */
	char card_id[128];	/* the call whose card is the last one shown */
	bool call_running;
	int out_lines;
	size_t out_more;
	unsigned spin;
	int interrupts;		/* Esc/Ctrl-C during this turn */
	int64_t deadline;	/* this turn's, or 0 */
	struct hooks *hooks;	/* the user's lifecycle hooks (cmd/hook.h), or NULL */
	struct mcpconf mc;	/* the MCP servers' configuration (cmd/mcpconf.h) */
	struct mcp *mcp;	/* started in the box, or NULL */
	struct usage usage;
	bool priced;
	struct price price;
};

/* tui-keys.c: the terminal. */
void tui_tty_save(struct tui *u);	/* remember its mode; restore it on every way out */
void tui_tty_restore(void);
void tui_tty_turn(struct tui *u);	/* no echo, no line discipline, keys as bytes */
void tui_feed(struct tui *u, const char *p, size_t n);
int tui_byte(void *ud, unsigned char *c);	/* the prompt's byte source (edit_byte_fn) */
void tui_on_keys(void *ud, struct turn *t);	/* keys while a turn runs */
void tui_on_tick(void *ud, struct turn *t);
int tui_read_key(struct tui *u, int64_t until, bool discard);
char *tui_expand_pastes(struct tui *u, const char *line);
void tui_pastes_free(struct tui *u);

/* tui-draw.c: what is printed. Untrusted text goes through tui_put_safe or
 * tui_short, never tui_put. */
int tui_cols(void);
void tui_put(struct tui *u, const char *s);
void tui_put_attr(struct tui *u, const char *s);
void tui_putf(struct tui *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tui_put_safe(struct tui *u, const char *p, size_t n);
char *tui_short_n(const char *s, size_t n, size_t max);
char *tui_short(const char *s, size_t max);
void tui_newline(struct tui *u);
void tui_live_clear(struct tui *u);
void tui_live_draw(struct tui *u);
void tui_flush(struct tui *u);
void tui_on_event(void *ud, const struct turn_event *ev);
/* s cut to at most cols characters, "…" marking the cut (a character is a
 * column: the session's own lines are narrow). Term-safe. */
char *tui_fit(const char *s, int cols);
/* tui-changes.c: the diff (0 when there are no changes; quiet: say
 * nothing then), applying now, and the question when the session ends. */
int tui_show_diff(struct tui *u, bool quiet);
void tui_apply_now(struct tui *u, bool force);
/* The session's changes: its own layers (none with --box or --rw). */
struct session_ws tui_changes_at(const struct tui *u);
void tui_offer_changes(struct tui *u);
/* One field of a call, as an approval question shows it: long values cut
 * (at TUI_ASK_SHOW bytes) and the cut marked; every byte term-safe. */
void tui_show_field(struct tui *u, const char *label, const char *v);
int tui_ask(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap);
