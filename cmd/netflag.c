#include "cmd/netflag.h"
#include "cmd/cmd.h"
#include "base/parse.h"
#include "net/allow.h"

#include <string.h>

int netflag_parse(struct netflag *f, int c, const char *arg)
{
	if (c == 'N') {
		if (!strcmp(arg, "none")) {
			f->net = BOX_NET_NONE;
		} else if (!strcmp(arg, "host")) {
			f->net = BOX_NET_HOST;
		} else {
			cmd_error("--net: \"%s\" is not a network mode; use none or host (and --allow-host HOST for "
				  "egress to named hosts)", arg);
			return -1;
		}
		f->net_set = true;
		return 1;
	}
	if (c == 'Q') {
		uint64_t v;
		if (parse_size(arg, &v) < 0 || v < 1024) {
			cmd_error("--net-max-bytes: \"%s\" is not a size of at least 1K (e.g. 500M, 10G)", arg);
			return -1;
		}
		f->max_bytes = v;
		return 1;
	}
	if (c != 'H')
		return 0;
	struct net_allow_rule rule;
	struct err e = { 0 };
	if (net_allow_parse(arg, &rule, &e) < 0) {
		cmd_error("--allow-host: %s", e.msg);
		return -1;
	}
	if (f->nallow == BOX_ALLOW_MAX) {
		cmd_error("--allow-host: more than %d patterns; use wildcards (*.example.org)", BOX_ALLOW_MAX);
		return -1;
	}
	f->allow[f->nallow++] = arg;
	return 1;
}

int netflag_finish(const struct netflag *f, struct box_opts *o)
{
	if (f->nallow && f->net_set) {
		cmd_error(f->net == BOX_NET_HOST
				  ? "--allow-host with --net host: the host's network has no allow-list; drop one of them"
				  : "--allow-host with --net none: the box would reach those hosts; drop --net none");
		return -1;
	}
	o->net = f->nallow ? BOX_NET_ALLOW : f->net;
	o->allow = f->allow;
	o->nallow = f->nallow;
	o->net_max_bytes = f->max_bytes;
	return 0;
}

bool netflag_given(const struct netflag *f)
{
	return f->net_set || f->nallow || f->max_bytes;
}
