/* A box's egress proxy, as its keeper runs it: a process of its own
 * (net/proxy.h), forked for each instance of the box and killed with it,
 * that takes the box's connections from the instance's listener (ns) or
 * mux port (vm), and the host's on the box's egress socket (ward's own
 * connections for the box: an MCP server over HTTP), and reports each one
 * as a JSON line. Internal to the keeper. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"
#include "net/secret.h"
#include "sandbox/backend.h"

struct egress {
	pid_t pid;		/* 0: not running */
	int pidfd;
	int ev_fd;		/* the proxy's event lines (non-blocking), or -1 */
	int host_fd;		/* the box's egress socket (EGRESS_SOCK), listening, or -1 */
	char host_path[4096];
	struct buf line;	/* a line read in part */
	bool overlong;		/* ... too long: dropped up to its end */
	/* The box's secrets' placeholders (egress_secrets), made once for
	 * the box's life, and "NAME=placeholder" for its environment. */
	char ph[NET_SECRET_MAX][NET_SECRET_PH_LEN + 1];
	char env_kv[NET_SECRET_MAX][NET_SECRET_NAME_MAX + NET_SECRET_PH_LEN + 2];
	char aws_kv[3][32 + NET_SECRET_PH_LEN];	/* an aws secret's (net_secret_aws_vars) */
	const char *env[NET_SECRET_MAX + 3 + 8];
	size_t nenv;
	/* The box's CA (with secrets): its key and certificate (PEM), and the
	 * trust bundle the box gets (the host's CAs and this one). */
	char *ca_key, *ca_cert, *ca_bundle;
	/* Totals over the box's life, from the events. */
	uint64_t conns, refused, up, down;
};

/* The host's way to the proxy, in the box's state dir: only the box's
 * owner (or root) is served (SO_PEERCRED). box_egress_dial connects. */
#define EGRESS_SOCK "egress"

void egress_init(struct egress *g);
/* The placeholders of o's secrets (o->secrets, checked as the proxy will
 * read them), and the box's environment for them (g->env). */
int egress_secrets(struct egress *g, const char *name, const struct box_opts *o, struct err *e);
/* Listen on boxdir/EGRESS_SOCK for the proxies the box will have. */
int egress_listen(struct egress *g, const char *boxdir, struct err *e);
/* Stop listening (the proxy stopped first). */
void egress_free(struct egress *g);
/* Start the proxy for inst, box name's: the keeper's program exec'd as
 * EGRESS_ARGV0 (its net_fd goes to the proxy; inst->net_fd is -1 after). */
int egress_start(struct egress *g, const char *name, const struct box_opts *o, struct box_inst *inst, struct err *e);
/* The proxy's main, in the ward-keeper program run as `ward-proxy NAME`
 * (never returns). */
#define EGRESS_ARGV0 "ward-proxy"
int egress_main(const char *name) __attribute__((noreturn));
/* Kill and reap it (bounded); events not yet read are read first. */
void egress_stop(struct egress *g, void (*on_event)(void *ud, cJSON *ev), void *ud);
/* Read what the proxy has said: on_event for each event (the callee's to
 * free). 0, or -EPIPE when the proxy has gone. */
int egress_read(struct egress *g, void (*on_event)(void *ud, cJSON *ev), void *ud);
bool egress_running(const struct egress *g);
