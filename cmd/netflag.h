/* The network flags every command that makes a box takes: --net none|host
 * and --allow-host PATTERN (repeatable). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "net/secret.h"
#include "sandbox/box.h"

#define NETFLAG_OPTIONS                                                                                    \
	{ "net", required_argument, NULL, 'N' }, { "allow-host", required_argument, NULL, 'H' },             \
	{ "net-max-bytes", required_argument, NULL, 'Q' }, { "secret", required_argument, NULL, 'k' },      \
	{ "secret-ca", required_argument, NULL, 'q' }, { "secret-other-keys", no_argument, NULL, 'V' }

#define NETFLAG_HELP                                                                                       \
	"  --allow-host PAT   let the box reach PAT through ward's egress proxy (repeatable): a name\n"        \
	"                     (ports 443 and 80), *.example.org, name:port, an address, or\n"                  \
	"                     name=ADDR:PORT to connect name to that address (the only way to a\n"             \
	"                     loopback or private address); nothing else is reachable\n"                       \
	"  --net MODE         none (default: no network, or only the --allow-host ones) or host\n"             \
	"                     (the host's whole network, ns only; nothing is filtered)\n"             \
	"  --net-max-bytes SIZE  what the egress proxy carries, up and down, over the box's life\n"       \
	"                     (default 10G); past it, tunnels end and new connections are refused\n"     \
	"  --secret NAME@HOST[,HOST...]  a credential the box never sees (repeatable): the box's\n"       \
	"                     $NAME is a placeholder, and the egress proxy puts the value ($NAME of\n"     \
	"                     ward's environment, or NAME=@FILE@HOST to read FILE) on requests to\n"       \
	"                     HOST only (added to the allow-list); it refuses the placeholder or the\n"    \
	"                     value to any other host, and another credential to HOST. HTTPS to HOST\n"   \
	"                     is terminated at the proxy (a CA made for the box, in its trust store).\n"  \
	"                     aws@HOST: AWS's keys (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"          \
	"                     AWS_SESSION_TOKEN), placeholders in the box; the proxy checks each\n"       \
	"                     request's SigV4 signature and signs it again with the real keys\n"         \
	"  --secret-other-keys  carry a credential that is not a secret's placeholder (an\n"            \
	"                     Authorization, an AWS signature by another key) to a secret's host\n"    \
	"                     as it is (default: refused, as the box's own key there could take the\n"  \
	"                     user's data to an account of someone else's)\n"                           \
	"  --secret-ca FILE   trust FILE's certificates (PEM), beside the host's CAs, for a secret's\n"   \
	"                     host (a test server, a private CA)\n"

struct netflag {
	enum box_net net;
	bool net_set;
	const char *allow[BOX_ALLOW_MAX];
	size_t nallow;
	uint64_t max_bytes;	/* --net-max-bytes; 0: the default */
	/* --secret: the argument, or (with a file) spec_buf, "NAME@HOST..."
	 * without it; the value beside it. They survive a source's network
	 * settings replacing another's (netflag_reset). The struct is copied
	 * whole (cmd/settings.c): nothing in it points into it but what
	 * netflag_finish sets. */
	const char *arg[NET_SECRET_MAX];
	bool from_file[NET_SECRET_MAX];
	char spec_buf[NET_SECRET_MAX][1024];
	char value[NET_SECRET_MAX][NET_SECRET_VALUE_MAX + 1];
	size_t nsecret;
	/* netflag_finish: the specs and values as box_opts takes them. */
	const char *secret[NET_SECRET_MAX];
	const char *value_p[NET_SECRET_MAX];
	char *secret_ca;	/* --secret-ca's file, read (ward's for its life) */
	bool other_keys;	/* --secret-other-keys */
	/* netflag_finish: the allow-list with the secrets' hosts not on it. */
	const char *all[BOX_ALLOW_MAX];
	char added[BOX_ALLOW_MAX][NET_HOST_MAX + 8];
};

/* 'N', 'H', 'Q', 'k', 'q' and 'V' of NETFLAG_OPTIONS: 1 handled, 0 not one of them, -1 after
 * an error line. */
int netflag_parse(struct netflag *f, int c, const char *arg);
/* After the flags: into o (its net, allow-list and secrets; o points
 * into f), or -1 after an error line when they contradict each other. */
int netflag_finish(struct netflag *f, struct box_opts *o);
/* Forget --net, --allow-host and --net-max-bytes (a source's network
 * settings replace those below it); the secrets stay. */
void netflag_reset(struct netflag *f);
/* Whether any network flag was given. */
bool netflag_given(const struct netflag *f);
