/* What the vm backend's files share (vm.c: the VMM and the guest's
 * START; vm-snapshot.c: a snapshot taken and restored through QMP). */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* How long a VMM's channel, QMP and migration sockets may take to come
 * up. */
#define VM_CONNECT_MS 5000

/* Where one VMM's sockets and files are: its own directory (vmm, beside
 * the keeper's files in the box's directory, which the VMM does not see),
 * the workspace it exports, and where its jail's root is built. */
struct vm_paths {
	char dir[PATH_MAX], vmm[PATH_MAX + 16], sock[PATH_MAX + 32], qmp[PATH_MAX + 32], con[PATH_MAX + 32],
		exp[PATH_MAX + 16], mig[PATH_MAX + 32], net[PATH_MAX + 32], jail[PATH_MAX + 16];
};

/* vm-disk.c: a box's own disk at path, of size bytes (sparse), made if it
 * is not there (one that is keeps its size and what it holds). 0 or
 * -errno, e set. */
int vm_disk_make(const char *path, uint64_t size, struct err *e);
/* A copy of the disk from at to (made anew, 0600), its holes kept: a
 * clone where the file system can, else each extent of data. 0 or
 * -errno, e set. */
int vm_disk_copy_file(const char *from, const char *to, struct err *e);
/* A stand-in for a disk the guest does not read: where a box has no
 * image, and in a snapshot's template. path NULL: the one in the cache
 * every box shares (read-only); else that file (a template's writable
 * one). Its path into out. */
#define VM_DISK_STANDIN 4096
int vm_disk_standin(const char *path, char *out, size_t n, struct err *e);

struct box_spec;
struct box_opts;
struct box_inst;
/* vm.c: where box s's VMM has its sockets and files. */
void vm_paths(const struct box_spec *s, struct vm_paths *p);
/* A guest that went on from a saved state, its channel connected again:
 * its hello (or the PONG of one that had not seen its host go), then a
 * START without a root with fresh entropy, the host's clock and, where
 * hostname is not NULL, its new hostname. 0 or -errno, e set. */
int vm_resume_hello(const struct box_opts *o, struct box_inst *b, const char *hostname, struct err *e);
/* vm-fork.c: the backend's fork (backend.h). */
int vm_fork(const struct box_spec *s, struct box_inst *b, const char *state, const char *disk, struct err *e);

/* vm-jail.c: what one VMM's root holds beside what every VMM's does (its
 * table): files read-only (the kernel, the initrd), files and directories
 * read-write (a RAM file, its own directory, the workspace it exports),
 * each at its own path; /dev/kvm with kvm. */
struct vm_jail {
	const char *root;	/* an empty directory to build it on */
	const char *ro[5], *rw[5];	/* NULL-terminated when short */
	bool kvm;
	/* The host view QEMU exports (NULL: none): at view, the skeleton
	 * (read-only) with the host's directories host[] over it, each at its
	 * own path below view (read-only). */
	const char *view, *skel;
	const char *host[8];	/* NULL-terminated when short */
};
/* In the VMM's child, in its own user and mount namespaces: build the root,
 * pivot into it, let go of the host's tree, make it read-only. No
 * allocation. 0, or -errno with *ret_what the step that failed. */
int vm_jail_enter(const struct vm_jail *j, const char **ret_what);

/* The booted template waits for START: stop it and write its device state
 * to the file state; its RAM is already in the shared file, and
 * x-ignore-shared leaves it out of the stream. 0 or -errno, e set. */
int vm_snapshot_take(const struct vm_paths *p, const char *state, struct err *e);
/* A VMM started with -incoming defer: feed it the state and let it run.
 * 0 or -errno, e set. */
int vm_snapshot_restore(const struct vm_paths *p, const char *state, struct err *e);
/* A box's VM, its channels closed by the host: stop it and write its
 * whole state, RAM and devices, to the file state (a hibernate that keeps
 * its processes). Not saved, the VM runs on. 0 or -errno, e set. */
int vm_snapshot_save(const struct vm_paths *p, const char *state, struct err *e);
/* A VM that vm_snapshot_save left stopped goes on (its disks taken back
 * from the migration). 0 or -errno, e set. */
int vm_snapshot_cont(const struct vm_paths *p, struct err *e);

/* vm-ws.c: whether box s's workspace reaches its VM as a block image (a
 * box of an image with a copy-on-write --workspace; --rw and a box on the
 * host view keep the 9p share); that image, the box's own for its life
 * (beside its disk: DISK.ws, removed with it; linked from a cache keyed by
 * the tree's metadata), made at the first start. 0 or -errno, e set. */
struct box_spec;
bool vm_ws_block(const struct box_spec *s);
int vm_ws_image(const struct box_spec *s, char *out, size_t n, struct err *e);
/* A fresh guest's seed: whether the host's upper (a session's changes,
 * kept across boxes) has anything; send it as a change set (the guest's
 * CHANGES request at its START). 0 or -errno, e set. */
bool vm_ws_seed_wanted(const char *upper);
int vm_ws_seed_send(int chan, const char *upper, struct err *e);
