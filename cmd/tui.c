/* ward at a terminal: the interactive session. A person types a message;
 * run_turn works on it in the session's box while tui-draw.c renders its
 * events inline (output scrolls into the terminal's own scrollback) and
 * asks for approvals, and tui-keys.c turns Esc or Ctrl-C into
 * turn_interrupt. The session never reaches into the loop: it is one more
 * sink, one input fd and a gate callback. This file holds the session
 * itself: its flags, its messages, its box (tui-slash.c holds the slash
 * commands).
 *
 * The terminal is in one of two modes: libedit's while a line is edited,
 * and "turn" mode while a turn runs (no echo, no line discipline, no
 * signals from keys: Esc and Ctrl-C arrive as bytes). The mode ward found
 * is restored on every way out: a normal exit, SIGTERM, a hangup, and a
 * crash (SIGSEGV and friends restore it, then die as they would have). */
#include "cmd/tui.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/edit.h"
#include "cmd/mdterm.h"
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "task/hook.h"
#include "cmd/run-settings.h"
#include "cmd/session.h"
#include "cmd/rewind.h"
#include "base/parse.h"
#include "mcp/mcp.h"
#include "sandbox/box.h"
#include "turn/agent.h"
#include "workspace/layers.h"
#include "workspace/wsdiff.h"

#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

/* The MCP servers, in the box just made or connected. */
static int mcp_up(struct tui *u)
{
	if (!u->mc.cfg.n)
		return 0;
	/* Keys typed meanwhile wait for the prompt, unechoed. */
	tui_tty_quiet(u);
	int r = mcprun_start(&u->mc, u->s.box, &u->s.j, &u->mcp);
	tui_tty_turn(u);
	return r ? -1 : 0;
}

int tui_box_up(struct tui *u)
{
	if (u->s.box)
		return 0;
	struct err e = { 0 };
	if (!u->own_box) {
		if (box_connect(u->box, &u->s.box, &e) < 0) {
			fflush(stdout);
			cmd_error("%s", e.msg);
			return -1;
		}
		return mcp_up(u);
	}
	fflush(stdout);
	bool kept;
	if (session_box(&u->s, &u->f, u->ws[0] ? u->ws : NULL, true, u->box, sizeof(u->box), &kept) != 0) {
		u->box[0] = 0;
		return -1;
	}
	return mcp_up(u);
}

void tui_box_down(struct tui *u)
{
	mcp_free(u->mcp);
	u->mcp = NULL;
	if (u->s.box)
		box_disconnect(u->s.box);
	u->s.box = NULL;
	if (u->own_box && u->box[0]) {
		struct err e = { 0 };
		box_destroy(u->box, &e);
		u->box[0] = 0;
	}
}



/* What a turn (or a /compact) of the session runs with: the keys and the
 * screen, the message's deadline; the terminal set for it. */
void tui_turn_begin(struct tui *u, struct turn_cfg *cfg)
{
	*cfg = u->f.cfg;
	cfg->gate = &u->f.gate;
	cfg->mcp = u->mcp;
	cfg->sinks[cfg->nsinks++] = (struct turn_sink){ tui_on_event, u };
	cfg->input = (struct turn_input){ .fd = u->in, .on_ready = tui_on_keys, .tick_ms = TUI_TICK_MS,
					  .on_tick = tui_on_tick, .ud = u };
	u->deadline = u->f.deadline_ms ? now_ms() + u->f.deadline_ms : 0;
	cfg->b.deadline_ms = u->deadline;
	u->interrupts = 0;
	u->bol = true;
	tui_tty_turn(u);
}

/* A project's .mcp.json, asked once: its servers and their commands. */
static bool tui_trust_mcp(void *ud, const char *path, const struct mcp_config *servers)
{
	struct tui *u = ud;
	tui_newline(u);
	tui_putf(u, YELLOW "? " RESET "%s starts %zu MCP server%s in the box:\n", path, servers->n,
		 servers->n == 1 ? "" : "s");
	for (size_t i = 0; i < servers->n; i++) {
		const struct mcp_server_cfg *sv = &servers->v[i];
		char line[600];
		int n = snprintf(line, sizeof(line), "%s", sv->transport == MCP_HTTP ? sv->url : sv->command);
		for (size_t k = 0; k < sv->nargs && n > 0 && n < (int)sizeof(line); k++)
			n += snprintf(line + n, sizeof(line) - (size_t)n, " %s", sv->args[k]);
		_cleanup_free_ char *safe = tui_short(line, 200);
		_cleanup_free_ char *sn = tui_short(sv->name, 60);
		tui_putf(u, "  " BOLD "%s" RESET "  %s\n", sn ? sn : "", safe ? safe : "");
	}
	tui_put(u, "  Trust this file (remembered until it changes)? " BOLD "y" RESET " yes   " BOLD "n" RESET
		   " no, start without them\n");
	tui_flush(u);
	tui_tty_turn(u);
	int k = tui_read_key(u, 0, false);
	bool yes = k == 'y' || k == 'Y';
	tui_put(u, yes ? GREEN "  → trusted" RESET "\n" : "  → not started\n");
	tui_flush(u);
	return yes;
}

/* A message from the person: lines ending in \ (or Ctrl-J, Shift-Enter,
 * Alt-Enter) go on, and Backspace on an empty one goes back to edit the
 * line before. NULL at the end of input; "" after a Ctrl-C (u->ctrl_c
 * says so; u->ctrl_c_text whether it cleared text). */
static char *read_message(struct tui *u)
{
	struct buf msg;
	buf_init(&msg, TUI_MSG_MAX);
	/* What was typed during the last turn comes first. */
	if (u->ahead.len) {
		tui_feed(u, u->ahead.data, u->ahead.len);
		u->ahead.len = 0;
	}
	u->ctrl_d_typed = false;
	u->ctrl_c_text = false;
	fputs(PASTE_ON, stdout);
	fflush(stdout);
	size_t starts[256];	/* where each line of the message starts in msg */
	int nlines = 0;
	for (;;) {
		/* libedit draws the prompt before it takes the terminal raw, and
		 * hands back a canonical one: a key typed as the prompt appears
		 * (a Ctrl-D, an EOF in canonical mode) would be the line
		 * discipline's, not the prompt's. So the terminal is never
		 * canonical while ward runs: non-canonical before and after. */
		tui_tty_turn(u);
		u->allow_back = nlines > 0;
		u->line_end = TUI_END_ENTER;
		tui_prompt_footer(u);
		char *line = editor_line(u->ed, nlines == 0 ? "› " : "… ", false);
		fputs("\r\033[J", stdout);	/* the footer */
		tui_tty_turn(u);
		if (!line) {
			buf_free(&msg);
			return NULL;
		}
		if (u->ctrl_c) {
			u->ctrl_c_text = line[0] || nlines > 0;
			free(line);
			buf_free(&msg);
			return strdup("");
		}
		if (u->line_end == TUI_END_BACK && nlines > 0) {
			/* The line before, to edit: off the screen and the message,
			 * and typed in again. */
			free(line);
			nlines--;
			size_t from = starts[nlines];
			fputs("\033[2A\r\033[J", stdout);
			size_t l = msg.len - from;
			char *prev = strndup(msg.data + from, l && msg.data[msg.len - 1] == '\n' ? l - 1 : l);
			msg.len = from;
			if (prev)
				tui_feed(u, prev, strlen(prev));
			free(prev);
			continue;
		}
		size_t l = strlen(line);
		bool more = u->line_end == TUI_END_NEWLINE;
		if (!more && l > 0 && line[l - 1] == '\\') {
			more = true;
			l--;
		}
		if (nlines < (int)ARRAY_SIZE(starts))
			starts[nlines++] = msg.len;
		buf_append(&msg, line, l);
		if (more)
			buf_append(&msg, "\n", 1);
		free(line);
		if (!more)
			break;
	}
	fputs(PASTE_OFF, stdout);
	fflush(stdout);
	char *out = buf_cstr(&msg) == 0 ? tui_expand_pastes(u, msg.data) : strdup("");
	buf_free(&msg);
	tui_pastes_free(u);
	/* History keeps what was sent: a paste's text, not its tag. */
	editor_history_add(u->ed, out);
	return out;
}

/* A turn over the conversation: a new message (text), or the last one
 * again (text NULL: /retry). */
static void run_turn_on(struct tui *u, const char *text)
{
	/* The base of what this turn's box changes (ward apply's check). */
	struct session_ws sw = tui_changes_at(u);
	bool changes = u->own_box && !u->f.rw && u->ws[0];
	if (changes)
		session_changes_begin(&sw, now_file_ns());
	if (tui_box_up(u) < 0)
		return;
	if (text)
		rewind_checkpoint(&u->s, changes);
	struct turn_cfg cfg;
	tui_turn_begin(u, &cfg);
	struct agents *agents = tui_agents_begin(u, &cfg);
	struct turn_stop stop;
	struct err e = { 0 };
	u->retries = 0;
	int r = run_turn(&cfg, &u->s, text, &stop, &e);
	agents_free(agents);
	tui_live_clear(u);
	if (r < 0)
		tui_putf(u, RED "ward: %s" RESET "\n", e.msg);
	else if (stop.signal == SIGTERM || stop.signal == SIGHUP)
		u->quit_sig = stop.signal;
	if (stop.kind == TURN_BOX_ERROR)
		tui_box_down(u);	/* the next message gets a new one */
	if (changes)
		session_changes_record(&sw);
	fflush(stdout);
}

void tui_run_message(struct tui *u, const char *text)
{
	free(u->last_message);
	u->last_message = strdup(text);
	_cleanup_free_ char *attached = tui_attach(u, text);
	run_turn_on(u, attached ? attached : text);
}

/* /retry: the conversation as it stands sent again (after an error, the
 * message that failed; after a broken stream, from what it said). */
void tui_retry(struct tui *u)
{
	int n = cJSON_GetArraySize(u->s.messages);
	if (!n) {
		tui_put(u, "Nothing to retry: the conversation is empty.\n");
		return;
	}
	if (!u->turn_failed)
		tui_put(u, DIM "(the last turn did not fail; the conversation is sent again as it stands)" UNDIM "\n");
	run_turn_on(u, NULL);
}

static int history_path(char *out, size_t n)
{
	char dir[PATH_MAX];
	struct err e = { 0 };
	if (journal_dir(dir, sizeof(dir), &e) < 0)
		return -1;
	/* The sessions directory's parent: $XDG_STATE_HOME/ward. */
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	snprintf(out, n, "%s/history", dir);
	return 0;
}

/* Everything the session holds, let go; the terminal as it was found. */
static void tui_free(struct tui *u)
{
	mcp_free(u->mcp);
	mcpconf_free(&u->mc);
	session_end(&u->s);
	hooks_free(u->hooks);
	editor_close(u->ed);
	tui_tty_restore();
	tui_pastes_free(u);
	buf_free(&u->ahead);
	buf_free(&u->paste);
	buf_free(&u->card);
	buf_free(&u->card_line);
	buf_free(&u->last_out);
	subagents_free(&u->sub);
	mdterm_stream_free(u->md);
	mdterm_stream_free(u->think);
	for (size_t i = 0; i < TUI_OUT_TAIL; i++)
		free(u->tail[i].row);
	free(u->before);
	free(u->last_message);
	if (u->sfd >= 0)
		close(u->sfd);
	free(u);
}

static int tui_run(int argc, char **argv)
{
	struct tui *u = calloc(1, sizeof(*u));
	if (u)
		subagents_init(&u->sub);
	if (!u)
		return EXIT_FAIL;
	u->s.j.fd = -1;
	u->sfd = -1;
	run_flags_init(&u->f, CHAT_APPROVE_DEFAULT);
	optind = 1;
	opterr = 0;
	int c;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_chat);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			free(u);
			return cmd_bad_flag("chat", c, argv);
		}
		int k = run_flag_given(&u->f, c, optarg);
		if (k == 0)
			k = mcprun_flag(&u->mc, c, optarg);
		if (k < 0) {
			free(u);
			return EXIT_USAGE;
		}
		if (k > 0)
			continue;
		free(u);
		if (c == 'h') {
			flags_help(stdout, &flagtab_chat);
			return 0;
		}
		return cmd_bad_flag("chat", '?', argv);
	}
	if (optind != argc) {
		cmd_error("the interactive session takes no task argument; type it at the prompt, or use `ward run TASK`");
		free(u);
		return EXIT_USAGE;
	}
	if (!isatty(0) || !isatty(1)) {
		cmd_error("the interactive session needs a terminal on stdin and stdout; in a script use `ward run TASK`");
		free(u);
		return EXIT_USAGE;
	}
	/* The terminal as found, restored on every way out; from here it is
	 * non-canonical (keys are bytes for ward, never the line discipline's):
	 * what is typed while ward starts waits for the prompt, unechoed. */
	u->in = 0;
	tui_tty_save(u);
	tui_tty_turn(u);
	if (u->f.rw)
		u->f.mode_default = GATE_ASK;	/* edits would reach the tree at once */
	int r = run_flags_finish(&u->f);
	if (r) {
		free(u);
		return r;
	}
	if (run_settings_hooks_install(&u->f.cfg, &u->deadline, &u->hooks)) {
		free(u);
		return EXIT_USAGE;
	}
	u->f.gate.ask = tui_ask;
	u->f.gate.ask_ud = u;
	u->priced = price_for(u->f.cfg.pcfg.model, &u->price);
	buf_init(&u->ahead, TUI_QUEUE);
	buf_init(&u->paste, TUI_MSG_MAX);
	buf_init(&u->card, TUI_CARD_MAX + 1);
	buf_init(&u->card_line, 1u << 17);
	buf_init(&u->last_out, TUI_CARD_MAX + 1);
	setlocale(LC_CTYPE, "");
	if (strcmp(nl_langinfo(CODESET), "UTF-8"))
		setlocale(LC_CTYPE, "C.UTF-8");

	/* Signals: read from a signalfd at the prompt, by the turn's loop in
	 * a turn. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	u->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	struct err e = { 0 };
	char hist[PATH_MAX];
	if (editor_open(&u->ed, history_path(hist, sizeof(hist)) == 0 ? hist : NULL, tui_byte, u, &e) < 0) {
		cmd_error("%s", e.msg);
		tui_free(u);
		return EXIT_FAIL;
	}
	r = session_start(&u->f, &u->s, u->ws);
	if (r) {
		tui_free(u);
		return r;
	}
	turn_session_start(&u->f.cfg, &u->s, u->f.resume ? "resume" : "startup");
	u->own_box = !u->f.box_name;
	if (!u->own_box)
		snprintf(u->box, sizeof(u->box), "%s", u->f.box_name);
	u->bol = true;
	if (u->f.resume) {
		bool mode_given = false;
		for (size_t i = 0; i < u->f.ngiven; i++)
			mode_given |= u->f.given[i].c == 'a';
		tui_resume_state(u, mode_given);
	}
	/* Keys typed before ward took the terminal were echoed on this row. */
	fputs("\r\033[K", stdout);
	char banner[PATH_MAX + 512];
	snprintf(banner, sizeof(banner), "%s · workspace %s (%s) · approvals: %s", u->f.cfg.pcfg.model,
		 u->ws[0] ? u->ws : "(none)", u->f.rw ? "read-write" : "copy-on-write", gate_mode_name(u->f.gate.mode));
	tui_put(u, BOLD "ward" RESET " · ");
	tui_say(u, NULL, banner, 2);
	if (u->f.resume) {
		char line[256];
		snprintf(line, sizeof(line), "Resumed session %s (%d messages).", u->s.j.id, cJSON_GetArraySize(u->s.messages));
		tui_say(u, NULL, line, 2);
		tui_show_history(u, 3);
	}
	fflush(stdout);
	r = mcprun_load(&u->mc, u->ws[0] ? u->ws : NULL, tui_trust_mcp, u);
	if (r) {
		tui_free(u);
		return r;
	}
	if (tui_box_up(u) < 0) {
		/* As ward run: no box, no session (the journal says why). */
		fflush(stdout);
		r = u->own_box ? EXIT_NOBOX : EXIT_UNKNOWN_BOX;
		tui_free(u);
		return r;
	}
	char intro[512];
	snprintf(intro, sizeof(intro), "box %s · session %s · /help for commands · Esc interrupts", u->box, u->s.j.id);
	tui_put(u, DIM);
	tui_say(u, NULL, intro, 2);
	tui_put(u, UNDIM);

	int ctrl_c_count = 0;
	while (!u->quit_sig && !u->gone) {
		tui_put(u, "\n");
		fflush(stdout);
		_cleanup_free_ char *line = read_message(u);
		if (!line)
			break;	/* Ctrl-D, a hangup, SIGTERM */
		if (u->ctrl_c) {
			u->ctrl_c = false;
			tui_pastes_free(u);
			if (u->ctrl_c_text) {
				/* A line with text: cleared, and nothing more. */
				tui_put(u, DIM "(cleared; Ctrl-C twice on an empty line exits)" UNDIM "\n");
				ctrl_c_count = 0;
				continue;
			}
			if (++ctrl_c_count >= 2)
				break;
			tui_put(u, DIM "(Ctrl-C again to exit)" UNDIM "\n");
			continue;
		}
		ctrl_c_count = 0;
		char *t = line + strspn(line, " \t\n");
		if (!*t)
			continue;
		if (*t == '/') {
			if (!tui_slash(u, t))
				break;
			fflush(stdout);
			continue;
		}
		if (*t == '!' && t[1]) {
			if (tui_box_up(u) == 0)
				tui_shell(u, t + 1);
			fflush(stdout);
			continue;
		}
		tui_run_message(u, line);
	}
	fputs(PASTE_OFF, stdout);
	/* The session's own box hibernates and waits for `ward --resume`
	 * (its /tmp, the home, with what was installed there), unless the
	 * changes are applied or there were none. */
	char kept[BOX_NAME_MAX + 1] = "";
	mcp_free(u->mcp);
	u->mcp = NULL;
	if (u->own_box && u->box[0] && u->s.box && !u->f.rw) {
		/* Kept when the person ends it; a signal or a hangup is not
		 * their choice, and the box goes as before. */
		if (session_box_end(&u->s, u->box, !u->quit_sig && !u->gone))
			snprintf(kept, sizeof(kept), "%s", u->box);
		u->box[0] = 0;	/* kept, or destroyed */
	}
	tui_box_down(u);
	if (!u->quit_sig && !u->gone)
		tui_offer_changes(u);
	if (kept[0]) {
		session_box_settle(kept);
		if (box_is_hibernated(kept) && !u->gone)
			printf("\nIts box %s is hibernated: files and /tmp as they were; `ward --resume %s` wakes it.\n", kept,
			       u->s.j.id);
	}
	if (!u->gone)
		printf("\nSession %s. Continue it with: ward --resume %s\n", u->s.j.id, u->s.j.id);
	fflush(stdout);
	int sig = u->quit_sig ? u->quit_sig : u->gone ? SIGHUP : 0;
	tui_free(u);
	return sig ? 128 + sig : EXIT_OKAY;
}

const struct command cmd_chat = {
	.name = "chat", .args = "[FLAGS]", .summary = "the interactive session (what `ward` alone starts at a terminal)",
	.run = tui_run,
};
