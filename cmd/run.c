/* ward run: one task to its stop, with no terminal needed. Plain mode: the
 * model's answer on stdout, progress on stderr. --json: one JSON object per
 * line on stdout for every event, ending with a "result" event. */
#include "cmd/cmd.h"
#include "base/json.h"
#include "cmd/flagtab.h"
#include "cmd/term.h"
#include "cmd/session.h"
#include "task/fleet.h"
#include "cmd/run-out.h"
#include "cmd/run-approver.h"
#include "cmd/run-watchdog.h"
#include "cmd/rewind.h"
#include "task/hook.h"
#include "cmd/mcprun.h"
#include "cmd/run-settings.h"
#include "base/buf.h"
#include "base/child.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/fdio.h"
#include "base/parse.h"
#include "base/proctitle.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "mcp/mcp.h"
#include "sandbox/box.h"
#include "workspace/layers.h"
#include "workspace/wsdiff.h"
#include "tools/tool.h"
#include "turn/schema.h"
#include "turn/turn.h"
#include "turn/agent.h"
#include "turn/ledger.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN_TASK_MAX (1u << 20)

/* ward run's flags as getopt_long takes them (cmd/flagtab.c). */
static struct flags_getopt run_getopt;
#define run_opts (run_getopt.opts)

enum { EXIT_BOUND = 2, EXIT_REFUSED = 3, EXIT_MODEL_REFUSED = 5, EXIT_AUTH = 6 };

static int exit_for(enum turn_stop_kind k)
{
	switch (k) {
	case TURN_DONE:
		return EXIT_OKAY;
	case TURN_ROUND_CAP:
	case TURN_DEADLINE:
	case TURN_TOKENS:
	case TURN_COST:
	case TURN_CALL_CAP:
		return EXIT_BOUND;
	case TURN_CANCELLED:
		return EXIT_CANCELLED;
	case TURN_REFUSED:
		return EXIT_REFUSED;
	case TURN_MODEL_REFUSED:
		return EXIT_MODEL_REFUSED;
	case TURN_BOX_ERROR:
		return EXIT_NOBOX;
	case TURN_AUTH_ERROR:
		return EXIT_AUTH;
	case TURN_PROVIDER_ERROR:
	case TURN_OUTPUT_INVALID:
		return EXIT_FAIL;
	}
	return EXIT_FAIL;
}

static int read_task(const char *arg, char **ret)
{
	if (strcmp(arg, "-")) {
		*ret = strdup(arg);
		return *ret ? 0 : -ENOMEM;
	}
	struct buf b;
	buf_init(&b, RUN_TASK_MAX);
	char tmp[4096];
	for (;;) {
		ssize_t n = fdio_read_some(0, tmp, sizeof(tmp));
		if (n < 0) {
			buf_free(&b);
			return (int)n;
		}
		if (n == 0)
			break;
		if (buf_append(&b, tmp, (size_t)n) < 0) {
			buf_free(&b);
			return -EFBIG;
		}
	}
	buf_append(&b, "", 0);
	*ret = b.data;
	return 0;
}

/* The watchdog: a small process that outlives a stuck ward. If ward is
 * still running at deadline + grace (a bug in the loop, a SIGSTOP), the
 * watchdog kills it with SIGKILL and records that in the journal; the
 * keeper then destroys the box, whose owner has died. It dies with ward
 * otherwise (PR_SET_PDEATHSIG). */
/* --box NAME: connected, and its workspace made the run's (another
 * --workspace is an error): what the box changed there is the run's to
 * report, write and apply. ws gets it ("" for none); born_ns, when the box
 * was made: anything in its layers may date from then. */
static int run_box_given(struct run_flags *f, struct box_conn **ret, char *ws, int64_t *born_ns)
{
	struct err e = { 0 };
	struct box_conn *c;
	if (box_connect(f->box_name, &c, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_UNKNOWN_BOX;
	}
	cJSON *info = NULL;
	if (box_info(c, &info, &e) < 0) {
		cmd_error("box %s: %s", f->box_name, e.msg);
		box_disconnect(c);
		return EXIT_UNKNOWN_BOX;
	}
	const char *w = json_str(info, "workspace"), *mode = json_str(info, "workspace_mode");
	const cJSON *created = cJSON_GetObjectItemCaseSensitive(info, "created");
	char given[PATH_MAX];
	if (f->workspace && (!realpath(f->workspace, given) || !w || strcmp(given, w))) {
		cmd_error("--workspace %s: box %s works on %s; leave --workspace out with --box", f->workspace,
			  f->box_name, w ? w : "no directory");
		cJSON_Delete(info);
		box_disconnect(c);
		return EXIT_USAGE;
	}
	snprintf(ws, PATH_MAX, "%s", w ? w : "");
	if (w)
		f->workspace = ws;
	f->rw = mode && !strcmp(mode, "read-write");
	*born_ns = cJSON_IsNumber(created) ? (int64_t)created->valuedouble * 1000000000 : 0;
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(info, "labels");
	_cleanup_free_ char *lt = cJSON_GetArraySize(labels) ? cJSON_PrintUnformatted(labels) : NULL;
	if (lt && strlen(lt) < sizeof(f->box_labels))
		snprintf(f->box_labels, sizeof(f->box_labels), "%s", lt);
	cJSON_Delete(info);
	*ret = c;
	return 0;
}

static void hooks_freep(struct hooks **h)
{
	hooks_free(*h);
}

static void schema_freep(struct schema **s)
{
	schema_free(*s);
}

/* --output-schema FILE: read and checked before anything runs. */
static int output_schema_load(const char *path, struct schema **ret)
{
	if (*ret) {
		cmd_error("--output-schema: give it once");
		return -1;
	}
	char *data = NULL;
	size_t n = 0;
	int r = fdio_read_file(AT_FDCWD, path, 1u << 20, &data, &n);
	if (r < 0) {
		cmd_error("--output-schema %s: %s%s", path, strerror(-r), r == -EFBIG ? " (at most 1 MiB)" : "");
		return -1;
	}
	struct err e = { 0 };
	r = schema_load(data, n, path, ret, &e);
	free(data);
	if (r < 0) {
		cmd_error("--output-schema %s", e.msg);
		return -1;
	}
	return 0;
}

/* What ward run's own flags set, beside the shared ones. */
struct run_ctx {
	struct run_flags *f;
	struct run_out *out;
	const char *patch;
	const char *last_msg;	/* -o FILE */
	bool keep_changes;	/* a task's layers stay after its patch is written */
	bool apply;
	struct schema **schema;
	struct run_approver *approver;
	struct mcpconf *mc;
	struct fleet *fl;
	int max_subagents;	/* -1: the default */
	int agent_depth;
	int agent_ledger;	/* -1: none */
	const char *agent_session;	/* a subagent's: its parent's session */
	struct task_limits share;	/* its share_*: set after run_flags_finish (which rebuilds the budgets) */
};

/* One flag by its getopt value: 0, 1 for --help, or -1 after an error
 * line. From the command line and from a task file's fields alike. */
static int run_opt(struct run_ctx *x, int c, const char *arg)
{
	int k = run_flag_given(x->f, c, arg);
	if (k != 0)
		return k < 0 ? -1 : 0;
	switch (c) {
	case 'j':
		x->out->json = true;
		return 0;
	case 'P':
		x->patch = arg;
		return 0;
	case 'X':
		x->apply = true;
		return 0;
	case 'O':
		return output_schema_load(arg, x->schema) < 0 ? -1 : 0;
	case 'o':
		if (!*arg) {
			cmd_error("--output-last-message: give a file name");
			return -1;
		}
		x->last_msg = arg;
		return 0;
	case 'G':
		x->approver->cmd = arg;
		return 0;
	case FLAG_RUN_TASK_FILE:
		x->fl->file = arg;
		return 0;
	case FLAG_RUN_TASK_INDEX:
		x->fl->index_arg = arg;
		return 0;
	case FLAG_RUN_OUT:
		x->fl->out = arg;
		return 0;
	case FLAG_RUN_TRUST_TASKS:
		x->fl->trusted = true;
		return 0;
	case FLAG_RUN_TASK_ROOT:
		x->fl->root_arg = arg;
		return 0;
	case FLAG_RUN_KEEP_CHANGES:
		x->keep_changes = true;
		return 0;
	case FLAG_RUN_AGENT_ID:
	case FLAG_RUN_AGENT_PARENT:
		if (!*arg || strlen(arg) > 60 || arg[strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789.")]) {
			cmd_error("--%s: \"%s\" is not an agent id (a1, a1.a2, ...)", c == FLAG_RUN_AGENT_ID ? "agent-id" : "agent-parent",
				  arg);
			return -1;
		}
		if (c == FLAG_RUN_AGENT_ID)
			x->out->agent = arg;
		else
			x->out->parent = arg;
		return 0;
	case FLAG_RUN_AGENT_SESSION:
		if (!*arg || strlen(arg) > 60 || arg[strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789-")]) {
			cmd_error("--agent-session: \"%s\" is not a session id (see `ward sessions`)", arg);
			return -1;
		}
		x->agent_session = arg;
		return 0;
	case FLAG_RUN_MAX_SUBAGENTS:
	case FLAG_RUN_AGENT_DEPTH:
	case FLAG_RUN_AGENT_LEDGER: {
		uint64_t v;
		const char *name = c == FLAG_RUN_MAX_SUBAGENTS ? "max-subagents" : c == FLAG_RUN_AGENT_DEPTH ? "agent-depth" : "agent-ledger";
		if (parse_u64(arg, &v) < 0 || v > 64) {
			cmd_error("--%s: \"%s\" is not a number from 0 to 64", name, arg);
			return -1;
		}
		if (c == FLAG_RUN_MAX_SUBAGENTS)
			x->max_subagents = (int)v;
		else if (c == FLAG_RUN_AGENT_DEPTH)
			x->agent_depth = (int)v;
		else
			x->agent_ledger = (int)v;
		return 0;
	}
	case FLAG_RUN_AGENT_MAX_CALLS:
	case FLAG_RUN_AGENT_MAX_TOKENS: {
		uint64_t v;
		if (parse_u64(arg, &v) < 0 || v == 0 || v > 1000000000000ull) {
			cmd_error("--%s: \"%s\" is not a positive number", c == FLAG_RUN_AGENT_MAX_CALLS ? "agent-max-calls" : "agent-max-tokens",
				  arg);
			return -1;
		}
		if (c == FLAG_RUN_AGENT_MAX_CALLS)
			x->share.share_calls = v > 1000000 ? 1000000 : (int)v;
		else
			x->share.share_tokens = (int64_t)v;
		return 0;
	}
	case FLAG_RUN_AGENT_MAX_COST: {
		char *end;
		double d = strtod(arg, &end);
		if (end == arg || *end || !(d > 0) || d > 1e6) {
			cmd_error("--agent-max-cost: \"%s\" is not an amount in USD (e.g. 0.05)", arg);
			return -1;
		}
		x->share.share_cost = d;
		return 0;
	}
	case 'h':
		return 1;
	}
	k = mcprun_flag(x->mc, c, arg);
	if (k == 0) {
		cmd_error("run: unknown flag; see `ward run --help`");
		return -1;
	}
	return k < 0 ? -1 : 0;
}

/* A task file's field, by the flag's long name: as the command line's
 * flag (a trusted file), or as a line's field, which only narrows. */
static int run_opt_given(void *ud, int c, const char *arg)
{
	return run_opt(ud, c, arg);
}

static int run_opt_named(void *ud, const char *name, const char *arg, const char *field, struct err *e)
{
	struct run_ctx *x = ud;
	return run_flag_named(x->f, run_opts, name, arg, field, x->fl->where, run_opt_given, x, e);
}

/* ward run's result: what --json's last line and a task's result.json
 * hold. */
static cJSON *run_result(const struct turn_stop *stop, int code, const struct session *s, const char *box,
			 const char *model, cJSON *files, bool applied, const char *patch, cJSON *jobs)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "type", "result");
	cJSON_AddStringToObject(j, "stop", turn_stop_name(stop->kind));
	cJSON_AddStringToObject(j, "why", stop->why);
	cJSON_AddNumberToObject(j, "exit_code", code);
	cJSON_AddStringToObject(j, "session", s->j.id);
	cJSON_AddStringToObject(j, "box", box);
	cJSON_AddStringToObject(j, "model", model);
	cJSON_AddNumberToObject(j, "rounds", stop->rounds);
	cJSON_AddNumberToObject(j, "calls", stop->calls);
	cJSON_AddNumberToObject(j, "refused", stop->refused);
	usage_json(j, &stop->usage);
	if (stop->cost >= 0)
		cJSON_AddNumberToObject(j, "cost_usd", stop->cost);
	else
		cJSON_AddNullToObject(j, "cost_usd");
	_cleanup_free_ char *final = turn_final_text(s->messages);
	cJSON_AddStringToObject(j, "final_text", final ? final : "");
	if (stop->output)
		cJSON_AddItemReferenceToObject(j, "output", stop->output);
	cJSON_AddNumberToObject(j, "dispatch_us_median", (double)stop->dispatch_us_median);
	cJSON_AddNumberToObject(j, "dispatch_us_max", (double)stop->dispatch_us_max);
	cJSON_AddItemReferenceToObject(j, "changed_files", files);
	cJSON_AddItemReferenceToObject(j, "jobs", jobs);
	cJSON_AddBoolToObject(j, "applied", applied);
	if (patch)
		cJSON_AddStringToObject(j, "patch", patch);
	return j;
}

/* The box's background jobs as the run leaves them. Those still running
 * end with a run's own box (destroyed, or hibernated: no process outlives
 * either) and go on in a box that was given (--box): each says which,
 * in the result and, plain, on stderr. */
static cJSON *run_jobs(struct session *s, const char *box, bool own_box, bool quiet)
{
	cJSON *jobs = NULL;
	struct err e = { 0 };
	if (!s->box || box_is_hibernated(box) || box_jobs(s->box, &jobs, &e) < 0)
		return cJSON_CreateArray();
	cJSON *j;
	cJSON_ArrayForEach(j, jobs) {
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "state"));
		bool running = st && !strcmp(st, "running");
		cJSON_AddBoolToObject(j, "running_at_end", running);
		if (!running)
			continue;
		cJSON_AddBoolToObject(j, "ended_with_box", own_box);
		if (quiet)
			continue;
		const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "command"));
		_cleanup_free_ char *c = utf8_term_safe(cmd ? cmd : "", strlen(cmd ? cmd : ""));
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
		term_printf(stderr, "ward: job %d was running when the run ended: %s: %s\n",
			    cJSON_IsNumber(id) ? (int)id->valuedouble : 0,
			    own_box ? "it ended with the run's box" : "it goes on in the box", c ? c : "");
	}
	return jobs;
}

static void out_close(struct run_out *o)
{
	if (o->to)
		fclose(o->to);
	o->to = NULL;
}

/* The task tool (turn/agent.h) and the task's ledger: a subagent's from
 * its parent (--agent-ledger), a run's own otherwise. A live tree (--rw)
 * and a run as deep as AGENT_DEPTH_MAX offer no task tool. */
static int run_agents(struct run_ctx *x, struct turn_cfg *cfg, const char *box, const char *workspace,
		      const char *session, const char *const *argv, size_t nargv, struct ledger *led, struct agents **ret)
{
	struct err e = { 0 };
	if (x->agent_ledger >= 0) {
		if (ledger_attach(x->agent_ledger, led, &e) < 0) {
			cmd_error("%s", e.msg);
			return EXIT_USAGE;
		}
		cfg->ledger = led;
	}
	if (x->max_subagents == 0 || x->agent_depth >= AGENT_DEPTH_MAX || x->f->rw)
		return 0;
	if (!cfg->ledger) {
		if (ledger_new(led, &e) < 0) {
			cmd_error("%s", e.msg);
			return EXIT_FAIL;
		}
		cfg->ledger = led;
	}
	static char exe[PATH_MAX], rdir[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (k <= 0)
		return 0;	/* no subagents where ward cannot find itself */
	exe[k] = 0;
	const char *replay_dir = NULL;
	if (cfg->replay_path && realpath(cfg->replay_path, rdir)) {
		char *sl = strrchr(rdir, '/');
		if (sl)
			*sl = 0;
		replay_dir = rdir;
	}
	struct agents_cfg ac = { .exe = exe, .argv = argv, .nargv = nargv, .box = box, .workspace = workspace,
				 .max = x->max_subagents, .depth = x->agent_depth, .ledger = cfg->ledger, .b = &cfg->b,
				 .replay_dir = replay_dir, .id = x->out->agent, .session = session };
	if (agents_new(&ac, ret, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	cfg->agents = *ret;
	return 0;
}

static void fleet_freep(struct fleet *fl)
{
	fleet_free(fl);
}

/* A task that ended before its model was asked: its result.json, or one
 * line saying why there is none. */
static void run_fleet_early(struct fleet *fl, const char *stop, const char *why, int code, const char *session,
			    const char *journal_path)
{
	struct err e = { 0 };
	if (fleet_finish_early(fl, stop, why, code, session, journal_path, &e) < 0)
		cmd_error("%s", e.msg);
}

/* One ward run as it goes from step to step (run_run's list). */
struct run_state {
	int argc;
	char **argv;
	struct hooks **hooks;
	struct run_ctx *x;
	struct run_flags *f;
	struct run_out *out;
	struct fleet *fl;
	char *task;
	const char *patch;
	bool apply;
	char fl_patch[PATH_MAX + 32];
	/* The flags a subagent is given as they were given here. */
	const char *pass_argv[96];
	char pass_names[96][24];
	size_t npass;
	/* The box: the one named, or a new one for this run that dies with it. */
	char name[BOX_NAME_MAX + 1], box_ws[PATH_MAX];
	const char *box_name;
	bool own_box, kept;
	struct box_conn *given;
	int64_t since_ns;
	struct session s;
	char wsabs[PATH_MAX];
	const char *workspace;
	struct session_ws sw;
	struct mcp *mcp;
	struct ledger led;
	struct agents *agents;
};

static void run_state_free(struct run_state *st)
{
	ledger_free(&st->led);
	free(st->task);
}

/* A step that ends the run as a success before its task runs (--help, a
 * task finished before). */
#define RUN_STOP_OKAY (-1)

/* Signals are read by the loop; block them from the start (a task's
 * SIGTERM before its box is up is then seen by the loop, not lost). An
 * inherited SIG_IGN (a background job of a script) would discard them
 * before the loop could see them: ward's own handling replaces it. */
static void run_signals(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	/* A hangup ends the run as SIGTERM does (nohup's SIG_IGN is kept). */
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The flags, and those a subagent is passed as they were given here: the
 * same provider, model, gate rules and limits of a stream. */
static int run_parse(struct run_state *st)
{
	int argc = st->argc;
	char **argv = st->argv;
	static const char *const passed[] = { "provider", "base-url", "model", "approve", "allow", "deny",
					      "approve-cmd", "retries", "idle-timeout", "context-window",
					      "compact-at", "cache-ttl", NULL };
	optind = 1;
	opterr = 0;
	int c;
	flags_getopt_init(&run_getopt, &flagtab_run);
	while ((c = getopt_long(argc, argv, run_getopt.shorts, run_opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return cmd_bad_flag("run", c, argv);
		int k = run_opt(st->x, c, optarg);
		if (k < 0)
			return EXIT_USAGE;
		for (const struct option *o = run_opts; o->name && st->npass + 2 <= ARRAY_SIZE(st->pass_argv); o++) {
			if (o->val != c)
				continue;
			for (const char *const *p = passed; *p; p++)
				if (!strcmp(*p, o->name)) {
					snprintf(st->pass_names[st->npass], sizeof(st->pass_names[0]), "--%s", o->name);
					st->pass_argv[st->npass] = st->pass_names[st->npass];
					st->npass++;
					if (o->has_arg)
						st->pass_argv[st->npass++] = optarg;
				}
			break;
		}
		if (k > 0) {
			flags_help(stdout, &flagtab_run);
			return RUN_STOP_OKAY;
		}
	}
	/* A subagent does not outlive its parent, however the parent ended
	 * (a SIGKILL included): SIGTERM, which the loop reads as a stop
	 * (its calls cancelled, its box destroyed). */
	if (st->x->agent_depth > 0)
		prctl(PR_SET_PDEATHSIG, SIGTERM);
	return 0;
}

/* The task: a task file's line, the argument, or stdin's text. */
static int run_read_task_text(struct run_state *st)
{
	int argc = st->argc;
	char **argv = st->argv;
	struct fleet *fl = st->fl;
	if (fl->file) {
		if (optind != argc) {
			cmd_error("--task-file: the task is the file's; give no TASK argument");
			return EXIT_USAGE;
		}
		struct err e = { 0 };
		int r = fleet_load(fl, run_opt_named, st->x, &e);
		if (r < 0) {
			cmd_error("%s", e.msg);
			return r == -ENOMEM ? EXIT_FAIL : EXIT_USAGE;
		}
		st->task = strdup(fl->task);
		if (!st->task)
			return EXIT_FAIL;
		if (st->f->box_name || st->f->resume) {
			cmd_error("--task-file: a task has its own box and session (--box and --resume are not for it)");
			return EXIT_USAGE;
		}
	} else {
		if (fl->out || fl->index_arg || fl->root_arg || fl->trusted) {
			cmd_error("--out, --task-index, --task-root and --trust-task-file are for --task-file");
			return EXIT_USAGE;
		}
		if (optind != argc - 1) {
			cmd_error("give the task as one argument (quote it), or - to read it from stdin; see `ward run "
				  "--help`");
			return EXIT_USAGE;
		}
		int r = read_task(argv[optind], &st->task);
		if (r < 0) {
			cmd_error("cannot read the task from stdin: %s", strerror(-r));
			return EXIT_USAGE;
		}
	}
	if (!st->task[strspn(st->task, " \t\r\n")]) {
		cmd_error("the task is empty");
		return EXIT_USAGE;
	}
	return 0;
}

/* The settings finished, the subagent shares, the approver, the hooks, and
 * for a task of a file what an earlier run of it left (skip, resume). */
static int run_prepare(struct run_state *st)
{
	struct run_flags *f = st->f;
	struct turn_cfg *cfg = &f->cfg;
	struct fleet *fl = st->fl;
	st->patch = st->x->patch;
	st->apply = st->x->apply;
	int r = run_flags_finish(f);
	if (r)
		return r;
	cfg->b.share_calls = st->x->share.share_calls;
	cfg->b.share_tokens = st->x->share.share_tokens;
	cfg->b.share_cost = st->x->share.share_cost;
	struct price share_pr;
	if (cfg->b.share_cost > 0 && !price_for(cfg->pcfg.model, &share_pr)) {
		cmd_error("--agent-max-cost: ward does not know the prices of %s", cfg->pcfg.model);
		return EXIT_USAGE;
	}
	if (st->x->approver->cmd) {
		f->gate.ask = run_approver_ask;
		f->gate.ask_ud = st->x->approver;
	}
	if (run_settings_hooks_install(cfg, &cfg->b.deadline_ms, st->hooks))
		return EXIT_USAGE;
	/* --json: an image's pull says nothing on stderr. (A task's own events
	 * file is not the person's --json.) */
	f->quiet = st->out->json;
	if (fl->file) {
		struct err e = { 0 };
		r = fleet_prepare(fl, &e);
		if (r == 1)
			return RUN_STOP_OKAY;	/* finished before */
		if (r < 0) {
			cmd_error("%s", e.msg);
			return r == -EBUSY ? EXIT_TEMPFAIL : r == -EEXIST || r == -ENAMETOOLONG ? EXIT_USAGE : EXIT_FAIL;
		}
		if (fl->resume[0])
			f->resume = fl->resume;
		/* Its events, appended over its runs, the owner's only; its patch. */
		char ev[PATH_MAX + 32];
		fleet_events_path(fl, ev, sizeof(ev));
		int efd = open(ev, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		st->out->to = efd < 0 ? NULL : fdopen(efd, "a");
		if (!st->out->to) {
			cmd_error("task %s: cannot open %s: %s", fl->id, ev, strerror(errno));
			if (efd >= 0)
				close(efd);
			return EXIT_FAIL;
		}
		st->out->json = true;
		fleet_patch_path(fl, st->fl_patch, sizeof(st->fl_patch));
		st->patch = f->rw ? NULL : st->fl_patch;	/* (a live tree has no patch) */
	}
	/* The flags were applied again over the settings: this is run's own. */
	cfg->output_schema = *st->x->schema;
	cfg->sinks[cfg->nsinks++] = (struct turn_sink){ run_out_event, st->out };
	if (f->deadline_ms)
		cfg->b.deadline_ms = now_ms() + f->deadline_ms;
	return 0;
}

/* A box that was named (--box), and whether --patch can be written. */
static int run_box_named(struct run_state *st)
{
	st->box_name = st->f->box_name;
	st->own_box = !st->box_name;
	st->since_ns = now_file_ns();
	int r;
	if (!st->own_box && (r = run_box_given(st->f, &st->given, st->box_ws, &st->since_ns)) != 0)
		return r;
	if (st->patch && st->f->rw && !st->fl->file) {
		cmd_error("--patch: the box changes %s directly (--rw): there is no patch to write",
			  st->own_box ? "the workspace" : "its workspace");
		if (st->given)
			box_disconnect(st->given);
		return EXIT_USAGE;
	}
	return 0;
}

/* The session: its journal (a subagent's names its parent), its
 * workspace, and from here the changes a box makes to the tree. */
static int run_session_open(struct run_state *st)
{
	struct fleet *fl = st->fl;
	int r = session_start(st->f, &st->s, st->wsabs);
	if (r) {
		if (st->given)
			box_disconnect(st->given);
		if (fl->file)
			run_fleet_early(fl, "error", "the task's session could not be started (ward said why)", r, NULL,
					   NULL);
		return r;
	}
	if (fl->file)
		fleet_session(fl, st->s.j.id, st->s.j.path);
	if (st->x->agent_depth > 0 && !st->f->resume) {
		/* A subagent's session is its parent's child: ward sessions
		 * lists it under the parent's. */
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "agent", st->out->agent ? st->out->agent : "");
		cJSON_AddStringToObject(rec, "parent", st->out->parent ? st->out->parent : "main");
		if (st->x->agent_session)
			cJSON_AddStringToObject(rec, "parent_session", st->x->agent_session);
		journal_write(&st->s.j, "agent", rec);
		cJSON_Delete(rec);
	}
	if (st->box_ws[0])
		snprintf(st->wsabs, sizeof(st->wsabs), "%s", st->box_ws);	/* a resumed session's too */
	st->workspace = st->wsabs[0] ? st->wsabs : NULL;
	st->sw = (struct session_ws){ .session = st->s.j.id, .workspace = st->workspace,
				      .box = st->own_box ? NULL : st->box_name };
	/* From here a box may take its own copy of the tree's files. */
	if (!st->f->rw)
		session_changes_begin(&st->sw, st->since_ns);
	return 0;
}

/* The run's own box, made; or the one given. */
static int run_box_make(struct run_state *st)
{
	struct fleet *fl = st->fl;
	if (!st->own_box) {
		st->s.box = st->given;
		return 0;
	}
	int r = session_box(&st->s, st->f, st->workspace, false, st->name, sizeof(st->name), &st->kept);
	if (r) {
		if (fl->file && r == EXIT_CANCELLED)
			run_fleet_early(fl, "cancelled", "ward was asked to stop while the box was made", r, st->s.j.id,
					   st->s.j.path);
		else if (fl->file)
			run_fleet_early(fl, "box_error", "no box could be made for the task (ward said why)", r,
					   st->s.j.id, st->s.j.path);
		session_end(&st->s);
		return r;
	}
	st->box_name = st->name;
	return 0;
}

/* The MCP servers, started in the box; the watchdog; the line that names
 * the session and the box. */
static int run_mcp_start(struct run_state *st)
{
	struct fleet *fl = st->fl;
	struct turn_cfg *cfg = &st->f->cfg;
	int r = mcprun_load(st->x->mc, st->workspace, NULL, NULL);
	if (!r)
		r = mcprun_start(st->x->mc, st->s.box, &st->s.j, &st->mcp);
	if (r) {
		if (st->own_box)
			session_box_end(&st->s, st->box_name, st->kept);
		if (fl->file && r != EXIT_USAGE)
			run_fleet_early(fl, "box_error", "the task's MCP servers could not be started in its box", r,
					   st->s.j.id, st->s.j.path);
		session_end(&st->s);
		return r;
	}
	cfg->mcp = st->mcp;
	if (cfg->b.deadline_ms)
		run_watchdog_start(&st->s.j, cfg->b.deadline_ms);
	if (fl->file)
		term_printf(stderr, "ward: task %s (index %ld, run %d): session %s, box %s\n", fl->id, fl->index, fl->runs,
			    st->s.j.id, st->box_name);
	else if (!st->out->json)
		term_printf(stderr, "ward: session %s, box %s\n", st->s.j.id, st->box_name);
	return 0;
}

/* The session's start (its hooks, a checkpoint to go back to) and the
 * task tool's subagents. */
static int run_agents_start(struct run_state *st)
{
	struct run_flags *f = st->f;
	struct turn_cfg *cfg = &f->cfg;
	turn_session_start(cfg, &st->s, f->resume ? "resume" : "startup");
	rewind_checkpoint(&st->s, st->own_box && !f->rw && st->workspace);
	int r = run_agents(st->x, cfg, st->box_name, f->rw ? NULL : st->workspace, st->s.j.id, st->pass_argv,
			   st->npass, &st->led, &st->agents);
	if (r) {
		mcp_free(st->mcp);
		if (st->own_box)
			session_box_end(&st->s, st->box_name, st->kept);
		session_end(&st->s);
		return r;
	}
	return 0;
}

/* One line on stderr in every mode, --json and a task's too: a CI log
 * shows why the run ended without reading the events. */
static void run_stop_line(const struct turn_stop *stop, const struct session *s)
{
	term_printf(stderr, "ward: %s: %s (%d round%s, %d call%s, %lld tokens in, %lld out", turn_stop_name(stop->kind),
		    stop->why, stop->rounds, stop->rounds == 1 ? "" : "s", stop->calls, stop->calls == 1 ? "" : "s",
		    (long long)usage_prompt(&stop->usage), (long long)stop->usage.output);
	if (stop->usage.cache_read || stop->usage.cache_write)
		term_printf(stderr, ", %.0f%% from the cache", usage_hit_rate(&stop->usage) * 100);
	if (stop->cost >= 0)
		term_printf(stderr, ", $%.4f", stop->cost);
	term_printf(stderr, "); session %s\n", s->j.id);
}

/* A turn that stopped: its changes (reported, patched, applied), the final
 * answer, the result (--json's last line, a task's result.json). */
static int run_report(struct run_state *st, struct turn_stop *stop, cJSON *jobs, cJSON *agents_j)
{
	struct run_flags *f = st->f;
	struct run_out *out = st->out;
	struct fleet *fl = st->fl;
	int r = exit_for(stop->kind);
	run_stop_line(stop, &st->s);
	cJSON *files = cJSON_CreateArray();
	int w = EXIT_OKAY;
	/* Only a finished run's changes are applied by --apply; a stopped
	 * run's are kept for a look first (ward diff / ward apply). */
	if (st->apply && r != EXIT_OKAY && !out->json)
		term_printf(stderr, "ward: --apply: not applied, because the run did not finish\n");
	bool patched = false;
	if (!f->rw && st->workspace) {
		struct session_changes_opts co = { .json = out->json, .record = true, .apply = st->apply && r == EXIT_OKAY,
						   .allow_git = f->allow_git, .patch = st->patch, .files = files };
		w = session_changes(&st->sw, &co, &patched);
	}
	if (st->kept)
		session_box_settle(st->box_name);
	/* The final answer: stdout's only bytes in plain mode, and the
	 * -o file's. With --output-schema only a checked answer is. */
	_cleanup_free_ char *answer = *st->x->schema ? (stop->output ? jsonprint_text(stop->output) : NULL)
						     : turn_final_text(st->s.messages);
	int k = run_out_answer(answer && *answer ? answer : NULL, st->x->last_msg, !out->json);
	if (k < 0) {
		cmd_error("--output-last-message %s: %s", st->x->last_msg, strerror(-k));
		if (w == EXIT_OKAY)
			w = EXIT_FAIL;
	}
	if (out->json || fl->file) {
		cJSON *j = run_result(stop, r == EXIT_OKAY ? w : r, &st->s, st->box_name, run_flags_model(f), files,
				      st->apply && w == EXIT_OKAY && r == EXIT_OKAY, patched ? st->patch : NULL, jobs);
		if (agents_j)
			cJSON_AddItemReferenceToObject(j, "agents", agents_j);
		run_out_agent(out, j);
		run_out_json_line(out->to, j);
		/* The journal on the disk first: a result names a whole one. */
		journal_sync(&st->s.j);
		struct err fe = { 0 };
		bool written = !fl->file || fleet_finish(fl, j, st->s.j.path, &fe) == 0;
		if (!written)
			cmd_error("%s", fe.msg);
		if (!written && r == EXIT_OKAY)
			r = EXIT_FAIL;
		/* A finished task's change is its patch.diff: its layers
		 * (an image of --disk's size each) need not outlive it. A
		 * task that resumes keeps them. */
		if (fl->file && written && patched && !st->x->keep_changes && fleet_stop_final(turn_stop_name(stop->kind)))
			session_changes_drop(&st->sw);
		cJSON_Delete(j);
	}
	cJSON_Delete(files);
	cJSON_Delete(stop->output);
	return r == EXIT_OKAY ? w : r;
}

/* The task's turn, then what it leaves: its box ended (or kept), the
 * report, the session closed. */
static int run_task_turn(struct run_state *st)
{
	struct turn_cfg *cfg = &st->f->cfg;
	struct err e = { 0 };
	struct turn_stop stop;
	int r = run_turn(cfg, &st->s, st->task, &stop, &e);
	cJSON *agents_j = st->agents ? agents_report(st->agents) : NULL;
	agents_free(st->agents);
	cfg->agents = NULL;
	mcp_free(st->mcp);
	cfg->mcp = NULL;
	cJSON *jobs = run_jobs(&st->s, st->box_name, st->own_box, st->out->json);
	/* A box the session kept from before is kept again (hibernated);
	 * a run's own box goes with the run. */
	if (st->own_box)
		st->kept = session_box_end(&st->s, st->box_name, st->kept);
	box_disconnect(st->s.box);
	st->s.box = NULL;
	if (r < 0) {
		cmd_error("%s", e.msg);
		r = EXIT_FAIL;
		if (st->fl->file) {
			journal_sync(&st->s.j);
			run_fleet_early(st->fl, "error", e.msg, r, st->s.j.id, st->s.j.path);
		}
	} else {
		r = run_report(st, &stop, jobs, agents_j);
	}
	cJSON_Delete(jobs);
	cJSON_Delete(agents_j);
	session_end(&st->s);
	return r;
}

static int run_run(int argc, char **argv)
{
	struct run_flags f;
	run_flags_init(&f, RUN_APPROVE_DEFAULT);
	__attribute__((cleanup(out_close))) struct run_out out = { 0 };
	struct run_approver approver = { .deadline_ms = &f.cfg.b.deadline_ms };
	__attribute__((cleanup(hooks_freep))) struct hooks *hooks = NULL;
	__attribute__((cleanup(mcpconf_free))) struct mcpconf mc = { 0 };
	__attribute__((cleanup(fleet_freep))) struct fleet fl = { .lock_fd = -1, .note = { cmd_note, NULL } };
	__attribute__((cleanup(schema_freep))) struct schema *schema = NULL;
	struct run_ctx x = { .f = &f, .out = &out, .approver = &approver, .mc = &mc, .fl = &fl, .schema = &schema,
			     .max_subagents = -1, .agent_ledger = -1 };
	__attribute__((cleanup(run_state_free))) struct run_state st = {
		.argc = argc, .argv = argv, .hooks = &hooks, .x = &x, .f = &f, .out = &out, .fl = &fl,
		.led = { .fd = -1 } };
	/* Each step undoes what the steps before it made when it fails. */
	static int (*const steps[])(struct run_state *) = {
		run_parse, run_read_task_text, run_prepare, run_box_named, run_session_open, run_box_make,
		run_mcp_start, run_agents_start, run_task_turn,
	};
	run_signals();
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(steps) && !r; i++)
		r = steps[i](&st);
	return r == RUN_STOP_OKAY ? EXIT_OKAY : r;
}

const struct command cmd_run = {
	.name = "run", .args = "[FLAGS] TASK", .summary = "work on one task in a box until done or a bound stops it",
	.run = run_run,
};

