/* Where ward keeps its state on this machine: boxes' runtime state
 * (keeper socket, pid, info) under the user's runtime dir; workspace
 * layers, sessions, hibernated boxes and boxes' disks under the user's
 * state dir. Here, below sandbox/, workspace/ and turn/, which all
 * keep things there. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"

#define BOX_NAME_MAX 40

bool state_name_valid(const char *name);
/* $XDG_RUNTIME_DIR/ward, else /run/ward for root, else /tmp/ward-UID; made
 * 0700 and checked to be ours. */
int state_runtime_dir(char *out, size_t n, struct err *e);
/* $XDG_STATE_HOME/ward, else ~/.local/state/ward. */
int state_data_dir(char *out, size_t n, struct err *e);
int state_box_dir(const char *name, char *out, size_t n, struct err *e);
int state_layers_dir(const char *name, char *out, size_t n, struct err *e);
/* A hibernated box's saved state, on disk (not in the runtime dir, which
 * is often memory): $XDG_STATE_HOME/ward/hibernated/NAME. */
int state_hib_dir(const char *name, char *out, size_t n, struct err *e);
/* A box's own disk, which the box's guest alone reads and writes (a vm's
 * root changes and its /tmp: sandbox/vm-disk.c), on disk:
 * $XDG_STATE_HOME/ward/disks/NAME.img. It lives as long as the box. */
int state_disk_path(const char *name, char *out, size_t n, struct err *e);
/* mkdir -p: every directory it makes, the ones on the way included, gets
 * mode (with u+rwx on the way): the state it holds is the user's alone.
 * One that is there already keeps its own. */
int state_mkdir_p(const char *path, mode_t mode);
int state_rm_rf(const char *path);
/* The keeper's pid from the box dir, if the keeper is alive. */
pid_t state_keeper_pid(const char *boxdir);
bool state_keeper_alive(pid_t pid);
