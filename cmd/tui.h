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

#include "base/buf.h"
#include "cmd/session.h"
#include "cmd/mcprun.h"
#include "sandbox/box.h"
#include "cmd/subagents.h"

/* Rows of a call's output shown on its card: the first and the last;
 * those between are counted, and Ctrl-T at the prompt shows them all. */
#define TUI_OUT_HEAD 6
#define TUI_OUT_TAIL 5
/* A call's output kept for Ctrl-T; past it, the head and the tail. */
#define TUI_CARD_MAX (4u << 20)
/* Rows of a changed file's diff shown on its card or in its question. */
#define TUI_DIFF_ROWS 24
/* Rows of the answer's open block previewed under what is committed. */
#define TUI_PREVIEW_ROWS 3
/* A file read for a diff or attached with @path: at most this. */
#define TUI_FILE_MAX (1u << 20)
/* An argument shown in an approval is cut here, and marked. */
#define TUI_ASK_SHOW 1500
/* Lines of the workspace diff shown by /diff; the rest are counted. */
#define TUI_DIFF_LINES 3000
#define TUI_TICK_MS 100
#define TUI_QUEUE 65536
#define TUI_PASTES 32
#define TUI_MSG_MAX (1u << 20)
/* Subagents' cards (tui-agents.c): children of one turn kept, and the
 * calls an open card lists (the last ones; the earlier are counted). */
#define TUI_AGENTS 64
#define TUI_AGENT_CALLS 8
/* The live rows at most (the answer's preview, the running calls' and
 * children's cards, the spinner, the draft, the footer). */
#define TUI_LIVE_ROWS 40

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

/* A child of the task tool, as its card shows it. Every string is
 * term-safe already (the child's and the model's words). */
struct tui_agent {
	char name[64];		/* a1, a1.a1 */
	char desc[160];		/* the task call's description (or its prompt's start) */
	char now[200];		/* the call it is making; "" between calls */
	char calls[TUI_AGENT_CALLS][200];	/* its calls, a ring: "✓ bash ls" */
	int ncalls;
	struct usage usage;	/* its own running total */
	double cost;		/* its result's, once it ended; <0: not known */
	int64_t since, ended;
	char end[240];		/* how it ended ("" while it runs) */
	bool ok;
	char final[200];	/* its final answer's first line */
	bool shown;		/* its ended card is committed */
};

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
	int64_t last_esc;	/* when a lone Esc came at the prompt */
	/* How the prompt's last line ended, as the byte source saw it. */
	enum { TUI_END_ENTER, TUI_END_NEWLINE, TUI_END_BACK } line_end;
	bool allow_back;	/* Backspace on an empty line goes back a line */

	/* Rendering. What is committed scrolls into the terminal's own
	 * scrollback; below it the live rows (the answer's open block, the
	 * spinner, the draft typed ahead, the footer) are drawn again as
	 * they change. */
	bool bol;		/* the cursor is at the start of a line */
	bool live;		/* the live rows are drawn */
	int live_n;		/* how many */
	int live_w[TUI_LIVE_ROWS];	/* each one's columns */
	struct mdterm_stream *md, *think;	/* the answer, the thinking */
	bool think_first;	/* the thinking's first row is still to come */
	bool thinking_open;
	bool streamed;		/* text came since the last round or call */
	bool waiting;		/* for the model's first bytes */
	int64_t since;		/* of the wait, or of the running call */
	char call_name[112];	/* tui_short(name, 24): 24 bytes, each shown in up to 4 */
	char card_id[128];	/* the call whose card is the last one shown */
	bool call_running;
	/* The running call's card: its output as it came (to TUI_CARD_MAX),
	 * what of it is shown (head rows) and counted (lines after them). */
	struct buf card;
	struct buf card_line;	/* the line still coming */
	unsigned long long card_total;
	size_t card_lines;	/* lines laid out so far */
	int head_rows;
	size_t head_line;	/* the line the last head row belongs to */
	size_t hidden_rows;
	struct { char *row; size_t line; } tail[TUI_OUT_TAIL];	/* the last rows, a ring */
	size_t ntail, tail_at;
	/* The last card's whole output and title, for Ctrl-T. */
	struct buf last_out;
	char last_title[256];
	bool last_cut;
	/* A write or edit: the file before it ran (NULL: not known here). */
	char *before;
	size_t before_len;
	int pending;		/* calls of this round without their result */
	bool side_by_side;	/* more than one of them at once */
	char denied_id[128];	/* the call the gate refused, said on its card */
	int retries;		/* this turn's retries so far */
	bool turn_failed;	/* the last turn ended in an error: /retry resends */
	char *last_message;	/* the last message sent, for /retry */
	bool ctrl_d_typed;	/* a Ctrl-D typed during a turn (dropped) */
	bool ctrl_c_text;	/* the Ctrl-C cleared a line that had text */
	char model_name[128];	/* /model's */
	unsigned spin;
	int interrupts;		/* Esc/Ctrl-C during this turn */
	int64_t deadline;	/* this turn's, or 0 */
	struct hooks *hooks;	/* the user's lifecycle hooks (task/hook.h), or NULL */
	struct mcpconf mc;	/* the MCP servers' configuration (task/mcpconf.h) */
	struct mcp *mcp;	/* started in the box, or NULL */
	struct usage usage;
	bool priced;
	struct price price;
	/* The last turn's subagents; agents_open: their cards open (Ctrl-O
	 * in a turn), listing their calls. */
	struct tui_agent agents[TUI_AGENTS];
	size_t nagents;
	bool agents_open;
	struct subagents sub;	/* the task tool's: the session's ledger, the flags passed on */
};

/* tui-keys.c: the terminal. */
void tui_tty_save(struct tui *u);	/* remember its mode; restore it on every way out */
void tui_tty_restore(void);
void tui_tty_turn(struct tui *u);	/* no echo, no line discipline, keys as bytes */
void tui_tty_quiet(struct tui *u);	/* no echo, but Ctrl-C is SIGINT (while MCP servers start) */
void tui_feed(struct tui *u, const char *p, size_t n);
int tui_byte(void *ud, unsigned char *c);	/* the prompt's byte source (edit_byte_fn) */
void tui_on_keys(void *ud, struct turn *t);	/* keys while a turn runs */
void tui_on_tick(void *ud, struct turn *t);
/* One key: a byte, TUI_KEY_UP or TUI_KEY_DOWN (arrows), 3 for a SIGINT,
 * 0 when the terminal went away, -1 at until. discard: an approval's
 * question; what was typed before it is kept as the draft. */
#define TUI_KEY_UP 0x101
#define TUI_KEY_DOWN 0x102
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
/* The footer: model, context left, cost, box; laid out to cols. */
char *tui_footer(struct tui *u, int cols);
/* The footer on the row under the prompt's, the cursor back on the
 * prompt's row. */
void tui_prompt_footer(struct tui *u);
/* ward's own words, wrapped at words to the width, each row after the
 * first indented by indent. Term-safe (for a name or a path in them). */
void tui_say(struct tui *u, const char *prefix, const char *text, int indent);
/* Ctrl-T: the last call's whole output. */
void tui_show_last(struct tui *u);
/* Command output (whole lines) as rows of a card ("  │ "), coloured as
 * it was (utf8_term_safe_sgr), each row within the width; the rows. */
int tui_card_rows(struct tui *u, const char *p, size_t n, struct buf *out);
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

/* tui-cmds.c: !cmd, @path, Tab, /model, /config, resuming. */
void tui_shell(struct tui *u, const char *cmd);
/* The message with the files its @paths name attached (malloc'd), or
 * NULL when it names none that could be read (each said why). */
char *tui_attach(struct tui *u, const char *msg);
char **tui_complete(void *ud, const char *word, bool line_start);
/* tui.c: the session's box (made, or connected, with its MCP servers:
 * 0, or -1 after an error line; gone, with its own box destroyed), what a
 * turn runs with, a message run as a turn, the conversation sent again. */
int tui_box_up(struct tui *u);
void tui_box_down(struct tui *u);
void tui_turn_begin(struct tui *u, struct turn_cfg *cfg);
void tui_run_message(struct tui *u, const char *text);
void tui_retry(struct tui *u);
/* tui-slash.c: a slash command; false when the session should end. */
bool tui_slash(struct tui *u, char *line);
void tui_cmd_model(struct tui *u, const char *arg);
void tui_cmd_config(struct tui *u);
/* The last exchanges of a resumed conversation, collapsed. */
void tui_show_history(struct tui *u, int exchanges);
/* What a resumed session keeps from its journal: the running totals, and
 * the approval mode last chosen (unless mode_given: --approve now). */
void tui_resume_state(struct tui *u, bool mode_given);
/* The approval mode, in the journal (a "mode" record), for --resume. */
void tui_journal_mode(struct tui *u);

/* tui-agents.c: the subagents' cards. tui_agents_event takes a child's
 * event line (EV_AGENT) and commits the card of one that ended;
 * tui_agents_result the task call's result (a child cut off before its
 * own result); tui_agents_live adds the running ones' rows to the live
 * rows; tui_agents_end commits what is left when the turn ends;
 * tui_agents_show lists the last turn's children, open (/agents). */
void tui_agents_event(struct tui *u, const struct turn_event *ev);
void tui_agents_result(struct tui *u, const cJSON *result);
void tui_agents_live(struct tui *u, struct buf *b, int cols);
void tui_agents_end(struct tui *u);
void tui_agents_show(struct tui *u);
/* A turn's task tool (turn/agent.h), set in cfg (its agents and the
 * session's ledger): NULL where the session offers none (--rw). Freed by
 * agents_free after the turn. */
struct agents *tui_agents_begin(struct tui *u, struct turn_cfg *cfg);
/* tui-draw.c's: one live row of ward's own (term-safe) text. */
void tui_live_row(struct tui *u, struct buf *b, const char *s, int cols);

/* tui-jobs.c: /jobs lists the box's background jobs; /jobs kill N (more:
 * the word after "kill") ends one. */
void tui_jobs(struct tui *u, const char *arg, const char *more);

/* tui-diff.c: the change a write or edit makes, as a coloured diff with
 * line numbers and +N -M (long ones cut, with a count). before: the file
 * as it was (NULL: not known; edit then shows old and new strings).
 * Appended to out, each row within cols. Returns the rows. */
int tui_diff_call(const char *tool, const cJSON *input, const char *before, size_t before_len, int cols,
		  int max_rows, struct buf *out);
/* The file a call names, as the box sees it (its copy-on-write layer
 * over the workspace): malloc'd, at most TUI_FILE_MAX bytes; -ENOENT when
 * it does not exist there, -EOPNOTSUPP when the session cannot look
 * (--box), other -errno. */
int tui_file_read(struct tui *u, const char *path, char **ret, size_t *len);
