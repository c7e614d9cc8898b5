/* Scope-bound cleanup for a short fixed list of resources, and hand-off. */
#pragma once
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>

static inline void cleanup_freep(void *p) { free(*(void **)p); }
static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void cleanup_fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void cleanup_closedirp(DIR **d) { if (*d) closedir(*d); }

#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(cleanup_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(cleanup_closedirp)))

#define TAKE_PTR(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })
#define TAKE_FD(fd) ({ int _t = (fd); (fd) = -1; _t; })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* A constant's digits as a string literal, for text built at compile time
 * from the constant itself (a tool's description), never a copy of it. */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
