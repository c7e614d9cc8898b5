/* The terminal session's slash commands (/help, /box, /diff, /apply,
 * /status, /resume, /compact, /rewind, ...): what each does to the
 * session, its box and its changes. tui.c reads the line and calls
 * tui_slash. */
#include "cmd/tui.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "cmd/cmd.h"
#include "cmd/rewind.h"
#include "cmd/session.h"
#include "mcp/mcp.h"
#include "sandbox/box.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	{ "/agents", "the last turn's subagents (the task tool), their cards open: each child's calls, how it "
		     "ended, its cost" },
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
	"completes a command or an @path; Ctrl-T shows the last call's whole output; Ctrl-O opens or closes the "
	"subagents' cards while they run (at the prompt: /agents); Ctrl-R searches the history; "
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

static void apply_changes(struct tui *u, bool force)
{
	if (u->f.rw || !u->own_box) {
		tui_put(u, "The box works on the directory directly (--rw or --box): nothing to apply.\n");
		return;
	}
	/* The box goes first (its changes are kept); the next message gets a
	 * new one over the updated directory. */
	tui_box_down(u);
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
	tui_box_down(u);
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
	tui_box_up(u);
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

/* /compact: the summary request, with Esc to stop it; the conversation
 * changes only when the summary came. */
static void compact_now(struct tui *u)
{
	struct turn_cfg cfg;
	tui_turn_begin(u, &cfg);
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
	tui_box_down(ud);
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
	if (d.box_stopped && tui_box_up(u) == 0)
		tui_putf(u, "The box was destroyed and a new one made (%s): processes that ran in it are gone.\n", u->box);
	if (r)
		return;
	tui_putf(u, "Back before message %d: the conversation has %d message%s; %s.\n", (int)n, d.messages,
		 d.messages == 1 ? "" : "s",
		 d.workspace ? "the workspace changes are as they were then"
			     : "the workspace was not rewound (the box works on the directory directly: --rw or --box)");
}

/* A slash command; false when the session should end. */
bool tui_slash(struct tui *u, char *line)
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
				tui_box_down(u);
				tui_putf(u, "Destroyed box %s (the workspace changes are kept).\n", old);
				if (!strcmp(arg, "recreate") && tui_box_up(u) == 0)
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
			/* Where it came from (task/instructions.h). */
			const char *from = json_str(fi, "from") ? json_str(fi, "from") : "";
			tui_putf(u, "project instructions: %s (%lld bytes, sha256 %s…, from %s)%s\n", ip ? ip : "",
				 (long long)json_int(fi, "bytes", 0), hash,
				 !strcmp(from, "user") ? "your own file" : !strcmp(from, "repository")
					 ? "the repository, above the workspace" : "the workspace",
				 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fi, "cut")) ? ", cut at the cap" : "");
		}
	} else if (!strcmp(line, "/mcp")) {
		tui_show_mcp(u);
	} else if (!strcmp(line, "/agents")) {
		tui_agents_show(u);
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
		tui_retry(u);
	} else if (!strcmp(line, "/init")) {
		tui_put(u, DIM "Asking the model to look at the project and write AGENTS.md (its changes are reviewed as any)." UNDIM "\n");
		tui_run_message(u, "Look at this project: its layout, its build, test and lint commands, its languages and the "
			       "conventions its code follows. Then write AGENTS.md at the workspace's root: a short guide "
			       "for an agent working here (how to build and test, where things are, the habits to keep). If "
			       "AGENTS.md exists already, improve it rather than start again.");
	} else {
		_cleanup_free_ char *s = tui_short(line, 40);
		tui_putf(u, "Unknown command %s; /help lists them.\n", s ? s : "");
	}
	return true;
}
