/* A delegated scope from systemd for a box's keeper, as rootless Podman
 * gets one: where systemd manages the user's session and this process is
 * in no v2 group it may write, the keeper is started through
 * `systemd-run --user --scope -p Delegate=yes`, so that its own group
 * (where its box's group is made, sandbox/cgroup.h) is one systemd gave
 * the user with controllers to enable. Where systemd-run fails, the keeper
 * starts as before, and the ceilings are the weaker ones `ward doctor`
 * and `ward box info` report. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox/cgroup.h"

/* The arguments systemd-run gets before the command. */
#define SDSCOPE_ARGS "--user", "--scope", "-p", "Delegate=yes", "--quiet", "--collect", "--"

/* Whether a keeper started here should ask systemd for a scope: c has no
 * writable v2 group, systemd-run is on PATH (its path into run), and the
 * user's systemd is there (/run/systemd/system, or the user manager's
 * socket $XDG_RUNTIME_DIR/systemd/private). why says which is missing. */
bool sdscope_wanted(const struct cgroup_caps *c, char run[PATH_MAX], char *why, size_t n);
/* Start path (argv, envp, fds as child_start_env) through systemd-run
 * run: 0 once the process systemd-run became is path (it execs the
 * command in place), with its pid; -errno when systemd-run ended first
 * (why: its exit status) or did not become path within 10 s (killed). */
int sdscope_start(const char *run, const char *path, char *const argv[], char *const envp[], const int *fds,
		  size_t nfds, pid_t *ret_pid, char *why, size_t n);
/* Ask once, for ward doctor: systemd-run ... -- true. why says what came
 * back. */
bool sdscope_probe(const char *run, char *why, size_t n);
