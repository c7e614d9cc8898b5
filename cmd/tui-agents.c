/* The subagents' cards: each child of the task tool (turn/agent.h) as a
 * card of its own. While it runs, its card is among the live rows: its id
 * and description, the call it is making, its calls so far, its cost and
 * time. When it ends, the card is committed to the scrollback with how it
 * ended. Closed (the default), a card is one row; open, it lists the
 * child's calls (the last TUI_AGENT_CALLS, the earlier counted) and the
 * first line of its answer. Ctrl-O while a turn runs opens or closes
 * them; /agents (or Ctrl-O at the prompt) shows the last turn's children
 * open. A child's lines are its own words: every one is made term-safe
 * before it is kept. */
#include "cmd/tui.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "cmd/term.h"
#include "tools/tool.h"
#include "cmd/subagents.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tui_agent *find(struct tui *u, const char *name, bool add)
{
	for (size_t i = 0; i < u->nagents; i++)
		if (!strcmp(u->agents[i].name, name))
			return &u->agents[i];
	if (!add || u->nagents >= TUI_AGENTS)
		return NULL;
	struct tui_agent *g = &u->agents[u->nagents++];
	*g = (struct tui_agent){ .cost = -1, .since = now_ms() };
	_cleanup_free_ char *n = tui_short(name, 40);
	snprintf(g->name, sizeof(g->name), "%s", n ? n : "?");
	return g;
}

/* "name arg" of a call, on one line. */
static void call_line(const cJSON *call, char *out, size_t n)
{
	const char *name = json_str(call, "name");
	_cleanup_free_ char *nm = tui_short(name ? name : "?", 24);
	_cleanup_free_ char *a = tui_short(tool_call_arg(call), 150);
	snprintf(out, n, "%s%s%s", nm ? nm : "?", a && *a ? " " : "", a ? a : "");
}

static void cost_of(struct tui *u, const struct tui_agent *g, char *out, size_t n)
{
	if (g->cost >= 0)
		snprintf(out, n, "$%.4f", g->cost);
	else if (u->priced)
		snprintf(out, n, "$%.4f", price_cost(&u->price, &g->usage));
	else
		snprintf(out, n, "%lld tokens", (long long)(usage_prompt(&g->usage) + g->usage.output));
}

/* The card's first row: ▸/▾ (running, closed/open) or how it ended. */
static void head(struct tui *u, const struct tui_agent *g, char *out, size_t n)
{
	char cost[48];
	cost_of(u, g, cost, sizeof(cost));
	double secs = (double)((g->ended ? g->ended : now_ms()) - g->since) / 1000;
	const char *mark = g->end[0] ? (g->ok ? GREEN "✓" RESET : RED "✗" RESET) : u->agents_open ? CYAN "▾" RESET : CYAN "▸" RESET;
	char what[260];
	if (g->end[0])
		snprintf(what, sizeof(what), "%s", g->end);
	else if (g->now[0])
		snprintf(what, sizeof(what), "%s", g->now);
	else
		snprintf(what, sizeof(what), "thinking");
	snprintf(out, n, "  %s " BOLD "%s" RESET " %s" DIM " · %s · %d call%s · %s · %.1fs" UNDIM, mark, g->name, g->desc,
		 what, g->ncalls, g->ncalls == 1 ? "" : "s", cost, secs);
}

/* An open card's rows under its head: its calls, and its answer. */
static void body(const struct tui_agent *g, int max, void (*row)(void *ud, const char *s), void *ud)
{
	int kept = g->ncalls < TUI_AGENT_CALLS ? g->ncalls : TUI_AGENT_CALLS;
	int first = kept > max ? kept - max : 0;
	char s[300];
	if (g->ncalls > kept - first) {
		snprintf(s, sizeof(s), DIM "    │ … %d earlier call%s" UNDIM, g->ncalls - (kept - first),
			 g->ncalls - (kept - first) == 1 ? "" : "s");
		row(ud, s);
	}
	for (int i = first; i < kept; i++) {
		int at = (g->ncalls - kept + i) % TUI_AGENT_CALLS;
		snprintf(s, sizeof(s), DIM "    │ " UNDIM "%s", g->calls[at]);
		row(ud, s);
	}
	if (g->now[0] && !g->end[0]) {
		snprintf(s, sizeof(s), DIM "    │ " UNDIM CYAN "●" RESET " %s", g->now);
		row(ud, s);
	}
	if (g->end[0] && g->final[0]) {
		snprintf(s, sizeof(s), DIM "    ⎿ %s" UNDIM, g->final);
		row(ud, s);
	}
}

static void put_row(void *ud, const char *s)
{
	struct tui *u = ud;
	/* ward's own rows (the child's words in them already term-safe):
	 * cut to the width by columns, escapes kept. */
	size_t n = strlen(s), fit = term_fit_bytes(s, n, (size_t)(tui_cols() - 1));
	fwrite(s, 1, fit, stdout);
	tui_put(u, RESET "\n");
}

/* The ended card, committed. */
static void commit(struct tui *u, struct tui_agent *g)
{
	if (g->shown)
		return;
	g->shown = true;
	char h[1024];
	head(u, g, h, sizeof(h));
	put_row(u, h);
	if (u->agents_open)
		body(g, TUI_AGENT_CALLS, put_row, u);
}

void tui_agents_event(struct tui *u, const struct turn_event *ev)
{
	const cJSON *line = ev->result;
	const char *type = json_str(line, "type"), *who = json_str(line, "agent");
	if (!type || !ev->text)
		return;
	struct tui_agent *g = find(u, ev->text, true);
	if (!g)
		return;
	if (!g->desc[0] && ev->call) {
		const cJSON *in = cJSON_GetObjectItemCaseSensitive(ev->call, "input");
		const char *d = json_str(in, "description");
		_cleanup_free_ char *s = tui_short(d ? d : json_str(in, "prompt") ? json_str(in, "prompt") : "", 60);
		snprintf(g->desc, sizeof(g->desc), "%s", s ? s : "");
	}
	/* A grandchild's lines come through its parent: its calls are
	 * shown on the child's card, under its own id. */
	bool own = who && !strcmp(who, ev->text);
	char pre[80] = "";
	if (!own && who) {
		_cleanup_free_ char *w = tui_short(who, 40);
		snprintf(pre, sizeof(pre), "%s › ", w ? w : "");
	}
	if (!strcmp(type, "tool_call")) {
		char c[200];
		call_line(cJSON_GetObjectItemCaseSensitive(line, "call"), c, sizeof(c));
		snprintf(g->now, sizeof(g->now), "%s%s", pre, c);
	} else if (!strcmp(type, "tool_result")) {
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(line, "result");
		const char *outcome = json_str(res, "outcome");
		const cJSON *ec = cJSON_GetObjectItemCaseSensitive(res, "exit_code");
		bool ok = outcome && !strcmp(outcome, "ok") && (!cJSON_IsNumber(ec) || ec->valueint == 0);
		snprintf(g->calls[g->ncalls % TUI_AGENT_CALLS], sizeof(g->calls[0]), "%s %s", ok ? GREEN "✓" RESET : RED "✗" RESET,
			 g->now[0] ? g->now : "?");
		g->ncalls++;
		g->now[0] = 0;
	} else if (!strcmp(type, "usage") && own) {
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(line, "input_tokens"),
			    *ot = cJSON_GetObjectItemCaseSensitive(line, "output_tokens"),
			    *cr = cJSON_GetObjectItemCaseSensitive(line, "cache_read_tokens"),
			    *cw = cJSON_GetObjectItemCaseSensitive(line, "cache_write_tokens");
		g->usage = (struct usage){
			.input = cJSON_IsNumber(it) ? (int64_t)it->valuedouble : 0,
			.output = cJSON_IsNumber(ot) ? (int64_t)ot->valuedouble : 0,
			.cache_read = cJSON_IsNumber(cr) ? (int64_t)cr->valuedouble : 0,
			.cache_write = cJSON_IsNumber(cw) ? (int64_t)cw->valuedouble : 0,
		};
	} else if (!strcmp(type, "result") && own) {
		const char *stop = json_str(line, "stop"), *why = json_str(line, "why"), *fin = json_str(line, "final_text");
		const cJSON *cost = cJSON_GetObjectItemCaseSensitive(line, "cost_usd");
		if (cJSON_IsNumber(cost))
			g->cost = cost->valuedouble;
		g->ok = stop && !strcmp(stop, "done");
		char end[300];
		snprintf(end, sizeof(end), "%s%s%s", stop ? stop : "ended", why && *why && !g->ok ? ": " : "",
			 why && !g->ok ? why : "");
		_cleanup_free_ char *w = tui_short(end, 160);
		snprintf(g->end, sizeof(g->end), "%s", w ? w : "ended");
		_cleanup_free_ char *f = tui_short(fin ? fin : "", 180);
		snprintf(g->final, sizeof(g->final), "%s", f ? f : "");
		g->ended = now_ms();
		g->now[0] = 0;
		commit(u, g);
	}
}

void tui_agents_result(struct tui *u, const cJSON *result)
{
	const cJSON *ag = cJSON_GetObjectItemCaseSensitive(result, "agent");
	const char *id = json_str(ag, "id");
	if (!id)
		return;
	struct tui_agent *g = find(u, id, true);
	if (!g || g->shown)
		return;
	/* It ended without its own result (cut off, or it never started). */
	_cleanup_free_ char *o = tui_short(json_str(result, "outcome") ? json_str(result, "outcome") : "ended", 40);
	snprintf(g->end, sizeof(g->end), "%s", o ? o : "ended");
	g->ok = false;
	if (!g->ended)
		g->ended = now_ms();
	commit(u, g);
}

void tui_agents_end(struct tui *u)
{
	for (size_t i = 0; i < u->nagents; i++) {
		struct tui_agent *g = &u->agents[i];
		if (g->shown)
			continue;
		if (!g->end[0])
			snprintf(g->end, sizeof(g->end), "cut off with the turn");
		if (!g->ended)
			g->ended = now_ms();
		commit(u, g);
	}
}

struct live_ud {
	struct tui *u;
	struct buf *b;
	int cols;
};

static void live_row(void *ud, const char *s)
{
	struct live_ud *l = ud;
	tui_live_row(l->u, l->b, s, l->cols);
}

void tui_agents_live(struct tui *u, struct buf *b, int cols)
{
	struct live_ud l = { u, b, cols };
	size_t running = 0;
	for (size_t i = 0; i < u->nagents; i++)
		running += !u->agents[i].shown;
	for (size_t i = 0; i < u->nagents; i++) {
		struct tui_agent *g = &u->agents[i];
		if (g->shown)
			continue;
		char h[1024];
		head(u, g, h, sizeof(h));
		tui_live_row(u, b, h, cols);
		/* Open: the last calls, as many as the live rows hold. */
		if (u->agents_open)
			body(g, running > 4 ? 1 : 3, live_row, &l);
	}
	if (running)
		tui_live_row(u, b, DIM "  ctrl-o opens or closes the subagents' cards" UNDIM, cols);
}

void tui_agents_show(struct tui *u)
{
	if (!u->nagents) {
		tui_put(u, "No subagent ran in the last turn.\n");
		return;
	}
	bool open = u->agents_open;
	u->agents_open = true;
	for (size_t i = 0; i < u->nagents; i++) {
		u->agents[i].shown = false;
		commit(u, &u->agents[i]);
	}
	u->agents_open = open;
}

struct agents *tui_agents_begin(struct tui *u, struct turn_cfg *cfg)
{
	u->nagents = 0;
	return subagents_begin(&u->sub, &u->f, cfg, u->box, u->ws[0] ? u->ws : NULL, u->s.j.id);
}
