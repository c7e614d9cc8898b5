/* Fuzz target for the task file's reader (task/fleet.c), with the flags it
 * feeds as ward run applies them (each field through ward run's own flag,
 * then run_settings_apply, where a line may only narrow): the bytes after the
 * first as the task file, the first choosing the task's index (0 to 3)
 * and whether the file is trusted (--trust-task-file). Whatever the
 * bytes: an error is exactly one line, and no error has one; no line
 * holds a control byte; a task read has an id that is a name of its own
 * under --out (no '/', not "." or ".."), its text, and, untrusted, a
 * workspace and replay script under the task root only. Built with
 * libFuzzer when -Dfuzz=true (clang); otherwise main() replays the corpus
 * as a test. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "task/fleet.h"
#include "cmd/flags.h"
#include "cmd/flagtab.h"
#include "cmd/run-flags.h"
#include "cmd/run-settings.h"
#include "capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[PATH_MAX], file[PATH_MAX + 32], out[PATH_MAX + 32];
static struct flags_getopt g;

struct ctx {
	struct run_flags *f;
	struct fleet *fl;
};

static void scratch_rm(void)
{
	capture_scratch_rm(dir);
}

static void setup(void)
{
	if (dir[0])
		return;
	char t[] = "/tmp/fuzz-taskfile.XXXXXX";
	if (!mkdtemp(t) || !realpath(t, dir))
		abort();
	atexit(scratch_rm);
	/* What a line may name: the corpus's workspaces and a replay script
	 * under the root; outside it, the directory above. */
	static const char *const dirs[] = { "repos", "repos/calc", "repos/web", "issues" };
	char p[PATH_MAX + 64];
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, dirs[i]);
		if (mkdir(p, 0700) < 0)
			abort();
	}
	snprintf(p, sizeof(p), "%s/replay.json", dir);
	FILE *r = fopen(p, "w");
	if (!r || fputs("{\"turns\":[{\"text\":\"done\"}]}\n", r) < 0 || fclose(r))
		abort();
	snprintf(file, sizeof(file), "%s/tasks.jsonl", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	/* No config file, no setting from the environment: the line's. */
	snprintf(p, sizeof(p), "%s/config", dir);
	setenv("XDG_CONFIG_HOME", p, 1);
	const char *var, *prov;
	for (size_t i = 0; settings_env_at(i, &var, &prov) == 0; i++)
		unsetenv(var);
	unsetenv("SLURM_ARRAY_TASK_ID");
	unsetenv("JOB_COMPLETION_INDEX");
	flags_getopt_init(&g, &flagtab_run);
}

/* A trusted file's field as the command line's flag: what ward run's
 * run_opt does for the shared flags (its own flags of one invocation are
 * taken as given). */
static int given(void *ud, int c, const char *arg)
{
	struct ctx *x = ud;
	return run_flag_given(x->f, c, arg);
}

/* What ward run's run_opt_named does, over ward run's table of flags. */
static int flag(void *ud, const char *name, const char *arg, const char *field, struct err *e)
{
	struct ctx *x = ud;
	return run_flag_named(x->f, g.opts, name, arg, field, x->fl->where, given, x, e);
}

static bool beneath(const char *p)
{
	size_t n = strlen(dir);
	return !strncmp(p, dir, n) && (p[n] == 0 || p[n] == '/');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	unsigned how = size ? data[0] : 0;
	if (size) {
		data++;
		size--;
	}
	FILE *t = fopen(file, "wb");
	if (!t || (size && fwrite(data, 1, size, t) != size) || fclose(t))
		abort();
	char index[4];
	snprintf(index, sizeof(index), "%u", how & 3);
	struct fleet fl = { .file = file, .out = out, .index_arg = index, .trusted = how & 4, .note = { cmd_note, NULL } };
	struct run_flags *f = calloc(1, sizeof(*f));
	if (!f)
		abort();
	run_flags_init(f, RUN_APPROVE_DEFAULT);
	struct ctx x = { .f = f, .fl = &fl };
	struct capture c;
	capture_begin(&c);
	struct err e = { 0 };
	int r = fleet_load(&fl, flag, &x, &e);
	if (r < 0)
		cmd_error("%s", e.msg);	/* as ward run says it */
	int errors = capture_end(&c);
	if (r ? errors != 1 : errors != 0)
		abort();	/* an error is one line, and only an error has one */
	if (!r) {
		size_t n = strlen(fl.id);
		if (!n || n > FLEET_ID_MAX || strchr(fl.id, '/') || fl.id[0] == '.')
			abort();	/* DIR/ID is a directory of its own under --out */
		if (!fl.task || !*fl.task)
			abort();
		if (!fl.trusted && fl.workspace[0] && !beneath(fl.workspace))
			abort();	/* an untrusted line chose a host directory */
		if (!fl.trusted && f->model && !strncmp(f->model, "replay:", 7) && !beneath(f->model + 7))
			abort();	/* ... or a host file to read */
		/* The line's values applied as ward run applies them: only
		 * what narrows; a value that does not is one error line. */
		capture_begin(&c);
		int s = run_settings_apply(f, NULL);
		errors = capture_end(&c);
		if (s ? errors != 1 : errors != 0)
			abort();
	}
	fleet_free(&fl);
	free(f);
	return 0;
}

#include "replay.h"
