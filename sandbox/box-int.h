/* What the box's lifecycle files share behind box.h: the keeper program
 * as box_create starts it, the warm pool, cold storage. */
#pragma once
#include <stddef.h>

#include "base/err.h"
#include "sandbox/box.h"

/* box-conn.c: a pool box taken for a create (CLAIM, with what the create
 * asks: json); bounded by BOX_CREATE_TIMEOUT_MS. */
int box_claim(struct box_conn *c, const char *json, struct err *e);
/* cold.c: delete from its store what a cold saved state in hibdir names
 * (its cold.json says where); nothing when it is not cold. Best effort. */
void box_cold_drop(const char *hibdir);
/* box-conn.c: destroy a pool box only if it still waits in the pool (a
 * create may have taken it a moment ago). */
int box_destroy_if_pooled(const char *name);
/* pool.c: the kind of box o asks for, what a pool box must match: its
 * backend, limits, workspace, network, guest and image, hashed, in hex. */
void box_pool_key(const struct box_opts *o, char *out, size_t n);
/* pool.c: a box of o's kind from a pool, into ret_name: 0, or -ENOENT
 * when no pool holds one. */
int box_pool_take(const struct box_opts *o, char *ret_name, size_t n, struct err *e);
/* The name of a box's socket in its runtime directory, where its keeper
 * listens. */
#define BOX_SOCK "sock"
/* box-request.c: a pidfd of the keeper listening on boxdir's socket, or
 * -errno (-ESRCH: none there). The keeper is whoever listens there
 * (SO_PEERCRED), and the pidfd is taken while that connection stands, so
 * it is the keeper's own: a pid read from a file may be another
 * process's by the time it is signalled. */
int box_keeper_pidfd(const char *boxdir);
/* Signal a pidfd; wait up to ms for its process to end: true if it did. */
bool box_pidfd_end(int pidfd, int sig, int64_t ms);
/* The ward-keeper program (keeper-main.c), as box_create starts it:
 * `ward-keeper NAME`, the box's options as JSON ({"boxdir","opts"}, the
 * latter box_opts_to_json's) on KEEPER_OPTS_FD, and the pipe on which it
 * answers "ok\n" or one line saying why not on KEEPER_READY_FD. */
#define KEEPER_ARGV0 "ward-keeper"
#define KEEPER_OPTS_FD 3
#define KEEPER_READY_FD 4
/* keeper.c: the keeper, once its options are read (never returns). */
void keeper_main(const struct box_opts *o, const char *name, const char *boxdir, int ready_fd)
	__attribute__((noreturn));
