/* ward at a terminal: the interactive session. A person types a message;
 * run_turn works on it in the session's box while tui-draw.c renders its
 * events inline (output scrolls into the terminal's own scrollback) and
 * asks for approvals, and tui-keys.c turns Esc or Ctrl-C into
 * turn_interrupt. The session never reaches into the loop: it is one more
 * sink, one input fd and a gate callback. This file holds the session
 * itself: its flags, messages, slash commands, the box and its changes.
 *
 * The terminal is in one of two modes: libedit's while a line is edited,
 * and "turn" mode while a turn runs (no echo, no line discipline, no
 * signals from keys: Esc and Ctrl-C arrive as bytes). The mode ward found
 * is restored on every way out: a normal exit, SIGTERM, a hangup, and a
 * crash (SIGSEGV and friends restore it, then die as they would have). */
#include "cmd/tui.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/edit.h"
#include "cmd/mdterm.h"
#include "cmd/cmd.h"
#include "cmd/hook.h"
#include "cmd/session.h"
#include "cmd/rewind.h"
#include "base/parse.h"
#include "mcp/mcp.h"
#include "sandbox/box.h"
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

static const struct option tui_opts[] = {
	RUN_FLAG_OPTIONS,
	MCPCONF_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const char tui_help[] =
	"usage: ward [chat] [FLAGS]   (at a terminal)\n"
	"An interactive session: type a task, watch the model work in its box, approve\n"
	"what needs approving, interrupt with Esc or Ctrl-C, and keep going.\n"
	"  --model M, --provider P, --base-url URL   as for ward run\n"
	"  --approve MODE     ask | edits | auto (default edits: file changes go to the\n"
	"                     copy-on-write workspace; commands are asked; ask with --rw)\n"
	"  --allow RULE, --deny RULE                 as for ward run\n"
	"  --deadline DUR     each message's time limit\n"
	"  --max-rounds N, --max-calls N, --max-tokens N, --max-cost USD\n"
	"  --context-window N, --compact-at PCT      as for ward run: when to compact\n"
	"  --workspace DIR    the task's directory (default: the current one)\n"
	"  --image REF        the box's root: an image instead of the host's own /usr\n"
	"  --backend B        the box's backend: ns (default), vm or auto, as for ward run\n"
	"  --rw               let the box change DIR directly\n"
	"  --allow-git-changes  let the box change DIR's .git (hooks, config) and /apply apply it\n"
	"  --disk SIZE        disk ceiling of the box's changes to DIR (default 10G)\n"
	"  --allow-host PAT, --net MODE              as for ward run\n"
	"  --box NAME         use this existing box\n"
	"  --resume ID        continue a session\n"
	MCPCONF_HELP
	"Settings also come from config files and the environment: see `ward config --help`.\n";

static const struct {
	const char *cmd, *what;
} tui_commands[] = {
	{ "/help", "this list" },
	{ "/box", "the box: state and limits; /box recreate destroys it and makes a new one (the workspace changes "
		  "are kept); /box destroy destroys it now" },
	{ "/jobs", "the box's background jobs (the model's servers, watchers, builds); /jobs kill N ends one (Esc "
		   "cancels a call, never a job)" },
	{ "/diff", "the workspace changes so far" },
	{ "/apply", "apply them to the workspace directory (not over files changed there since the box took its "
		    "copy; /apply --force does)" },
	{ "/cost", "tokens and cost so far" },
	{ "/status", "the model, the box, the session and the project instructions loaded" },
	{ "/config", "the settings in force" },
	{ "/model [NAME]", "show the model, or switch to another (the conversation goes on)" },
	{ "/mcp", "the MCP servers: their state and tools" },
	{ "/init", "ask the model to write AGENTS.md from a look at the project" },
	{ "/clear", "start the conversation again (the box and its changes stay)" },
	{ "/compact", "replace the middle of the conversation with a summary the model writes (the first message "
		      "and the recent rounds stay)" },
	{ "/retry", "send the conversation again (after an error: the message that failed)" },
	{ "/resume [N|ID]", "list recent sessions, or continue one" },
	{ "/rewind [N]", "list your messages (numbered from 1), or go back to before message N: the workspace "
			 "changes and the conversation as they were then (the box is made again: processes running "
			 "in it are lost)" },
	{ "/approve [MODE]", "show or change the approval mode: ask, edits or auto" },
	{ "/quit", "end the session (Ctrl-D does too)" },
	{ "!COMMAND", "run a command in the box yourself (the model is told what it printed)" },
	{ "@PATH", "in a message: attach that file of the workspace (Tab completes it)" },
};

static const char tui_keys[] =
	"Keys: Esc or Ctrl-C stops the turn (a running call is cancelled in its box); at the prompt Esc twice "
	"clears the line, Ctrl-C clears it and twice on an empty line exits. Ctrl-J, Shift-Enter, Alt-Enter or a "
	"line ending in \\ go on to a new line; Backspace on an empty one goes back to the line before. Tab "
	"completes a command or an @path; Ctrl-T shows the last call's whole output; Ctrl-R searches the history; "
	"Ctrl-Z suspends. A paste of several lines is taken as one piece.";

/* The commands as a table where the width holds one, else each name on a
 * line of its own. */
static void show_help(struct tui *u)
{
	bool table = tui_cols() >= 60;
	for (size_t i = 0; i < ARRAY_SIZE(tui_commands); i++) {
		char pre[40];
		if (table) {
			snprintf(pre, sizeof(pre), "  %-18s", tui_commands[i].cmd);
			tui_say(u, pre, tui_commands[i].what, 20);
		} else {
			tui_putf(u, "  %s\n", tui_commands[i].cmd);
			tui_say(u, "    ", tui_commands[i].what, 4);
		}
	}
	tui_say(u, NULL, tui_keys, 2);
}

/* The MCP servers, in the box just made or connected. */
static int mcp_up(struct tui *u)
{
	if (!u->mc.cfg.n)
		return 0;
	/* Keys typed meanwhile wait for the prompt, unechoed. */
	tui_tty_quiet(u);
	int r = mcpconf_start(&u->mc, u->s.box, &u->s.j, &u->mcp);
	tui_tty_turn(u);
	return r ? -1 : 0;
}

static int box_up(struct tui *u)
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

static void box_down(struct tui *u)
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



static void apply_changes(struct tui *u, bool force)
{
	if (u->f.rw || !u->own_box) {
		tui_put(u, "The box works on the directory directly (--rw or --box): nothing to apply.\n");
		return;
	}
	/* The box goes first (its changes are kept); the next message gets a
	 * new one over the updated directory. */
	box_down(u);
	tui_apply_now(u, force);
}

/* One line, whatever the terminal's width: cut and marked, never wrapped. */
static void tui_show_mcp(struct tui *u)
{
	cJSON *st = mcp_status(u->mcp);
	struct buf b;
	buf_init(&b, 1u << 20);
	mcpconf_describe(st, &b);
	tui_put_safe(u, b.data ? b.data : "", b.len);
	buf_free(&b);
	cJSON_Delete(st);
}

static void print_status(struct tui *u)
{
	char line[1024];
	int k = snprintf(line, sizeof(line), "%s · box %s · %lld in / %lld out tokens", u->f.cfg.pcfg.model,
			 u->box[0] ? u->box : "(none)", (long long)usage_prompt(&u->usage), (long long)u->usage.output);
	if ((u->usage.cache_read || u->usage.cache_write) && k < (int)sizeof(line))
		k += snprintf(line + k, sizeof(line) - (size_t)k, " · cache %.0f%%", usage_hit_rate(&u->usage) * 100);
	if (u->priced && k < (int)sizeof(line))
		k += snprintf(line + k, sizeof(line) - (size_t)k, " · $%.4f", price_cost(&u->price, &u->usage));
	if (u->f.deadline_ms && k < (int)sizeof(line))
		k += snprintf(line + k, sizeof(line) - (size_t)k, " · %llds per message", (long long)(u->f.deadline_ms / 1000));
	if (k < (int)sizeof(line))
		snprintf(line + k, sizeof(line) - (size_t)k, " · session %s", u->s.j.id);
	_cleanup_free_ char *fit = tui_fit(line, tui_cols() - 1);
	tui_putf(u, DIM "%s" UNDIM "\n", fit ? fit : "");
}

static void cmd_box_show(struct tui *u)
{
	if (!u->s.box) {
		tui_put(u, "No box now; the next message makes one.\n");
		return;
	}
	cJSON *info = NULL;
	struct err e = { 0 };
	if (box_info(u->s.box, &info, &e) < 0) {
		tui_putf(u, RED "ward: %s" RESET "\n", e.msg);
		return;
	}
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(info, "limits");
	tui_putf(u, "box %s: %s, %s backend, up %.1f s, %d process%s\n", u->box, json_str(info, "state") ? json_str(info, "state") : "?",
	     json_str(info, "backend") ? json_str(info, "backend") : "?", json_int(info, "uptime_ms", 0) / 1000.0,
	     (int)json_int(info, "box_pids", 0), json_int(info, "box_pids", 0) == 1 ? "" : "es");
	tui_putf(u, "  memory %lld MiB (%s), processes %d (%s), cpu %s, network %s\n",
	     (long long)(json_int(l, "memory_bytes", 0) >> 20), json_str(l, "memory_by") ? json_str(l, "memory_by") : "?",
	     (int)json_int(l, "pids", 0), json_str(l, "pids_by") ? json_str(l, "pids_by") : "?",
	     json_str(l, "cpu_by") ? json_str(l, "cpu_by") : "?",
	     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "network")) ? "on" : "off");
	_cleanup_free_ char *wsn = tui_short(u->ws[0] ? u->ws : "(none)", sizeof(u->ws));
	tui_putf(u, "  workspace %s (%s)\n", wsn ? wsn : "", u->f.rw ? "read-write" : "copy-on-write");
	cJSON_Delete(info);
}

static void session_switch(struct tui *u, const char *id)
{
	struct run_flags f = u->f;
	f.resume = id;
	struct session s;
	char ws[PATH_MAX];
	fflush(stdout);
	if (session_start(&f, &s, ws) != 0)
		return;
	box_down(u);
	session_end(&u->s);
	u->s = s;
	u->f.rw = f.rw;
	turn_session_start(&u->f.cfg, &u->s, "resume");
	snprintf(u->ws, sizeof(u->ws), "%s", ws);
	u->usage = (struct usage){ 0 };
	tui_resume_state(u, false);
	int n = cJSON_GetArraySize(u->s.messages);
	_cleanup_free_ char *wsn = tui_short(u->ws[0] ? u->ws : "(none)", sizeof(u->ws));
	tui_putf(u, "Resumed session %s: %d message%s, workspace %s.\n", u->s.j.id, n, n == 1 ? "" : "s", wsn ? wsn : "");
	tui_show_history(u, 3);
	box_up(u);
}

static void cmd_resume(struct tui *u, const char *arg)
{
	cJSON *list = NULL;
	struct err e = { 0 };
	if (session_list(&list, &e) < 0) {
		tui_putf(u, RED "ward: %s" RESET "\n", e.msg);
		return;
	}
	int n = cJSON_GetArraySize(list);
	if (!*arg) {
		int from = MAX(0, n - 10);
		if (n == 0)
			tui_put(u, "No sessions yet.\n");
		for (int i = n - 1; i >= from; i--) {
			const cJSON *s = cJSON_GetArrayItem(list, i);
			_cleanup_free_ char *first = tui_short(json_str(s, "first") ? json_str(s, "first") : "", 50);
			tui_putf(u, "  %2d  %s  %-12s %s\n", n - i, json_str(s, "session"), json_str(s, "stop"), first ? first : "");
		}
		if (n)
			tui_put(u, "Continue one with /resume N (its number) or /resume ID.\n");
		cJSON_Delete(list);
		return;
	}
	char *end;
	long k = strtol(arg, &end, 10);
	const char *id = arg;
	if (!*end && k >= 1 && k <= n)
		id = json_str(cJSON_GetArrayItem(list, n - (int)k), "session");
	if (!strcmp(id, u->s.j.id))
		tui_put(u, "That is this session.\n");
	else
		session_switch(u, id);
	cJSON_Delete(list);
}

/* What a turn (or a /compact) of the session runs with: the keys and the
 * screen, the message's deadline; the terminal set for it. */
static void turn_begin(struct tui *u, struct turn_cfg *cfg)
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

/* /compact: the summary request, with Esc to stop it; the conversation
 * changes only when the summary came. */
static void compact_now(struct tui *u)
{
	struct turn_cfg cfg;
	turn_begin(u, &cfg);
	struct turn_stop stop;
	struct err e = { 0 };
	int before = cJSON_GetArraySize(u->s.messages);
	int r = run_compact(&cfg, &u->s, &stop, &e);
	tui_live_clear(u);
	if (r < 0)
		tui_putf(u, RED "ward: %s" RESET "\n", e.msg);
	else if (stop.signal == SIGTERM || stop.signal == SIGHUP)
		u->quit_sig = stop.signal;
	else if (stop.kind == TURN_DONE && cJSON_GetArraySize(u->s.messages) == before) {
		/* Nothing to compact: why (the compaction's own line says the rest). */
		_cleanup_free_ char *s = tui_short(stop.why, 400);
		tui_putf(u, "%s\n", s ? s : "");
	}
	fflush(stdout);
}

static void rewind_stop_box(void *ud)
{
	box_down(ud);
}

/* /rewind: the person's messages, or back to before one of them. */
static void rewind_here(struct tui *u, const char *arg)
{
	if (!*arg) {
		cJSON *list = NULL;
		struct err e = { 0 };
		if (rewind_list(u->s.j.id, &list, &e) < 0) {
			tui_putf(u, RED "ward: %s" RESET "\n", e.msg);
			return;
		}
		const cJSON *c;
		cJSON_ArrayForEach(c, list) {
			const char *at = json_str(c, "at") ? json_str(c, "at") : "";
			_cleanup_free_ char *t = tui_short(json_str(c, "text") ? json_str(c, "text") : "", 60);
			/* The time of day of an ISO 8601 UTC stamp. */
			tui_putf(u, "  %2lld  %.8s  %s\n", (long long)json_int(c, "message", 0), strlen(at) > 11 ? at + 11 : at,
				 t ? t : "");
		}
		tui_put(u, cJSON_GetArraySize(list) ? "Go back to before one with /rewind N (its number).\n"
						    : "No messages yet.\n");
		cJSON_Delete(list);
		return;
	}
	uint64_t n;
	if (parse_u64(arg, &n) < 0 || n > INT_MAX) {
		_cleanup_free_ char *s = tui_short(arg, 40);
		tui_putf(u, "\"%s\" is not a message number; /rewind lists them.\n", s ? s : "");
		return;
	}
	struct rewind_done d = { 0 };
	bool own = u->own_box && !u->f.rw && u->ws[0];
	fflush(stdout);
	int r = rewind_to(&u->s, (int)n, u->f.disk, own ? rewind_stop_box : NULL, u, &d);
	if (d.box_stopped && box_up(u) == 0)
		tui_putf(u, "The box was destroyed and a new one made (%s): processes that ran in it are gone.\n", u->box);
	if (r)
		return;
	tui_putf(u, "Back before message %d: the conversation has %d message%s; %s.\n", (int)n, d.messages,
		 d.messages == 1 ? "" : "s",
		 d.workspace ? "the workspace changes are as they were then"
			     : "the workspace was not rewound (the box works on the directory directly: --rw or --box)");
}

static void run_message(struct tui *u, const char *text);
static void retry(struct tui *u);

/* A slash command; false when the session should end. */
static bool slash(struct tui *u, char *line)
{
	char *arg = line + strcspn(line, " \t");
	if (*arg)
		*arg++ = 0;
	arg += strspn(arg, " \t");
	/* The word after the argument (/jobs kill N). */
	char *more = arg + strcspn(arg, " \t");
	if (*more) {
		*more++ = 0;
		more += strspn(more, " \t");
		more[strcspn(more, " \t")] = 0;
	}
	if (!strcmp(line, "/help")) {
		show_help(u);
	} else if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) {
		return false;
	} else if (!strcmp(line, "/box")) {
		if (!strcmp(arg, "recreate") || !strcmp(arg, "destroy")) {
			if (!u->own_box) {
				tui_putf(u, "The box %s is not this session's own (--box); ward leaves it alone.\n", u->box);
			} else {
				char old[BOX_NAME_MAX + 1];
				snprintf(old, sizeof(old), "%s", u->box);
				box_down(u);
				tui_putf(u, "Destroyed box %s (the workspace changes are kept).\n", old);
				if (!strcmp(arg, "recreate") && box_up(u) == 0)
					tui_putf(u, "New box %s.\n", u->box);
			}
		} else if (*arg) {
			tui_putf(u, "/box takes recreate or destroy, or nothing.\n");
		} else {
			cmd_box_show(u);
		}
	} else if (!strcmp(line, "/jobs")) {
		tui_jobs(u, arg, *more ? more : NULL);
	} else if (!strcmp(line, "/diff")) {
		tui_show_diff(u, false);
	} else if (!strcmp(line, "/apply") || !strcmp(line, "/apply --force")) {
		apply_changes(u, line[6] != 0);
	} else if (!strcmp(line, "/status")) {
		print_status(u);
		tui_putf(u, "session %s\n", u->s.j.id);
		int n = cJSON_GetArraySize(u->s.instructions);
		if (u->f.no_instructions)
			tui_put(u, "project instructions: off (--no-project-instructions)\n");
		else if (!n)
			tui_put(u, "project instructions: none found (AGENTS.md or CLAUDE.md)\n");
		const cJSON *fi;
		cJSON_ArrayForEach(fi, u->s.instructions) {
			char hash[13];
			snprintf(hash, sizeof(hash), "%s", json_str(fi, "sha256") ? json_str(fi, "sha256") : "");
			/* Its path is the repository's (a directory's name). */
			_cleanup_free_ char *ip = tui_short(json_str(fi, "path") ? json_str(fi, "path") : "?", 300);
			/* Where it came from (cmd/instructions.h). */
			const char *from = json_str(fi, "from") ? json_str(fi, "from") : "";
			tui_putf(u, "project instructions: %s (%lld bytes, sha256 %s…, from %s)%s\n", ip ? ip : "",
				 (long long)json_int(fi, "bytes", 0), hash,
				 !strcmp(from, "user") ? "your own file" : !strcmp(from, "repository")
					 ? "the repository, above the workspace" : "the workspace",
				 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fi, "cut")) ? ", cut at the cap" : "");
		}
	} else if (!strcmp(line, "/mcp")) {
		tui_show_mcp(u);
	} else if (!strcmp(line, "/cost")) {
		tui_putf(u, "%lld tokens in, %lld out (%lld not cached, %lld read from the cache, %lld written to it: %.0f%% hit)",
			 (long long)usage_prompt(&u->usage), (long long)u->usage.output, (long long)u->usage.input,
			 (long long)u->usage.cache_read, (long long)u->usage.cache_write, usage_hit_rate(&u->usage) * 100);
		if (u->priced)
			tui_putf(u, ": $%.4f\n", price_cost(&u->price, &u->usage));
		else
			tui_putf(u, "; ward does not know the prices of %s\n", u->f.cfg.pcfg.model);
	} else if (!strcmp(line, "/clear")) {
		cJSON *rec = cJSON_CreateObject();
		journal_write(&u->s.j, "clear", rec);
		cJSON_Delete(rec);
		cJSON_Delete(u->s.messages);
		u->s.messages = cJSON_CreateArray();
		tui_put(u, "The conversation starts again; the box and the workspace changes stay.\n");
	} else if (!strcmp(line, "/compact")) {
		compact_now(u);
	} else if (!strcmp(line, "/resume")) {
		cmd_resume(u, arg);
	} else if (!strcmp(line, "/rewind")) {
		rewind_here(u, arg);
	} else if (!strcmp(line, "/approve")) {
		if (*arg && gate_mode_parse(arg, &u->f.gate.mode) < 0) {
			_cleanup_free_ char *s = tui_short(arg, 40);
			tui_putf(u, "\"%s\" is not a mode; use ask, edits or auto.\n", s ? s : "");
		} else {
			if (*arg)
				tui_journal_mode(u);
			char line[400];
			snprintf(line, sizeof(line), "Approvals: %s (ask: every write and command is asked; edits: file changes "
				 "run, commands are asked; auto: everything in the box runs).", gate_mode_name(u->f.gate.mode));
			tui_say(u, NULL, line, 2);
		}
	} else if (!strcmp(line, "/model")) {
		tui_cmd_model(u, arg);
	} else if (!strcmp(line, "/config")) {
		tui_cmd_config(u);
	} else if (!strcmp(line, "/retry")) {
		retry(u);
	} else if (!strcmp(line, "/init")) {
		tui_put(u, DIM "Asking the model to look at the project and write AGENTS.md (its changes are reviewed as any)." UNDIM "\n");
		run_message(u, "Look at this project: its layout, its build, test and lint commands, its languages and the "
			       "conventions its code follows. Then write AGENTS.md at the workspace's root: a short guide "
			       "for an agent working here (how to build and test, where things are, the habits to keep). If "
			       "AGENTS.md exists already, improve it rather than start again.");
	} else {
		_cleanup_free_ char *s = tui_short(line, 40);
		tui_putf(u, "Unknown command %s; /help lists them.\n", s ? s : "");
	}
	return true;
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
		session_changes_begin(&sw, now_wall_ns());
	if (box_up(u) < 0)
		return;
	if (text)
		rewind_checkpoint(&u->s, changes);
	struct turn_cfg cfg;
	turn_begin(u, &cfg);
	struct turn_stop stop;
	struct err e = { 0 };
	u->retries = 0;
	int r = run_turn(&cfg, &u->s, text, &stop, &e);
	tui_live_clear(u);
	if (r < 0)
		tui_putf(u, RED "ward: %s" RESET "\n", e.msg);
	else if (stop.signal == SIGTERM || stop.signal == SIGHUP)
		u->quit_sig = stop.signal;
	if (stop.kind == TURN_BOX_ERROR)
		box_down(u);	/* the next message gets a new one */
	if (changes)
		session_changes_record(&sw);
	fflush(stdout);
}

static void run_message(struct tui *u, const char *text)
{
	free(u->last_message);
	u->last_message = strdup(text);
	_cleanup_free_ char *attached = tui_attach(u, text);
	run_turn_on(u, attached ? attached : text);
}

/* /retry: the conversation as it stands sent again (after an error, the
 * message that failed; after a broken stream, from what it said). */
static void retry(struct tui *u)
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
	if (!u)
		return EXIT_FAIL;
	u->s.j.fd = -1;
	u->sfd = -1;
	run_flags_init(&u->f, GATE_EDITS);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:h", tui_opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			free(u);
			return cmd_bad_flag("chat", c, argv);
		}
		int k = run_flag_given(&u->f, c, optarg);
		if (k == 0)
			k = mcpconf_flag(&u->mc, c, optarg);
		if (k < 0) {
			free(u);
			return EXIT_USAGE;
		}
		if (k > 0)
			continue;
		free(u);
		if (c == 'h') {
			fputs(tui_help, stdout);
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
	if (hooks_install(&u->f.cfg, &u->deadline, &u->hooks)) {
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
	r = mcpconf_load(&u->mc, u->ws[0] ? u->ws : NULL, tui_trust_mcp, u);
	if (r) {
		tui_free(u);
		return r;
	}
	if (box_up(u) < 0) {
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
			if (!slash(u, t))
				break;
			fflush(stdout);
			continue;
		}
		if (*t == '!' && t[1]) {
			if (box_up(u) == 0)
				tui_shell(u, t + 1);
			fflush(stdout);
			continue;
		}
		run_message(u, line);
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
	box_down(u);
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
