/* The flags ward run and the terminal session share, applied to a
 * struct run_flags; run_flags_finish rebuilds the settings from the
 * defaults, the config files, the environment and the flags. */
#include "cmd/run-flags.h"
#include "cmd/box-flags.h"
#include "cmd/term.h"
#include "cmd/cmd.h"
#include "cmd/run-settings.h"
#include "task/fleet.h"
#include "base/err.h"
#include "base/parse.h"
#include "image/ref.h"
#include "sandbox/box.h"
#include "turn/compact.h"
#include "turn/window.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ward's own system prompt (the session adds the project's after it). */
static const char run_system[] =
	"You are a coding agent working in a sandbox. The task's files are under /workspace, which is "
	"your working directory; /tmp is scratch space. Tools: read, write, edit, grep, find, ls, and "
	"bash (non-interactive: stdin is closed, there is no terminal, and every command has a time "
	"limit). Work step by step: look before you change, run the tests after a change, and finish "
	"with a short summary of what you did. If a command times out or is refused, read the message "
	"and try another way instead of repeating it.";

void run_flags_init(struct run_flags *f, enum gate_mode mode)
{
	*f = (struct run_flags){ .cfg.retries = -1, .cfg.pcfg.cache_ttl = RUN_DEFAULT_CACHE_TTL, .gate.mode = mode, .mode_default = mode };
}

/* http://HOST[:PORT][/PATH] or https://...: a host, no spaces, no
 * credentials in the URL (they would be sent and logged as a URL). */
static bool base_url_valid(const char *u)
{
	const char *p = !strncmp(u, "http://", 7) ? u + 7 : !strncmp(u, "https://", 8) ? u + 8 : NULL;
	if (!p || !*p || *p == '/' || *p == ':')
		return false;
	size_t host = strcspn(p, "/");
	if (memchr(p, '@', host))
		return false;
	for (const char *c = u; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return false;
	return true;
}

int run_flag(struct run_flags *f, int c, const char *arg)
{
	struct err e = { 0 };
	int64_t ms;
	uint64_t v;
	switch (c) {
	case 'p':
		if (!provider_find(arg)) {
			cmd_error("--provider: \"%s\" is not a provider; use anthropic, openai or openai-responses", arg);
			return -1;
		}
		f->provider = arg;
		return 1;
	case 'm':
		if (!arg[strspn(arg, " \t")]) {
			cmd_error("--model: give a model's name (e.g. " RUN_DEFAULT_ANTHROPIC_MODEL "), not an empty one");
			return -1;
		}
		f->model = arg;
		return 1;
	case 'u':
		if (!base_url_valid(arg)) {
			cmd_error("--base-url: \"%s\" is not an http:// or https:// URL with a host (e.g. "
				  "http://127.0.0.1:8080/v1)", arg);
			return -1;
		}
		f->base_url = arg;
		return 1;
	case 'a':
		if (gate_mode_parse(arg, &f->gate.mode) < 0) {
			cmd_error("--approve: \"%s\" is not a mode; use ask, edits or auto", arg);
			return -1;
		}
		return 1;
	case 'A':
	case 'D':
		if (gate_add_rule(&f->gate, c == 'A', arg, &e) < 0) {
			cmd_error("%s", e.msg);
			return -1;
		}
		return 1;
	case 'd':
	case 'I':
		if (parse_duration_ms(arg, &ms) < 0 || ms < 1) {
			cmd_error("--%s: \"%s\" is not a duration with a unit (e.g. 90s, 10m, 1h30m, 1.5s)", c == 'd' ? "deadline" : "idle-timeout", arg);
			return -1;
		}
		if (c == 'd')
			f->deadline_ms = ms;
		else
			f->cfg.idle_ms = ms;
		return 1;
	case 'K':
		if (box_flag_size("disk", arg, "512M, 10G", &v) < 0)
			return -1;
		f->disk = v;
		return 1;
	case 'R':
	case 'C':
	case 'T':
	case 'Y':
		if (parse_u64(arg, &v) < 0 || v > 100000000 || (v == 0 && c != 'Y')) {
			cmd_error("--%s: \"%s\" is not a positive number",
				  c == 'R' ? "max-rounds" : c == 'C' ? "max-calls" : c == 'T' ? "max-tokens" : "retries", arg);
			return -1;
		}
		if (c == 'R')
			f->cfg.b.max_rounds = (int)v;
		else if (c == 'C')
			f->cfg.b.max_calls = (int)v;
		else if (c == 'T')
			f->cfg.b.max_tokens = (int64_t)v;
		else
			f->cfg.retries = (int)v;
		return 1;
	case '$': {
		char *end;
		double d = strtod(arg, &end);
		if (*end || d <= 0) {
			cmd_error("--max-cost: \"%s\" is not an amount in USD (e.g. 0.50)", arg);
			return -1;
		}
		f->cfg.b.max_cost = d;
		return 1;
	}
	case 'b':
		f->box_name = arg;
		return 1;
	case 'i': {
		struct image_ref r;
		if (!image_ref_is_digest(arg) && image_ref_parse(arg, &r, &e) < 0) {
			cmd_error("--image: %s", e.msg);
			return -1;
		}
		f->image = arg;
		return 1;
	}
	case 'B':
		if (!box_backend_known(arg)) {
			cmd_error("--backend: \"%s\" is not a backend; use ns, vm or auto", arg);
			return -1;
		}
		f->backend = arg;
		return 1;
	case 'w':
		f->workspace = arg;
		return 1;
	case 'r':
		f->rw = true;
		return 1;
	case 'g':
		f->allow_git = true;
		return 1;
	case 'S':
		f->resume = arg;
		return 1;
	case 'c':
		if (strcmp(arg, "5m") && strcmp(arg, "1h") && strcmp(arg, "off")) {
			cmd_error("--cache-ttl: \"%s\" is not 5m, 1h or off", arg);
			return -1;
		}
		f->cfg.pcfg.cache_ttl = strcmp(arg, "off") ? arg : NULL;
		return 1;
	case 'n':
		/* --no-project-instructions, or "project_instructions": "on"|"off". */
		if (arg && strcmp(arg, "on") && strcmp(arg, "off")) {
			cmd_error("project_instructions: \"%s\" is not on or off", arg);
			return -1;
		}
		f->no_instructions = !arg || !strcmp(arg, "off");
		return 1;
	case 'W':
		if (parse_u64(arg, &v) < 0 || v < 1024 || v > 100000000) {
			cmd_error("--context-window: \"%s\" is not a number of tokens from 1024 up (e.g. 200000)", arg);
			return -1;
		}
		f->cfg.context_window = (int64_t)v;
		return 1;
	case '%':
		if (parse_u64(arg, &v) < 0 || v < 10 || v > 100) {
			cmd_error("--compact-at: \"%s\" is not a percentage of the context window from 10 to 100 (e.g. 80)",
				  arg);
			return -1;
		}
		f->cfg.compact_at = (int)v;
		return 1;
	}
	return netflag_parse(&f->net, c, arg);
}

int run_flag_given(struct run_flags *f, int c, const char *arg)
{
	int k = run_flag(f, c, arg);
	if (k <= 0)
		return k;
	if (f->ngiven == RUN_GIVEN_MAX) {
		cmd_error("more than %d flags; put the settings in a config file (see `ward config --help`)", RUN_GIVEN_MAX);
		return -1;
	}
	f->given[f->ngiven++] = (struct settings_value){ c, arg, NULL };
	return 1;
}

int run_flag_line(struct run_flags *f, int c, const char *arg, const char *field)
{
	int k = run_flag(f, c, arg);
	if (k <= 0)
		return k;
	if (f->nline == RUN_LINE_MAX) {
		cmd_error("%s: more than %d values in one task line", f->line_from ? f->line_from : "task line",
			  RUN_LINE_MAX);
		return -1;
	}
	f->line[f->nline++] = (struct settings_value){ c, arg, field };
	return 1;
}

int run_flag_named(struct run_flags *f, const struct option *opts, const char *name, const char *arg, const char *field,
		   const char *where, int (*given)(void *ud, int c, const char *arg), void *ud, struct err *e)
{
	for (const struct option *o = opts; o->name; o++) {
		if (strcmp(o->name, name))
			continue;
		if (arg == fleet_probe) {
			const struct settings_key *k = run_settings_key_of_flag(name);
			return field && (!k || k->line == NARROW_NEVER) ? -EPERM : 0;
		}
		if ((o->has_arg == required_argument) != (arg != NULL))
			return err_set(e, -EINVAL, "task field for --%s: %s", name,
				       arg ? "it is a switch: give true" : "give its value");
		/* The flag's own error line is e's message. */
		cmd_error_into(e);
		int r;
		if (!field) {
			r = given(ud, o->val, arg) < 0 ? -EINVAL : 0;
		} else {
			f->line_from = where;
			r = run_flag_line(f, o->val, arg, field) <= 0 ? -EINVAL : 0;
		}
		return cmd_error_end(e, r) < 0 ? -EINVAL : 0;
	}
	return -ENOENT;
}

const char *run_flags_model(const struct run_flags *f)
{
	if (f->model)
		return f->model;
	const struct provider *p = provider_find(f->provider ? f->provider : RUN_DEFAULT_PROVIDER);
	return p == &provider_openai		 ? RUN_DEFAULT_OPENAI_MODEL
	       : p == &provider_openai_responses ? RUN_DEFAULT_OPENAI_RESPONSES_MODEL
						 : RUN_DEFAULT_ANTHROPIC_MODEL;
}

int run_flags_finish(struct run_flags *f)
{
	int r = run_settings_apply(f, NULL);
	if (r)
		return r;
	struct turn_cfg *cfg = &f->cfg;
	const char *model = f->model;
	const char *replay = model && !strncmp(model, "replay:", 7) ? model + 7 : NULL;
	if (replay) {
		/* Read and checked now, before a session or a box is made. */
		struct err e = { 0 };
		cJSON *script = replay_load(replay, &e);
		if (!script) {
			cmd_error("--model %s: %s", model, e.msg);
			return EXIT_USAGE;
		}
		cJSON_Delete(script);
		cfg->replay_path = replay;
		cfg->pcfg.model = "replay";
	} else {
		/* run_flag checked the name. */
		cfg->provider = provider_find(f->provider ? f->provider : RUN_DEFAULT_PROVIDER);
		cfg->pcfg.model = run_flags_model(f);
		cfg->pcfg.base_url = f->base_url;
		const char *key = getenv(cfg->provider->key_env);
		if ((!key || !*key) && !f->base_url) {
			cmd_error("no API key: set %s (or give --base-url for a local server that needs none)",
				  cfg->provider->key_env);
			return EXIT_USAGE;
		}
		cfg->pcfg.api_key = key && *key ? key : NULL;
	}
	/* The network is the box's, set when it is made. */
	struct box_opts probe;
	box_opts_default(&probe);
	if (netflag_finish(&f->net, &probe) < 0)
		return EXIT_USAGE;
	if (f->box_name && f->image) {
		cmd_error("--image is for the box a run makes; box %s has its own root (see ward box info %s)", f->box_name,
			  f->box_name);
		return EXIT_USAGE;
	}
	if (f->box_name && f->backend) {
		cmd_error("--backend is for the box a run makes; box %s runs on its own (see ward box info %s)", f->box_name,
			  f->box_name);
		return EXIT_USAGE;
	}
	if (f->box_name && netflag_given(&f->net)) {
		cmd_error("--net and --allow-host are for the box a run makes; box %s has its own network (see ward "
			  "box info %s)", f->box_name, f->box_name);
		return EXIT_USAGE;
	}
	struct price pr;
	if (cfg->b.max_cost > 0 && !price_for(cfg->pcfg.model, &pr)) {
		cmd_error("--max-cost: ward does not know the prices of %s; use --max-tokens instead", cfg->pcfg.model);
		return EXIT_USAGE;
	}
	/* The context window: the flag's, the model's, or a guess said once. */
	if (!cfg->replay_path && !cfg->context_window && !window_for(cfg->pcfg.model, &cfg->context_window)) {
		cfg->context_window = WINDOW_DEFAULT;
		term_sayf(stderr, "ward: warning: ward does not know the context window of %s; assuming %d tokens (set "
			"--context-window)\n", cfg->pcfg.model, WINDOW_DEFAULT);
	}
	if (!cfg->compact_at)
		cfg->compact_at = COMPACT_AT_DEFAULT;
	cfg->system = run_system;
	cfg->gate = &f->gate;
	return 0;
}
