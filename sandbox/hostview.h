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
 * link into /usr. Into out (at most max); how many. */
size_t hostview_host_dirs(const char **out, size_t max);
