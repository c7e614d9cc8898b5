#include "turn/agent.h"
#include "turn/ledger.h"
#include "turn/turn.h"
#include "base/buf.h"
#include "base/child.h"
#include "base/cleanup.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "sandbox/box.h"
#include "tools/tool.h"
#include "workspace/layers.h"
#include "workspace/wsmerge.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum ag_state { AG_WAIT, AG_RUNNING, AG_ENDED, AG_REPORTED };

struct agents;
struct agent {
	struct agents *a;
	uint32_t id;
	char name[64];			/* "a1", "a1.a2", ... */
	enum ag_state state;
	cJSON *input;
	bool ro, cancelled, forgotten;
	char box[BOX_NAME_MAX + 1];	/* its own (a fork), or "" for the parent's */
	struct wsmerge_manifest *base;	/* its layer's manifest at the fork */
	bool imaged;			/* its layer is its parent's image copied whole */
	pid_t pid;
	int fd;				/* its stdout */
	struct loop *loop;
	struct buf line;
	cJSON *result;			/* its last line, {"type":"result"} */
	int64_t started_ms, ended_ms, kill_at;
	int64_t share_ms, hang_at;	/* its own share of time; when it is killed past it (0: none) */
	int64_t start_ms;		/* its start's cost: the fork, the base manifest, the spawn */
	int status;
	char why[300];			/* what went wrong starting or running it */
	cJSON *merge;			/* wsmerge's out */
	agent_result_cb *cb;
	agent_event_cb *ev_cb;
	void *ud;
};

struct agents {
	struct agents_cfg cfg;
	struct agent v[AGENT_CHILDREN_MAX];
	size_t n;
	int64_t t0;
};

static const char *const tool_sets[] = { "all", "read-only", NULL };
/* prompt: all the child is told; tools: "all" (a copy of the workspace,
 * merged back) or "read-only" (the parent's box, nothing changed). */
static const struct arg_spec task_args[] = {
	{ .name = "prompt", .type = ARG_STRING, .required = true },
	{ .name = "description", .type = ARG_STRING },
	{ .name = "tools", .type = ARG_STRING, .choices = tool_sets },
	{ .name = "model", .type = ARG_STRING },
	/* Its own share of the task's budgets (the task's totals still
	 * bind): seconds, tool calls, tokens, USD (a decimal, as a string). */
	{ .name = "deadline_s", .type = ARG_INT, .min = 1, .max = 86400 },
	{ .name = "max_calls", .type = ARG_INT, .min = 1, .max = 1000000 },
	{ .name = "max_tokens", .type = ARG_INT, .min = 1, .max = 1000000000000 },
	{ .name = "max_cost", .type = ARG_STRING },
	{ 0 },
};

int agents_new(const struct agents_cfg *cfg, struct agents **ret, struct err *e)
{
	struct agents *a = calloc(1, sizeof(*a));
	if (!a)
		return err_set(e, -ENOMEM, "out of memory");
	a->cfg = *cfg;
	if (a->cfg.max <= 0)
		a->cfg.max = AGENT_MAX_DEFAULT;
	a->t0 = now_ms();
	*ret = a;
	return 0;
}

bool agents_offered(const struct agents *a)
{
	return a && a->cfg.depth < AGENT_DEPTH_MAX;
}

cJSON *agents_schema(void)
{
	static const struct tool t = {
		.name = AGENT_TOOL,
		.description = "Hand a part of your task to a subagent: a model of its own with the same tools, working "
			       "in its own copy of your workspace. Several task calls in one message run at the same time. "
			       "Its final answer comes back as the result, with the files it changed (merged into your "
			       "workspace) and any conflict (a file you or another subagent changed too: not merged, both "
			       "versions shown, yours kept). prompt: all it is told; tools: \"all\" (default) or "
			       "\"read-only\" (it reads your workspace and changes nothing); description: a few words. It "
			       "shares your budgets; deadline_s, max_calls, max_tokens and max_cost (USD, as a string: "
			       "\"0.05\") give it a smaller share of its own.",
		.args = task_args,
	};
	return tool_schema(&t);
}

bool agents_readonly(const cJSON *input)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(input, "tools"));
	return t && !strcmp(t, "read-only");
}

int agents_check(const struct agents *a, const cJSON *input, struct err *e)
{
	if (!agents_offered(a))
		return err_set(e, -EINVAL, "subagents cannot start subagents deeper than %d levels", AGENT_DEPTH_MAX);
	static const struct tool t = { .name = AGENT_TOOL, .args = task_args };
	int r = tool_check_args(&t, input, e);
	if (r < 0)
		return r;
	const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(input, "model"));
	if (model && !strncmp(model, "replay:", 7)) {
		/* A script beside the parent's, by its bare name: a model never
		 * names a host file. */
		const char *f = model + 7;
		if (!a->cfg.replay_dir || !*f || strchr(f, '/') || f[0] == '.')
			return err_set(e, -EINVAL, "model: replay:NAME is only for a replayed run, NAME a script beside its own");
	} else if (model && a->cfg.replay_dir) {
		return err_set(e, -EINVAL, "model: a replayed run's subagents replay too (replay:NAME)");
	}
	const char *mc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(input, "max_cost"));
	if (mc) {
		char *end;
		double d = strtod(mc, &end);
		if (end == mc || *end || !(d > 0) || d > 1e6)
			return err_set(e, -EINVAL, "max_cost: \"%.40s\" is not an amount in USD (a decimal such as \"0.05\")",
				       mc);
	}
	if (a->n >= AGENT_CHILDREN_MAX)
		return err_set(e, -EMFILE, "this run has started %d subagents, the most it may", AGENT_CHILDREN_MAX);
	return 0;
}

static int running(const struct agents *a)
{
	int n = 0;
	for (size_t i = 0; i < a->n; i++)
		n += a->v[i].state == AG_RUNNING;
	return n;
}

static void add_arg(char **v, size_t *n, size_t cap, const char *s)
{
	if (*n + 1 < cap)
		v[(*n)++] = (char *)s;
}

static void on_child(struct loop *l, int fd, uint32_t events, void *data);

/* Its box forked (or the parent's, read-only), then the ward run. */
static int spawn(struct agents *a, struct agent *g, struct err *e)
{
	const char *parent = a->cfg.box;
	int64_t t0 = now_ms();
	if (!g->ro) {
		cJSON *info = NULL;
		int r = box_fork(parent, NULL, getpid(), g->box, sizeof(g->box), &info, e);
		const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "copied"));
		g->imaged = how && !strcmp(how, "image");
		cJSON_Delete(info);
		if (r < 0)
			return r;
		/* Its base: stats where the image came whole (the parent's
		 * identities are the copy's), hashes where files were copied. */
		struct layers L = { .lock_fd = -1 };
		r = layers_find(g->box, &L, e);
		if (r >= 0) {
			r = wsmerge_manifest(r > 0 ? L.upper : "", !g->imaged, &g->base, e);
			layers_release(&L);
		}
		if (r < 0)
			return r;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_setc(e, -errno, "pipe");
	char *argv[128];
	size_t n = 0;
	char depth[16], dl[32], tok[32], calls[32], cost[32], model[300];
	add_arg(argv, &n, 128, a->cfg.exe);
	add_arg(argv, &n, 128, "run");
	for (size_t i = 0; i < a->cfg.nargv; i++)
		add_arg(argv, &n, 128, a->cfg.argv[i]);
	add_arg(argv, &n, 128, "--json");
	add_arg(argv, &n, 128, "--box");
	add_arg(argv, &n, 128, g->ro ? parent : g->box);
	snprintf(depth, sizeof(depth), "%d", a->cfg.depth + 1);
	add_arg(argv, &n, 128, "--agent-depth");
	add_arg(argv, &n, 128, depth);
	add_arg(argv, &n, 128, "--agent-id");
	add_arg(argv, &n, 128, g->name);
	add_arg(argv, &n, 128, "--agent-parent");
	add_arg(argv, &n, 128, a->cfg.id ? a->cfg.id : "main");
	if (a->cfg.session) {
		add_arg(argv, &n, 128, "--agent-session");
		add_arg(argv, &n, 128, a->cfg.session);
	}
	if (a->cfg.ledger) {
		add_arg(argv, &n, 128, "--agent-ledger");
		add_arg(argv, &n, 128, "3");
	}
	const struct task_limits *b = a->cfg.b;
	/* Its time: what is left of the task's, or its own share if less;
	 * past that and the grace, the parent kills it (a child that hangs). */
	const cJSON *ds = cJSON_GetObjectItemCaseSensitive(g->input, "deadline_s");
	int64_t share = cJSON_IsNumber(ds) ? (int64_t)ds->valuedouble * 1000 : 0;
	int64_t left = b && b->deadline_ms ? b->deadline_ms - now_ms() : 0;
	if (share && (!left || share < left))
		left = share;
	if (left) {
		snprintf(dl, sizeof(dl), "%lldms", (long long)(left > 1 ? left : 1));
		add_arg(argv, &n, 128, "--deadline");
		add_arg(argv, &n, 128, dl);
	}
	g->share_ms = share;
	char sc[32], st[32], sco[48];
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(g->input, "max_calls");
	if (cJSON_IsNumber(x)) {
		snprintf(sc, sizeof(sc), "%lld", (long long)x->valuedouble);
		add_arg(argv, &n, 128, "--agent-max-calls");
		add_arg(argv, &n, 128, sc);
	}
	x = cJSON_GetObjectItemCaseSensitive(g->input, "max_tokens");
	if (cJSON_IsNumber(x)) {
		snprintf(st, sizeof(st), "%lld", (long long)x->valuedouble);
		add_arg(argv, &n, 128, "--agent-max-tokens");
		add_arg(argv, &n, 128, st);
	}
	const char *mc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g->input, "max_cost"));
	if (mc) {
		snprintf(sco, sizeof(sco), "%.40s", mc);
		add_arg(argv, &n, 128, "--agent-max-cost");
		add_arg(argv, &n, 128, sco);
	}
	if (b && b->max_tokens > 0) {
		snprintf(tok, sizeof(tok), "%lld", (long long)b->max_tokens);
		add_arg(argv, &n, 128, "--max-tokens");
		add_arg(argv, &n, 128, tok);
	}
	if (b && b->max_calls > 0) {
		snprintf(calls, sizeof(calls), "%d", b->max_calls);
		add_arg(argv, &n, 128, "--max-calls");
		add_arg(argv, &n, 128, calls);
	}
	if (b && b->max_cost > 0) {
		snprintf(cost, sizeof(cost), "%.6f", b->max_cost);
		add_arg(argv, &n, 128, "--max-cost");
		add_arg(argv, &n, 128, cost);
	}
	const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g->input, "model"));
	if (m) {
		if (!strncmp(m, "replay:", 7))
			snprintf(model, sizeof(model), "replay:%s/%s", a->cfg.replay_dir, m + 7);
		else
			snprintf(model, sizeof(model), "%s", m);
		add_arg(argv, &n, 128, "--model");
		add_arg(argv, &n, 128, model);
	}
	if (g->ro) {
		/* Reads only: the gate denies what would change the shared box. */
		static const char *const deny[] = { "write", "edit", "bash", "job_kill", AGENT_TOOL };
		for (size_t i = 0; i < sizeof(deny) / sizeof(deny[0]); i++) {
			add_arg(argv, &n, 128, "--deny");
			add_arg(argv, &n, 128, deny[i]);
		}
	}
	add_arg(argv, &n, 128, "--");
	add_arg(argv, &n, 128, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g->input, "prompt")));
	argv[n] = NULL;
	int fds[4] = { -1, pfd[1], -1, a->cfg.ledger ? a->cfg.ledger->fd : -1 };
	int r = child_start_group(argv, fds, a->cfg.ledger ? 4 : 3, &g->pid);
	close(pfd[1]);
	if (r < 0) {
		close(pfd[0]);
		return err_setc(e, r, "cannot start the subagent");
	}
	g->fd = pfd[0];
	fcntl(g->fd, F_SETFL, O_NONBLOCK);
	/* From now the parent's own requests reserve as its children's do. */
	if (a->cfg.ledger)
		a->cfg.ledger->shared = true;
	buf_init(&g->line, AGENT_LINE_MAX);
	if (loop_add(g->loop, g->fd, EPOLLIN, on_child, g) < 0) {
		kill(-g->pid, SIGKILL);
		child_reap(g->pid);
		g->pid = 0;
		close(g->fd);
		g->fd = -1;
		return err_set(e, -EIO, "cannot watch the subagent");
	}
	g->state = AG_RUNNING;
	g->started_ms = now_ms();
	g->start_ms = g->started_ms - t0;
	if (g->share_ms)
		g->hang_at = g->started_ms + g->share_ms + AGENT_STOP_GRACE_MS;
	return 0;
}

static void finish_round(struct agents *a);

static void ended(struct agent *g)
{
	if (g->fd >= 0) {
		loop_del(g->loop, g->fd);
		close(g->fd);
		g->fd = -1;
	}
	if (g->pid > 0) {
		/* Its stdout closed: it is leaving; what is left of its group
		 * goes with it. */
		int st;
		pid_t w = waitpid(g->pid, &st, WNOHANG);
		if (w == 0) {
			kill(-g->pid, SIGTERM);
			g->kill_at = now_ms() + AGENT_STOP_GRACE_MS;
			return;	/* agents_tick reaps it */
		}
		g->status = st;
		kill(-g->pid, SIGKILL);
		g->pid = 0;
	}
	g->state = AG_ENDED;
	g->ended_ms = now_ms();
	buf_free(&g->line);
}

static void child_line(struct agent *g, char *s)
{
	cJSON *ev = cJSON_Parse(s);
	if (!ev)
		return;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
	if (type && !strcmp(type, "result")) {
		cJSON_Delete(g->result);
		g->result = cJSON_Duplicate(ev, 1);
	}
	if (g->ev_cb && !g->forgotten)
		g->ev_cb(g->ud, g->id, g->name, ev);
	else
		cJSON_Delete(ev);
}

static void on_child(struct loop *l, int fd, uint32_t events, void *data)
{
	struct agent *g = data;
	char chunk[65536];
	for (;;) {
		ssize_t k = read(fd, chunk, sizeof(chunk));
		if (k < 0 && (errno == EINTR))
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k; i++) {
			if (chunk[i] != '\n') {
				if (buf_append(&g->line, &chunk[i], 1) < 0)
					snprintf(g->why, sizeof(g->why), "a line of its events was over %u bytes", AGENT_LINE_MAX);
				continue;
			}
			buf_cstr(&g->line);
			if (g->line.data)
				child_line(g, g->line.data);
			g->line.len = 0;
		}
	}
	struct agents *a = g->a;
	ended(g);
	finish_round(a);
}

static void start_waiting(struct agents *a)
{
	for (size_t i = 0; i < a->n && running(a) < a->cfg.max; i++) {
		struct agent *g = &a->v[i];
		if (g->state != AG_WAIT)
			continue;
		struct err e = { 0 };
		if (g->cancelled || spawn(a, g, &e) < 0) {
			if (!g->cancelled)
				snprintf(g->why, sizeof(g->why), "%s", e.msg);
			g->state = AG_ENDED;
			g->started_ms = g->ended_ms = now_ms();
		}
	}
}

static cJSON *result_of(struct agent *g)
{
	const cJSON *r = g->result;
	const char *stop = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "stop"));
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "why"));
	const char *final = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "final_text"));
	const char *desc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g->input, "description"));
	struct buf b;
	buf_init(&b, 256 * 1024);
	const char *outcome = "ok";
	if (!r) {
		outcome = g->cancelled ? "cancelled" : "failed";
		buf_printf(&b, "[subagent %s%s%s%s: %s]\n", g->name, desc ? " (" : "", desc ? desc : "", desc ? ")" : "",
			   g->cancelled ? "cancelled before it finished" : g->why[0] ? g->why : "it ended without a result");
	} else {
		if (stop && strcmp(stop, "done"))
			outcome = !strcmp(stop, "cancelled") ? "cancelled" : "failed";
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(r, "usage");
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(u, "input_tokens"),
			    *ot = cJSON_GetObjectItemCaseSensitive(u, "output_tokens"),
			    *rounds = cJSON_GetObjectItemCaseSensitive(r, "rounds"),
			    *calls = cJSON_GetObjectItemCaseSensitive(r, "calls");
		buf_printf(&b, "[subagent %s%s%s%s: %s%s%s; %d rounds, %d calls, %lld tokens in, %lld out]\n", g->name,
			   desc ? " (" : "", desc ? desc : "", desc ? ")" : "", stop ? stop : "?", why && *why ? ": " : "",
			   why ? why : "", cJSON_IsNumber(rounds) ? (int)rounds->valuedouble : 0,
			   cJSON_IsNumber(calls) ? (int)calls->valuedouble : 0,
			   cJSON_IsNumber(it) ? (long long)it->valuedouble : 0, cJSON_IsNumber(ot) ? (long long)ot->valuedouble : 0);
		buf_printf(&b, "%s\n", final && *final ? final : "(no final answer)");
	}
	const cJSON *merged = cJSON_GetObjectItemCaseSensitive(g->merge, "merged");
	const cJSON *conf = cJSON_GetObjectItemCaseSensitive(g->merge, "conflicts");
	const cJSON *x;
	if (cJSON_GetArraySize(merged)) {
		buf_printf(&b, "\nFiles it changed, merged into your workspace:\n");
		cJSON_ArrayForEach(x, merged)
			buf_printf(&b, "  %s (%s)\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "path")),
				   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "change")));
	} else if (g->ro) {
		buf_printf(&b, "\n(read-only: it changed nothing)\n");
	} else if (!cJSON_GetArraySize(conf)) {
		buf_printf(&b, "\nIt changed no files.\n");
	}
	cJSON_ArrayForEach(x, conf) {
		buf_printf(&b, "\nCONFLICT, not merged: %s: %s. Your workspace keeps its version; decide, and write "
			       "the one you want.\n--- the workspace's version ---\n%s\n--- the subagent's version ---\n%s\n",
			   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "path")),
			   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "why")),
			   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "yours")),
			   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "theirs")));
	}
	buf_cstr(&b);
	cJSON *res = tool_result_json(outcome, "%s", b.data ? b.data : "");
	buf_free(&b);
	cJSON *ag = cJSON_AddObjectToObject(res, "agent");
	cJSON_AddStringToObject(ag, "id", g->name);
	if (g->merge) {
		cJSON_AddItemReferenceToObject(ag, "merged", cJSON_GetObjectItemCaseSensitive(g->merge, "merged"));
		cJSON_AddItemReferenceToObject(ag, "conflicts", cJSON_GetObjectItemCaseSensitive(g->merge, "conflicts"));
	}
	return res;
}

/* The last child of the round ended: merge them together, then each
 * call's result. */
static void finish_round(struct agents *a)
{
	start_waiting(a);
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].state == AG_WAIT || a->v[i].state == AG_RUNNING)
			return;
	struct wsmerge_child mc[AGENT_CHILDREN_MAX];
	struct layers L[AGENT_CHILDREN_MAX];
	struct agent *who[AGENT_CHILDREN_MAX];
	size_t n = 0;
	for (size_t i = 0; i < a->n; i++) {
		struct agent *g = &a->v[i];
		if (g->state != AG_ENDED || g->ro || !g->base || !g->box[0] || g->cancelled)
			continue;
		L[n] = (struct layers){ .lock_fd = -1 };
		if (layers_find(g->box, &L[n], NULL) <= 0)
			continue;
		mc[n] = (struct wsmerge_child){ .upper = L[n].upper, .base = g->base, .image = g->imaged };
		who[n++] = g;
	}
	if (n) {
		struct layers P = { .lock_fd = -1 };
		struct err e = { 0 };
		int r = layers_find(a->cfg.box, &P, &e);
		if (r > 0)
			r = wsmerge_apply(P.upper, a->cfg.workspace, mc, n, &e);
		else if (r == 0)
			r = err_set(&e, -ENOENT, "the parent's box has no workspace layer");
		layers_release(&P);
		for (size_t i = 0; i < n; i++) {
			who[i]->merge = mc[i].out;
			if (r < 0)
				snprintf(who[i]->why, sizeof(who[i]->why), "its changes were not merged: %s", e.msg);
			layers_release(&L[i]);
		}
	}
	for (size_t i = 0; i < a->n; i++) {
		struct agent *g = &a->v[i];
		if (g->state != AG_ENDED)
			continue;
		g->state = AG_REPORTED;
		if (g->box[0]) {
			box_destroy(g->box, NULL);
			layers_drop(g->box);
		}
		if (g->cb && !g->forgotten)
			g->cb(g->ud, g->id, result_of(g));
	}
}

int agents_start(struct agents *a, struct loop *l, const cJSON *input, agent_result_cb *cb, agent_event_cb *ev_cb,
		 void *ud, uint32_t *ret_id, struct err *e)
{
	int r = agents_check(a, input, e);
	if (r < 0)
		return r;
	struct agent *g = &a->v[a->n];
	*g = (struct agent){ .a = a, .id = (uint32_t)a->n + 1, .fd = -1, .loop = l, .cb = cb, .ev_cb = ev_cb, .ud = ud,
			     .input = cJSON_Duplicate(input, 1), .ro = agents_readonly(input) };
	/* main's children a1, a2; a1's a1.a1, a1.a2. */
	const char *pid = a->cfg.id && strcmp(a->cfg.id, "main") ? a->cfg.id : NULL;
	snprintf(g->name, sizeof(g->name), "%s%sa%u", pid ? pid : "", pid ? "." : "", g->id);
	a->n++;
	*ret_id = g->id;
	/* Its result never comes from here (the caller is dispatching):
	 * one that could not start is told from agents_tick. */
	start_waiting(a);
	return 0;
}

const char *agents_name(const struct agents *a, uint32_t id)
{
	return a && id > 0 && id <= a->n ? a->v[id - 1].name : "";
}

void agents_cancel(struct agents *a, uint32_t id)
{
	if (!a || id == 0 || id > a->n)
		return;
	struct agent *g = &a->v[id - 1];
	g->cancelled = true;
	if (g->state == AG_RUNNING && g->pid > 0 && !g->kill_at) {
		kill(-g->pid, SIGTERM);
		g->kill_at = now_ms() + AGENT_STOP_GRACE_MS;
	}
	if (g->state == AG_WAIT)
		g->state = AG_ENDED;	/* told from agents_tick */
}

static void kill_now(struct agent *g)
{
	if (g->fd >= 0) {
		loop_del(g->loop, g->fd);
		close(g->fd);
		g->fd = -1;
	}
	if (g->pid > 0) {
		kill(-g->pid, SIGKILL);
		child_reap(g->pid);
		g->pid = 0;
	}
	buf_free(&g->line);
	if (g->box[0]) {
		box_destroy(g->box, NULL);
		layers_drop(g->box);
		g->box[0] = 0;
	}
}

void agents_forget(struct agents *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		struct agent *g = &a->v[i];
		g->forgotten = true;
		g->cancelled = true;
		if (g->state == AG_RUNNING || g->state == AG_WAIT || g->state == AG_ENDED) {
			kill_now(g);
			g->state = AG_REPORTED;
			if (!g->ended_ms)
				g->ended_ms = now_ms();
		}
	}
}

void agents_tick(struct agents *a)
{
	if (!a)
		return;
	bool any = false;
	for (size_t i = 0; i < a->n; i++) {
		struct agent *g = &a->v[i];
		if (g->state != AG_RUNNING || g->pid <= 0)
			continue;
		if (g->fd < 0) {
			/* Its stdout closed: reap it, or kill it at kill_at. */
			int st;
			if (waitpid(g->pid, &st, WNOHANG) == g->pid || now_ms() >= g->kill_at) {
				kill(-g->pid, SIGKILL);
				if (g->pid > 0 && now_ms() >= g->kill_at)
					child_reap(g->pid);
				g->pid = 0;
				g->state = AG_ENDED;
				g->ended_ms = now_ms();
				buf_free(&g->line);
				any = true;
			}
		} else if (g->kill_at && now_ms() >= g->kill_at) {
			kill(-g->pid, SIGKILL);
		} else if (g->hang_at && now_ms() >= g->hang_at) {
			/* Past its own deadline and the grace: it hangs. */
			snprintf(g->why, sizeof(g->why), "it ran past its share of time (%lld s) and was killed",
				 (long long)(g->share_ms / 1000));
			kill(-g->pid, SIGKILL);
			g->hang_at = 0;
		}
	}
	for (size_t i = 0; i < a->n && !any; i++)
		any = a->v[i].state == AG_ENDED;
	if (any)
		finish_round(a);
}

int64_t agents_deadline(const struct agents *a)
{
	int64_t d = -1;
	for (size_t i = 0; a && i < a->n; i++) {
		const struct agent *g = &a->v[i];
		if (g->state == AG_RUNNING && g->kill_at)
			d = d < 0 || g->kill_at < d ? g->kill_at : d;
		if (g->state == AG_RUNNING && g->hang_at)
			d = d < 0 || g->hang_at < d ? g->hang_at : d;
		if ((g->state == AG_RUNNING && g->fd < 0) || g->state == AG_ENDED)
			d = d < 0 || now_ms() + 50 < d ? now_ms() + 50 : d;
	}
	return d;
}

cJSON *agents_report(const struct agents *a)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; a && i < a->n; i++) {
		const struct agent *g = &a->v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", g->name);
		const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g->input, "description"));
		if (d)
			cJSON_AddStringToObject(o, "description", d);
		cJSON_AddBoolToObject(o, "read_only", g->ro);
		const cJSON *r = g->result;
		const char *keys[] = { "stop", "why", "session", "rounds", "calls", "usage", "cost_usd" };
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, keys[k]);
			if (v)
				cJSON_AddItemToObject(o, keys[k], cJSON_Duplicate(v, 1));
		}
		if (!r)
			cJSON_AddStringToObject(o, "stop", g->cancelled ? "cancelled" : "failed");
		cJSON_AddNumberToObject(o, "started_ms", (double)(g->started_ms ? g->started_ms - a->t0 : 0));
		cJSON_AddNumberToObject(o, "ended_ms", (double)(g->ended_ms ? g->ended_ms - a->t0 : 0));
		cJSON_AddNumberToObject(o, "start_ms", (double)g->start_ms);
		if (g->merge) {
			cJSON_AddItemToObject(o, "merged", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(g->merge, "merged"), 1));
			cJSON_AddItemToObject(o, "conflicts",
					      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(g->merge, "conflicts"), 1));
		}
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

void agents_free(struct agents *a)
{
	if (!a)
		return;
	agents_forget(a);
	for (size_t i = 0; i < a->n; i++) {
		cJSON_Delete(a->v[i].input);
		wsmerge_manifest_free(a->v[i].base);
		cJSON_Delete(a->v[i].result);
		cJSON_Delete(a->v[i].merge);
	}
	free(a);
}
