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
