#include "cmd/mcprun.h"
#include "cmd/cmd.h"
#include "cmd/run-settings.h"

#include <errno.h>

int mcprun_flag(struct mcpconf *c, int ch, const char *arg)
{
	struct err e = { 0 };
	switch (ch) {
	case 'M':
		if (mcpconf_add_file(c, arg, &e) < 0) {
			cmd_error("%s", e.msg);
			return -1;
		}
		return 1;
	case 'E':
		c->trust_project = true;
		return 1;
	}
	return 0;
}

int mcprun_load(struct mcpconf *c, const char *workspace, mcpconf_ask_fn *ask, void *ud)
{
	struct err e = { 0 };
	const char *from = NULL;
	const cJSON *user = settings_mcp(&from);
	c->note = (struct note){ cmd_note, NULL };
	if (mcpconf_load(c, user, from, workspace, ask, ud, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_USAGE;
	}
	return 0;
}

int mcprun_start(struct mcpconf *c, struct box_conn *box, struct journal *j, struct mcp **ret)
{
	struct err e = { 0 };
	c->note = (struct note){ cmd_note, NULL };
	int r = mcpconf_start(c, box, j, ret, &e);
	if (r < 0) {
		cmd_error("%s", e.msg);
		return r == -ENOMEM ? EXIT_FAIL : EXIT_NOBOX;
	}
	return 0;
}
