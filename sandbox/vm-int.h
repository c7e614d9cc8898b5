/* What the vm backend's files share (vm.c: the VMM and the guest's
 * START; vm-snapshot.c: a snapshot taken and restored through QMP). */
#pragma once
#include <limits.h>

#include "base/err.h"

/* How long a VMM's channel, QMP and migration sockets may take to come
 * up. */
#define VM_CONNECT_MS 5000

/* Where one VMM's sockets and files are. */
struct vm_paths {
	char dir[PATH_MAX], sock[PATH_MAX + 16], qmp[PATH_MAX + 16], con[PATH_MAX + 16], exp[PATH_MAX + 16],
		mig[PATH_MAX + 16], net[PATH_MAX + 16];
};

/* The booted template waits for START: stop it and write its device state
 * to the file state; its RAM is already in the shared file, and
 * x-ignore-shared leaves it out of the stream. 0 or -errno, e set. */
int vm_snapshot_take(const struct vm_paths *p, const char *state, struct err *e);
/* A VMM started with -incoming defer: feed it the state and let it run.
 * 0 or -errno, e set. */
int vm_snapshot_restore(const struct vm_paths *p, const char *state, struct err *e);
