/* ward mcp list: the MCP servers a run would start, started in a box of
 * their own for the asking: their state and their tools. */
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "cmd/mcprun.h"
#include "cmd/term.h"
#include "cmd/session.h"
#include "cmd/run-settings.h"
#include "base/buf.h"
#include "mcp/mcp.h"
#include "sandbox/box.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int mcp_list(int argc, char **argv)
{
	struct run_flags *f = malloc(sizeof(*f));
	if (!f)
		return EXIT_FAIL;
	run_flags_init(f, RUN_APPROVE_DEFAULT);
	struct mcpconf mc = { 0 };
	bool json = false;
	optind = 1;
	opterr = 0;
	int c, r = 0;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_mcp_list);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			free(f);
			return cmd_bad_flag("mcp list", c, argv);
		}
		int k = run_flag_given(f, c, optarg);
		if (k == 0)
			k = mcprun_flag(&mc, c, optarg);
		if (k < 0) {
			free(f);
			return EXIT_USAGE;
		}
		if (k > 0)
			continue;
		if (c == 'j') {
			json = true;
			continue;
		}
		free(f);
		if (c == 'h') {
			flags_help(stdout, &flagtab_mcp_list);
			return 0;
		}
		return cmd_bad_flag("mcp list", '?', argv);
	}
	if (optind != argc) {
		cmd_error("ward mcp list takes no arguments; see `ward mcp --help`");
		free(f);
		return EXIT_USAGE;
	}
	r = run_settings_apply(f, NULL);
	char ws[PATH_MAX];
	if (!r && !realpath(f->workspace ? f->workspace : ".", ws)) {
		cmd_error("--workspace %s: no such directory", f->workspace ? f->workspace : ".");
		r = EXIT_NOINPUT;
	}
	if (!r)
		r = mcprun_load(&mc, ws, NULL, NULL);
	struct box_opts bo;
	box_opts_default(&bo);
	bo.guest_path = cmd_guest_path();
	bo.keeper_path = cmd_keeper_path();
	bo.workspace = ws;
	bo.rw = f->rw;
	bo.owner = getpid();
	if (!r && netflag_finish(&f->net, &bo) < 0)
		r = EXIT_USAGE;
	char name[BOX_NAME_MAX + 1] = "";
	struct box_conn *conn = NULL;
	struct mcp *m = NULL;
	struct err e = { 0 };
	if (!r && mc.cfg.n) {
		if (box_create(&bo, name, sizeof(name), &e) < 0 || box_connect(name, &conn, &e) < 0) {
			cmd_error("cannot make a box: %s", e.msg);
			r = EXIT_NOBOX;
		}
	}
	if (!r && conn)
		r = mcprun_start(&mc, conn, NULL, &m);
	if (!r) {
		cJSON *st = mcp_status(m);
		if (json) {
			char *s = cJSON_PrintUnformatted(st);
			puts(s ? s : "[]");
			free(s);
		} else {
			struct buf b;
			buf_init(&b, 1u << 20);
			mcpconf_describe(st, &b);
			/* The servers' own words (serverInfo, tool names, why one
			 * is down) are in it: by the terminal rule. */
			term_write(stdout, b.data ? b.data : "", b.len);
			buf_free(&b);
		}
		cJSON_Delete(st);
	}
	mcp_free(m);
	if (conn)
		box_disconnect(conn);
	if (name[0])
		box_destroy(name, &e);
	mcpconf_free(&mc);
	free(f);
	return r;
}

static int mcp_run(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		flags_help(argc < 2 ? stderr : stdout, &flagtab_mcp_list);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "list"))
		return mcp_list(argc - 1, argv + 1);
	cmd_error("ward mcp: no command \"%s\" (there is: list)", argv[1]);
	return EXIT_USAGE;
}

const struct command cmd_mcp = {
	.name = "mcp", .args = "list [FLAGS]", .summary = "the MCP servers a run would start, and their tools",
	.run = mcp_run,
};
