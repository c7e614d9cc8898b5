#include "cmd/session.h"
#include "base/json.h"
#include "cmd/box-image.h"
#include "cmd/term.h"
#include "task/instructions.h"
#include "turn/agent.h"
#include "turn/schema.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "sandbox/box.h"
#include "workspace/checkpoint.h"
#include "workspace/layers.h"
#include "proto/budget.h"
#include "workspace/wsbase.h"
#include "workspace/wsdiff.h"
#include "workspace/wspatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A session that ends with the model's calls and no results for them was
 * cut off mid-call: each call gets the result the journal has, or "outcome
 * unknown" (it is never run again). NULL when nothing is missing. */
/* A task call cut off: which subagent it was, and what is known of it
 * (the journal's agent_start and agent_end records). */
static cJSON *agent_unknown(const cJSON *block, const cJSON *agents)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(agents, json_str(block, "id") ? json_str(block, "id") : "");
	const char *id = json_str(a, "agent"), *desc = json_str(a, "description"), *sess = json_str(a, "session"),
		   *stop = json_str(a, "stop");
	if (!desc)
		desc = json_str(cJSON_GetObjectItemCaseSensitive(block, "input"), "description");
	char who[300];
	snprintf(who, sizeof(who), "subagent %s%s%s%s", id && *id ? id : "(not started)", desc ? " (" : "", desc ? desc : "",
		 desc ? ")" : "");
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "outcome", "unknown");
	struct buf b;
	buf_init(&b, 4096);
	if (stop)
		buf_printf(&b, "outcome unknown: %s had ended (%s) when the session was cut off (ward was stopped), but "
			       "before its changes were merged: they are not in your workspace and its answer was not "
			       "kept here%s%s%s. Run it again if its part is still needed.",
			   who, stop, sess ? " (its own session is " : "", sess ? sess : "", sess ? ")" : "");
	else
		buf_printf(&b, "outcome unknown: %s was cut off while it ran (ward was stopped); it was not run again, "
			       "and none of its changes were merged into your workspace (its box is gone). Run it again "
			       "if its part is still needed.",
			   who);
	buf_cstr(&b);
	cJSON_AddStringToObject(r, "text", b.data ? b.data : "");
	buf_free(&b);
	cJSON *ag = cJSON_AddObjectToObject(r, "agent");
	cJSON_AddStringToObject(ag, "id", id ? id : "");
	return r;
}

static cJSON *resume_results(const cJSON *messages, const cJSON *results, const cJSON *agents)
{
	const cJSON *last = cJSON_GetArrayItem(messages, cJSON_GetArraySize(messages) - 1);
	const char *role = json_str(last, "role");
	if (!role || strcmp(role, "assistant"))
		return NULL;
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON *content = cJSON_AddArrayToObject(m, "content");
	const cJSON *b;
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(last, "content")) {
		const char *type = json_str(b, "type"), *id = json_str(b, "id");
		if (!type || strcmp(type, "tool_use"))
			continue;
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(results, id ? id : "");
		cJSON *unknown = NULL;
		const char *name = json_str(b, "name");
		if ((!res || !json_str(res, "text")) && name && !strcmp(name, AGENT_TOOL)) {
			unknown = agent_unknown(b, agents);
		} else if (!res || !json_str(res, "text")) {
			unknown = cJSON_CreateObject();
			cJSON_AddStringToObject(unknown, "outcome", "unknown");
			cJSON_AddStringToObject(unknown, "text",
						"outcome unknown: the session was cut off while this call ran (ward was "
						"stopped); it was not run again; check its effects before repeating it");
		}
		cJSON_AddItemToArray(content, turn_tool_result(id ? id : "", unknown ? unknown : res));
		cJSON_Delete(unknown);
	}
	if (cJSON_GetArraySize(content) > 0)
		return m;
	cJSON_Delete(m);
	return NULL;
}

/* The session's system prompt: ward's own, then the project's
 * instructions (task/instructions.h), recorded in the journal by path and
 * hash, then what the final answer must be (--output-schema). */
static void session_system(struct run_flags *f, struct session *s, const char *ws)
{
	struct instructions in = { 0 };
	if (!f->no_instructions && ws[0]) {
		char cwd[PATH_MAX];
		instructions_load(ws, getcwd(cwd, sizeof(cwd)), 0, &in);
		if (in.why[0])
			term_printf(stderr, "ward: project instructions: %s\n", in.why);
		if (in.cut)
			term_printf(stderr, "ward: project instructions: cut at %u KiB (the system prompt says where)\n",
				INSTRUCTIONS_CAP >> 10);
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddItemToObject(rec, "files", cJSON_Duplicate(in.files, 1));
		if (in.cut)
			cJSON_AddBoolToObject(rec, "cut", 1);
		journal_write(&s->j, "instructions", rec);
		cJSON_Delete(rec);
	}
	_cleanup_free_ char *schema = f->cfg.output_schema ? cJSON_PrintUnformatted(schema_json(f->cfg.output_schema)) : NULL;
	if (in.text || schema) {
		struct buf b;
		buf_init(&b, strlen(f->cfg.system) + (in.text ? strlen(in.text) : 0) + (schema ? strlen(schema) : 0) + 1024);
		buf_printf(&b, "%s", f->cfg.system);
		if (in.text)
			buf_printf(&b, "\n\n# Project instructions\n\nThe project's instructions for agents (AGENTS.md "
				       "files), the outermost first; follow them where they do not conflict with the task.%s",
				   in.text);
		if (schema)
			buf_printf(&b, "\n\n# The final answer\n\nWhen the task is done, your last message must be only "
				       "a JSON value, with no other text and no code fence, that matches this JSON Schema:\n%s",
				   schema);
		if (buf_cstr(&b) == 0)
			s->system = strdup(b.data);
		buf_free(&b);
	}
	s->instructions = TAKE_PTR(in.files);
	instructions_free(&in);
}

int session_start(struct run_flags *f, struct session *s, char *ws)
{
	struct err e = { 0 };
	*s = (struct session){ .j.fd = -1 };
	char cwd[PATH_MAX];
	const char *workspace = f->workspace ? f->workspace : getcwd(cwd, sizeof(cwd));
	if (f->resume) {
		struct journal_state st;
		if (journal_load(f->resume, &st, &e) < 0) {
			cmd_error("%s", e.msg);
			return EXIT_USAGE;
		}
		s->messages = TAKE_PTR(st.messages);
		s->asked = cJSON_GetArraySize(st.checkpoints);
		/* The task's totals, its earlier runs' too: budgets are the
		 * session's, and so is what the result reports. */
		s->usage = s->usage_before = st.usage;
		s->cost_before = st.cost;
		s->rounds = st.rounds;
		s->calls = st.calls;
		s->refused = st.refused;
		s->jobs_told = TAKE_PTR(st.jobs_told);
		cJSON *cut = resume_results(s->messages, st.results, st.agents);
		const char *w = json_str(st.header, "workspace");
		snprintf(ws, PATH_MAX, "%s", w ? w : "");
		f->rw = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st.header, "rw"));
		/* A new box for it (its own is gone) has the root the session
		 * began with, unless --image gives another. */
		const char *img = json_str(st.header, "image");
		if (img && !f->image && (f->image = strdup(img)))
			f->image_untrusted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st.header, "image_untrusted"));
		journal_state_free(&st);
		if (journal_open(&s->j, f->resume, &e) < 0) {
			cJSON_Delete(cut);
			cmd_error("%s", e.msg);
			session_end(s);
			return EXIT_USAGE;
		}
		/* The results made here go in the journal too, once. */
		if (cut) {
			journal_write(&s->j, "message", cut);
			cJSON_AddItemToArray(s->messages, cut);
		}
	} else {
		ws[0] = 0;
		if (workspace && !realpath(workspace, ws)) {
			cmd_error("--workspace %s: %s", workspace, strerror(errno));
			return EXIT_NOINPUT;
		}
		s->messages = cJSON_CreateArray();
		const struct turn_cfg *cfg = &f->cfg;
		cJSON *h = cJSON_CreateObject();
		cJSON_AddStringToObject(h, "provider", cfg->replay_path ? "replay" : cfg->provider->name);
		cJSON_AddStringToObject(h, "model", cfg->replay_path ? cfg->replay_path : cfg->pcfg.model);
		if (ws[0])
			cJSON_AddStringToObject(h, "workspace", ws);
		/* Its changes are that box's (ward diff, ward apply). */
		if (f->box_name)
			cJSON_AddStringToObject(h, "box", f->box_name);
		/* Its labels, for audit and cost: every record of the session is
		 * the box's. */
		cJSON *labels = f->box_labels[0] ? cJSON_Parse(f->box_labels) : NULL;
		if (labels)
			cJSON_AddItemToObject(h, "box_labels", labels);
		if (f->rw)
			cJSON_AddBoolToObject(h, "rw", 1);
		if (f->image)
			cJSON_AddStringToObject(h, "image", f->image);
		if (f->image && f->image_untrusted)
			cJSON_AddBoolToObject(h, "image_untrusted", 1);
		int r = journal_create(&s->j, h, &e);
		cJSON_Delete(h);
		if (r < 0) {
			cmd_error("%s", e.msg);
			session_end(s);
			return EXIT_FAIL;
		}
	}
	session_system(f, s, ws);
	return 0;
}

/* The jobs the kept box's last hibernate ended (its info lists them): the
 * model hears of each at its next message, as a session attached at the
 * time hears of them (the keeper's end events), unless it was told. */
static void session_jobs_hibernated(struct session *s)
{
	cJSON *info = NULL;
	struct err e = { 0 };
	if (box_info(s->box, &info, &e) < 0)
		return;
	const cJSON *j;
	cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(info, "jobs_ended_by_hibernate")) {
		char k[64];
		bool told = false;
		const cJSON *t;
		if (journal_job_key(j, k, sizeof(k)) < 0)
			continue;
		cJSON_ArrayForEach(t, s->jobs_told)
			told = told || (cJSON_IsString(t) && !strcmp(t->valuestring, k));
		if (told)
			continue;
		/* The shape of the keeper's end event (keeper-jobs.c). */
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "type", "job");
		cJSON_AddStringToObject(ev, "event", "ended");
		cJSON *job = cJSON_AddObjectToObject(ev, "job");
		cJSON_AddItemToObject(job, "id", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, "id"), 0));
		const char *cmd = json_str(j, "command"), *how = json_str(j, "how");
		cJSON_AddStringToObject(job, "command", cmd ? cmd : "?");
		cJSON_AddStringToObject(job, "state", "ended");
		cJSON_AddStringToObject(ev, "how", how ? how : "ended when the box hibernated");
		cJSON_AddItemToObject(ev, "hibernated_at",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, "hibernated_at"), 0));
		cJSON_AddBoolToObject(ev, "output_lost", 1);
		if (!s->job_news)
			s->job_news = cJSON_CreateArray();
		if (cJSON_GetArraySize(s->job_news) < TURN_JOB_NEWS_MAX)
			cJSON_AddItemToArray(s->job_news, ev);
		else
			cJSON_Delete(ev);
	}
	cJSON_Delete(info);
}

int session_box(struct session *s, struct run_flags *f, const char *workspace, bool interactive, char *name,
		size_t n, bool *ret_kept)
{
	struct err e = { 0 };
	*ret_kept = false;
	char bname[BOX_NAME_MAX + 1];
	snprintf(bname, sizeof(bname), "s-%s", s->j.id);
	/* Kept from the session's last run (hibernated at its end): its next
	 * call wakes it, with /tmp, the home, as it was. */
	if (box_has_keeper(bname) && box_connect(bname, &s->box, &e) == 0) {
		/* Owned by this ward while it runs, as the box the session first
		 * made was: a kill -9 of it leaves no box or job for the TTL.
		 * One made persistent by hand stays so. */
		int r = box_own(s->box, &e);
		if (r < 0 && r != -EINVAL) {
			cmd_error("the session's box %s: %s", bname, e.msg);
			box_disconnect(s->box);
			s->box = NULL;
			return r == -EBUSY ? EXIT_USAGE : EXIT_NOBOX;
		}
		snprintf(name, n, "%s", bname);
		*ret_kept = true;
		session_jobs_hibernated(s);
		if (box_is_hibernated(bname))
			term_printf(stderr, "ward: the session's box %s is hibernated; its first call wakes it\n", bname);
		return 0;
	}
	struct box_opts bo;
	box_opts_default(&bo);
	if (f->disk) {
		bo.lim.disk = f->disk;
		bo.disk_given = true;
	}
	bo.guest_path = cmd_guest_path();
	bo.keeper_path = cmd_keeper_path();
	bo.workspace = workspace && *workspace ? workspace : NULL;
	bo.rw = f->rw;
	bo.git_rw = f->allow_git;
	if (netflag_finish(&f->net, &bo) < 0)
		return EXIT_USAGE;
	bo.owner = getpid();
	/* Named after the session, with its changes kept after the box:
	 * a resumed session's new box sees them, and `ward apply` finds them. */
	bo.name = bname;
	/* A person's session hibernates its box when left idle: the next
	 * message wakes it. */
	if (interactive)
		bo.on_idle = BOX_IDLE_HIBERNATE;
	bo.keep_layers = true;
	bo.image = f->image;
	if (f->backend)
		bo.backend = f->backend;
	struct box_image img;
	int r = box_image_resolve(&bo, !f->image_untrusted, f->quiet, &img);
	if (r) {
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "reason", "box_error");
		cJSON_AddStringToObject(rec, "why", "the box's image could not be had");
		journal_write(&s->j, "stop", rec);
		cJSON_Delete(rec);
		return r;
	}
	r = box_create(&bo, name, n, &e);
	box_image_release(&img);
	if (r >= 0) {
		r = box_connect(name, &s->box, &e);
		if (r < 0) {
			struct err e2 = { 0 };
			box_destroy(name, &e2);
		}
	}
	if (r < 0) {
		bool stopped = r == -ECANCELED;
		if (stopped)
			cmd_error("%s", e.msg);
		else
			cmd_error("cannot make a box: %s", e.msg);
		/* The journal says why nothing ran. */
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "reason", stopped ? "cancelled" : "box_error");
		cJSON_AddStringToObject(rec, "why", e.msg);
		journal_write(&s->j, "stop", rec);
		cJSON_Delete(rec);
		return stopped ? EXIT_CANCELLED : EXIT_NOBOX;
	}
	return 0;
}

int session_box_end(struct session *s, const char *name, bool keep)
{
	struct err e = { 0 };
	cJSON *j = NULL;
	int kept = 0;
	/* The session's connection goes first, with the calls still on it
	 * (their callbacks belong to a turn and MCP servers that are over):
	 * the keeper cancels them. A connection of its own asks to keep it. */
	if (s->box)
		box_disconnect(s->box);
	s->box = NULL;
	struct box_conn *c = NULL;
	if (keep && box_connect(name, &c, &e) < 0)
		c = NULL;
	/* Calls just cancelled are over within the box's grace (its own
	 * --grace), as this client's layer counts it: until then the
	 * hibernate is refused. */
	int64_t until = c ? budget_cancelled_by(box_conn_grace(c), BUDGET_CLIENT, now_ms()) : 0;
	while (c) {
		int r = box_hibernate_keep(c, &j, &e);
		cJSON_Delete(j);
		j = NULL;
		kept = r == 0;
		if (r != -EBUSY || now_ms() > until)
			break;
		usleep(100 * 1000);
	}
	if (c)
		box_disconnect(c);
	if (keep && !kept)
		term_printf(stderr, "ward: the session's box could not be kept (%s); it is destroyed\n", e.msg);
	if (!kept)
		box_destroy(name, &e);
	return kept;
}

void session_box_settle(const char *name)
{
	struct layers L = { .lock_fd = -1 };
	struct err e = { 0 };
	int k = layers_find(name, &L, NULL);
	layers_release(&L);
	if (k == 0)
		box_destroy(name, &e);
}

void session_end(struct session *s)
{
	if (s->box)
		box_disconnect(s->box);
	s->box = NULL;
	journal_close(&s->j);
	cJSON_Delete(s->messages);
	cJSON_Delete(s->job_news);
	s->job_news = NULL;
	cJSON_Delete(s->jobs_told);
	s->jobs_told = NULL;
	s->messages = NULL;
	free(s->system);
	s->system = NULL;
	cJSON_Delete(s->instructions);
	s->instructions = NULL;
}

static void layers_name(const struct session_ws *w, char *out, size_t n)
{
	if (w->box)
		snprintf(out, n, "%s", w->box);
	else
		snprintf(out, n, "s-%s", w->session);
}

static int base_path(const struct session_ws *w, char *out, size_t n, struct err *e)
{
	char name[BOX_NAME_MAX + 1];
	layers_name(w, name, sizeof(name));
	return layers_base_path(name, out, n, e);
}

int session_changes_read(const struct session_ws *w, struct layers *L, struct ws_changes *ch, struct err *e)
{
	char name[BOX_NAME_MAX + 1];
	layers_name(w, name, sizeof(name));
	if (!w->workspace || !*w->workspace)
		return 0;
	int r = layers_find(name, L, e);
	if (r <= 0)
		return r;
	if (ch && ws_changes_read(w->workspace, L->upper, ch, e) < 0) {
		layers_release(L);
		return -1;
	}
	return 1;
}

void session_layers_drop(const struct session_ws *w)
{
	char name[BOX_NAME_MAX + 1];
	layers_name(w, name, sizeof(name));
	if (!w->box)
		layers_drop(name);
}

/* The checkpoints of a layer whose changes are now the tree's: putting
 * one back would lay old copies over the new tree. */
static void session_checkpoints_drop(const struct session_ws *w)
{
	char name[BOX_NAME_MAX + 1], dir[PATH_MAX];
	layers_name(w, name, sizeof(name));
	if (!w->box && checkpoint_dir(name, dir, sizeof(dir), NULL) == 0)
		checkpoint_drop_after(dir, 0);
}

void session_changes_drop(const struct session_ws *w)
{
	session_layers_drop(w);
	session_checkpoints_drop(w);
}

void session_changes_begin(const struct session_ws *w, int64_t since_ns)
{
	struct err e = { 0 };
	char base[PATH_MAX];
	if (!w->workspace || !*w->workspace)
		return;
	if (base_path(w, base, sizeof(base), &e) < 0 || ws_base_begin(base, since_ns, &e) < 0)
		term_printf(stderr, "ward: warning: %s; applying these changes will ask for --force\n", e.msg);
}

void session_changes_record(const struct session_ws *w)
{
	struct err e = { 0 };
	struct layers L = { .lock_fd = -1 };
	struct ws_changes ch = { 0 };
	char base[PATH_MAX];
	int k = session_changes_read(w, &L, &ch, &e);
	if (k > 0 && (base_path(w, base, sizeof(base), &e) < 0 || ws_base_record(base, w->workspace, &ch, false, &e) < 0))
		k = -1;
	if (k < 0)
		term_printf(stderr, "ward: warning: %s; applying these changes will ask for --force\n", e.msg);
	layers_release(&L);
	ws_changes_free(&ch);
}

/* The patch whole or not at all: a file is written beside and renamed
 * over path; anything else there (a pipe, a terminal) gets it as it is
 * made, and an error says it was cut. */
static int write_patch(const char *path, const char *workspace, const char *upper, const struct ws_changes *ch,
		       struct err *e)
{
	struct stat st;
	bool direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.ward-%d", path, getpid()) >= (int)sizeof(tmp))
		return err_set(e, -ENAMETOOLONG, "%s: name too long", path);
	if (!direct)
		unlink(tmp);	/* a leftover of a ward that had this pid */
	/* It holds the workspace's files (a 0600 .env's lines too): 0600,
	 * whatever the umask. */
	int fd = direct ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	FILE *f = direct ? fopen(path, "we") : fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		int r0 = -errno;
		if (fd >= 0)
			close(fd);
		return err_setc(e, r0, "cannot write %s", direct ? path : tmp);
	}
	int r = ch->n ? ws_patch(workspace, upper, ch, f, e) : 0;
	if (fclose(f) != 0 && r >= 0)
		r = err_setc(e, -errno, "writing %s", path);
	if (r >= 0 && !direct && rename(tmp, path) < 0)
		r = err_setc(e, -errno, "cannot write %s", path);
	if (r < 0 && !direct) {
		/* No patch short of a change, and no older one taken for this one. */
		unlink(tmp);
		unlink(path);
	}
	if (r == -EPIPE)
		err_set(e, r, "the reader of %s went away", path);
	return r;
}

/* Mark the changes whose file changed in the tree since the run: how
 * many, or -1 with e set (the record cannot be read). */
static int find_edits(const struct session_ws *w, struct ws_changes *ch, struct err *e)
{
	char base[PATH_MAX];
	int n = base_path(w, base, sizeof(base), e);
	if (n >= 0)
		n = ws_base_check(base, w->workspace, ch, e);
	return n < 0 ? -1 : n;
}

/* 0 when the changes may be applied; else a line per file that changed in
 * the tree since the run, and EXIT_FAIL. */
static int report_edits(const struct session_ws *w, const struct ws_changes *ch, int n, const struct err *e,
			bool force)
{
	if (n < 0 && !force) {
		cmd_error("%s: ward cannot tell whether the tree changed since the run; nothing applied. "
			  "To apply anyway: ward apply --force %s", e->msg, w->session);
		return EXIT_FAIL;
	}
	size_t files = 0;
	for (size_t i = 0; i < ch->n && n > 0; i++) {
		if (!ch->v[i].conflict || (i && !strcmp(ch->v[i].path, ch->v[i - 1].path)))
			continue;
		_cleanup_free_ char *p = utf8_term_safe(ch->v[i].path, strlen(ch->v[i].path));
		term_printf(stderr, "ward: %s: %s: %s\n", p ? p : "?", force ? "applied anyway (--force)" : "not applied",
			ch->v[i].conflict);
		files++;
	}
	if (!files || force)
		return 0;
	_cleanup_free_ char *ws = utf8_term_safe(w->workspace, strlen(w->workspace));
	cmd_error("nothing applied: %zu file%s in %s changed since the run; to apply anyway, losing %s: "
		  "ward apply --force %s", files, files == 1 ? "" : "s", ws ? ws : "?",
		  files == 1 ? "that edit" : "those edits", w->session);
	return EXIT_FAIL;
}

int session_changes(const struct session_ws *w, const struct session_changes_opts *o, bool *ret_patched)
{
	struct err e = { 0 };
	struct layers L = { .lock_fd = -1 };
	struct ws_changes ch = { 0 };
	const char *workspace = w->workspace;
	int k = session_changes_read(w, &L, &ch, &e);
	if (k < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	ch.apply_git = o->allow_git;
	int r = EXIT_OKAY;
	if (k > 0 && o->record) {
		char base[PATH_MAX];
		if (base_path(w, base, sizeof(base), &e) < 0 || ws_base_record(base, workspace, &ch, false, &e) < 0)
			term_printf(stderr, "ward: warning: %s; applying these changes will ask for --force\n", e.msg);
	}
	/* No changes: an empty patch, so that the file is always the run's. */
	bool patched = o->patch && write_patch(o->patch, workspace, L.upper, &ch, &e) >= 0;
	if (o->patch && !patched) {
		cmd_error("--patch: %s; no patch written", e.msg);
		r = EXIT_FAIL;
	}
	size_t left = ws_changes_left_out(&ch);
	if (patched && left && !o->json)
		fprintf(stderr, "ward: --patch: %zu change%s under .git left out of the patch (its note lines name them; "
			"--allow-git-changes puts them in)\n", left, left == 1 ? "" : "s");
	if (k == 0 || ch.n == 0) {
		if (k > 0) {
			layers_release(&L);
			session_layers_drop(w);
		}
		if (!o->json && k > 0)
			term_printf(stderr, "ward: no changes to the workspace\n");
		ws_changes_free(&ch);
		if (ret_patched)
			*ret_patched = patched;
		return r;
	}
	const char *upper = L.upper;
	struct err ee = { 0 };
	int edits = o->apply && r == EXIT_OKAY ? find_edits(w, &ch, &ee) : 0;
	for (size_t i = 0; o->files && i < ch.n; i++) {
		cJSON *f = cJSON_CreateObject();
		/* JSON is UTF-8: a name's bytes that are not are U+FFFD. */
		_cleanup_free_ char *path = utf8_dup(ch.v[i].path, strlen(ch.v[i].path));
		cJSON_AddStringToObject(f, "path", path ? path : "?");
		cJSON_AddStringToObject(f, "change", ws_kind_name(ch.v[i].kind));
		if (ch.v[i].dir)
			cJSON_AddBoolToObject(f, "dir", 1);
		if (ch.v[i].conflict)
			cJSON_AddStringToObject(f, "conflict", ch.v[i].conflict);
		if (ch.v[i].git)
			cJSON_AddBoolToObject(f, "git", 1);
		if (ch.v[i].runs)
			cJSON_AddStringToObject(f, "runs", ch.v[i].runs);
		cJSON_AddItemToArray(o->files, f);
	}
	if (!o->json) {
		term_printf(stderr, "ward: the workspace changes:\n");
		fflush(stderr);
		/* For a person, wherever stderr goes: by the terminal rule. */
		FILE *err = term_stream(stderr);
		if (err) {
			ws_diff(workspace, upper, &ch, err, &e);
			fclose(err);
		}
	}
	bool refused = false;
	if (o->apply && r == EXIT_OKAY) {
		r = report_edits(w, &ch, edits, &ee, o->force);
		refused = r != EXIT_OKAY;
	}
	if (o->apply && r == EXIT_OKAY) {
		char base[PATH_MAX];
		if (ws_apply(workspace, upper, &ch, &e) < 0) {
			cmd_error("%s", e.msg);
			r = EXIT_FAIL;
		} else {
			/* A box's layers stay with it, and a session's with what
			 * was left out: what they hold is now the tree's too, and
			 * that is their new base. */
			if ((w->box || left) && (base_path(w, base, sizeof(base), &e) < 0 ||
						 ws_base_record(base, workspace, &ch, true, &e) < 0))
				term_printf(stderr, "ward: warning: %s\n", e.msg);
			layers_release(&L);
			if (!left)
				session_layers_drop(w);
			session_checkpoints_drop(w);
			for (size_t i = 0; i < ch.n; i++)
				if (ch.v[i].setid_dropped)
					term_printf(stderr, "ward: %s: applied without the setuid/setgid bit the box set\n",
						ch.v[i].path);
			if (!o->json)
				term_printf(stderr, "ward: applied %zu change%s to %s\n", ch.n - left, ch.n - left == 1 ? "" : "s",
					workspace);
			if (!o->json && left)
				term_printf(stderr, "ward: not applied: %zu change%s under .git (git would run what %s on this "
					"machine: hooks, config); kept: ward diff %s names them, ward apply "
					"--allow-git-changes %s applies them\n", left, left == 1 ? "" : "s",
					left == 1 ? "it holds" : "they hold", w->session, w->session);
		}
	} else if (!o->json && !refused) {
		term_printf(stderr, "ward: %s is untouched; apply these changes with: ward apply %s\n", workspace, w->session);
		if (left)
			term_printf(stderr, "ward: it leaves out the %zu change%s under .git listed above; ward apply "
				"--allow-git-changes %s applies %s too\n", left, left == 1 ? "" : "s", w->session,
				left == 1 ? "it" : "them");
	}
	layers_release(&L);
	ws_changes_free(&ch);
	if (ret_patched)
		*ret_patched = patched;
	return r;
}

int session_list(cJSON **ret, struct err *e)
{
	char dir[PATH_MAX];
	int r = journal_dir(dir, sizeof(dir), e);
	if (r < 0)
		return r;
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		if (errno == ENOENT) {
			*ret = cJSON_CreateArray();
			return 0;
		}
		return err_setc(e, -errno, "cannot read %s", dir);
	}
	cJSON *list = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		char *dot = strstr(names[i]->d_name, ".jsonl");
		struct journal_state st;
		struct err e2 = { 0 };
		if (dot && !dot[6] && (*dot = 0, journal_load(names[i]->d_name, &st, &e2) == 0)) {
			/* The first thing the person asked. */
			const char *first = "";
			const cJSON *m;
			cJSON_ArrayForEach(m, st.messages) {
				const char *role = json_str(m, "role");
				const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "content"), 0);
				if (role && !strcmp(role, "user") && json_str(b, "text")) {
					first = json_str(b, "text");
					break;
				}
			}
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "session", names[i]->d_name);
			cJSON_AddStringToObject(x, "stop", st.stop[0] ? st.stop : "-");
			cJSON_AddStringToObject(x, "model", json_str(st.header, "model") ? json_str(st.header, "model") : "?");
			cJSON_AddStringToObject(x, "workspace",
						json_str(st.header, "workspace") ? json_str(st.header, "workspace") : "");
			cJSON_AddStringToObject(x, "first", first);
			cJSON_AddNumberToObject(x, "compactions", st.compactions);
			/* A subagent's: whose child it is (ward sessions nests it). */
			if (st.agent) {
				cJSON_AddStringToObject(x, "agent", json_str(st.agent, "agent"));
				if (json_str(st.agent, "parent_session"))
					cJSON_AddStringToObject(x, "parent_session", json_str(st.agent, "parent_session"));
			}
			/* When it was last written to: what a prune by age goes by. */
			struct stat jst;
			char jp[PATH_MAX + 300];
			snprintf(jp, sizeof(jp), "%s/%s.jsonl", dir, names[i]->d_name);
			if (stat(jp, &jst) == 0)
				cJSON_AddNumberToObject(x, "mtime", (double)jst.st_mtim.tv_sec);
			cJSON_AddItemToArray(list, x);
			journal_state_free(&st);
		}
		free(names[i]);
	}
	free(names);
	*ret = list;
	return 0;
}
