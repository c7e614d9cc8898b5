/* For the fuzz targets of cmd/'s readers: what they write to stderr while
 * they read, caught in a memfd, and its lines counted. ward's rule is one
 * line saying what was wrong for each bad input: "ward: ..." lines that
 * are not warnings are its error lines. */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct capture {
	int fd, saved;
};

static inline void capture_begin(struct capture *c)
{
	fflush(stderr);
	c->fd = memfd_create("stderr", MFD_CLOEXEC);
	c->saved = dup(2);
	if (c->fd < 0 || c->saved < 0 || dup2(c->fd, 2) < 0)
		abort();
}

/* Its error lines; each line is also checked to be one: no line of it
 * holds a control byte but the tab (the terminal rule, cmd/term.h). */
static inline int capture_end(struct capture *c)
{
	fflush(stderr);
	if (dup2(c->saved, 2) < 0)
		abort();
	close(c->saved);
	off_t n = lseek(c->fd, 0, SEEK_END);
	char *s = n > 0 ? malloc((size_t)n + 1) : NULL;
	int errors = 0;
	if (s && pread(c->fd, s, (size_t)n, 0) == n) {
		s[n] = 0;
		for (char *p = s, *nl; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			if (!nl)
				abort();	/* every message ends its line */
			for (char *q = p; q < nl; q++)
				if ((unsigned char)*q < 0x20 && *q != '\t')
					abort();
			if (!strncmp(p, "ward: ", 6) && strncmp(p, "ward: warning: ", 15))
				errors++;
		}
	}
	free(s);
	close(c->fd);
	return errors;
}

#include <ftw.h>

static inline int capture_rm(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(p);
}

/* The target's scratch directory, removed when the replay ends. */
static inline void capture_scratch_rm(const char *dir)
{
	if (dir[0])
		nftw(dir, capture_rm, 16, FTW_DEPTH | FTW_PHYS);
}
