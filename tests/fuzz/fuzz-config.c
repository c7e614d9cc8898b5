/* Fuzz target for the config files' reader (task/settings.c) as ward run,
 * ward config and the session call it: the bytes as the user's
 * $XDG_CONFIG_HOME/ward/config.json, or as a project's .ward/config.json
 * in the workspace (a stranger's: it may only narrow), or as both.
 * Whatever the bytes, run_settings_apply ends in 0 with no error line, or in
 * an exit code after exactly one; no line it writes holds a control byte;
 * a project's file sets only keys a project may set; and reading the
 * same files again gives the same answer. Built with libFuzzer when
 * -Dfuzz=true (clang); otherwise main() replays the corpus as a test. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/run-flags.h"
#include "cmd/run-settings.h"
#include "capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[PATH_MAX], user[PATH_MAX + 32], ws[PATH_MAX + 8], project[PATH_MAX + 32];

static void scratch_rm(void)
{
	capture_scratch_rm(dir);
}

static void setup(void)
{
	if (dir[0])
		return;
	char t[] = "/tmp/fuzz-config.XXXXXX";
	if (!mkdtemp(t))
		abort();
	snprintf(dir, sizeof(dir), "%s", t);
	atexit(scratch_rm);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/ward", dir);
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	if (mkdir(p, 0700) < 0 || mkdir(ws, 0700) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/.ward", ws);
	if (mkdir(p, 0700) < 0)
		abort();
	snprintf(user, sizeof(user), "%s/ward/config.json", dir);
	snprintf(project, sizeof(project), "%s/.ward/config.json", ws);
	setenv("XDG_CONFIG_HOME", dir, 1);
	/* Only the files: no setting from the environment. */
	const char *var, *prov;
	for (size_t i = 0; settings_env_at(i, &var, &prov) == 0; i++)
		unsetenv(var);
}

static void put(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort();
}

static int apply(struct settings_report *rep, int *ret_errors)
{
	struct run_flags *f = calloc(1, sizeof(*f));
	if (!f)
		abort();
	run_flags_init(f, RUN_APPROVE_DEFAULT);
	f->workspace = ws;
	struct capture c;
	capture_begin(&c);
	int r = run_settings_apply(f, rep);
	*ret_errors = capture_end(&c);
	free(f);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	/* The first byte says whose file the rest is. */
	unsigned who = size ? data[0] % 3 : 0;
	if (size) {
		data++;
		size--;
	}
	unlink(user);
	unlink(project);
	if (who != 1)
		put(user, data, size);
	if (who != 0)
		put(project, data, size);
	struct settings_report *rep = calloc(1, sizeof(*rep));
	if (!rep)
		abort();
	int errors, again;
	int r = apply(rep, &errors);
	if (r ? errors != 1 : errors != 0)
		abort();	/* an error is one line, and only an error has one */
	for (size_t i = 0; !r && i < rep->n && i < SETTINGS_APPLIED_MAX; i++) {
		const struct settings_applied *a = &rep->applied[i];
		const struct settings_key *k = settings_key_by_flag(a->c);
		if (a->src == SETTINGS_PROJECT && (!k || k->project == NARROW_NEVER))
			abort();	/* a project set what only the user may */
	}
	if (apply(rep, &again) != r || again != errors)
		abort();
	free(rep);
	return 0;
}

#include "replay.h"
