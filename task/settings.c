#include "task/settings.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"
#include "base/parse.h"
#include "base/utf8.h"
#include "net/allow.h"
#include "task/prices.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CONFIG_FILE_MAX (256u << 10)

/* One row per flag of ward run's settings groups (cmd/flagtab.c): a flag with a config key gets it
 * by adding its row here; settings_apply refuses to run while a ranked key
 * has no rank, and ward run while a flag has no row (cmd/run-settings.c). How a project's file and a task line
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
	const struct settings_in *in;
	const struct settings_target *ops;
	struct settings_store *store;
	struct err *e;
};

static void warn(const struct layer *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(const struct layer *L, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	note_say(&L->in->note, "warning: %s", n >= 0 ? s : "(out of memory)");
	free(s);
}

/* e (the target's line about a value) after ctx ("FILE:L:C: key: "). */
static int wrap(struct err *e, const char *ctx)
{
	size_t n = ctx ? strlen(ctx) : 0;
	while (n && (ctx[n - 1] == ' ' || ctx[n - 1] == ':'))
		n--;
	return n ? err_wrap(e, "%.*s", (int)n, ctx) : e->code;
}

/* "FILE:LINE:COL: " (columns in characters) into buf. */
static const char *where(char *buf, size_t n, const struct layer *L, const char *at)
{
	size_t line, col;
	parse_line_col(L->text, SIZE_MAX, at > L->text ? (size_t)(at - L->text) : 0, &line, &col);
	snprintf(buf, n, "%s:%zu:%zu: ", L->from, line, col);
	return buf;
}

/* The value in force for c, and where it came from, for a message. */
static void in_force(const struct layer *L, const void *g, int c, char *buf, size_t n)
{
	const struct settings_report *rep = L->rep;
	for (size_t i = rep->n; i-- > 0;) {
		const struct settings_applied *a = &rep->applied[i];
		if (a->c == c && !a->replaced) {
			snprintf(buf, n, "%s, from %s%s%s", a->value, a->src == SETTINGS_FLAG ? "" : settings_source_name(a->src),
				 a->src == SETTINGS_FLAG ? "--" : " ", a->from);
			return;
		}
	}
	char d[200];
	snprintf(buf, n, "%s, the default", L->ops->default_text(g, c, d, sizeof(d)));
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
 * list). 0 to add it, 1 ignored (a warning said why), or -errno with e. A
 * rule that does not parse is left to the target to say. */
static int line_host(const void *g, const char *value, const struct layer *L, const char *ctx)
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
	if (c != NET_ADDR_PUBLIC)
		return err_set(L->e, -EPERM, "%s%s names %s: a task line may allow only public hosts (a rule that pins "
			       "or names a loopback, private, link-local or metadata address is the command line's, or "
			       "needs --trust-task-file)", ctx, value, net_addr_class_name(c));
	if (L->ops->net_mode_set(g)) {
		char was[600];
		in_force(L, g, 'N', was, sizeof(was));
		warn(L, "%s%s ignored: a task line may only narrow the network, and a network mode is in force (%s)",
		     ctx, value, was);
		return 1;
	}
	return 0;
}

/* Apply one value of key k from layer L (ctx: "FILE:L:C: key: " or NULL).
 * From a source that may only narrow, a ranked key is applied to a copy
 * first, and kept only if it is no looser than what is in force. 0, or
 * -errno with L->e. */
static int apply(void *g, const struct settings_key *k, const char *value, struct layer *L, const char *ctx)
{
	const struct settings_target *ops = L->ops;
	enum settings_narrow rule = !narrowing(L) ? NARROW_ALWAYS : L->src == SETTINGS_PROJECT ? k->project : k->line;
	if (rule == NARROW_NEVER)	/* (member says so for a project's file, fleet.c for a task line.) */
		return err_set(L->e, -EPERM, "%s%s: %s may not set this", ctx ? ctx : "", value ? value : "", who(L));
	if (rule == NARROW_PUBLIC) {
		int r = line_host(g, value, L, ctx);
		if (r)
			return r == 1 ? 0 : r;
	}
	bool ranked = rule == NARROW_RANK;
	_cleanup_free_ void *copy = NULL;
	void *t = g;
	if (ranked) {
		copy = malloc(ops->size);
		if (!copy)
			return err_set(L->e, -ENOMEM, "out of memory");
		memcpy(copy, g, ops->size);
		t = copy;
	}
	/* A source's first network setting replaces the network settings of
	 * the sources below it: --net none on the command line is not in
	 * conflict with the hosts of a file, it replaces them. A task line's
	 * hosts are added to them instead. */
	bool net = (k->c == 'N' || k->c == 'H') && !L->net && rule != NARROW_PUBLIC;
	if (net)
		ops->net_reset(t);
	int r = ops->apply(t, k, value, rule, L->e);
	if (r < 0)
		return wrap(L->e, ctx);
	if (ranked) {
		int loose = ops->looser(g, t, k->c);
		if (loose == 2 && k->c == 'm') {
			char was[200];
			warn(L, "%s%s ignored: %s may pick a model no dearer than the one in force (%s), and ward does not "
			     "know the prices of both", ctx, value, who(L), ops->default_text(g, 'm', was, sizeof(was)));
			return 0;
		}
		if (loose == 2) {
			warn(L, "%s%s ignored: %s may only narrow what you allow, and %s", ctx, value, who(L),
			     k->why ? k->why : "this is the loosest value");
			return 0;
		}
		if (loose) {
			char was[600];
			in_force(L, g, k->c, was, sizeof(was));
			warn(L, "%s%s ignored: %s may only tighten it, and this is looser than what is in force (%s)", ctx,
			     value ? value : "true", who(L), was);
			return 0;
		}
		memcpy(g, t, ops->size);
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

/* What the values applied point into. */
struct settings_store {
	void **held;	/* texts (free) and, marked by the low bit, parses (cJSON_Delete) */
	size_t n, cap;
};

/* The store of settings_apply's callers that give none: the process's. */
static struct settings_store process_store;

struct settings_store *settings_store_new(void)
{
	return calloc(1, sizeof(struct settings_store));
}

void settings_store_free(struct settings_store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		if ((uintptr_t)st->held[i] & 1)
			cJSON_Delete((cJSON *)((uintptr_t)st->held[i] & ~(uintptr_t)1));
		else
			free(st->held[i]);
	free(st->held);
	free(st);
}

/* p (malloc's, or a parse when doc) held by st: 0, or -ENOMEM with p
 * freed. */
static int hold(struct settings_store *st, void *p, bool doc)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 16;
		void **grown = realloc(st->held, cap * sizeof(*grown));
		if (!grown) {
			if (doc)
				cJSON_Delete(p);
			else
				free(p);
			return -ENOMEM;
		}
		st->held = grown;
		st->cap = cap;
	}
	st->held[st->n++] = doc ? (void *)((uintptr_t)p | 1) : p;
	return 0;
}

/* A number's text, held for as long as the values live. */
static const char *num_text(struct settings_store *st, double d)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%.15g", d);
	char *t = strdup(buf);
	return t && hold(st, t, false) == 0 ? t : NULL;
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

static int member(void *g, const char *section, const cJSON *parent, const cJSON *item, int idx,
		  const char *ppos, struct layer *L)
{
	char ctx[PATH_MAX + 200], kname[200];
	const char *kpos, *vpos;
	pos_member(ppos, idx, &kpos, &vpos);
	snprintf(kname, sizeof(kname), "%s%s%s", section ? section : "", section ? "." : "", item->string);
	/* Objects only the user's own file may hold: hooks run on the host
	 * as the user (a repository's file that could add one would run its
	 * code on checkout); a repository that could price a model at nothing
	 * would lift --max-cost and the no-dearer rule of its own file; a
	 * project's MCP servers belong in its .mcp.json, which runs only once
	 * the person trusts it. */
	enum { OWN_HOOKS, OWN_PRICES, OWN_MCP };
	static const struct {
		int kind;
		const char *name, *why;
	} own[] = {
		{ OWN_HOOKS, "hooks", "hooks run on your machine as you, so only your own file may set them (move them to your "
			   "user config file)" },
		{ OWN_PRICES, "prices", "only your own file may give prices" },
		{ OWN_MCP, "mcpServers", "a project's MCP servers belong in its .mcp.json, which runs only once you trust it" },
	};
	for (size_t i = 0; !section && i < sizeof(own) / sizeof(own[0]); i++) {
		if (strcmp(item->string, own[i].name))
			continue;
		if (L->src == SETTINGS_PROJECT) {
			warn(L, "%s\"%s\" ignored: %s", where(ctx, sizeof(ctx), L, kpos), own[i].name, own[i].why);
			return 0;
		}
		const char *from = L->from ? L->from : "config";
		if (own[i].kind == OWN_HOOKS) {
			settings_hooks_conf = item;
			snprintf(settings_hooks_path, sizeof(settings_hooks_path), "%s", from);
			settings_hooks_from = settings_hooks_path;
		} else if (own[i].kind == OWN_PRICES) {
			return prices_load(item, where(ctx, sizeof(ctx), L, kpos), L->e);
		} else {
			settings_mcp_conf = item;
			snprintf(settings_mcp_path, sizeof(settings_mcp_path), "%s", from);
		}
		return 0;
	}
	if (!section && is_section(item->string)) {
		if (!cJSON_IsObject(item))
			return err_set(L->e, -EINVAL, "%s\"%s\" must be an object, e.g. {\"mode\": \"none\"}",
				       where(ctx, sizeof(ctx), L, vpos), kname);
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
		warn(L, "%sunknown key \"%s\" ignored (this ward's keys: see `ward config --help`)",
		     where(ctx, sizeof(ctx), L, kpos), safe ? safe : "?");
		return 0;
	}
	if (L->src == SETTINGS_PROJECT && k->project == NARROW_NEVER) {
		warn(L, "%s\"%s\" ignored: a project's file may only narrow what you allow, and %s",
		     where(ctx, sizeof(ctx), L, kpos), k->key, k->why);
		return 0;
	}
	/* The values, each with its position. */
	bool list = k->type == SETTINGS_LIST;
	if (list ? !cJSON_IsArray(item) : k->type == SETTINGS_NUM ? !cJSON_IsNumber(item) : !cJSON_IsString(item))
		return err_set(L->e, -EINVAL, "%s\"%s\" must be %s, e.g. %s", where(ctx, sizeof(ctx), L, vpos), k->key,
			       list ? "an array of strings" : k->type == SETTINGS_NUM ? "a number" : "a string", k->eg);
	int i = 0;
	for (const cJSON *v = list ? item->child : item; v; v = list ? v->next : NULL, i++) {
		const char *at = list ? pos_element(vpos, i) : vpos;
		where(ctx, sizeof(ctx), L, at);
		if (list && !cJSON_IsString(v))
			return err_set(L->e, -EINVAL, "%s\"%s\" must be an array of strings, e.g. %s", ctx, k->key, k->eg);
		const char *s = cJSON_IsNumber(v) ? num_text(L->store, v->valuedouble) : v->valuestring;
		if (!s)
			return err_set(L->e, -ENOMEM, "out of memory");
		if (!value_ok(s))
			return err_set(L->e, -EINVAL, "%s\"%s\": a control character in the value", ctx, k->key);
		if (L->src == SETTINGS_PROJECT && k->c == 'm' && !strncmp(s, "replay:", 7)) {
			warn(L, "%s\"model\" ignored: a project's file may pick a model, not a script that plays one", ctx);
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

/* Read a file: 0 with *ret_text, 1 when there is none, or -errno with e.
 * The project's is reached with no symlink on the way. */
static int file_read(const char *path, int wsfd, bool project, char **ret_text, struct err *e)
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
	if (fd < 0 && errno == ELOOP)
		return err_set(e, -ELOOP, "%s: a symbolic link on the way; a project's file must be a file of the project "
			       "itself", path);
	if (fd < 0)
		return err_setc(e, -errno, "%s", path);
	_cleanup_close_ int cfd = fd;
	struct stat st;
	if (fstat(cfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)CONFIG_FILE_MAX)
		return err_set(e, -EINVAL, "%s: not a regular file of at most %u KiB", path, CONFIG_FILE_MAX >> 10);
	size_t n = (size_t)st.st_size;
	_cleanup_free_ char *text = malloc(n + 1);
	if (!text)
		return err_set(e, -ENOMEM, "out of memory");
	if (fdio_read_full(cfd, text, n) < 0)
		return err_set(e, -EIO, "%s: cannot read it whole", path);
	text[n] = 0;
	if (parse_json_has_nul(text, n))
		return err_set(e, -EINVAL, "%s: a NUL character in the file; remove it", path);
	*ret_text = TAKE_PTR(text);
	return 0;
}

/* One file's settings onto g. */
static int file_apply(void *g, const char *path, int wsfd, struct layer *L, bool *found)
{
	char *text = NULL;
	int r = file_read(path, wsfd, L->src == SETTINGS_PROJECT, &text, L->e);
	*found = r == 0;
	if (r)
		return r == 1 ? 0 : r;
	/* The file's text and parse are held as long as the values: they
	 * point into them. */
	if (hold(L->store, text, false) < 0)
		return err_set(L->e, -ENOMEM, "out of memory");
	L->from = path;
	L->text = text;
	char ctx[PATH_MAX + 64];
	/* One strict reading (base/jsonstrict.h): a key given twice would be
	 * one setting to ward and another to the user's tools. A byte-order
	 * mark, which editors write, is passed over. */
	size_t bom = !strncmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
	struct err pe = { 0 };
	cJSON *doc = NULL;
	if (jsonstrict_parse(text + bom, strlen(text + bom), &doc, &pe) < 0)
		return err_set(L->e, pe.code == -ENOMEM ? -ENOMEM : -EINVAL, "%s: not valid JSON: %s; fix the file (or move "
			       "it away)", path, pe.msg);
	if (hold(L->store, doc, true) < 0)
		return err_set(L->e, -ENOMEM, "out of memory");
	const char *root = pos_ws(text + bom);
	if (!cJSON_IsObject(doc))
		return err_set(L->e, -EINVAL, "%sthe file must hold one JSON object, e.g. {\"model\": "
			       "\"claude-sonnet-4-20250514\"}", where(ctx, sizeof(ctx), L, root));
	int i = 0;
	for (const cJSON *m = doc->child; m; m = m->next, i++) {
		r = member(g, NULL, doc, m, i, root, L);
		if (r)
			return r;
	}
	/* Within one file, --net and --allow-host contradict as on a command line. */
	if (L->ops->net_finish(g, L->e) < 0)
		return wrap(L->e, where(ctx, sizeof(ctx), L, root));
	return 0;
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

int settings_apply(const struct settings_in *in, const struct settings_target *ops, void *g,
		   struct settings_report *rep, struct err *e)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct settings_key *k = &keys[i];
		if ((k->project == NARROW_RANK || k->line == NARROW_RANK) && k->c != 'm' && ops->looser(g, g, k->c) < 0)
			return err_set(e, -ENOTRECOVERABLE, "internal: the setting of flag '%c' is ranked but has no rank",
				       k->c);
	}
	_cleanup_free_ struct settings_report *own = NULL;
	if (!rep)
		rep = own = malloc(sizeof(*own));
	if (!rep)
		return err_set(e, -ENOMEM, "out of memory");
	rep->n = 0;
	rep->user[0] = rep->project[0] = 0;
	rep->user_found = rep->project_found = false;
	settings_hooks_conf = NULL;
	settings_mcp_conf = NULL;
	struct settings_store *store = in->store ? in->store : &process_store;

	/* The user's file. */
	struct layer L = { .src = SETTINGS_USER, .rep = rep, .in = in, .ops = ops, .store = store, .e = e };
	if (user_path(rep->user, sizeof(rep->user))) {
		int r = file_apply(g, rep->user, -1, &L, &rep->user_found);
		if (r < 0)
			return r;
	}

	/* The project's: in the workspace the flags name, or here. */
	const char *ws = in->workspace ? in->workspace : ".";
	_cleanup_close_ int wsfd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (wsfd >= 0) {
		char abs[PATH_MAX];
		snprintf(rep->project, sizeof(rep->project), "%s/.ward/config.json", realpath(ws, abs) ? abs : ws);
		L = (struct layer){ .src = SETTINGS_PROJECT, .rep = rep, .in = in, .ops = ops, .store = store, .e = e };
		int r = file_apply(g, rep->project, wsfd, &L, &rep->project_found);
		if (r < 0)
			return r;
	}

	/* The environment: which base URL depends on the provider in force. */
	const char *provider = in->provider ? in->provider : ops->provider(g) ? ops->provider(g) : in->provider_default;
	L = (struct layer){ .src = SETTINGS_ENV, .rep = rep, .in = in, .ops = ops, .store = store, .e = e };
	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
		const char *v = getenv(envs[i].var);
		if (!v || !*v || (envs[i].provider && (!provider || strcmp(envs[i].provider, provider))))
			continue;
		char ctx[100];
		snprintf(ctx, sizeof(ctx), "env %s: ", envs[i].var);
		L.from = envs[i].var;
		int r = apply(g, settings_key_by_flag(envs[i].c), v, &L, ctx);
		if (r < 0)
			return r;
	}

	/* The flags, last. */
	L = (struct layer){ .src = SETTINGS_FLAG, .rep = rep, .in = in, .ops = ops, .store = store, .e = e };
	for (size_t i = 0; i < in->ngiven; i++) {
		const struct settings_value *a = &in->given[i];
		const struct settings_key *k = settings_key_by_flag(a->c);
		if (!k)
			return err_set(e, -ENOTRECOVERABLE, "internal: flag '%c' has no row in task/settings.c", a->c);
		L.from = in->flag_name ? in->flag_name(a->c) : "?";
		int r = apply(g, k, a->arg, &L, NULL);
		if (r < 0)
			return r;
	}
	/* A task line's fields, after the flags: each only narrows them. */
	L = (struct layer){ .src = SETTINGS_LINE, .rep = rep, .in = in, .ops = ops, .store = store, .e = e, .from = in->line_from };
	for (size_t i = 0; i < in->nline; i++) {
		const struct settings_value *a = &in->line[i];
		const struct settings_key *k = settings_key_by_flag(a->c);
		if (!k)
			return err_set(e, -ENOTRECOVERABLE, "internal: flag '%c' has no row in task/settings.c", a->c);
		char ctx[PATH_MAX + 100];
		snprintf(ctx, sizeof(ctx), "%s: \"%s\": ", in->line_from ? in->line_from : "task line", a->field);
		int r = apply(g, k, a->arg, &L, ctx);
		if (r < 0)
			return r;
	}
	return 0;
}
