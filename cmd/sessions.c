/* ward sessions: the sessions ward run and the terminal left, nested
 * under the task that started them. */
#include "cmd/cmd.h"
#include "base/json.h"
#include "cmd/flagtab.h"
#include "cmd/session.h"
#include "cmd/sessions-prune.h"
#include "cmd/term.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "turn/journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool has_parent(const cJSON *list, const cJSON *x)
{
	const char *p = json_str(x, "parent_session");
	const cJSON *y;
	cJSON_ArrayForEach(y, list)
		if (p && y != x && json_str(y, "session") && !strcmp(json_str(y, "session"), p))
			return true;
	return false;
}

static int by_agent(const void *a, const void *b)
{
	const char *x = json_str(*(const cJSON *const *)a, "agent"), *y = json_str(*(const cJSON *const *)b, "agent");
	return strverscmp(x ? x : "", y ? y : "");
}

/* One session's row, then its children's, each level indented ("└ a1 "
 * before a child's id, the agent it was). */
static void print_session(const cJSON *list, const cJSON *x, int depth)
{
	const cJSON *nc = cJSON_GetObjectItemCaseSensitive(x, "compactions");
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(x, "mtime");
	char c[16] = "-", when[32] = "-", name[160];
	if (cJSON_IsNumber(nc) && nc->valueint > 0)
		snprintf(c, sizeof(c), "%d", nc->valueint);
	/* The last time it was written to, in the machine's time zone. */
	struct tm tm;
	time_t t = cJSON_IsNumber(mt) ? (time_t)mt->valuedouble : 0;
	if (t && localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	const char *id = json_str(x, "session") ? json_str(x, "session") : "?";
	if (depth)
		snprintf(name, sizeof(name), "%*s└ %s %s", 2 * (depth - 1), "", json_str(x, "agent") ? json_str(x, "agent") : "?", id);
	else
		snprintf(name, sizeof(name), "%s", id);
	term_printf(stdout, "%-24s %-16s %-14s %-16.16s %-9s %s\n", name, when, json_str(x, "stop"), json_str(x, "model"), c,
		    json_str(x, "workspace"));
	/* Its children in the order they were started (a1, a2, ..., a10). */
	const cJSON *kids[128], *y;
	size_t n = 0;
	cJSON_ArrayForEach(y, list) {
		const char *p = json_str(y, "parent_session");
		if (p && y != x && !strcmp(p, id) && depth < 8 && n < ARRAY_SIZE(kids))
			kids[n++] = y;
	}
	qsort(kids, n, sizeof(kids[0]), by_agent);
	for (size_t i = 0; i < n; i++)
		print_session(list, kids[i], depth + 1);
}

/* ward sessions [--json] | ward sessions prune ...: the journals, newest
 * last, with how each ended and when each was last written to. */
static int sessions_run(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "prune"))
		return sessions_prune(argc - 1, argv + 1);
	bool json = false;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_sessions);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, &flagtab_sessions);
			return 0;
		}
		if (c != 'j')
			return cmd_bad_flag("sessions", c, argv);
		json = true;
	}
	if (optind != argc) {
		cmd_error("sessions takes no arguments; usage: %s (or ward sessions prune ...)", flagtab_sessions.synopsis);
		return EXIT_USAGE;
	}
	struct err e = { 0 };
	cJSON *list = NULL;
	if (session_list(&list, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	if (json) {
		/* Data: printed one way (base/jsonprint.h), whole. */
		_cleanup_free_ char *s = jsonprint_text(list);
		cJSON_Delete(list);
		if (!s)
			return EXIT_FAIL;
		puts(s);
		return 0;
	}
	term_printf(stdout, "%-24s %-16s %-14s %-16s %-9s %s\n", "SESSION", "TIME", "STOP", "MODEL", "COMPACTED", "WORKSPACE");
	const cJSON *x;
	cJSON_ArrayForEach(x, list)
		if (!has_parent(list, x))
			print_session(list, x, 0);
	cJSON_Delete(list);
	return 0;
}

const struct command cmd_sessions = {
	.name = "sessions", .args = "[--json] | prune ...", .summary = "list the sessions (ward run's and the terminal's), or prune them", .run = sessions_run,
};
