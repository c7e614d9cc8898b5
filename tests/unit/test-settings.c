/* task/settings.c as a library user has it: no cmd/, a target of its own
 * (a round bound, deny rules, the network mode), and the sources it reads
 * (the user's file, the project's, the environment, the flags, a task
 * line), each only as far as it may. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "task/settings.h"
#include "tap.h"

struct toy {
	long rounds;		/* 'R': 0, none */
	int ndeny;		/* 'D' */
	char net[16];		/* 'N': "" unset */
	int hosts;		/* 'H' */
	int applied;
};

static int toy_apply(void *t, const struct settings_key *k, const char *v, enum settings_narrow rule, struct err *e)
{
	struct toy *y = t;
	y->applied++;
	switch (k->c) {
	case 'R': {
		char *end;
		long n = v ? strtol(v, &end, 10) : 0;
		if (!v || *end || n <= 0)
			return err_set(e, -EINVAL, "--max-rounds: \"%s\" is not a positive number", v ? v : "");
		y->rounds = n;
		return 0;
	}
	case 'D':
		y->ndeny++;
		return 0;
	case 'N':
		snprintf(y->net, sizeof(y->net), "%s", v);
		return 0;
	case 'H':
		y->hosts++;
		return 0;
	}
	return 0;	/* the rest of the table: taken, not kept */
}

static double toy_rank(const struct toy *y, int c)
{
	if (c == 'R')
		return y->rounds ? (double)y->rounds : INFINITY;
	if (c == 'N')
		return !strcmp(y->net, "host") ? 2 : y->hosts ? 1 : 0;
	return 0;	/* every other ranked key: all the same rank here */
}

static int toy_looser(const void *a, const void *b, int c)
{
	double was = toy_rank(a, c), is = toy_rank(b, c);
	return c == 'N' && is >= 2 ? 2 : is > was;
}

static const char *toy_default(const void *t, int c, char *buf, size_t n)
{
	snprintf(buf, n, c == 'm' ? "toy-model" : "(none)");
	return buf;
}

static void toy_net_reset(void *t)
{
	struct toy *y = t;
	y->net[0] = 0;
	y->hosts = 0;
}

static int toy_net_finish(void *t, struct err *e)
{
	const struct toy *y = t;
	if (!strcmp(y->net, "none") && y->hosts)
		return err_set(e, -EINVAL, "--allow-host with --net none");
	return 0;
}

static bool toy_net_mode_set(const void *t)
{
	return ((const struct toy *)t)->net[0];
}

static const char *toy_provider(const void *t)
{
	return NULL;
}

static const struct settings_target toy_ops = {
	.size = sizeof(struct toy),
	.apply = toy_apply,
	.looser = toy_looser,
	.default_text = toy_default,
	.net_reset = toy_net_reset,
	.net_finish = toy_net_finish,
	.net_mode_set = toy_net_mode_set,
	.provider = toy_provider,
};

static char notes[4096];
static int nnotes;

static void note(void *ud, const char *line)
{
	nnotes++;
	size_t n = strlen(notes);
	snprintf(notes + n, sizeof(notes) - n, "%s\n", line);
}

static char dir[] = "/tmp/test-settings.XXXXXX";

static void put(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		exit(1);
}

static int run(struct toy *y, const struct settings_in *in0, struct err *e)
{
	char ws[256];
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	static struct settings_store *store;
	settings_store_free(store);	/* the last run's values: its toy is made again */
	store = settings_store_new();
	struct settings_in in = *in0;
	in.workspace = ws;
	in.store = store;
	in.note = (struct note){ note, NULL };
	*y = (struct toy){ 0 };
	*e = (struct err){ 0 };
	notes[0] = 0;
	nnotes = 0;
	return settings_apply(&in, &toy_ops, y, NULL, e);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	char p[256];
	snprintf(p, sizeof(p), "%s/cfg/ward", dir);
	mkdir(dir, 0700);
	snprintf(p, sizeof(p), "%s/cfg", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/cfg/ward", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/ws", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/ws/.ward", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/cfg", dir);
	setenv("XDG_CONFIG_HOME", p, 1);
	unsetenv("WARD_MODEL");
	unsetenv("ANTHROPIC_MODEL");

	struct toy y;
	struct err e;
	struct settings_in in = { 0 };

	/* The user's file sets what it likes; the project's may only narrow. */
	put("cfg/ward/config.json", "{\"max_rounds\": 40, \"deny\": [\"bash:rm *\"]}");
	put("ws/.ward/config.json", "{\"max_rounds\": 10, \"deny\": [\"bash:curl *\"]}");
	is_int(run(&y, &in, &e), 0, "a user's file and a project's that narrows: taken");
	is_int(y.rounds, 10, "the project's tighter bound is in force");
	is_int(y.ndeny, 2, "and both deny rules");
	is_int(nnotes, 0, "without a warning");

	put("ws/.ward/config.json", "{\"max_rounds\": 500}");
	is_int(run(&y, &in, &e), 0, "a project's looser bound is no error");
	is_int(y.rounds, 40, "the user's bound stays");
	is_int(nnotes, 1, "one warning says so");
	like(notes, "warning: ", "as a warning");
	like(notes, "may only tighten it", "saying why");
	like(notes, "40, from user file", "and what is in force, from where");

	put("ws/.ward/config.json", "{\"base_url\": \"http://elsewhere.example\", \"hooks\": {}}");
	is_int(run(&y, &in, &e), 0, "a project's file naming keys it may not set is no error");
	is_int(nnotes, 2, "a warning for each");
	like(notes, "\"base_url\" ignored", "base_url");
	like(notes, "\"hooks\" ignored", "hooks");
	ok(!settings_hooks(NULL), "and no hooks are taken from it");

	/* Errors: one, in e, with the file, line and column; nothing noted. */
	put("ws/.ward/config.json", "{}");
	put("cfg/ward/config.json", "{\n  \"max_rounds\": -3\n}");
	int r = run(&y, &in, &e);
	ok(r < 0 && r == e.code, "a value the target refuses is an error (%d)", r);
	like(e.msg, "cfg/ward/config.json:2:17: \"max_rounds\": --max-rounds: \"-3\"", "wrapped once with where");
	ok(!strchr(e.msg, '\n'), "on one line");
	is_int(nnotes, 0, "and nothing noted");

	put("cfg/ward/config.json", "{\"max_rounds\": 5, \"max_rounds\": 50}");
	r = run(&y, &in, &e);
	ok(r < 0, "a key given twice is refused (one reading for ward and for the user's tools)");
	like(e.msg, "not valid JSON", "as JSON that is not valid");

	put("cfg/ward/config.json", "{\"network\": {\"mode\": \"none\", \"allow_hosts\": [\"a.example\"]}}");
	r = run(&y, &in, &e);
	ok(r < 0, "one file's contradicting network settings are refused");
	like(e.msg, "config.json:1:1: --allow-host with --net none", "by the target, with where");

	/* The flags over the files; a task line after them, only narrowing. */
	put("cfg/ward/config.json", "{\"max_rounds\": 40}");
	struct settings_value given[] = { { 'R', "20", NULL } };
	struct settings_value line[] = { { 'R', "30", "max_rounds" }, { 'D', "bash:git push*", "deny" } };
	in = (struct settings_in){ .given = given, .ngiven = 1, .line = line, .nline = 2, .line_from = "tasks.jsonl:3" };
	is_int(run(&y, &in, &e), 0, "flags and a task line");
	is_int(y.rounds, 20, "the flag's bound stays over the line's looser one");
	like(notes, "tasks.jsonl:3: \"max_rounds\": 30 ignored", "the line's warning says where");
	is_int(y.ndeny, 1, "the line's deny rule is added");

	struct settings_value line2[] = { { 'R', "7", "max_rounds" } };
	in.line = line2;
	in.nline = 1;
	is_int(run(&y, &in, &e), 0, "a task line that tightens");
	is_int(y.rounds, 7, "is in force");

	/* A task line's host where a mode is in force: ignored, said. */
	struct settings_value flags3[] = { { 'N', "none", NULL } };
	struct settings_value line3[] = { { 'H', "pkgs.example", "allow_hosts" } };
	in = (struct settings_in){ .given = flags3, .ngiven = 1, .line = line3, .nline = 1, .line_from = "t.jsonl:1" };
	is_int(run(&y, &in, &e), 0, "a line's host under --net none");
	is_int(y.hosts, 0, "is not added");
	like(notes, "a network mode is in force", "and a warning says why");
	struct settings_value line4[] = { { 'H', "10.0.0.1", "allow_hosts" } };
	in = (struct settings_in){ .line = line4, .nline = 1, .line_from = "t.jsonl:2" };
	r = run(&y, &in, &e);
	ok(r < 0, "a line's host at a private address is refused");
	like(e.msg, "may allow only public hosts", "saying so");
	struct settings_value line5[] = { { 'H', "pkgs.example", "allow_hosts" } };
	in.line = line5;
	is_int(run(&y, &in, &e), 0, "twin: a public host from a line");
	is_int(y.hosts, 1, "is added");

	/* A library user applies settings once per session, for as many
	 * sessions as it serves: without a store of its own, the process's
	 * holds them, with no count it can run out of. */
	put("cfg/ward/config.json", "{\"max_rounds\": 12}");
	put("ws/.ward/config.json", "{\"max_rounds\": 11}");
	int good = 0;
	snprintf(p, sizeof(p), "%s/ws", dir);
	for (int i = 0; i < 100; i++) {
		struct settings_in in1 = { .workspace = p };
		y = (struct toy){ 0 };
		e = (struct err){ 0 };
		good += settings_apply(&in1, &toy_ops, &y, NULL, &e) == 0 && y.rounds == 11;
	}
	is_int(good, 100, "100 calls in one process, each reading both files");

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
