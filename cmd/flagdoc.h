/* The documents made from the flag tables (cmd/flagtab.c): the man
 * pages, the README's flag lists, the bash completion. */
#pragma once

/* `ward --flagdoc KIND ...`, the hidden entry the build and the tests run:
 *   man PAGE       the man page PAGE (ward, ward-run, ...) in roff
 *   pages          the pages, one a line
 *   cmds           the tables: PAGE, tab, the command's name ("box run"), a line each
 *   readme FILE    FILE with each <!-- ward-flags CMD --> block made again
 *   bash           the bash completion
 *   check          each table's rows: no name or value twice, help on each,
 *                  a settings row's key in task/settings.c (a line per fault)
 *   list CMD       the flags of CMD, one a line, tab-separated: name, short,
 *                  argument, default value, --help's default, key, variables,
 *                  the flag as --help spells it
 * An exit code. */
int flagdoc_main(int argc, char **argv);
