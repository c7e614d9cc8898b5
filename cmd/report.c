/* ward report DIR: what a fleet's runs left in DIR (ward run --task-file F
 * --task-index I --out DIR writes DIR/ID/result.json last), as a table,
 * JSON, JUnit XML and Markdown; exit 0 only when every task is done. */
#include "cmd/cmd.h"
#include "cmd/report.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct option report_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "markdown", no_argument, NULL, 'm' },
	{ "junit", required_argument, NULL, 'J' },
	{ "task-file", required_argument, NULL, 'F' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const char report_help[] =
	"usage: ward report [--json | --markdown] [--junit FILE] [--task-file F] DIR\n"
	"Gather what `ward run --task-file F --task-index I --out DIR` left in DIR: one row per\n"
	"task directory DIR/ID (sorted by id) from its result.json, and the totals. A directory\n"
	"without result.json is \"missing\", or \"unfinished\" when it has a journal.jsonl or\n"
	"events.jsonl (still running, or killed); a result.json that is not valid JSON, lacks a\n"
	"field or is over 1 MiB is \"unreadable\", with the reason.\n"
	"  (default)          a table: id, stop, exit code, rounds, calls, tokens (in+out), cost,\n"
	"                     duration, files changed; why each task not done stopped; totals\n"
	"                     (per stop, done %, tokens, cost, duration p50/p90/p99 by nearest rank)\n"
	"  --json             one JSON object: {\"tasks\": [...], \"totals\": {...}}\n"
	"  --markdown         a GitHub table and totals (for $GITHUB_STEP_SUMMARY)\n"
	"  --junit FILE       JUnit XML into FILE (written whole, then renamed); - is stdout. A task\n"
	"                     not done is a <failure>, one with no readable result an <error>; the\n"
	"                     classname is ward.TASKFILE (the task file's name less .jsonl)\n"
	"  --task-file F      the tasks that should be there: an id of F with no DIR/ID is \"missing\"\n"
	"                     (an array element that never ran), not left out\n"
	"Exit status: 0 when every task is done, 1 when one is not (or DIR has none), 64 usage.\n";

/* FILE.tmp, then one rename: a reader never sees half a report. Anything
 * that is not a regular file (a pipe, /dev/stderr) gets it directly. */
static int junit_write(const struct report *r, const char *path)
{
	if (!strcmp(path, "-"))
		return report_junit(r, stdout);
	struct stat st;
	bool direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	/* The tasks' text and why they stopped: 0600, whatever the umask. */
	int fd = direct ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f = direct ? fopen(path, "we") : fd < 0 || fchmod(fd, 0600) < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		int r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	int k = report_junit(r, f);
	if (fclose(f) != 0 && k >= 0)
		k = -errno;
	if (k >= 0 && !direct && rename(tmp, path) < 0)
		k = -errno;
	if (k < 0 && !direct)
		unlink(tmp);
	return k;
}

static int report_run(int argc, char **argv)
{
	bool json = false, md = false;
	const char *junit = NULL, *task_file = NULL;
	optind = 1;
	opterr = 0;
	int c;
	/* Flags before or after DIR, as in the examples. */
	while ((c = getopt_long(argc, argv, ":h", report_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(report_help, stdout);
			return EXIT_OKAY;
		}
		if (c == 'j')
			json = true;
		else if (c == 'm')
			md = true;
		else if (c == 'J')
			junit = optarg;
		else if (c == 'F')
			task_file = optarg;
		else
			return cmd_bad_flag("report", c, argv);
	}
	if ((json && md) || (junit && !strcmp(junit, "-") && (json || md))) {
		cmd_error("report: --json, --markdown and --junit - each take stdout; give one of them");
		return EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		cmd_error("report: give one directory, the --out DIR of the runs; usage: ward report [--json | "
			  "--markdown] [--junit FILE] [--task-file F] DIR");
		return EXIT_USAGE;
	}
	const char *dir = argv[optind];
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		cmd_error("report: %s: %s", dir, errno == ENOENT ? "no such directory" : "not a directory");
		return EXIT_USAGE;
	}
	struct report r;
	struct err e = { 0 };
	if (report_read(dir, task_file, &r, &e) < 0) {
		cmd_error("report: %s", e.msg);
		return EXIT_FAIL;
	}
	int k = 0;
	if (json)
		k = report_json(&r, stdout);
	else if (md)
		k = report_markdown(&r, stdout);
	else if (!junit || strcmp(junit, "-"))
		k = report_text(&r, stdout);
	int rc = k < 0 && k != -EPIPE ? EXIT_FAIL : EXIT_OKAY;
	if (k < 0 && k != -EPIPE)
		cmd_error("report: cannot write the report: %s", strerror(-k));
	if (junit && (k = junit_write(&r, junit)) < 0) {
		cmd_error("report: --junit %s: cannot write it: %s", junit, strerror(-k));
		rc = EXIT_FAIL;
	}
	if (!r.n)
		cmd_error("report: %s has no task directories (DIR/ID/, as ward run --out makes them)", dir);
	if (!r.n || r.tot.done < r.n)
		rc = EXIT_FAIL;
	report_free(&r);
	return rc;
}

const struct command cmd_report = {
	.name = "report", .args = "[FLAGS] DIR", .summary = "gather a fleet's results (ward run --out DIR)",
	.run = report_run,
};
