/* ward report DIR: what a fleet's runs left in DIR (ward run --task-file F
 * --task-index I --out DIR writes DIR/ID/result.json last), as a table,
 * JSON, JUnit XML and Markdown; exit 0 only when every task is done. */
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "cmd/report-out.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_report);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, &flagtab_report);
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
