#include "task/fleet.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"
#include "base/line.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "base/state.h"
#include "turn/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A task's text in result.json: its start, for a report. */
#define FLEET_TASK_SHOWN 200

/* Fields a task line may not have: they are the fleet's own, or make no
 * sense for one task of many. What the others may do without
 * --trust-task-file is each setting's line rule (the flag function's): a line
 * narrows what the command line allows; a flag with no such rule (where
 * the API key is sent, a program run on the host, a live tree, rules that
 * widen the gate, files read as config) is the command line's unless it
 * trusts the file as itself. */
static const char *const not_fields[] = { "task-file", "task-index", "task-root", "out", "resume", "box", "json",
					  "patch", "apply", "help", "trust-task-file" };

const char fleet_probe[] = "";

bool fleet_stop_final(const char *stop)
{
	/* A refused key is not the task's end: with the key put right, the
	 * array's next run resumes it. */
	return stop && *stop && strcmp(stop, "cancelled") && strcmp(stop, "provider_error") && strcmp(stop, "box_error") &&
	       strcmp(stop, "auth_error");
}

static bool id_valid(const char *id)
{
	size_t n = strlen(id);
	if (!n || n > FLEET_ID_MAX || id[0] == '.')
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '_' || *p == '-'))
			return false;
	return true;
}

static int fleet_index(struct fleet *fl, struct err *e)
{
	const char *from = "--task-index", *v = fl->index_arg;
	if (!v && (v = getenv("SLURM_ARRAY_TASK_ID")))
		from = "SLURM_ARRAY_TASK_ID";
	if (!v && (v = getenv("JOB_COMPLETION_INDEX")))
		from = "JOB_COMPLETION_INDEX";
	if (!v) {
		return err_set(e, -EINVAL, "--task-file: give --task-index I, or run it as a Slurm array task or a "
			       "Kubernetes Indexed Job (they set SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX)");
	}
	uint64_t i;
	if (parse_u64(v, &i) < 0 || i > 10000000)
		return err_set(e, -EINVAL, "%s \"%.40s\": not a task index (0, 1, 2, ...)", from, v);
	fl->index = (long)i;
	return 0;
}

/* root holds p: both resolved (realpath), so comparing them component by
 * component is comparing their strings up to a '/' (/a/bc is not under
 * /a/b). */
static bool path_beneath(const char *root, const char *p)
{
	size_t n = strlen(root);
	if (n == 1)
		return p[0] == '/';	/* the root is / */
	return !strncmp(p, root, n) && (p[n] == 0 || p[n] == '/');
}

/* A path a line names (a relative one is the task file's neighbour),
 * resolved into out, PATH_MAX bytes: the resolved path is what is handed
 * on, so a link swapped after this check redirects nothing. 0, or
 * -errno with e when it does not resolve or (the file not
 * trusted) lies outside the task root. */
static int line_path(const struct fleet *fl, const char *field, const char *path, char *out, struct err *e)
{
	char joined[2 * PATH_MAX];
	_cleanup_free_ char *shown = utf8_term_safe(path, strnlen(path, 200));
	if (path[0] == '/') {
		snprintf(joined, sizeof(joined), "%s", path);
	} else {
		_cleanup_free_ char *dir = strdup(fl->file);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash)
			*slash = 0;
		snprintf(joined, sizeof(joined), "%s/%s", slash ? (*dir ? dir : "/") : ".", path);
	}
	if (!realpath(joined, out))
		return err_setc(e, -errno, "%s: \"%s\": %s", fl->where, field, shown ? shown : "?");
	if (!fl->trusted && !path_beneath(fl->root, out))
		return err_set(e, -EPERM, "%s: \"%s\": %s is not under the task root %s (a task line names only what lies "
			       "under the task file's directory, or --task-root DIR; --trust-task-file lets it name any path)",
			       fl->where, field, shown ? shown : "?", fl->root);
	return 0;
}

/* A value the flags keep: it lives as long as fl. */
static const char *keep(struct fleet *fl, const char *v)
{
	char **grown = realloc(fl->args, (fl->nargs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	fl->args = grown;
	char *c = strdup(v);
	if (c)
		fl->args[fl->nargs++] = c;
	return c;
}

/* One field of the line as ward run's flag. */
static int apply_field(struct fleet *fl, const cJSON *f, fleet_flag_fn *flag, void *ud, struct err *e)
{
	char name[64];
	const char *k = f->string;
	if (!strcmp(k, "allow_hosts"))
		k = "allow_host";	/* the and Codex's plural */
	else if (!strcmp(k, "secrets"))
		k = "secret";	/* as the config file's network.secrets */
	if (strlen(k) >= sizeof(name))
		return err_set(e, -EINVAL, "%s: unknown field \"%.40s\"", fl->where, k);
	for (size_t i = 0; (name[i] = k[i] == '_' ? '-' : k[i]); i++)
		;
	for (size_t i = 0; i < ARRAY_SIZE(not_fields); i++)
		if (!strcmp(name, not_fields[i]))
			return err_set(e, -EINVAL, "%s: \"%s\" cannot be a task's field (it is the fleet's own, or the "
				       "command line's)", fl->where, f->string);
	/* Untrusted, a field is a setting with a rule for lines, applied by
	 * that rule; anything else is the command line's. */
	struct err fe = { 0 };
	if (!fl->trusted && flag(ud, name, fleet_probe, f->string, &fe) == -EPERM)
		return err_set(e, -EPERM, "%s: \"%s\" is taken from a task file only with --trust-task-file (a task line "
			       "may only narrow the command line's settings: its model, bounds, approve, deny rules, "
			       "network and public allow_hosts; this one would be the command line's)",
			       fl->where, f->string);
	const char *field = fl->trusted ? NULL : keep(fl, f->string);
	if (!fl->trusted && !field)
		return err_set(e, -ENOMEM, "out of memory");
	const cJSON *v;
	for (v = cJSON_IsArray(f) ? f->child : f; v; v = cJSON_IsArray(f) ? v->next : NULL) {
		char num[64], replay[PATH_MAX + 8];
		const char *arg;
		if (cJSON_IsString(v)) {
			arg = v->valuestring;
		} else if (cJSON_IsNumber(v)) {
			snprintf(num, sizeof(num), "%.17g", v->valuedouble);
			arg = num;
		} else if (cJSON_IsTrue(v)) {
			arg = NULL;
		} else if (cJSON_IsFalse(v)) {
			continue;	/* a switch left off */
		} else {
			return err_set(e, -EINVAL, "%s: field \"%s\": give a string, a number, true, or a list of them",
				       fl->where, f->string);
		}
		/* A replay script is a file on the host: the task tree's own. */
		if (field && arg && !strcmp(name, "model") && !strncmp(arg, "replay:", 7)) {
			char p[PATH_MAX];
			int r = line_path(fl, f->string, arg + 7, p, e);
			if (r < 0)
				return r;
			snprintf(replay, sizeof(replay), "replay:%s", p);
			arg = replay;
		}
		if (arg && !(arg = keep(fl, arg)))
			return err_set(e, -ENOMEM, "out of memory");
		/* A value the flag refuses is said with where it came from. */
		int r = flag(ud, name, arg, field, e);
		if (r == -ENOENT)
			return err_set(e, -EINVAL, "%s: unknown field \"%s\" (a task's fields are id, task, workspace and "
				       "ward run's long flags with _ for -: model, max_rounds, allow_hosts, ...)",
				       fl->where, f->string);
		if (r < 0)
			return err_wrap(e, "%s: \"%s\"", fl->where, f->string);
	}
	return 0;
}

int fleet_load(struct fleet *fl, fleet_flag_fn *flag, void *ud, struct err *e)
{
	fl->lock_fd = -1;
	if (!fl->out)
		return err_set(e, -EINVAL, "--task-file: give --out DIR too (each task's results go to DIR/ID/)");
	int r = fleet_index(fl, e);
	if (r < 0)
		return r;
	_cleanup_fclose_ FILE *in = fopen(fl->file, "re");
	if (!in)
		return err_setc(e, -errno, "--task-file %s", fl->file);
	/* The task root: what the command line names, or the file's directory. */
	char rootp[PATH_MAX];
	const char *what = fl->root_arg ? "--task-root" : "the task file's directory";
	snprintf(rootp, sizeof(rootp), "%s", fl->root_arg ? fl->root_arg : fl->file);
	char *slash = fl->root_arg ? NULL : strrchr(rootp, '/');
	if (!fl->root_arg && !slash)
		snprintf(rootp, sizeof(rootp), ".");
	else if (slash)
		slash[slash == rootp] = 0;	/* "/tasks.jsonl": "/" */
	struct stat st;
	if (!realpath(rootp, fl->root))
		return err_setc(e, -errno, "%s %s", what, rootp);
	if (stat(fl->root, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_set(e, -ENOTDIR, "%s %s: not a directory", what, rootp);
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	long lineno = 0, seen = 0;
	ssize_t n;
	for (;;) {
		/* Never held whole: a line over the bound is refused as it is read. */
		n = line_read(in, &line, &cap, FLEET_LINE_MAX);
		if (n == 0)
			n = -1;
		if (n == -EIO || n == -ENOMEM)
			return err_setc(e, (int)n, "--task-file %s", fl->file);
		if (n == -1)
			break;
		lineno++;
		if (n == -E2BIG)
			return err_set(e, -E2BIG, "%s:%ld: a line over %u KiB", fl->file, lineno, FLEET_LINE_MAX >> 10);
		if (!line[strspn(line, " \t\r\n")])
			continue;	/* blank lines are not tasks */
		if (seen++ == fl->index)
			break;
	}
	if (n < 0)
		return err_set(e, -ERANGE, "%s has %ld task%s: index %ld is past its end", fl->file, seen,
			       seen == 1 ? "" : "s", fl->index);
	/* One strict reading (base/jsonstrict.h): {"workspace": "a",
	 * "workspace": "/etc"} would be one task to ward and another to the
	 * engine's or a person's own reading of the file. */
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	cJSON *o = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(line, (size_t)n, &o, &pe) < 0)
		return err_set(e, pe.code == -ENOMEM ? -ENOMEM : -EINVAL,
			       "%s:%ld: not valid JSON: %s; one task per line: {\"id\", \"task\", ...}", fl->file, lineno,
			       pe.msg);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return err_set(e, -EINVAL, "%s:%ld: not a JSON object (one task per line: {\"id\", \"task\", ...})",
			       fl->file, lineno);
	}
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "id"));
	const char *task = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "task"));
	const char *ws = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "workspace"));
	snprintf(fl->where, sizeof(fl->where), "%s:%ld", fl->file, lineno);
	r = 0;
	if (!id || !id_valid(id)) {
		r = err_set(e, -EINVAL, "%s:%ld: \"id\" must be 1 to %d letters, digits, '.', '_' or '-' (not starting "
			    "with '.'): it names the task's directory under --out", fl->file, lineno, FLEET_ID_MAX);
	} else if (!task || !task[strspn(task, " \t\r\n")]) {
		r = err_set(e, -EINVAL, "%s:%ld: \"task\" must be the task's text", fl->file, lineno);
	} else if (cJSON_GetObjectItemCaseSensitive(o, "workspace") && !ws) {
		r = err_set(e, -EINVAL, "%s:%ld: \"workspace\" must be a directory's path", fl->file, lineno);
	}
	if (!r) {
		snprintf(fl->id, sizeof(fl->id), "%s", id);
		fl->task = strdup(task);
		/* Under the task root, resolved; as the command line's. */
		if (ws && !(r = line_path(fl, "workspace", ws, fl->workspace, e)) &&
		    (r = flag(ud, "workspace", fl->workspace, NULL, e)) < 0)
			r = err_wrap(e, "%s: \"workspace\"", fl->where);
	}
	for (const cJSON *f = o->child; f && !r; f = f->next)
		if (strcmp(f->string, "id") && strcmp(f->string, "task") && strcmp(f->string, "workspace"))
			r = apply_field(fl, f, flag, ud, e);
	cJSON_Delete(o);
	if (!r && !fl->task)
		r = err_set(e, -ENOMEM, "out of memory");
	return r;
}

static void path_in(const struct fleet *fl, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", fl->dir, name);
}

void fleet_events_path(const struct fleet *fl, char *out, size_t n)
{
	path_in(fl, "events.jsonl", out, n);
}

void fleet_patch_path(const struct fleet *fl, char *out, size_t n)
{
	path_in(fl, "patch.diff", out, n);
}

static int copy_file(const char *from, const char *to)
{
	_cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	struct stat st;
	if (fstat(in, &st) < 0)
		return -errno;
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", to);
	_cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0 || fchmod(out, 0600) < 0)
		return -errno;
	for (off_t off = 0; off < st.st_size;) {
		ssize_t k = sendfile(out, in, &off, (size_t)(st.st_size - off));
		if (k <= 0) {
			unlink(tmp);
			return k < 0 ? -errno : -EIO;
		}
	}
	if (fsync(out) < 0 || rename(tmp, to) < 0) {
		int r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

int fleet_prepare(struct fleet *fl, struct err *e)
{
	fl->t0_ms = now_ms();
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(fl->started_at, sizeof(fl->started_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if ((size_t)snprintf(fl->dir, sizeof(fl->dir), "%s/%s", fl->out, fl->id) >= sizeof(fl->dir))
		return err_set(e, -ENAMETOOLONG, "--out %s: the path is too long", fl->out);
	/* What a task leaves holds the workspace's changes and the model's
	 * text: the owner's only. */
	struct stat ds;
	if (state_mkdir_p(fl->dir, 0700) < 0 || lstat(fl->dir, &ds) < 0)
		return err_setc(e, -errno, "--out: cannot make %s", fl->dir);
	/* One an older ward made 0755 is closed too. */
	if (S_ISDIR(ds.st_mode) && ds.st_uid == geteuid() && (ds.st_mode & 0077))
		chmod(fl->dir, 0700);
	/* One ward per task at a time: a requeued copy that meets a running
	 * one runs nothing. */
	char p[PATH_MAX + 32];
	path_in(fl, ".lock", p, sizeof(p));
	fl->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fl->lock_fd < 0 || flock(fl->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (fl->lock_fd >= 0 && errno == EWOULDBLOCK)
			return err_set(e, -EBUSY, "task %s: another ward is running it now (%s is held); not run twice",
				       fl->id, p);
		return err_setc(e, -errno, "task %s: cannot lock %s", fl->id, p);
	}
	/* Finished before: nothing to do. */
	path_in(fl, "result.json", p, sizeof(p));
	_cleanup_free_ char *old = NULL;
	size_t n = 0;
	int prev_runs = 0;
	if (fdio_read_file(AT_FDCWD, p, 1u << 20, &old, &n) == 0) {
		cJSON *j = cJSON_ParseWithLength(old, n);
		const char *stop = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "stop"));
		const char *tf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "task_file"));
		const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
		const cJSON *idx = cJSON_GetObjectItemCaseSensitive(j, "index");
		const cJSON *fin = cJSON_GetObjectItemCaseSensitive(j, "final");
		prev_runs = cJSON_IsNumber(runs) ? runs->valueint : 0;
		/* Another line's results (an id twice, or DIR reused): not this
		 * task's to skip or resume. */
		if ((cJSON_IsNumber(idx) && (long)idx->valuedouble != fl->index) || (tf && strcmp(tf, fl->file))) {
			err_set(e, -EEXIST, "task %s: %s holds the results of another task (index %ld of %s); ids must be "
				"unique in a task file, and DIR one file's", fl->id, fl->dir,
				cJSON_IsNumber(idx) ? (long)idx->valuedouble : -1L, tf ? tf : "?");
			cJSON_Delete(j);
			return -EEXIST;
		}
		if (cJSON_IsBool(fin) ? cJSON_IsTrue(fin) : fleet_stop_final(stop)) {
			note_say(&fl->note, "task %s already finished (%s); skipped: its results are in %s", fl->id, stop,
				 fl->dir);
			cJSON_Delete(j);
			return 1;
		}
		cJSON_Delete(j);
	}
	/* Started before and not finished: its session goes on, where its
	 * journal and its workspace changes are (this machine's state). */
	path_in(fl, "session", p, sizeof(p));
	_cleanup_free_ char *sess = NULL;
	if (fdio_read_file(AT_FDCWD, p, 256, &sess, &n) == 0) {
		char id[64] = "";
		int runs = 0;
		if (sscanf(sess, "%60s %d", id, &runs) >= 1 && id[strspn(id, "0123456789abcdef-")] == 0) {
			prev_runs = runs > prev_runs ? runs : prev_runs;
			char dir[PATH_MAX], local[PATH_MAX + 80];
			struct err de = { 0 };
			if (journal_dir(dir, sizeof(dir), &de) == 0) {
				snprintf(local, sizeof(local), "%s/%s.jsonl", dir, id);
				if (access(local, F_OK) == 0)
					snprintf(fl->resume, sizeof(fl->resume), "%s", id);
			}
			/* Ended by its watchdog at the deadline (SIGKILL: no result
			 * written): the journal's stop says so, and it is final. */
			struct journal_state st;
			struct err le = { 0 };
			if (fl->resume[0] && journal_load(fl->resume, &st, &le) == 0) {
				bool dead = !strcmp(st.stop, "deadline");
				journal_state_free(&st);
				if (dead) {
					fl->runs = prev_runs;
					int w = fleet_finish_early(fl, "deadline", "the run's watchdog ended it at its deadline + 5 s "
								   "(from its journal)", 2, fl->resume, local, e);
					return w < 0 ? w : 1;
				}
			}
			if (!fl->resume[0])
				note_say(&fl->note, "task %s: its earlier session %s is not on this machine (nor its workspace "
					 "changes); it starts again", fl->id, id);
		}
	}
	fl->runs = prev_runs + 1;
	return 0;
}

void fleet_session(struct fleet *fl, const char *id, const char *journal_path)
{
	char p[PATH_MAX + 32], line[128];
	path_in(fl, "session", p, sizeof(p));
	int n = snprintf(line, sizeof(line), "%s %d\n", id, fl->runs);
	int w = fdio_write_atomic(p, line, (size_t)n, 0600);
	if (w < 0)
		note_say(&fl->note, "warning: task %s: cannot record its session in %s: %s", fl->id, p, strerror(-w));
	/* The journal beside the results, live where one file system holds
	 * both; copied at the end otherwise. */
	path_in(fl, "journal.jsonl", p, sizeof(p));
	struct stat a, b;
	if (stat(p, &a) == 0 && stat(journal_path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		return;
	/* A link made beside, then renamed over the copy: never a moment
	 * without one. Across file systems, a copy now and at the end. */
	char tmp[PATH_MAX + 40];
	snprintf(tmp, sizeof(tmp), "%s.link", p);
	unlink(tmp);
	int r = link(journal_path, tmp) == 0 && rename(tmp, p) == 0 ? 0 : -errno;
	if (r == -EXDEV)
		r = copy_file(journal_path, p);
	if (r < 0) {
		unlink(tmp);
		note_say(&fl->note, "warning: task %s: cannot keep its journal in %s: %s", fl->id, p, strerror(-r));
	}
}

int fleet_finish(struct fleet *fl, cJSON *res, const char *journal_path, struct err *e)
{
	char p[PATH_MAX + 32];
	path_in(fl, "journal.jsonl", p, sizeof(p));
	struct stat a, b;
	if (journal_path && stat(journal_path, &b) == 0 &&
	    (stat(p, &a) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) && copy_file(journal_path, p) < 0)
		note_say(&fl->note, "warning: task %s: cannot copy its journal to %s: %s", fl->id, p, strerror(errno));
	const char *stop = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "stop"));
	cJSON_AddStringToObject(res, "id", fl->id);
	cJSON_AddNumberToObject(res, "index", (double)fl->index);
	cJSON_AddStringToObject(res, "task_file", fl->file);
	size_t tl = strlen(fl->task);
	_cleanup_free_ char *shown = utf8_dup(fl->task, tl < FLEET_TASK_SHOWN ? tl : FLEET_TASK_SHOWN);
	cJSON_AddStringToObject(res, "task", shown ? shown : "");
	/* Exit 1 is an error a rerun may not repeat (an answer that failed
	 * its schema, a patch not written): never final. */
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(res, "exit_code");
	cJSON_AddBoolToObject(res, "final", fleet_stop_final(stop) && !(cJSON_IsNumber(code) && code->valueint == 1));
	cJSON_AddNumberToObject(res, "runs", fl->runs);
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char ended[32];
	strftime(ended, sizeof(ended), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(res, "started_at", fl->started_at);
	cJSON_AddStringToObject(res, "ended_at", ended);
	cJSON_AddNumberToObject(res, "duration_ms", (double)(now_ms() - fl->t0_ms));
	/* The patch by its name in the task's directory. */
	if (cJSON_GetObjectItemCaseSensitive(res, "patch"))
		cJSON_ReplaceItemInObjectCaseSensitive(res, "patch", cJSON_CreateString("patch.diff"));
	_cleanup_free_ char *s = cJSON_Print(res);
	size_t sl = s ? strlen(s) : 0;
	_cleanup_free_ char *line = s ? malloc(sl + 2) : NULL;
	if (line)
		snprintf(line, sl + 2, "%s\n", s);
	path_in(fl, "result.json", p, sizeof(p));
	int r = line ? fdio_write_atomic(p, line, strlen(line), 0600) : -ENOMEM;
	if (r < 0)
		return err_setc(e, r, "task %s: cannot write %s", fl->id, p);
	const cJSON *ec = cJSON_GetObjectItemCaseSensitive(res, "exit_code");
	note_say(&fl->note, "task %s: %s (exit %d) in %.1f s; results in %s", fl->id, stop ? stop : "?",
		 cJSON_IsNumber(ec) ? ec->valueint : -1, (double)(now_ms() - fl->t0_ms) / 1000, fl->dir);
	return 0;
}

int fleet_finish_early(struct fleet *fl, const char *stop, const char *why, int code, const char *session,
		       const char *journal_path, struct err *e)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "type", "result");
	cJSON_AddStringToObject(j, "stop", stop);
	cJSON_AddStringToObject(j, "why", why);
	cJSON_AddNumberToObject(j, "exit_code", code);
	cJSON_AddStringToObject(j, "session", session ? session : "");
	cJSON_AddNumberToObject(j, "rounds", 0);
	cJSON_AddNumberToObject(j, "calls", 0);
	cJSON_AddNumberToObject(j, "refused", 0);
	cJSON *u = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", 0);
	cJSON_AddNumberToObject(u, "output_tokens", 0);
	cJSON_AddNullToObject(j, "cost_usd");
	cJSON_AddArrayToObject(j, "changed_files");
	int r = fleet_finish(fl, j, journal_path, e);
	cJSON_Delete(j);
	return r;
}

void fleet_free(struct fleet *fl)
{
	free(fl->task);
	fl->task = NULL;
	for (size_t i = 0; i < fl->nargs; i++)
		free(fl->args[i]);
	free(fl->args);
	fl->args = NULL;
	fl->nargs = 0;
	if (fl->lock_fd >= 0)
		close(fl->lock_fd);
	fl->lock_fd = -1;
}
