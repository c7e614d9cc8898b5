/* ward's subcommands. Only this directory prints errors and picks exit codes. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Exit codes, documented in README.md. */
enum {
	EXIT_OKAY = 0,
	EXIT_FAIL = 1,		/* the command or tool failed, or an error */
	EXIT_NOBOX = 4,		/* no box could be made */
	EXIT_USAGE = 64,	/* bad flags or malformed JSON */
	EXIT_BADINPUT = 65,	/* a tool's arguments were refused */
	EXIT_NOINPUT = 66,	/* the workspace does not exist */
	EXIT_UNKNOWN_BOX = 69,	/* no such box, or it does not answer */
	EXIT_TEMPFAIL = 75,	/* try again later (a task another ward is running) */
	EXIT_TIMEOUT = 124,
	EXIT_CANCELLED = 130,
};

/* The flags of a command that parses them with getopt_long: set opterr to
 * 0 and start optstring with "+:"; for its '?' or ':' this prints the one
 * line (which flag, and where to read about the flags) and returns
 * EXIT_USAGE. */
int cmd_bad_flag(const char *cmd, int c, char **argv);
/* A command that takes operands and no flags: with --help or -h, usage goes
 * to stdout and 0 is returned; any other argument starting with '-' is
 * refused in one line (EXIT_USAGE); -1 when the arguments are for the
 * command to use. */
int cmd_operands_only(int argc, char **argv, const char *cmd, const char *usage);
/* The same for a command that takes nothing at all ("ward CMD"). */
int cmd_no_operands(int argc, char **argv, const char *cmd);

struct command {
	const char *name;
	const char *args;
	const char *summary;
	int (*run)(int argc, char **argv);
};

/* Every command, in the order ward --help lists them; NULL ends it. */
extern const struct command *const cmd_commands[];
extern const struct command cmd_acp, cmd_apply, cmd_box, cmd_chat, cmd_config, cmd_mcp, cmd_diff, cmd_doctor, cmd_image, cmd_vm_image, cmd_report, cmd_rewind, cmd_run, cmd_sessions, cmd_version;

/* One line on stderr: "ward: ..." */
void cmd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Until called again with NULL, every cmd_error line says where the value
 * it is about came from ("FILE:LINE:COL: key: "), right after "ward: ". */
void cmd_error_context(const char *where);
/* Until cmd_error_end, the first cmd_error line goes into e (-EINVAL),
 * not to stderr: a part of ward below cmd that calls back into it (a task
 * line's flag, a config value) gets the line as its error, to wrap with
 * where it came from. A line said while e is already set is printed. */
struct err;
void cmd_error_into(struct err *e);
/* The end of cmd_error_into(e) around a call that returned r: a line it
 * said though it took the value (r >= 0) is printed as it was and e
 * cleared; a refusal that said nothing is "refused". r, or e's code where
 * r < 0. */
int cmd_error_end(struct err *e, int r);
/* A note function (base/note.h) that prints each line as "ward: LINE". */
void cmd_note(void *ud, const char *line);
/* The ward-guest binary: $WARD_GUEST, beside this binary's build tree, or
 * the install location. */
const char *cmd_guest_path(void);
/* The ward-keeper program (a box's keeper and its egress proxy), found the
 * same way: $WARD_KEEPER, the build tree, or the install location. */
const char *cmd_keeper_path(void);
