/* What every command shares (cmd/cmd.h): the one error line, where a
 * program of ward's is found, the refusal of a bad flag or operand. Apart
 * from main.c so that what links cmd's library without its main (the
 * fuzz targets of the config and task-file readers) has them. */
#include "cmd/cmd.h"
#include "cmd/term.h"
#include "config.h"
#include "base/err.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *error_context;
static struct err *error_into;

void cmd_error_into(struct err *e)
{
	error_into = e;
}

int cmd_error_end(struct err *e, int r)
{
	error_into = NULL;
	if (r >= 0 && e->code) {
		cmd_error("%s", e->msg);
		*e = (struct err){ 0 };
	}
	if (r < 0)
		return e->code ? e->code : err_set(e, -EINVAL, "refused");
	return r;
}

void cmd_error_context(const char *where)
{
	error_context = where;
}

/* A message often quotes what others wrote (a file's name, a server's
 * words): all of it goes out by the terminal rule. */
void cmd_error(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (error_into && !error_into->code)
		err_set(error_into, -EINVAL, "%s%s", error_context ? error_context : "", n >= 0 ? s : "?");
	else
		term_sayf(stderr, "ward: %s%s\n", error_context ? error_context : "", n >= 0 ? s : "?");
	free(s);
}

void cmd_note(void *ud, const char *line)
{
	term_sayf(stderr, "ward: %s\n", line);
}

/* A program of ward's: $var, else where the build tree has it (build/cmd/ward
 * beside build/SUBDIR/PROG), else beside this binary, else the install's
 * libexec directory. */
static const char *cmd_program(const char *prog, const char *var, const char *subdir, char *path, size_t n)
{
	const char *env = getenv(var);
	if (env && *env)
		return env;
	char self[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k > 0) {
		self[k] = 0;
		char *dir = dirname(self);
		snprintf(path, n, "%s/../%s/%s", dir, subdir, prog);
		if (access(path, X_OK) == 0)
			return path;
		snprintf(path, n, "%s/%s", dir, prog);
		if (access(path, X_OK) == 0)
			return path;
	}
	snprintf(path, n, "%s/%s", WARD_LIBEXECDIR, prog);
	return path;
}

const char *cmd_guest_path(void)
{
	static char path[PATH_MAX];
	return cmd_program("ward-guest", "WARD_GUEST", "guest", path, sizeof(path));
}

const char *cmd_keeper_path(void)
{
	static char path[PATH_MAX];
	return cmd_program("ward-keeper", "WARD_KEEPER", "sandbox", path, sizeof(path));
}

int cmd_bad_flag(const char *cmd, int c, char **argv)
{
	const char *arg = argv[optind - 1];
	if (c == ':')
		cmd_error("%s: %s needs a value; see `ward %s --help`", cmd, arg, cmd);
	else
		cmd_error("%s: unknown flag %s; see `ward %s --help`", cmd, arg, cmd);
	return EXIT_USAGE;
}

int cmd_operands_only(int argc, char **argv, const char *cmd, const char *usage)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: %s\n", usage);
			return EXIT_OKAY;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			int first = (int)strcspn(usage, "\n");
			cmd_error("%s: unknown flag %s (usage: %.*s)", cmd, argv[i], first, usage);
			return EXIT_USAGE;
		}
	}
	return -1;
}

int cmd_no_operands(int argc, char **argv, const char *cmd)
{
	char usage[64];
	snprintf(usage, sizeof(usage), "ward %s", cmd);
	int r = cmd_operands_only(argc, argv, cmd, usage);
	if (r < 0 && argc > 1) {
		cmd_error("%s takes no arguments; usage: %s", cmd, usage);
		r = EXIT_USAGE;
	}
	return r;
}
