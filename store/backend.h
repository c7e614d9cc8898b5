/* Inside the store layer: what a backend (dir.c, s3.c) gives store.c, and
 * the one way a file is committed that store.c gives them. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Each gets a key that store.c has checked (store.h says what a key is). */
struct store_backend {
	/* Store size bytes read from in_fd (a regular file, at offset 0). */
	int (*put)(void *impl, const char *key, int in_fd, uint64_t size, struct err *e);
	/* Write the object to out_fd; -ENOENT when there is none. */
	int (*get)(void *impl, const char *key, int out_fd, struct err *e);
	/* Remove it; missing is 0. */
	int (*del)(void *impl, const char *key, struct err *e);
	void (*free)(void *impl);
};

/* Each open fills *ret (its impl) and desc (store_describe's text). */
extern const struct store_backend dir_backend;
int dir_open(const char *path, void **ret, char *desc, size_t desc_len, struct err *e);
extern const struct store_backend s3_backend;
/* bucket_prefix: what follows "s3://". */
int s3_open(const char *bucket_prefix, void **ret, char *desc, size_t desc_len, struct err *e);

/* fd (written as tmp in dirfd) becomes name, durably: fsync fd, rename tmp
 * over name, fsync dirfd. On failure tmp is removed. what names the file
 * in the message. 0 or -errno. */
int store_commit(int dirfd, int fd, const char *tmp, const char *name, const char *what,
		 struct err *e);
/* 0 for a good key (store.h says what that is), else -EINVAL and why. */
int store_key_check(const char *key, struct err *e);
