#define OSSLSO_TABLE_ONLY
#include "base/osslso.h"
#include "base/err.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Each function's name and its place in the table: the same word. */
static const struct {
	const char *name;
	size_t off;
} osslso_syms[] = {
#define OSSLSO_SYM(f) { #f, offsetof(struct osslso, f) },
	OSSLSO_FNS(OSSLSO_SYM)
#undef OSSLSO_SYM
};

static struct osslso osslso_table;
static pthread_once_t osslso_once = PTHREAD_ONCE_INIT;
static int osslso_r = -ENOENT;
static char osslso_why[256];

static void osslso_open(void)
{
	/* libssl needs libcrypto and brings it; RTLD_LOCAL: its names are
	 * not everyone's (no library of ours resolves against them). */
	void *h = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(osslso_why, sizeof(osslso_why), "cannot load OpenSSL: %s (apt-get install libssl3)", dlerror());
		osslso_r = -ENOENT;
		return;
	}
	for (size_t i = 0; i < sizeof(osslso_syms) / sizeof(osslso_syms[0]); i++) {
		/* libssl's own dependencies answer for libcrypto's names. */
		void *f = dlsym(h, osslso_syms[i].name);
		if (!f) {
			snprintf(osslso_why, sizeof(osslso_why),
				 "cannot load OpenSSL: libssl.so.3 has no %s (ward needs OpenSSL 3)", osslso_syms[i].name);
			osslso_r = -ENOSYS;
			return;
		}
		memcpy((char *)&osslso_table + osslso_syms[i].off, &f, sizeof(f));
	}
	osslso_r = 0;
}

int osslso_load(struct err *e)
{
	pthread_once(&osslso_once, osslso_open);
	return osslso_r < 0 ? err_set(e, osslso_r, "%s", osslso_why) : 0;
}

const struct osslso *osslso_fns(void)
{
	pthread_once(&osslso_once, osslso_open);
	if (osslso_r < 0) {
		/* Nothing to return: the caller has no way to go on. */
		dprintf(STDERR_FILENO, "ward: %s\n", osslso_why);
		_exit(127);
	}
	return &osslso_table;
}
