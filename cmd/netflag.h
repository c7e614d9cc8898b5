/* The network flags every command that makes a box takes: --net none|host
 * and --allow-host PATTERN (repeatable). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "net/secret.h"
#include "sandbox/box.h"

/* Their rows are net_flags of cmd/flagtab.c. */
struct netflag {
	enum box_net net;
	bool net_set;
	const char *allow[BOX_ALLOW_MAX];
	size_t nallow;
	uint64_t max_bytes;	/* --net-max-bytes; 0: the default */
	/* --secret: the argument, or (with a file) spec_buf, "NAME@HOST..."
	 * without it; the value beside it. They survive a source's network
	 * settings replacing another's (netflag_reset). The struct is copied
	 * whole (task/settings.c tries a value on a copy): nothing in it points into it but what
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

/* 'N', 'H', 'Q', 'k', 'q' and 'V' of net_flags (cmd/flagtab.c): 1 handled, 0 not one of them, -1 after
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
