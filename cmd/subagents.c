#include "cmd/subagents.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The flags a child is given as the person gave them (ward run passes the
 * same ones, and its own --approve-cmd): the provider, the model, the
 * gate's mode and rules, the stream's limits. Without --approve a child,
 * a ward run, runs its calls in its own box without asking; the task call
 * that starts it is what the session's gate asks about. */
static const char passed[] = "pumaADYIW%c";
static const char *const passed_names[] = { "--provider", "--base-url", "--model", "--approve", "--allow", "--deny",
					    "--retries", "--idle-timeout", "--context-window", "--compact-at", "--cache-ttl" };

void subagents_init(struct subagents *sa)
{
	*sa = (struct subagents){ .led.fd = -1 };
}

void subagents_free(struct subagents *sa)
{
	ledger_free(&sa->led);
	sa->led.fd = -1;
}

struct agents *subagents_begin(struct subagents *sa, const struct run_flags *f, struct turn_cfg *cfg, const char *box,
			       const char *ws, const char *session)
{
	if (f->rw || !box || !box[0])
		return NULL;	/* a live tree: no task tool (as ward run) */
	struct err e = { 0 };
	if (sa->led.fd < 0 && ledger_new(&sa->led, &e) < 0) {
		sa->led.fd = -1;
		return NULL;
	}
	static char exe[PATH_MAX], rdir[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (k <= 0)
		return NULL;
	exe[k] = 0;
	sa->nargv = 0;
	for (size_t i = 0; i < f->ngiven && sa->nargv + 2 <= SUBAGENTS_ARGV; i++) {
		const char *at = f->given[i].c ? strchr(passed, f->given[i].c) : NULL;
		if (!at || !f->given[i].arg)
			continue;
		sa->argv[sa->nargv++] = passed_names[at - passed];
		sa->argv[sa->nargv++] = f->given[i].arg;
	}
	const char *replay_dir = NULL;
	if (cfg->replay_path && realpath(cfg->replay_path, rdir)) {
		char *sl = strrchr(rdir, '/');
		if (sl)
			*sl = 0;
		replay_dir = rdir;
	}
	cfg->ledger = &sa->led;
	struct agents_cfg ac = { .exe = exe, .argv = sa->argv, .nargv = sa->nargv, .box = box, .workspace = ws,
				 .ledger = cfg->ledger, .b = &cfg->b, .replay_dir = replay_dir, .session = session };
	struct agents *a = NULL;
	if (agents_new(&ac, &a, &e) < 0)
		return NULL;
	cfg->agents = a;
	return a;
}
