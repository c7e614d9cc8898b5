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
