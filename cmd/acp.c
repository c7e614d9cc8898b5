/* ward acp: ward as an agent of the Agent Client Protocol (version 1), for
 * editors, on stdin and stdout; stdout carries nothing else (fd 1 is made
 * stderr's copy at start, so a stray line of any part of ward goes to the
 * log, never into the protocol). The protocol is acp/'s; what a session
 * is here (ward's own: a journal, its box "s-ID", copy-on-write changes
 * kept after it) is this file's, given to it as struct acp_host. */
#include "acp/acp.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "task/hook.h"
#include "cmd/run-settings.h"
#include "cmd/mcprun.h"
#include "cmd/rewind.h"
#include "cmd/session.h"
#include "cmd/subagents.h"
#include "base/parse.h"
#include "mcp/mcp.h"
#include "sandbox/box.h"
#include "workspace/layers.h"
#include "workspace/wsdiff.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* The command's own: the flags each session starts from, the hooks. */
struct acp_cmd {
	struct run_flags f0;	/* as the command line and the settings made them */
	struct mcpconf mc0;	/* --mcp-config, --trust-project-mcp (no servers loaded) */
	struct hooks *hooks;
	int64_t deadline;	/* the running prompt's, for the hooks */
};

/* A session as ward has it: its own flags (its gate: set_mode changes
 * one session's), journal, box and MCP servers. */
struct acp_cmd_sess {
	struct acp_cmd *c;
	struct run_flags f;
	struct session s;
	struct mcpconf mc;
	struct mcp *mcp;
	bool started;
	char cwd[PATH_MAX], ws[PATH_MAX], box[BOX_NAME_MAX + 1];
	struct subagents sub;	/* the task tool's: the session's ledger */
	struct agents *agents;	/* the running prompt's */
};

static void host_log(void *ud, const char *line)
{
	fprintf(stderr, "ward acp: %s\n", line);
}

static void host_close(void *ud, void *h)
{
	struct acp_cmd_sess *hs = h;
	mcp_free(hs->mcp);
	hs->mcp = NULL;
	if (hs->s.box && hs->box[0]) {
		session_box_end(&hs->s, hs->box, false);
		session_box_settle(hs->box);
	}
	hs->s.box = NULL;
	if (hs->started)
		session_end(&hs->s);
	mcpconf_free(&hs->mc);
	agents_free(hs->agents);
	subagents_free(&hs->sub);
	free(hs);
}

/* The session's box (again, after a box error): 0, or -1 after ward's
 * lines on stderr. */
static int box_up(struct acp_cmd_sess *hs)
{
	if (hs->s.box)
		return 0;
	bool kept;
	if (session_box(&hs->s, &hs->f, hs->ws, true, hs->box, sizeof(hs->box), &kept) != 0) {
		hs->box[0] = 0;
		return -1;
	}
	return mcprun_start(&hs->mc, hs->s.box, &hs->s.j, &hs->mcp) ? -1 : 0;
}

static int host_open(void *ud, const struct acp_open *o, struct acp_opened *out, struct err *e)
{
	struct acp_cmd *c = ud;
	struct acp_cmd_sess *hs = calloc(1, sizeof(*hs));
	if (!hs)
		return err_set(e, -ENOMEM, "out of memory");
	hs->c = c;
	subagents_init(&hs->sub);
	hs->f = c->f0;
	hs->mc = c->mc0;
	snprintf(hs->cwd, sizeof(hs->cwd), "%s", o->cwd);
	hs->f.workspace = hs->cwd;
	hs->f.resume = o->load;
	int r = session_start(&hs->f, &hs->s, hs->ws);
	hs->f.resume = NULL;	/* (the request's string) */
	if (r != 0) {
		host_close(c, hs);
		return -1;
	}
	hs->started = true;
	char real[PATH_MAX];
	if (o->load && (!realpath(o->cwd, real) || strcmp(hs->ws, real))) {
		err_set(e, -EINVAL, "session %s works on %.300s, not on %.300s", o->load, hs->ws[0] ? hs->ws : "no directory",
			o->cwd);
		host_close(c, hs);
		return -1;
	}
	/* The servers of the user's config, the project's .mcp.json (trusted
	 * by --trust-project-mcp or at a terminal before), --mcp-config, then
	 * the editor's. */
	if (mcprun_load(&hs->mc, hs->ws, NULL, NULL) != 0 ||
	    (o->mcp && mcp_config_add(&hs->mc.cfg, o->mcp, o->load ? "session/load" : "session/new", e) < 0)) {
		if (e->msg[0]) {
			char m[sizeof(e->msg)];
			snprintf(m, sizeof(m), "%s", e->msg);
			err_set(e, -EINVAL, "MCP servers: %.400s", m);
		}
		host_close(c, hs);
		return -1;
	}
	turn_session_start(&hs->f.cfg, &hs->s, o->load ? "resume" : "startup");
	if (box_up(hs) < 0) {
		err_set(e, -EIO, "no box could be made for %.300s (ward's log says why)", o->cwd);
		host_close(c, hs);
		return -1;
	}
	fprintf(stderr, "ward acp: session %s, box %s, workspace %s\n", hs->s.j.id, hs->box, hs->ws);
	*out = (struct acp_opened){ .h = hs, .s = &hs->s, .ws = hs->ws, .gate = &hs->f.gate, .rw = hs->f.rw };
	return 0;
}

static struct session_ws host_ws(const struct acp_cmd_sess *hs)
{
	return (struct session_ws){ .session = hs->s.j.id, .workspace = hs->ws };
}

static int host_prompt_begin(void *ud, void *h, struct turn_cfg *cfg, struct err *e)
{
	struct acp_cmd_sess *hs = h;
	struct session_ws sw = host_ws(hs);
	bool changes = !hs->f.rw;
	if (changes)
		session_changes_begin(&sw, now_file_ns());
	if (box_up(hs) < 0)
		return err_set(e, -EIO, "no box could be made (ward's log says why)");
	rewind_checkpoint(&hs->s, changes);
	*cfg = hs->f.cfg;
	cfg->gate = &hs->f.gate;
	cfg->mcp = hs->mcp;
	hs->c->deadline = hs->f.deadline_ms ? now_ms() + hs->f.deadline_ms : 0;
	cfg->b.deadline_ms = hs->c->deadline;
	/* The task tool: its children's calls come to the editor as the
	 * prompt's own (acp/acp-update.c). */
	hs->agents = subagents_begin(&hs->sub, &hs->f, cfg, hs->box, hs->f.rw ? NULL : hs->ws, hs->s.j.id);
	return 0;
}

static void host_prompt_end(void *ud, void *h, const struct turn_stop *stop)
{
	struct acp_cmd_sess *hs = h;
	struct session_ws sw = host_ws(hs);
	agents_free(hs->agents);
	hs->agents = NULL;
	hs->c->deadline = 0;
	if (!hs->f.rw)
		session_changes_record(&sw);
	if (stop && stop->kind == TURN_BOX_ERROR && hs->s.box) {
		box_disconnect(hs->s.box);	/* the next prompt makes it again */
		hs->s.box = NULL;
	}
}

static int host_file_read(void *ud, void *h, const char *path, bool tree, size_t cap, char **ret, size_t *len)
{
	struct acp_cmd_sess *hs = h;
	struct session_ws sw = host_ws(hs);
	return session_file_read(&sw, tree || hs->f.rw, path, cap, ret, len);
}

/* /diff: the unified diff of the session's changes; /apply: applied, as
 * `ward apply SESSION` would (a file changed in the tree since refuses
 * the whole; those under .git are kept unless --allow-git-changes). */
static int host_changes(void *ud, void *h, bool apply, char **ret, struct err *e)
{
	struct acp_cmd_sess *hs = h;
	struct session_ws sw = host_ws(hs);
	if (!apply) {
		struct layers L = { .lock_fd = -1 };
		struct ws_changes ch = { 0 };
		int k = session_changes_read(&sw, &L, &ch, e);
		if (k < 0)
			return -1;
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		if (m && k > 0 && ch.n) {
			ch.apply_git = hs->f.allow_git;
			ws_diff(hs->ws, L.upper, &ch, m, e);
		}
		if (m)
			fclose(m);
		if (k > 0)
			layers_release(&L);
		ws_changes_free(&ch);
		if (!text)
			return err_set(e, -ENOMEM, "out of memory");
		*ret = text;
		return 0;
	}
	/* The box goes first (its changes are kept), as at the terminal: the
	 * next prompt gets a new one over the updated directory. */
	mcp_free(hs->mcp);
	hs->mcp = NULL;
	if (hs->s.box)
		box_disconnect(hs->s.box);
	hs->s.box = NULL;
	if (hs->box[0]) {
		struct err de = { 0 };
		box_destroy(hs->box, &de);
		hs->box[0] = 0;
	}
	cJSON *files = cJSON_CreateArray();
	struct session_changes_opts co = { .json = true, .apply = true, .allow_git = hs->f.allow_git, .files = files };
	int r = session_changes(&sw, &co, NULL);
	struct buf b;
	buf_init(&b, 1u << 20);
	int n = 0, left = 0;
	const cJSON *f;
	cJSON_ArrayForEach(f, files) {
		bool git = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "git")) && !hs->f.allow_git;
		bool conflict = cJSON_GetObjectItemCaseSensitive(f, "conflict") != NULL;
		const char *p = json_str(f, "path"), *what = json_str(f, "change");
		left += git;
		n += !git && !conflict;
		buf_printf(&b, "- %s %s%s\n", what ? what : "?", p ? p : "?",
			   conflict ? " (changed in the directory since: not applied)" : git ? " (under .git: kept)" : "");
	}
	cJSON_Delete(files);
	if (r != EXIT_OKAY)
		buf_printf(&b, "Nothing was applied: a file changed in the directory since the session's copy was made "
			       "(above); `ward apply --force %s` applies over it.\n", hs->s.j.id);
	else if (!n && !left)
		buf_printf(&b, "No changes to apply.\n");
	else
		buf_printf(&b, "Applied %d change%s to %s.%s\n", n, n == 1 ? "" : "s", hs->ws,
			   left ? " Those under .git are kept: ward apply --allow-git-changes SESSION applies them." : "");
	if (buf_cstr(&b) < 0) {
		buf_free(&b);
		return err_set(e, -ENOMEM, "out of memory");
	}
	*ret = b.data;
	return 0;
}

/* The box goes (its changes are kept): the next prompt makes it again. */
static void box_drop(void *ud)
{
	struct acp_cmd_sess *hs = ud;
	mcp_free(hs->mcp);
	hs->mcp = NULL;
	if (hs->s.box)
		box_disconnect(hs->s.box);
	hs->s.box = NULL;
	if (hs->box[0]) {
		struct err de = { 0 };
		box_destroy(hs->box, &de);
		hs->box[0] = 0;
	}
}

/* /rewind: the person's messages, or back to before message N (ward's
 * /rewind, cmd/rewind.h). */
static int slash_rewind(struct acp_cmd_sess *hs, const char *arg, struct buf *b, struct err *e)
{
	if (!*arg) {
		cJSON *list = NULL;
		if (rewind_list(hs->s.j.id, &list, e) < 0)
			return -1;
		const cJSON *c;
		cJSON_ArrayForEach(c, list) {
			const char *t = json_str(c, "text") ? json_str(c, "text") : "";
			buf_printf(b, "%lld. %.60s%s\n", (long long)json_int(c, "message", 0), t, strlen(t) > 60 ? "…" : "");
		}
		buf_printf(b, "%s", cJSON_GetArraySize(list) ? "Go back to before one with /rewind N (its number).\n"
							     : "No messages yet.\n");
		cJSON_Delete(list);
		return 0;
	}
	uint64_t n;
	if (parse_u64(arg, &n) < 0 || n > INT_MAX) {
		buf_printf(b, "\"%.40s\" is not a message number; /rewind lists them.\n", arg);
		return 0;
	}
	struct rewind_done d = { 0 };
	int r = rewind_to(&hs->s, (int)n, hs->f.disk, hs->f.rw ? NULL : box_drop, hs, &d);
	if (r)
		return err_set(e, -EINVAL, "the session could not go back to before message %d (ward's log says why)", (int)n);
	buf_printf(b, "Back before message %d: the conversation has %d message%s; %s.%s\n", (int)n, d.messages,
		   d.messages == 1 ? "" : "s",
		   d.workspace ? "the workspace changes are as they were then"
			       : "the workspace was not rewound (the box works on the directory directly: --rw)",
		   d.box_stopped ? " The box was destroyed (processes that ran in it are gone); the next prompt makes a new one."
				 : "");
	return 0;
}

/* /jobs, /jobs kill N: the box's background jobs (as the terminal's /jobs). */
static int slash_jobs(struct acp_cmd_sess *hs, const char *arg, struct buf *b, struct err *e)
{
	if (!hs->s.box) {
		buf_printf(b, "No box now, so no jobs; the next prompt makes one.\n");
		return 0;
	}
	cJSON *args = cJSON_CreateObject();
	const char *tool = "job_list";
	uint64_t id = 0;
	if (!strncmp(arg, "kill", 4) && (!arg[4] || arg[4] == ' ')) {
		const char *num = arg + 4 + strspn(arg + 4, " ");
		if (parse_u64(num, &id) < 0 || !id || id > 1000000) {
			buf_printf(b, "/jobs kill takes a job's number: /jobs kill 2 (/jobs lists them).\n");
			cJSON_Delete(args);
			return 0;
		}
		tool = "job_kill";
		cJSON_AddNumberToObject(args, "id", (double)id);
	} else if (*arg) {
		buf_printf(b, "/jobs takes kill N, or nothing.\n");
		cJSON_Delete(args);
		return 0;
	}
	/* job_kill answers once the job is gone: SIGKILL comes 2 s after
	 * SIGTERM. */
	const struct box_call_req rq = { .tool = tool, .args = args, .left_ms = 2 * BOX_JOBS_TIMEOUT_MS };
	cJSON *res = NULL;
	int r = box_call(hs->s.box, &rq, NULL, NULL, -1, &res, e);
	cJSON_Delete(args);
	if (r < 0)
		return -1;
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "text"));
	buf_printf(b, "%s%s", t ? t : "", t && *t && t[strlen(t) - 1] != '\n' ? "\n" : "");
	cJSON_Delete(res);
	return 0;
}

static int host_command(void *ud, void *h, const char *name, const char *arg, char **ret, struct err *e)
{
	struct acp_cmd_sess *hs = h;
	struct buf b;
	buf_init(&b, 1u << 20);
	int r = !strcmp(name, "rewind") ? slash_rewind(hs, arg, &b, e)
		: !strcmp(name, "jobs") ? slash_jobs(hs, arg, &b, e)
					: err_set(e, -EINVAL, "no command /%s", name);
	if (r < 0 || buf_cstr(&b) < 0) {
		buf_free(&b);
		return r < 0 ? r : err_set(e, -ENOMEM, "out of memory");
	}
	*ret = b.data;
	return 0;
}

static const struct acp_host acp_cmd_host = {
	.command = host_command,
	.open = host_open,
	.prompt_begin = host_prompt_begin,
	.prompt_end = host_prompt_end,
	.close = host_close,
	.file_read = host_file_read,
	.changes = host_changes,
	.log = host_log,
};

static int acp_run(int argc, char **argv)
{
	_cleanup_free_ struct acp_cmd *c = calloc(1, sizeof(*c));
	if (!c)
		return EXIT_FAIL;
	struct run_flags *f = &c->f0;
	run_flags_init(f, CHAT_APPROVE_DEFAULT);
	optind = 1;
	opterr = 0;
	int ch;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_acp);
	while ((ch = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (ch == '?' || ch == ':')
			return cmd_bad_flag("acp", ch, argv);
		if (ch == 'h') {
			flags_help(stdout, &flagtab_acp);
			return 0;
		}
		if (ch == 'S' || ch == 'b' || ch == 'w') {
			cmd_error("acp: the editor gives the session's directory (session/new's cwd): --resume, --box and "
				  "--workspace are not for ward acp");
			return EXIT_USAGE;
		}
		int k = run_flag_given(f, ch, optarg);
		if (k == 0)
			k = mcprun_flag(&c->mc0, ch, optarg);
		if (k <= 0)
			return EXIT_USAGE;
	}
	if (optind != argc) {
		cmd_error("acp takes no arguments: the editor sends the prompts; see `ward acp --help`");
		return EXIT_USAGE;
	}
	if (f->rw)
		f->mode_default = GATE_ASK;	/* edits would reach the tree at once */
	int r = run_flags_finish(f);
	if (r)
		return r;
	if (run_settings_hooks_install(&f->cfg, &c->deadline, &c->hooks))
		return EXIT_USAGE;
	/* The protocol's fd is a copy of stdout; fd 1 becomes stderr's. */
	int out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (out < 0 || dup2(2, 1) < 0) {
		cmd_error("acp: cannot set up stdout: %s", strerror(errno));
		hooks_free(c->hooks);
		return EXIT_FAIL;
	}
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	_cleanup_close_ int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	struct acp *a = acp_new(&acp_cmd_host, c, 0, out);
	int sig = a ? acp_serve(a, sfd) : 0;
	acp_free(a);
	hooks_free(c->hooks);
	close(out);
	if (!a) {
		cmd_error("acp: out of memory");
		return EXIT_FAIL;
	}
	return sig ? 128 + sig : EXIT_OKAY;
}

const struct command cmd_acp = {
	.name = "acp", .args = "[FLAGS]", .summary = "ward for editors: the Agent Client Protocol on stdin/stdout",
	.run = acp_run,
};
