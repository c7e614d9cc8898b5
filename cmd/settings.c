#include "cmd/settings.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"
#include "base/parse.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "turn/window.h"
#include "net/allow.h"
#include "sandbox/box.h"
#include "turn/compact.h"
#include "turn/price.h"
#include "turn/retry.h"
#include "task/hook.h"
#include "task/prices.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/openat2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CONFIG_FILE_MAX (256u << 10)

/* One row per flag of ward run's settings groups (cmd/flagtab.c): a flag with a config key gets it
 * by adding its row here; settings_apply refuses to run while a flag has
 * none, or a ranked key has no rank. How a project's file and a task line
 * may set each key is decided here and nowhere else (tests/integration
 * config.sh walks every key of this table against a row of its own). */
#define KEY(k, letter, t, proj, ln, ...)                                                                      \
	{ .key = k, .c = letter, .type = SETTINGS_##t, .project = NARROW_##proj, .line = NARROW_##ln, __VA_ARGS__ }
static const struct settings_key keys[] = {
	/* A model no dearer than the one in force (ward's price table). */
	KEY("model", 'm', STR, RANK, RANK, .eg = "\"claude-sonnet-4-20250514\""),
	KEY("provider", 'p', STR, NEVER, NEVER,
	    .why = "this picks the API that gets your key (set it in your own file, or give --provider)", .eg = "\"openai\""),
	KEY("base_url", 'u', STR, NEVER, NEVER,
	    .why = "this would send your requests and your API key to another server (set it in your own file, "
		   "ANTHROPIC_BASE_URL or OPENAI_BASE_URL, or give --base-url)", .eg = "\"http://127.0.0.1:8080/v1\""),
	KEY("approve", 'a', STR, RANK, RANK, .why = "auto would run every call without asking", .eg = "\"ask\""),
	KEY("allow", 'A', LIST, NEVER, NEVER,
	    .why = "allow rules widen it (deny rules are taken; put allow rules in your own file, or give --allow)", .eg = "[\"bash:git status*\"]"),
	KEY("deny", 'D', LIST, ALWAYS, ALWAYS, .eg = "[\"bash:rm *\"]"),
	KEY("deadline", 'd', STR, RANK, RANK, .eg = "\"10m\""),
	KEY("max_rounds", 'R', NUM, RANK, RANK, .eg = "50"),
	KEY("max_calls", 'C', NUM, RANK, RANK, .eg = "200"),
	KEY("max_tokens", 'T', NUM, RANK, RANK, .eg = "1000000"),
	KEY("max_cost", '$', NUM, RANK, RANK, .eg = "2.5"),
	KEY("idle_timeout", 'I', STR, RANK, RANK, .eg = "\"2m\""),
	KEY("retries", 'Y', NUM, RANK, RANK, .eg = "10"),
	KEY("disk", 'K', STR, RANK, RANK, .eg = "\"10G\""),
	/* The box's root: nothing of the host, so any source may name one;
	 * the host connects to a registry only for an image that is not here,
	 * and for a project's file or a task line only to a public one. */
	KEY("image", 'i', STR, ROOT, ROOT, .eg = "\"debian:bookworm\""),
	KEY("network.mode", 'N', STR, RANK, RANK, .why = "host would open the host's whole network to the box", .eg = "\"none\""),
	KEY("network.allow_hosts", 'H', LIST, NEVER, PUBLIC,
	    .why = "this would let the box reach those hosts (put them in your own file, or give --allow-host)", .eg = "[\"pkgs.example\"]"),
	KEY("network.secrets", 'k', LIST, NEVER, NEVER,
	    .why = "this would send your credentials to those hosts (put them in your own file, or give --secret)", .eg = "[\"API_KEY@api.example.com\"]"),
	KEY("network.secret_ca", 'q', STR, NEVER, NEVER,
	    .why = "this would trust a certificate authority for the hosts your secrets go to (put it in your own "
		   "file, or give --secret-ca)", .eg = "\"/etc/ssl/private-ca.pem\""),
	KEY("network.secret_other_keys", 'V', STR, NEVER, NEVER,
	    .why = "this would let the box take its own credentials to your secrets' hosts (put it in your own "
		   "file, or give --secret-other-keys)", .eg = "\"on\""),
	KEY("network.max_bytes", 'Q', STR, RANK, RANK, .eg = "\"500M\""),
	/* A bigger window, a later compaction: bigger prompts. */
	KEY("context_window", 'W', NUM, RANK, RANK, .eg = "200000"),
	KEY("compact_at", '%', NUM, RANK, RANK, .eg = "80"),
	/* How long the provider keeps the prompt cached (1h costs more). */
	KEY("cache_ttl", 'c', STR, RANK, RANK, .eg = "\"1h\""),
	/* The repository's AGENTS.md in the prompt: on is looser than off. */
	KEY("project_instructions", 'n', STR, RANK, RANK, .eg = "\"off\""),
	/* Flags of one invocation, not settings: neither source may set them. */
	{ .c = 'b' }, { .c = 'w' }, { .c = 'r' }, { .c = 'S' }, { .c = 'g' }, { .c = 'B' },
};
#undef KEY

/* The variables the providers' own tools read; later rows win. */
static const struct {
	const char *var;
	int c;
	const char *provider;	/* only with this provider; NULL: any */
} envs[] = {
	{ "ANTHROPIC_MODEL", 'm', "anthropic" },
	{ "WARD_MODEL", 'm', NULL },
	{ "ANTHROPIC_BASE_URL", 'u', "anthropic" },
	{ "OPENAI_BASE_URL", 'u', "openai" },
	{ "OPENAI_BASE_URL", 'u', "openai-responses" },
};

const char *settings_flag_name(int c)
{
	const struct flag *f = flags_setting(c);
	return f ? f->name : "?";
}

int settings_env_at(size_t i, const char **ret_var, const char **ret_provider)
{
	if (i >= sizeof(envs) / sizeof(envs[0]))
		return -1;
	if (ret_var)
		*ret_var = envs[i].var;
	if (ret_provider)
		*ret_provider = envs[i].provider;
	return envs[i].c;
}

const struct settings_key *settings_key_at(size_t i)
{
	return i < sizeof(keys) / sizeof(keys[0]) ? &keys[i] : NULL;
}

const char *settings_source_name(enum settings_source s)
{
	static const char *const names[] = { "default", "user file", "project file", "env", "flag", "task line" };
	return names[s];
}

const struct settings_key *settings_key_by_flag(int c)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (keys[i].c == c)
			return &keys[i];
	return NULL;
}

const struct settings_key *settings_key_of_flag(const char *name)
{
	for (const struct flag_group *g = flagtab_run.groups; g < flagtab_run.groups + FLAG_GROUPS_MAX && g->flags; g++)
		for (const struct flag *f = g->flags; g->settings && f->name; f++)
			if (!strcmp(f->name, name))
				return settings_key_by_flag(f->val);
	return NULL;
}

const char *settings_default_text(const struct run_flags *f, int c, char *buf, size_t n)
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

static const struct settings_key *key_by_name(const char *section, const char *name)
{
	size_t sl = section ? strlen(section) : 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *k = keys[i].key;
		if (!k)
			continue;
		if (section ? (!strncmp(k, section, sl) && k[sl] == '.' && !strcmp(k + sl + 1, name))
			    : !strcmp(k, name))
			return &keys[i];
	}
	return NULL;
}

static bool is_section(const char *name)
{
	size_t l = strlen(name);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (keys[i].key && !strncmp(keys[i].key, name, l) && keys[i].key[l] == '.')
			return true;
	return false;
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
 * loosest, or not comparable (a model ward has no prices for). */
static int looser(const struct run_flags *now, const struct run_flags *then, int c)
{
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
	return is >= loosest(c) ? 2 : is > was;
}

/* Positions in a file's text, for the messages. The text is valid JSON
 * (cJSON parsed it), and a cJSON object's members are in the text's order,
 * so the i-th member of an object is found by skipping i values. */
static const char *pos_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *pos_str_end(const char *p)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

static const char *pos_value_end(const char *p)
{
	if (*p == '"')
		return pos_str_end(p);
	if (*p == '{' || *p == '[') {
		int depth = 0;
		do {
			if (*p == '"') {
				p = pos_str_end(p);
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if (*p == '}' || *p == ']')
				depth--;
			p++;
		} while (depth > 0 && *p);
		return p;
	}
	while (*p && !strchr(",}] \t\r\n", *p))
		p++;
	return p;
}

/* The i-th member of the object at p: its key's position, and its value's. */
static void pos_member(const char *p, int i, const char **ret_key, const char **ret_val)
{
	p = pos_ws(p + 1);
	for (int k = 0;; k++) {
		const char *kp = p;
		p = pos_ws(pos_str_end(p));
		p = pos_ws(p + (*p == ':'));
		if (k == i || !*p) {
			*ret_key = kp;
			*ret_val = p;
			return;
		}
		p = pos_ws(pos_value_end(p));
		p = pos_ws(p + (*p == ','));
	}
}

static const char *pos_element(const char *p, int i)
{
	p = pos_ws(p + 1);
	for (int k = 0; k < i && *p; k++) {
		p = pos_ws(pos_value_end(p));
		p = pos_ws(p + (*p == ','));
	}
	return p;
}

/* One source of settings being applied. */
struct layer {
	enum settings_source src;
	const char *from;	/* the file; NULL for the environment and the flags */
	const char *text;	/* a file's text */
	bool net;		/* it set the network: what lower sources said is replaced */
	struct settings_report *rep;
};

/* "FILE:LINE:COL: " (columns in characters) into buf. */
static const char *where(char *buf, size_t n, const struct layer *L, const char *at)
{
	size_t line, col;
	parse_line_col(L->text, SIZE_MAX, at > L->text ? (size_t)(at - L->text) : 0, &line, &col);
	snprintf(buf, n, "%s:%zu:%zu: ", L->from, line, col);
	return buf;
}

/* The value in force for c, and where it came from, for a message. */
static void in_force(const struct run_flags *g, const struct settings_report *rep, int c, char *buf, size_t n)
{
	for (size_t i = rep->n; i-- > 0;) {
		const struct settings_applied *a = &rep->applied[i];
		if (a->c == c && !a->replaced) {
			snprintf(buf, n, "%s, from %s%s%s", a->value, a->src == SETTINGS_FLAG ? "" : settings_source_name(a->src),
				 a->src == SETTINGS_FLAG ? "--" : " ", a->from);
			return;
		}
	}
	char d[200];
	snprintf(buf, n, "%s, the default", settings_default_text(g, c, d, sizeof(d)));
}

static void record(struct settings_report *rep, int c, const char *value, const struct layer *L)
{
	/* A switch has no value: --no-project-instructions is off. */
	if (!value)
		value = c == 'n' ? "off" : "true";
	if (rep->n < SETTINGS_APPLIED_MAX)
		rep->applied[rep->n++] = (struct settings_applied){ c, value, L->src, L->from };
}

/* Sources that may only narrow what the user allows, and the rule each
 * key has for them. */
static bool narrowing(const struct layer *L)
{
	return L->src == SETTINGS_PROJECT || L->src == SETTINGS_LINE;
}

static const char *who(const struct layer *L)
{
	return L->src == SETTINGS_PROJECT ? "a project's file" : "a task line";
}

/* A task line's allow_hosts rule: added to the hosts in force, never one
 * that names an address that is not public (the proxy's own check), and
 * not where a network mode is in force (none would be widened; host has no
 * list). 0 to add it, 1 ignored (a warning said why), or EXIT_USAGE after
 * an error line. A rule that does not parse is left to run_flag to say. */
static int line_host(const struct run_flags *g, const char *value, const struct layer *L, const char *ctx)
{
	struct net_allow_rule rule;
	struct err e = { 0 };
	if (net_allow_parse(value, &rule, &e) < 0)
		return 0;
	struct net_addr_own *own = NULL;
	if (net_addr_own_new(&own) < 0)
		own = NULL;	/* by range alone, then */
	enum net_addr_class c = net_allow_rule_class(&rule, own);
	net_addr_own_free(own);
	if (c != NET_ADDR_PUBLIC) {
		cmd_error("%s%s names %s: a task line may allow only public hosts (a rule that pins or names a "
			  "loopback, private, link-local or metadata address is the command line's, or needs "
			  "--trust-task-file)", ctx, value, net_addr_class_name(c));
		return EXIT_USAGE;
	}
	if (g->net.net_set) {
		char was[600];
		in_force(g, L->rep, 'N', was, sizeof(was));
		cmd_error("warning: %s%s ignored: a task line may only narrow the network, and a network mode is in "
			  "force (%s)", ctx, value, was);
		return 1;
	}
	return 0;
}

/* Apply one value of key k from layer L (ctx: "FILE:L:C: key: " or NULL).
 * From a source that may only narrow, a ranked key is applied to a copy
 * first, and kept only if it is no looser than what is in force. */
static int apply(struct run_flags *g, const struct settings_key *k, const char *value, struct layer *L, const char *ctx)
{
	enum settings_narrow rule = !narrowing(L) ? NARROW_ALWAYS : L->src == SETTINGS_PROJECT ? k->project : k->line;
	if (rule == NARROW_NEVER) {
		/* (member says so for a project's file, fleet.c for a task line.) */
		cmd_error("%s%s: %s may not set this", ctx ? ctx : "", value ? value : "", who(L));
		return EXIT_USAGE;
	}
	if (rule == NARROW_PUBLIC) {
		int r = line_host(g, value, L, ctx);
		if (r)
			return r == 1 ? 0 : r;
	}
	bool ranked = rule == NARROW_RANK;
	_cleanup_free_ struct run_flags *copy = NULL;
	struct run_flags *t = g;
	if (ranked) {
		copy = malloc(sizeof(*copy));
		if (!copy) {
			cmd_error("out of memory");
			return EXIT_FAIL;
		}
		*copy = *g;
		t = copy;
	}
	/* A source's first network setting replaces the network settings of
	 * the sources below it: --net none on the command line is not in
	 * conflict with the hosts of a file, it replaces them. A task line's
	 * hosts are added to them instead. */
	bool net = (k->c == 'N' || k->c == 'H') && !L->net && rule != NARROW_PUBLIC;
	if (net)
		netflag_reset(&t->net);
	cmd_error_context(ctx);
	int r = run_flag(t, k->c, value);
	cmd_error_context(NULL);
	if (r < 0)
		return EXIT_USAGE;
	if (k->c == 'i')
		t->image_untrusted = rule == NARROW_ROOT;
	if (ranked) {
		int loose = looser(g, t, k->c);
		if (loose == 2 && k->c == 'm') {
			cmd_error("warning: %s%s ignored: %s may pick a model no dearer than the one in force (%s), and ward "
				  "does not know the prices of both", ctx, value, who(L), run_flags_model(g));
			return 0;
		}
		if (loose == 2) {
			cmd_error("warning: %s%s ignored: %s may only narrow what you allow, and %s", ctx, value, who(L),
				  k->why ? k->why : "this is the loosest value");
			return 0;
		}
		if (loose) {
			char was[600];
			in_force(g, L->rep, k->c, was, sizeof(was));
			cmd_error("warning: %s%s ignored: %s may only tighten it, and this is looser than what is in force "
				  "(%s)", ctx, value ? value : "true", who(L), was);
			return 0;
		}
		*g = *t;
	}
	if (net) {
		L->net = true;
		for (size_t i = 0; i < L->rep->n; i++)
			if (L->rep->applied[i].c == 'N' || L->rep->applied[i].c == 'H')
				L->rep->applied[i].replaced = true;
	}
	record(L->rep, k->c, value, L);
	return 0;
}

/* A string value a flag could take: no NUL (JSON's \u0000) and no control
 * character, which would reach the terminal and the journal. */
static bool value_ok(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < ' ' || *p == 0x7f)
			return false;
	return true;
}

/* Keep a number's text for as long as the settings live. */
static const char *num_text(double d)
{
	static char *kept[SETTINGS_APPLIED_MAX];
	static size_t n;
	char buf[64];
	snprintf(buf, sizeof(buf), "%.15g", d);
	if (n == SETTINGS_APPLIED_MAX)
		return NULL;
	kept[n] = strdup(buf);
	return kept[n] ? kept[n++] : NULL;
}

static const cJSON *settings_hooks_conf;
static const char *settings_hooks_from;
static char settings_hooks_path[PATH_MAX];	/* the file's, kept past the report it came from */

const cJSON *settings_hooks(const char **ret_from)
{
	if (ret_from)
		*ret_from = settings_hooks_from;
	return settings_hooks_conf;
}

static const cJSON *settings_mcp_conf;
static char settings_mcp_path[PATH_MAX];

const cJSON *settings_mcp(const char **ret_from)
{
	if (ret_from)
		*ret_from = settings_mcp_path;
	return settings_mcp_conf;
}

static int member(struct run_flags *g, const char *section, const cJSON *parent, const cJSON *item, int idx,
		  const char *ppos, struct layer *L)
{
	char ctx[PATH_MAX + 200], kname[200];
	const char *kpos, *vpos;
	pos_member(ppos, idx, &kpos, &vpos);
	snprintf(kname, sizeof(kname), "%s%s%s", section ? section : "", section ? "." : "", item->string);
	if (!section && !strcmp(item->string, "hooks")) {
		/* Hooks run on the host as the user: a repository's file that
		 * could add one would run its code on checkout. */
		if (L->src == SETTINGS_PROJECT) {
			cmd_error("warning: %s\"hooks\" ignored: hooks run on your machine as you, so only your own "
				  "file may set them (move them to your user config file)",
				  where(ctx, sizeof(ctx), L, kpos));
			return 0;
		}
		settings_hooks_conf = item;
		snprintf(settings_hooks_path, sizeof(settings_hooks_path), "%s", L->from ? L->from : "config");
		settings_hooks_from = settings_hooks_path;
		return 0;
	}
	if (!section && !strcmp(item->string, "prices")) {
		/* A repository that could price a model at nothing would lift
		 * --max-cost and the no-dearer rule of its own file. */
		if (L->src == SETTINGS_PROJECT) {
			cmd_error("warning: %s\"prices\" ignored: only your own file may give prices",
				  where(ctx, sizeof(ctx), L, kpos));
			return 0;
		}
		struct err e = { 0 };
		if (prices_load(item, where(ctx, sizeof(ctx), L, kpos), &e) < 0) {
			cmd_error("%s", e.msg);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (!section && !strcmp(item->string, "mcpServers")) {
		if (L->src == SETTINGS_PROJECT) {
			cmd_error("warning: %s\"mcpServers\" ignored: a project's MCP servers belong in its .mcp.json, "
				  "which runs only once you trust it", where(ctx, sizeof(ctx), L, kpos));
			return 0;
		}
		settings_mcp_conf = item;
		snprintf(settings_mcp_path, sizeof(settings_mcp_path), "%s", L->from ? L->from : "config");
		return 0;
	}
	if (!section && is_section(item->string)) {
		if (!cJSON_IsObject(item)) {
			cmd_error("%s\"%s\" must be an object, e.g. {\"mode\": \"none\"}", where(ctx, sizeof(ctx), L, vpos),
				  kname);
			return EXIT_USAGE;
		}
		int i = 0;
		for (const cJSON *m = item->child; m; m = m->next, i++) {
			int r = member(g, item->string, item, m, i, vpos, L);
			if (r)
				return r;
		}
		return 0;
	}
	const struct settings_key *k = key_by_name(section, item->string);
	if (!k) {
		_cleanup_free_ char *safe = utf8_term_safe(kname, strnlen(kname, 60));
		cmd_error("warning: %sunknown key \"%s\" ignored (this ward's keys: see `ward config --help`)",
			  where(ctx, sizeof(ctx), L, kpos), safe ? safe : "?");
		return 0;
	}
	if (L->src == SETTINGS_PROJECT && k->project == NARROW_NEVER) {
		cmd_error("warning: %s\"%s\" ignored: a project's file may only narrow what you allow, and %s",
			  where(ctx, sizeof(ctx), L, kpos), k->key, k->why);
		return 0;
	}
	/* The values, each with its position. */
	bool list = k->type == SETTINGS_LIST;
	if (list ? !cJSON_IsArray(item) : k->type == SETTINGS_NUM ? !cJSON_IsNumber(item) : !cJSON_IsString(item)) {
		cmd_error("%s\"%s\" must be %s, e.g. %s", where(ctx, sizeof(ctx), L, vpos), k->key,
			  list ? "an array of strings" : k->type == SETTINGS_NUM ? "a number" : "a string", k->eg);
		return EXIT_USAGE;
	}
	int i = 0;
	for (const cJSON *v = list ? item->child : item; v; v = list ? v->next : NULL, i++) {
		const char *at = list ? pos_element(vpos, i) : vpos;
		where(ctx, sizeof(ctx), L, at);
		if (list && !cJSON_IsString(v)) {
			cmd_error("%s\"%s\" must be an array of strings, e.g. %s", ctx, k->key, k->eg);
			return EXIT_USAGE;
		}
		const char *s = cJSON_IsNumber(v) ? num_text(v->valuedouble) : v->valuestring;
		if (!s || !value_ok(s)) {
			cmd_error("%s\"%s\": a control character in the value", ctx, k->key);
			return EXIT_USAGE;
		}
		if (L->src == SETTINGS_PROJECT && k->c == 'm' && !strncmp(s, "replay:", 7)) {
			cmd_error("warning: %s\"model\" ignored: a project's file may pick a model, not a script that "
				  "plays one", ctx);
			return 0;
		}
		size_t cl = strlen(ctx);
		snprintf(ctx + cl, sizeof(ctx) - cl, "\"%s\": ", k->key);
		int r = apply(g, k, s, L, ctx);
		if (r)
			return r;
	}
	return 0;
}

/* Read a file: 0 with *ret_text, 1 when there is none, or EXIT_USAGE after
 * an error line. The project's is reached with no symlink on the way. */
static int file_read(const char *path, int wsfd, bool project, char **ret_text)
{
	int fd;
	if (project) {
		fd = fdio_open_beneath(wsfd, ".ward/config.json");
		if (fd < 0)
			errno = -fd;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	}
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return 1;
	if (fd < 0 && errno == ELOOP) {
		cmd_error("%s: a symbolic link on the way; a project's file must be a file of the project itself", path);
		return EXIT_USAGE;
	}
	if (fd < 0) {
		cmd_error("%s: %s", path, strerror(errno));
		return EXIT_USAGE;
	}
	_cleanup_close_ int cfd = fd;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)CONFIG_FILE_MAX) {
		cmd_error("%s: not a regular file of at most %u KiB", path, CONFIG_FILE_MAX >> 10);
		return EXIT_USAGE;
	}
	size_t n = (size_t)st.st_size;
	_cleanup_free_ char *text = malloc(n + 1);
	if (!text || fdio_read_full(fd, text, n) < 0) {
		cmd_error("%s: cannot read it whole", path);
		return EXIT_USAGE;
	}
	text[n] = 0;
	if (parse_json_has_nul(text, n)) {
		cmd_error("%s: a NUL character in the file; remove it", path);
		return EXIT_USAGE;
	}
	*ret_text = TAKE_PTR(text);
	return 0;
}

/* A file's text and parse, kept for as long as the settings live: they
 * point into them. */
static struct {
	char *text;
	cJSON *doc;
} kept[8];
static size_t nkept;

/* One file's settings onto g. */
static int file_apply(struct run_flags *g, const char *path, int wsfd, struct layer *L, bool *found)
{
	char *text = NULL;
	int r = file_read(path, wsfd, L->src == SETTINGS_PROJECT, &text);
	*found = r == 0;
	if (r)
		return r == 1 ? 0 : r;
	if (nkept == sizeof(kept) / sizeof(kept[0])) {
		free(text);
		cmd_error("internal: config files read too often");
		return EXIT_FAIL;
	}
	L->from = path;
	L->text = kept[nkept].text = text;
	char ctx[PATH_MAX + 64];
	/* One strict reading (base/jsonstrict.h): a key given twice would be
	 * one setting to ward and another to the user's tools. A byte-order
	 * mark, which editors write, is passed over. */
	size_t bom = !strncmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
	struct err pe = { 0 };
	cJSON *doc = NULL;
	if (jsonstrict_parse(text + bom, strlen(text + bom), &doc, &pe) < 0) {
		cmd_error("%s: not valid JSON: %s; fix the file (or move it away)", path, pe.msg);
		return EXIT_USAGE;
	}
	kept[nkept++].doc = doc;
	const char *root = pos_ws(text + bom);
	if (!cJSON_IsObject(doc)) {
		cmd_error("%sthe file must hold one JSON object, e.g. {\"model\": \"claude-sonnet-4-20250514\"}",
			  where(ctx, sizeof(ctx), L, root));
		return EXIT_USAGE;
	}
	int i = 0;
	for (const cJSON *m = doc->child; m; m = m->next, i++) {
		r = member(g, NULL, doc, m, i, root, L);
		if (r)
			return r;
	}
	/* Within one file, --net and --allow-host contradict as on a command line. */
	struct box_opts probe;
	box_opts_default(&probe);
	cmd_error_context(where(ctx, sizeof(ctx), L, root));
	r = netflag_finish(&g->net, &probe);
	cmd_error_context(NULL);
	return r < 0 ? EXIT_USAGE : 0;
}

/* $XDG_CONFIG_HOME/ward/config.json, or ~/.config/ward/config.json. */
static bool user_path(char *buf, size_t n)
{
	const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	int k;
	if (x && x[0] == '/')	/* a relative one is to be ignored (XDG Base Directory) */
		k = snprintf(buf, n, "%s/ward/config.json", x);
	else if (home && home[0] == '/')
		k = snprintf(buf, n, "%s/.config/ward/config.json", home);
	else
		return false;
	return k > 0 && (size_t)k < n;
}

int settings_apply(struct run_flags *f, struct settings_report *rep)
{
	for (const struct flag_group *fg = flagtab_run.groups; fg < flagtab_run.groups + FLAG_GROUPS_MAX && fg->flags; fg++)
		for (const struct flag *o = fg->flags; fg->settings && o->name; o++)
			if (!settings_key_by_flag(o->val)) {
				cmd_error("internal: --%s has no row in the table of cmd/settings.c", o->name);
				return EXIT_FAIL;
			}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct settings_key *k = &keys[i];
		if ((k->project == NARROW_RANK || k->line == NARROW_RANK) && k->c != 'm' && isnan(rank(f, k->c))) {
			cmd_error("internal: --%s is ranked but has no rank in cmd/settings.c", settings_flag_name(k->c));
			return EXIT_FAIL;
		}
	}
	_cleanup_free_ struct settings_report *own = NULL;
	if (!rep)
		rep = own = malloc(sizeof(*own));
	_cleanup_free_ struct run_flags *g = malloc(sizeof(*g));
	if (!rep || !g) {
		cmd_error("out of memory");
		return EXIT_FAIL;
	}
	rep->n = 0;
	rep->user[0] = rep->project[0] = 0;
	rep->user_found = rep->project_found = false;
	settings_hooks_conf = NULL;
	settings_mcp_conf = NULL;
	run_flags_init(g, f->mode_default);

	/* The user's file. */
	struct layer L = { .src = SETTINGS_USER, .rep = rep };
	if (user_path(rep->user, sizeof(rep->user))) {
		int r = file_apply(g, rep->user, -1, &L, &rep->user_found);
		if (r)
			return r;
	}

	/* The project's: in the workspace the flags name, or here. */
	const char *ws = f->workspace ? f->workspace : ".";
	_cleanup_close_ int wsfd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (wsfd >= 0) {
		char abs[PATH_MAX];
		snprintf(rep->project, sizeof(rep->project), "%s/.ward/config.json", realpath(ws, abs) ? abs : ws);
		L = (struct layer){ .src = SETTINGS_PROJECT, .rep = rep };
		int r = file_apply(g, rep->project, wsfd, &L, &rep->project_found);
		if (r)
			return r;
	}

	/* The environment: which base URL depends on the provider in force. */
	const char *provider = f->provider ? f->provider : g->provider ? g->provider : RUN_DEFAULT_PROVIDER;
	L = (struct layer){ .src = SETTINGS_ENV, .rep = rep };
	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
		const char *v = getenv(envs[i].var);
		if (!v || !*v || (envs[i].provider && strcmp(envs[i].provider, provider)))
			continue;
		char ctx[100];
		snprintf(ctx, sizeof(ctx), "env %s: ", envs[i].var);
		L.from = envs[i].var;
		int r = apply(g, settings_key_by_flag(envs[i].c), v, &L, ctx);
		if (r)
			return r;
	}

	/* The flags, last. */
	L = (struct layer){ .src = SETTINGS_FLAG, .rep = rep };
	for (size_t i = 0; i < f->ngiven; i++) {
		const struct run_given *a = &f->given[i];
		L.from = settings_flag_name(a->c);
		int r = apply(g, settings_key_by_flag(a->c), a->arg, &L, NULL);
		if (r)
			return r;
	}
	/* A task line's fields, after the flags: each only narrows them. */
	L = (struct layer){ .src = SETTINGS_LINE, .rep = rep, .from = f->line_from };
	for (size_t i = 0; i < f->nline; i++) {
		const struct run_given *a = &f->line[i];
		char ctx[PATH_MAX + 100];
		snprintf(ctx, sizeof(ctx), "%s: \"%s\": ", f->line_from ? f->line_from : "task line", a->field);
		int r = apply(g, settings_key_by_flag(a->c), a->arg, &L, ctx);
		if (r)
			return r;
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

int settings_hooks_install(struct turn_cfg *cfg, const int64_t *deadline_ms, struct hooks **ret)
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
