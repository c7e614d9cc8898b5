/* ward box ls and ward box info (cmd/box.c's table runs them). */
#pragma once

/* ward box ls [--json] [--label KEY=VALUE ...]: an exit code. */
int box_ls_main(int argc, char **argv);
/* ward box info BOX: an exit code. */
int box_ls_info(int argc, char **argv);
