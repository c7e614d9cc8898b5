/* The host view: the root an ns box without an image is made over (its
 * root overlay's lower). A skeleton ward builds from the host: the top
 * directories as the host has them (symlinks into /usr where it is
 * merged), empty mount points (/usr, /var/lib/dpkg, /proc, /dev, ...: the
 * host's /usr and package database are overlays of their own), and a
 * minimal /etc: copies of the host files the dynamic linker and common
 * tools need, only what everyone may read (never shadow, keys or the
 * resolver), and generated passwd and group. Built once for each state of
 * the files it copies, under $XDG_CACHE_HOME/ward/hostview/HASH, and
 * never written after (the box writes its own layer). */
#pragma once
#include <stddef.h>

#include "base/err.h"

/* The skeleton for the host as it is now, made if it is not there. */
int hostview_get(char *out, size_t n, struct err *e);
/* What of the host's own a host view has over the skeleton, each at its
 * own path below it (read-only, and each box's changes in its own layer):
 * /usr, the package database, and the top directories the host does not
 * link into /usr (the ns box's overlays over the skeleton, nsroot.c, and
 * the vm backend's export, vm.c). Into out (at most max); how many. */
size_t hostview_host_dirs(const char **out, size_t max);
/* The host's top directories beside /usr (bin, sbin, lib, ...): a
 * symlink into /usr where the host's /usr is merged, else a directory of
 * its own. One list for the skeleton, the ns box's root and the vm
 * backend's VMM jail. */
#define HOSTVIEW_TOPS 6
extern const char *const hostview_tops[HOSTVIEW_TOPS];
/* fn(arg, name, link) for each top directory the host has, as it has it:
 * link its symlink's target, or NULL for a directory. Stops at fn's first
 * error and returns it; -errno where a symlink cannot be read. *ret_top
 * (where not NULL): the top it was at. No allocation (a box's first
 * process and a VMM's jail call it). */
int hostview_tops_each(int (*fn)(void *arg, const char *name, const char *link), void *arg, const char **ret_top);
/* Each top directory the host has, made at root/NAME: the host's symlink
 * where it is one, else bind(arg, "/NAME", root/NAME) (a read-only bind
 * of the host's). 0, or -errno with what the step that failed ("readlink
 * /lib", "symlink root/bin", "bind /lib"; what must start empty). No
 * allocation. */
int hostview_tops_make(const char *root, int (*bind)(void *arg, const char *host, const char *dst), void *arg,
		       char *what, size_t n);
