/* The network flags every command that makes a box takes: --net none|host
 * and --allow-host PATTERN (repeatable). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "sandbox/box.h"

#define NETFLAG_OPTIONS                                                                                    \
	{ "net", required_argument, NULL, 'N' }, { "allow-host", required_argument, NULL, 'H' },             \
	{ "net-max-bytes", required_argument, NULL, 'Q' }

#define NETFLAG_HELP                                                                                       \
	"  --allow-host PAT   let the box reach PAT through ward's egress proxy (repeatable): a name\n"        \
	"                     (ports 443 and 80), *.example.org, name:port, an address, or\n"                  \
	"                     name=ADDR:PORT to connect name to that address (the only way to a\n"             \
	"                     loopback or private address); nothing else is reachable\n"                       \
	"  --net MODE         none (default: no network, or only the --allow-host ones) or host\n"             \
	"                     (the host's whole network, ns only; nothing is filtered)\n"             \
	"  --net-max-bytes SIZE  what the egress proxy carries, up and down, over the box's life\n"       \
	"                     (default 10G); past it, tunnels end and new connections are refused\n"

struct netflag {
	enum box_net net;
	bool net_set;
	const char *allow[BOX_ALLOW_MAX];
	size_t nallow;
	uint64_t max_bytes;	/* --net-max-bytes; 0: the default */
};

/* 'N', 'H' and 'Q' of NETFLAG_OPTIONS: 1 handled, 0 not one of them, -1 after
 * an error line. */
int netflag_parse(struct netflag *f, int c, const char *arg);
/* After the flags: into o (its net and allow-list), or -1 after an error
 * line when they contradict each other. */
int netflag_finish(const struct netflag *f, struct box_opts *o);
/* Whether any network flag was given. */
bool netflag_given(const struct netflag *f);
