/* ward config: the settings in force, and where each came from. */
#include "cmd/cmd.h"
#include "cmd/term.h"
#include "cmd/run-settings.h"
#include "cmd/flagtab.h"
#include "base/cleanup.h"
#include "turn/turn.h"
#include "turn/window.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void config_help(const struct run_flags *f)
{
	flags_help(stdout, &flagtab_config);
	fputs("Each source is over the one before: default, user file, project file, environment,\n"
	      "flags. Lists (allow, deny) add up; a source that sets the network replaces the\n"
	      "network settings of the sources before it.\n"
	      "  user file     $XDG_CONFIG_HOME/ward/config.json (default ~/.config/ward/config.json)\n"
	      "  project file  .ward/config.json in the --workspace directory (default: the current\n"
	      "                one); it may only narrow: a model no dearer, deny rules, a stricter\n"
	      "                approve, tighter bounds, project_instructions off, network mode none.\n"
	      "                Any other key is ignored, with a line.\n",
	      stdout);
	int c;
	const char *var, *provider;
	for (size_t i = 0; (c = settings_env_at(i, &var, &provider)) >= 0; i++)
		printf("  %-13s %s (--%s%s%s)\n", i ? "" : "environment", var, run_settings_flag_name(c),
		       provider ? ", provider " : "", provider ? provider : "");
	fputs("A file holds one JSON object; each key is read as its flag would be (key, flag, default, an example):\n",
	      stdout);
	for (size_t i = 0; settings_key_at(i); i++) {
		const struct settings_key *k = settings_key_at(i);
		char d[200];
		if (k->key)
			printf("  %-20s --%-13s %-18s e.g. %s\n", k->key, run_settings_flag_name(k->c),
			       run_settings_default_text(f, k->c, d, sizeof(d)), k->eg);
	}
	fputs("(network.* nest: {\"network\": {\"mode\": \"none\", \"allow_hosts\": [...]}})\n"
	      "An unknown key is a warning, so a newer ward's file works with this one; a malformed\n"
	      "file (not JSON, a wrong type, a bad value) is an error naming FILE:LINE:COLUMN.\n",
	      stdout);
}

static void source_text(const struct settings_applied *a, char *buf, size_t n)
{
	if (!a)
		snprintf(buf, n, "default");
	else if (a->src == SETTINGS_FLAG)
		snprintf(buf, n, "flag --%s", a->from);
	else
		snprintf(buf, n, "%s %s", settings_source_name(a->src), a->from);
}

static cJSON *source_json(const struct settings_applied *a, const char *value)
{
	static const char *const names[] = { "default", "user", "project", "env", "flag", "task" };
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "value", value);
	cJSON_AddStringToObject(j, "source", names[a ? a->src : SETTINGS_DEFAULT]);
	if (a && a->src == SETTINGS_FLAG) {
		char flag[64];
		snprintf(flag, sizeof(flag), "--%s", a->from);
		cJSON_AddStringToObject(j, "from", flag);
	} else if (a) {
		cJSON_AddStringToObject(j, "from", a->from);
	}
	return j;
}

static void show_line(const char *key, const char *value, const struct settings_applied *a)
{
	char src[PATH_MAX + 32];
	source_text(a, src, sizeof(src));
	term_printf(stdout, "%-20s %-30s %s\n", key, value, src);
}

static int config_show(const struct run_flags *f, const struct settings_report *rep, bool json)
{
	cJSON *out = json ? cJSON_CreateObject() : NULL, *set = NULL;
	if (json) {
		cJSON *files = cJSON_AddObjectToObject(out, "files");
		cJSON *u = cJSON_AddObjectToObject(files, "user"), *p = cJSON_AddObjectToObject(files, "project");
		cJSON_AddStringToObject(u, "path", rep->user);
		cJSON_AddBoolToObject(u, "found", rep->user_found);
		cJSON_AddStringToObject(p, "path", rep->project);
		cJSON_AddBoolToObject(p, "found", rep->project_found);
		set = cJSON_AddObjectToObject(out, "settings");
	} else {
		term_printf(stdout, "# user file: %s%s\n", rep->user[0] ? rep->user : "(none: no HOME)", rep->user_found ? "" : " (not found)");
		term_printf(stdout, "# project file: %s%s\n", rep->project[0] ? rep->project : "(none: no workspace)",
		       rep->project_found ? "" : " (not found)");
	}
	for (size_t i = 0; settings_key_at(i); i++) {
		const struct settings_key *k = settings_key_at(i);
		if (!k->key)
			continue;
		cJSON *list = json && k->type == SETTINGS_LIST ? cJSON_AddArrayToObject(set, k->key) : NULL;
		const struct settings_applied *last = NULL;
		for (size_t n = 0; n < rep->n; n++) {
			const struct settings_applied *a = &rep->applied[n];
			if (a->c != k->c || a->replaced)
				continue;
			last = a;
			if (k->type != SETTINGS_LIST)
				continue;
			if (json)
				cJSON_AddItemToArray(list, source_json(a, a->value));
			else
				show_line(k->key, a->value, a);
		}
		char d[200];
		if (k->type == SETTINGS_LIST) {
			if (!last && !json)
				show_line(k->key, run_settings_default_text(f, k->c, d, sizeof(d)), NULL);
			continue;
		}
		const char *v = last ? last->value : run_settings_default_text(f, k->c, d, sizeof(d));
		if (json)
			cJSON_AddItemToObject(set, k->key, source_json(last, v));
		else
			show_line(k->key, v, last);
	}
	/* Whether the key is there, never the key. */
	const struct provider *p = provider_find(f->provider ? f->provider : RUN_DEFAULT_PROVIDER);
	const char *key = getenv(p->key_env);
	bool has = key && *key;
	if (json) {
		cJSON *a = cJSON_AddObjectToObject(out, "api_key");
		cJSON_AddBoolToObject(a, "set", has);
		cJSON_AddStringToObject(a, "env", p->key_env);
		_cleanup_free_ char *s = cJSON_PrintUnformatted(out);
		puts(s ? s : "{}");
		cJSON_Delete(out);
	} else {
		printf("%-20s %-30s env %s\n", "api_key", has ? "(set)" : "(not set)", p->key_env);
	}
	return EXIT_OKAY;
}

static int config_run(int argc, char **argv)
{
	_cleanup_free_ struct run_flags *f = malloc(sizeof(*f));
	_cleanup_free_ struct settings_report *rep = malloc(sizeof(*rep));
	if (!f || !rep)
		return EXIT_FAIL;
	run_flags_init(f, RUN_APPROVE_DEFAULT);
	bool json = false;
	optind = 1;
	opterr = 0;
	int c;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_config);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return cmd_bad_flag("config", c, argv);
		int k = run_flag_given(f, c, optarg);
		if (k < 0)
			return EXIT_USAGE;
		if (k > 0)
			continue;
		if (c == 'h') {
			config_help(f);
			return EXIT_OKAY;
		}
		if (c != 'j')
			return cmd_bad_flag("config", '?', argv);
		json = true;
	}
	if (optind != argc) {
		cmd_error("config takes no arguments, only flags; see `ward config --help`");
		return EXIT_USAGE;
	}
	int r = run_settings_apply(f, rep);
	if (r)
		return r;
	return config_show(f, rep, json);
}

const struct command cmd_config = {
	.name = "config", .args = "[--json] [FLAGS]", .summary = "the settings in force, and where each came from",
	.run = config_run,
};
