#include "cmd/run-settings.h"
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "base/cleanup.h"
#include "sandbox/box.h"
#include "task/hook.h"
#include "turn/compact.h"
#include "turn/price.h"
#include "turn/retry.h"
#include "turn/window.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *run_settings_flag_name(int c)
{
	const struct flag *f = flags_setting(c);
	return f ? f->name : "?";
}

const struct settings_key *run_settings_key_of_flag(const char *name)
{
	for (const struct flag_group *g = flagtab_run.groups; g < flagtab_run.groups + FLAG_GROUPS_MAX && g->flags; g++)
		for (const struct flag *f = g->flags; g->settings && f->name; f++)
			if (!strcmp(f->name, name))
				return settings_key_by_flag(f->val);
	return NULL;
}

const char *run_settings_default_text(const struct run_flags *f, int c, char *buf, size_t n)
{
	const struct settings_key *k = settings_key_by_flag(c);
	const struct flag *fl = flags_setting(c);
	if (c == 'm')
		return run_flags_model(f);
	if (c == 'a')
		return gate_mode_name(f->mode_default);
	if (c == 'n')
		return "on";
	if (c == 'N' && f->net.nallow)
		return "(allow_hosts)";
	if (c == 'W') {
		/* The model's, from ward's table. */
		int64_t w;
		if (window_for(run_flags_model(f), &w))
			snprintf(buf, n, "%lld", (long long)w);
		else
			snprintf(buf, n, "%d (the model is not in ward's table)", WINDOW_DEFAULT);
		return buf;
	}
	if (!fl || !k || k->type == SETTINGS_LIST || !*flags_default_value(fl, buf, n))
		snprintf(buf, n, fl && fl->dnote && k && k->type != SETTINGS_LIST ? "(%s)" : "(none)", fl ? fl->dnote : "");
	return buf;
}

/* How loose a setting is: the bigger, the more it allows. NAN: the
 * setting has no rank (the model is compared by its prices). */
static double rank(const struct run_flags *f, int c)
{
	switch (c) {
	case 'a':
		return f->gate.mode;	/* ask < edits < auto */
	case 'N':
		return f->net.nallow ? 1 : f->net.net == BOX_NET_HOST ? 2 : 0;
	case 'd':
		return f->deadline_ms ? (double)f->deadline_ms : INFINITY;
	case 'R':
		return f->cfg.b.max_rounds ? f->cfg.b.max_rounds : INFINITY;
	case 'C':
		return f->cfg.b.max_calls ? f->cfg.b.max_calls : INFINITY;
	case 'T':
		return f->cfg.b.max_tokens ? (double)f->cfg.b.max_tokens : INFINITY;
	case '$':
		return f->cfg.b.max_cost > 0 ? f->cfg.b.max_cost : INFINITY;
	case 'I':
		return (double)(f->cfg.idle_ms ? f->cfg.idle_ms : TURN_IDLE_MS_DEFAULT);
	case 'Y':
		return f->cfg.retries >= 0 ? f->cfg.retries : RETRY_MAX_DEFAULT;
	case 'K':
		return (double)(f->disk ? f->disk : BOX_DEFAULT_DISK);
	case 'Q':
		return (double)(f->net.max_bytes ? f->net.max_bytes : BOX_NET_MAX_BYTES_DEFAULT);
	case 'W':
		/* Unset: the model's own window, the most it can take. */
		return f->cfg.context_window ? (double)f->cfg.context_window : INFINITY;
	case '%':
		return f->cfg.compact_at ? f->cfg.compact_at : COMPACT_AT_DEFAULT;
	case 'c':
		return !f->cfg.pcfg.cache_ttl ? 0 : !strcmp(f->cfg.pcfg.cache_ttl, "1h") ? 2 : 1;
	case 'n':
		return f->no_instructions ? 0 : 1;
	}
	return NAN;
}

/* The loosest value of a setting, which a source that may only narrow
 * never sets. */
static double loosest(int c)
{
	return c == 'a' ? GATE_AUTO : c == 'N' ? 2 : INFINITY;
}

/* Whether then's value of c is looser than now's: 0 no, 1 looser, 2 the
 * loosest, or not comparable (a model ward has no prices for); -1: c has
 * no rank. */
static int looser(const void *nowp, const void *thenp, int c)
{
	const struct run_flags *now = nowp, *then = thenp;
	if (c == 'm') {
		const char *a = run_flags_model(now), *b = run_flags_model(then);
		struct price pa, pb;
		if (!strcmp(a, b))
			return 0;
		if (!price_for(a, &pa) || !price_for(b, &pb))
			return 2;
		return pb.in > pa.in || pb.out > pa.out || pb.cache_read > pa.cache_read ||
		       pb.cache_write > pa.cache_write || pb.cache_write_1h > pa.cache_write_1h;
	}
	double was = rank(now, c), is = rank(then, c);
	if (isnan(was) || isnan(is))
		return -1;
	return is >= loosest(c) ? 2 : is > was;
}

/* The target's operations over struct run_flags. */
static int target_apply(void *t, const struct settings_key *k, const char *value, enum settings_narrow rule,
			struct err *e)
{
	struct run_flags *f = t;
	/* run_flag's own error line is e's message. */
	cmd_error_into(e);
	int r = cmd_error_end(e, run_flag(f, k->c, value));
	if (r < 0)
		return r;
	if (r == 0)
		return err_set(e, -ENOTRECOVERABLE, "internal: --%s is not a setting run_flag knows",
			       run_settings_flag_name(k->c));
	if (k->c == 'i')
		f->image_untrusted = rule == NARROW_ROOT;
	return 0;
}

static const char *target_default_text(const void *t, int c, char *buf, size_t n)
{
	return run_settings_default_text(t, c, buf, n);
}

static void target_net_reset(void *t)
{
	netflag_reset(&((struct run_flags *)t)->net);
}

static int target_net_finish(void *t, struct err *e)
{
	struct box_opts probe;
	box_opts_default(&probe);
	cmd_error_into(e);
	int r = cmd_error_end(e, netflag_finish(&((struct run_flags *)t)->net, &probe));
	return r < 0 ? r : 0;
}

static bool target_net_mode_set(const void *t)
{
	return ((const struct run_flags *)t)->net.net_set;
}

static const char *target_provider(const void *t)
{
	return ((const struct run_flags *)t)->provider;
}

static const struct settings_target run_target = {
	.size = sizeof(struct run_flags),
	.apply = target_apply,
	.looser = looser,
	.default_text = target_default_text,
	.net_reset = target_net_reset,
	.net_finish = target_net_finish,
	.net_mode_set = target_net_mode_set,
	.provider = target_provider,
};

int run_settings_apply(struct run_flags *f, struct settings_report *rep)
{
	for (const struct flag_group *fg = flagtab_run.groups; fg < flagtab_run.groups + FLAG_GROUPS_MAX && fg->flags; fg++)
		for (const struct flag *o = fg->flags; fg->settings && o->name; o++)
			if (!settings_key_by_flag(o->val)) {
				cmd_error("internal: --%s has no row in the table of task/settings.c", o->name);
				return EXIT_FAIL;
			}
	_cleanup_free_ struct run_flags *g = malloc(sizeof(*g));
	if (!g) {
		cmd_error("out of memory");
		return EXIT_FAIL;
	}
	run_flags_init(g, f->mode_default);
	struct settings_in in = {
		.workspace = f->workspace,
		.provider = f->provider,
		.provider_default = RUN_DEFAULT_PROVIDER,
		.given = f->given,
		.ngiven = f->ngiven,
		.flag_name = run_settings_flag_name,
		.line = f->line,
		.nline = f->nline,
		.line_from = f->line_from,
		.note = { cmd_note, NULL },
	};
	struct err e = { 0 };
	int r = settings_apply(&in, &run_target, g, rep, &e);
	if (r < 0) {
		cmd_error("%s", e.msg);
		return r == -ENOMEM || r == -ENOTRECOVERABLE ? EXIT_FAIL : EXIT_USAGE;
	}
	memcpy(g->given, f->given, sizeof(g->given));
	g->ngiven = f->ngiven;
	memcpy(g->line, f->line, sizeof(g->line));
	g->nline = f->nline;
	g->line_from = f->line_from;
	*f = *g;
	return 0;
}

static void hook_note(void *ud, const char *line)
{
	cmd_error("warning: %s", line);
}

int run_settings_hooks_install(struct turn_cfg *cfg, const int64_t *deadline_ms, struct hooks **ret)
{
	*ret = NULL;
	const char *from = NULL;
	const cJSON *conf = settings_hooks(&from);
	if (!conf)
		return 0;
	struct err e = { 0 };
	if (hooks_new(conf, from ? from : "config", hook_note, NULL, ret, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_USAGE;
	}
	hooks_install(*ret, cfg, deadline_ms);
	return 0;
}
