#include "cmd/cmd.h"
#include "cmd/term.h"
#include "cmd/flagdoc.h"
#include "cmd/flagtab.h"
#include "config.h"
#include "sandbox/box.h"
#include "base/fdio.h"

#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>
#include <unistd.h>

const struct command *const cmd_commands[] = { &cmd_run, &cmd_chat, &cmd_sessions, &cmd_diff, &cmd_apply, &cmd_rewind, &cmd_box, &cmd_image, &cmd_vm_image, &cmd_config, &cmd_mcp, &cmd_acp, &cmd_report, &cmd_doctor, &cmd_version, NULL };

static const char *error_context;

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
	term_sayf(stderr, "ward: %s%s\n", error_context ? error_context : "", n >= 0 ? s : "?");
	free(s);
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

static void usage(FILE *f)
{
	fprintf(f, "usage: ward COMMAND [ARGS]\n       ward [FLAGS]   at a terminal: the interactive session (see `ward chat --help`)\n\ncommands:\n");
	for (const struct command *const *c = cmd_commands; *c; c++)
		fprintf(f, "  %-8s %-28s %s\n", (*c)->name, (*c)->args, (*c)->summary);
	fprintf(f, "\nflags:\n");
	flags_help_flags(f, &flagtab_ward);
	fprintf(f, "\nRun `ward COMMAND --help` for a command's flags.\n");
}

static int version_run(int argc, char **argv)
{
	int r = cmd_no_operands(argc, argv, "version");
	if (r >= 0)
		return r;
	printf("ward %s\n", WARD_VERSION);
	return 0;
}

const struct command cmd_version = {
	.name = "version", .args = "", .summary = "print the version", .run = version_run,
};

int main(int argc, char **argv)
{
	/* Before anything else opens a descriptor (`ward run ... >&-`). */
	fdio_std_open();
	/* The documents made from the flag tables, for the build (cmd/flagdoc.h). */
	if (argc >= 2 && !strcmp(argv[1], "--flagdoc"))
		return flagdoc_main(argc - 1, argv + 1);
	/* `ward --version` (and -V), as every CLI takes it. */
	if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
		return cmd_version.run(1, argv + 1);
	/* `ward` alone at a terminal, or `ward --FLAG...`: the interactive session. */
	if ((argc < 2 && isatty(0) && isatty(1)) ||
	    (argc >= 2 && argv[1][0] == '-' && argv[1][1] && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")))
		return cmd_chat.run(argc, argv);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (const struct command *const *c = cmd_commands; *c; c++)
		if (!strcmp((*c)->name, argv[1]))
			return (*c)->run(argc - 1, argv + 1);
	cmd_error("unknown command \"%s\"; run `ward --help` for the list", argv[1]);
	return EXIT_USAGE;
}
