/* A fleet's results: reading DIR/ID/result.json of every task, and the
 * totals. Nothing here prints: a bad file is a task whose state says so. */
#include "task/report.h"
#include "base/line.h"
#include "base/array.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"
#include "base/parse.h"
#include "base/utf8.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ward run's stops, in the order totals list them; another name (a newer
 * ward's) comes after these, then the states of tasks with no result. */
static const char *const known_stops[] = {
	"done", "round_cap", "deadline", "token_budget", "cost_budget", "call_cap", "cancelled", "refused",
	"model_refused", "provider_error", "auth_error", "box_error", "output_invalid", "missing", "unfinished",
	"unreadable",
};

static bool name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* Done: the model finished and ward did all it had to (exit 0; a patch it
 * could not write is exit 1 with stop done). */
bool report_done(const struct report_task *t)
{
	return t->state == REPORT_RESULT && !strcmp(t->stop, "done") && t->exit_code == 0;
}

/* A copy of s, valid UTF-8, cut at max bytes (on a character) and marked. */
static char *text_dup(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max)
		return utf8_dup(s, n);
	size_t cut = max;
	while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
		cut--;
	char *d = malloc(cut + sizeof(" [cut]"));
	if (!d)
		return NULL;
	memcpy(d, s, cut);
	strcpy(d + cut, " [cut]");
	char *v = utf8_dup(d, strlen(d));
	free(d);
	return v;
}

/* A count: a whole number from 0 to 2^53 (what a double holds exactly). */
static int get_count(const cJSON *o, const char *k, bool required, uint64_t *ret, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return err_set(e, -EINVAL, "no \"%s\"", k);
		*ret = 0;
		return 0;
	}
	double d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !(d >= 0) || d > 9007199254740992.0 || d != floor(d))
		return err_set(e, -EINVAL, "\"%s\" is not a whole number from 0", k);
	*ret = (uint64_t)d;
	return 0;
}

/* An optional string: NULL when absent or null. */
static int get_str(const cJSON *o, const char *k, size_t max, char **ret, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return err_set(e, -EINVAL, "\"%s\" is not a string", k);
	*ret = text_dup(v->valuestring, max);
	return *ret ? 0 : err_set(e, -ENOMEM, "out of memory");
}

static int get_files(const cJSON *o, uint64_t *ret, struct err *e)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "changed_files"), *x;
	uint64_t n = 0;
	*ret = 0;
	if (!a || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsArray(a))
		return err_set(e, -EINVAL, "\"changed_files\" is not an array");
	cJSON_ArrayForEach(x, a) {
		/* A path, or ward run's {"path": ..., "change": ...}. */
		if (!cJSON_IsString(x) && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "path")))
			return err_set(e, -EINVAL, "\"changed_files\"[%llu] is neither a path nor an object with one",
				       (unsigned long long)n);
		n++;
	}
	*ret = n;
	return 0;
}

/* The fields of one result; -EINVAL with what is wrong in e. */
static int result_fields(struct report_task *t, const cJSON *o, struct err *e)
{
	if (!cJSON_IsObject(o))
		return err_set(e, -EINVAL, "not a JSON object");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	if (!cJSON_IsString(id))
		return err_set(e, -EINVAL, "no \"id\"");
	if (strcmp(id->valuestring, t->id))
		return err_set(e, -EINVAL, "its \"id\" is not its directory's name");
	const cJSON *stop = cJSON_GetObjectItemCaseSensitive(o, "stop");
	if (!cJSON_IsString(stop))
		return err_set(e, -EINVAL, "no \"stop\"");
	if (!name_ok(stop->valuestring, sizeof(t->stop) - 1))
		return err_set(e, -EINVAL, "\"stop\" is not a stop's name");
	uint64_t ec;
	if (get_count(o, "exit_code", true, &ec, e) < 0)
		return e->code;
	if (ec > 255)
		return err_set(e, -EINVAL, "\"exit_code\" is past 255");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(o, "usage");
	if (!cJSON_IsObject(usage))
		return err_set(e, -EINVAL, "no \"usage\" object");
	if (get_count(o, "rounds", true, &t->rounds, e) < 0 || get_count(o, "calls", true, &t->calls, e) < 0 ||
	    get_count(o, "duration_ms", true, &t->duration_ms, e) < 0 ||
	    get_count(o, "refused", false, &t->refused, e) < 0 || get_count(o, "runs", false, &t->runs, e) < 0 ||
	    get_count(usage, "input_tokens", true, &t->in, e) < 0 ||
	    get_count(usage, "output_tokens", true, &t->out, e) < 0 ||
	    get_count(usage, "cache_read_tokens", false, &t->cache_read, e) < 0 ||
	    get_count(usage, "cache_write_tokens", false, &t->cache_write, e) < 0 || get_files(o, &t->files, e) < 0)
		return e->code;
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(o, "index");
	if (idx && !cJSON_IsNull(idx)) {
		uint64_t i;
		if (get_count(o, "index", false, &i, e) < 0)
			return e->code;
		t->index = (int64_t)i;
	}
	const cJSON *cost = cJSON_GetObjectItemCaseSensitive(o, "cost_usd");
	if (cost && !cJSON_IsNull(cost)) {
		if (!cJSON_IsNumber(cost) || !(cost->valuedouble >= 0) || !isfinite(cost->valuedouble))
			return err_set(e, -EINVAL, "\"cost_usd\" is neither a number from 0 nor null");
		t->cost_known = true;
		t->cost_usd = cost->valuedouble;
	}
	/* Subagents: their spend is the task's (their budgets were). */
	const cJSON *ag = cJSON_GetObjectItemCaseSensitive(o, "agents");
	if (ag && !cJSON_IsArray(ag))
		return err_set(e, -EINVAL, "\"agents\" is not an array");
	const cJSON *a;
	cJSON_ArrayForEach(a, ag) {
		if (cJSON_GetArraySize(t->agents) >= REPORT_AGENTS_MAX)
			break;
		uint64_t in = 0, out = 0;
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(a, "usage");
		if (!cJSON_IsObject(a) || (u && (get_count(u, "input_tokens", false, &in, e) < 0 ||
						 get_count(u, "output_tokens", false, &out, e) < 0)))
			return err_set(e, -EINVAL, "an entry of \"agents\" is not a subagent's");
		const cJSON *ac = cJSON_GetObjectItemCaseSensitive(a, "cost_usd");
		double c = cJSON_IsNumber(ac) && ac->valuedouble >= 0 && isfinite(ac->valuedouble) ? ac->valuedouble : 0;
		char id[64], st[33];
		const char *ids = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "id"));
		const char *sts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "stop"));
		snprintf(id, sizeof(id), "%s", ids && name_ok(ids, sizeof(id) - 1) ? ids : "?");
		snprintf(st, sizeof(st), "%s", sts && name_ok(sts, sizeof(st) - 1) ? sts : "?");
		if (!t->agents)
			t->agents = cJSON_CreateArray();
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "id", id);
		cJSON_AddStringToObject(x, "stop", st);
		cJSON_AddNumberToObject(x, "input_tokens", (double)in);
		cJSON_AddNumberToObject(x, "output_tokens", (double)out);
		cJSON_AddNumberToObject(x, "cost_usd", c);
		cJSON_AddItemToArray(t->agents, x);
		t->in += in;
		t->out += out;
		t->cost_usd += c;
	}
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(o, "final");
	if (fin && !cJSON_IsBool(fin))
		return err_set(e, -EINVAL, "\"final\" is not true or false");
	t->final = !fin || cJSON_IsTrue(fin);
	if (get_str(o, "why", REPORT_WHY_MAX, &t->why, e) < 0 || get_str(o, "task", 400, &t->task, e) < 0 ||
	    get_str(o, "task_file", 256, &t->task_file, e) < 0 ||
	    get_str(o, "session", 128, &t->session, e) < 0 || get_str(o, "model", 128, &t->model, e) < 0)
		return e->code;
	t->exit_code = (int)ec;
	strcpy(t->stop, stop->valuestring);
	return 0;
}

static void task_clear(struct report_task *t)
{
	free(t->why);
	free(t->task);
	free(t->task_file);
	free(t->session);
	free(t->model);
	t->why = t->task = t->task_file = t->session = t->model = NULL;
	cJSON_Delete(t->agents);
	t->agents = NULL;
}

/* result.json of one task: 1 read, 0 when there is none, -ENOMEM, or
 * another negative errno with what is wrong in e. */
static int result_read(int taskfd, struct report_task *t, struct err *e)
{
	/* O_NONBLOCK: a FIFO put there must not hang the report. */
	_cleanup_close_ int fd = openat(taskfd, "result.json", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return err_setc(e, -errno, "result.json cannot be opened");
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return err_set(e, -EINVAL, "result.json is not a regular file");
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	int r = fdio_read_fd(fd, REPORT_FILE_MAX, &text, &n);
	if (r == -EFBIG)
		return err_set(e, -EINVAL, "result.json is larger than %u KiB", REPORT_FILE_MAX / 1024);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return err_setc(e, r, "result.json cannot be read");
	if (parse_json_has_nul(text, n))
		return err_set(e, -EINVAL, "result.json holds a NUL character");
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithOpts(text, &end, true);
	if (!o) {
		size_t line, col;
		parse_line_col(text, n, end && end >= text ? (size_t)(end - text) : 0, &line, &col);
		return err_set(e, -EINVAL, "result.json is not valid JSON (line %zu, column %zu)%s", line, col,
			       n == 0 ? ": it is empty" : "");
	}
	r = result_fields(t, o, e);
	cJSON_Delete(o);
	if (r < 0) {
		task_clear(t);
		if (r == -ENOMEM)
			return r;
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		return err_set(e, -EINVAL, "result.json: %s", msg);
	}
	return 1;
}

static int task_read(int dirfd, const char *name, struct report_task *t)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->id, sizeof(t->id), "%s", name);
	t->index = -1;
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct err e = { 0 };
	int r = fd < 0 ? err_setc(&e, -errno, "the task's directory cannot be opened") : result_read(fd, t, &e);
	if (r == -ENOMEM)
		return r;
	if (r > 0) {
		t->state = REPORT_RESULT;
		if (!t->why && !(t->why = strdup("")))
			return -ENOMEM;
		return 0;
	}
	if (r < 0) {
		t->state = REPORT_UNREADABLE;
		strcpy(t->stop, "unreadable");
		t->why = utf8_dup(e.msg, strlen(e.msg));
	} else if (!faccessat(fd, "journal.jsonl", F_OK, AT_SYMLINK_NOFOLLOW) ||
		   !faccessat(fd, "events.jsonl", F_OK, AT_SYMLINK_NOFOLLOW)) {
		t->state = REPORT_UNFINISHED;
		strcpy(t->stop, "unfinished");
		t->why = strdup("no result.json: the task started and did not finish (still running, or killed)");
	} else {
		t->state = REPORT_MISSING;
		strcpy(t->stop, "missing");
		t->why = strdup("no result.json: the task has not run");
	}
	return t->why ? 0 : -ENOMEM;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct report_task *)a)->id, ((const struct report_task *)b)->id);
}

static size_t stop_rank(const char *s)
{
	size_t n = ARRAY_SIZE(known_stops);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(known_stops[i], s))
			/* The states without a result go last. */
			return i < n - 3 ? i : i + 1;
	return n - 3;
}

static int by_rank(const void *a, const void *b)
{
	const struct report_stop_count *x = a, *y = b;
	size_t rx = stop_rank(x->stop), ry = stop_rank(y->stop);
	return rx != ry ? (rx < ry ? -1 : 1) : strcmp(x->stop, y->stop);
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p% of them at or below. */
static uint64_t nearest_rank(const uint64_t *v, size_t n, unsigned p)
{
	if (!n)
		return 0;
	size_t k = (n * p + 99) / 100;
	return v[k ? k - 1 : 0];
}

static int totals(struct report *r)
{
	struct report_totals *T = &r->tot;
	memset(T, 0, sizeof(*T));
	T->tasks = r->n;
	_cleanup_free_ uint64_t *d = malloc((r->n ? r->n : 1) * sizeof(*d));
	T->stops = calloc(r->n ? r->n : 1, sizeof(*T->stops));
	if (!d || !T->stops)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		const struct report_task *t = &r->t[i];
		size_t j = 0;
		while (j < T->nstops && strcmp(T->stops[j].stop, t->stop))
			j++;
		if (j == T->nstops)
			T->stops[T->nstops++].stop = t->stop;
		T->stops[j].n++;
		T->done += report_done(t);
		if (t->state != REPORT_RESULT)
			continue;
		d[T->with_result++] = t->duration_ms;
		T->not_final += !t->final;
		T->in += t->in;
		T->out += t->out;
		T->cache_read += t->cache_read;
		T->cache_write += t->cache_write;
		T->sum_ms += t->duration_ms;
		if (t->cost_known)
			T->cost_usd += t->cost_usd;
		else
			T->cost_unknown++;
	}
	qsort(T->stops, T->nstops, sizeof(*T->stops), by_rank);
	qsort(d, T->with_result, sizeof(*d), by_u64);
	T->p50_ms = nearest_rank(d, T->with_result, 50);
	T->p90_ms = nearest_rank(d, T->with_result, 90);
	T->p99_ms = nearest_rank(d, T->with_result, 99);
	T->max_ms = T->with_result ? d[T->with_result - 1] : 0;
	return 0;
}

/* The ids of the task file: each one without a directory is a task that
 * never started (an array element that did not run), reported missing. */
static int expect_tasks(struct report *r, size_t *cap, const char *task_file, struct err *e)
{
	_cleanup_fclose_ FILE *in = fopen(task_file, "re");
	if (!in)
		return err_setc(e, -errno, "--task-file %s cannot be read", task_file);
	if (r->n)
		qsort(r->t, r->n, sizeof(*r->t), by_id);
	size_t have = r->n;
	_cleanup_free_ char *line = NULL;
	size_t lcap = 0;
	ssize_t n;
	while ((n = line_read(in, &line, &lcap, REPORT_TASK_LINE_MAX)) != 0 && n != -EIO && n != -ENOMEM) {
		if (n < 0 || !line[strspn(line, " \t\r\n")])
			continue;	/* blank, or over the bound: no task */
		/* Read as ward run reads it (base/jsonstrict.h): a line it would
		 * refuse names no task. */
		cJSON *o = NULL;
		jsonstrict_parse(line, (size_t)n, &o, NULL);
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "id"));
		struct report_task key;
		bool seen = !id || !name_ok(id, REPORT_ID_MAX);
		if (!seen) {
			snprintf(key.id, sizeof(key.id), "%s", id);
			seen = bsearch(&key, r->t, have, sizeof(*r->t), by_id) != NULL;
			for (size_t i = have; i < r->n && !seen; i++)
				seen = !strcmp(r->t[i].id, id);
		}
		if (!seen) {
			if (r->n == REPORT_TASKS_MAX || array_grow(&r->t, cap, r->n, sizeof(*r->t), 256) < 0) {
				cJSON_Delete(o);
				return err_set(e, -E2BIG, "--task-file %s: too many tasks", task_file);
			}
			struct report_task *t = &r->t[r->n++];
			memset(t, 0, sizeof(*t));
			snprintf(t->id, sizeof(t->id), "%s", id);
			t->index = -1;
			t->state = REPORT_MISSING;
			strcpy(t->stop, "missing");
			t->why = strdup("no directory in DIR: the task never started (its array element did not run)");
			if (!t->why) {
				cJSON_Delete(o);
				return err_set(e, -ENOMEM, "out of memory");
			}
		}
		cJSON_Delete(o);
	}
	return 0;
}

int report_read(const char *dir, const char *task_file, struct report *ret, struct err *e)
{
	struct report r = { 0 };
	size_t cap = 0;
	int k = 0;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return err_setc(e, -errno, "%s cannot be read", dir);
	if (!(r.dir = strdup(dir)))
		return err_set(e, -ENOMEM, "out of memory");
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		if (name[0] == '.')
			continue;
		struct stat st;
		bool isdir = de->d_type == DT_DIR ||
			     (de->d_type == DT_UNKNOWN && !fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) &&
			      S_ISDIR(st.st_mode));
		if (!isdir || !name_ok(name, REPORT_ID_MAX)) {
			/* Slurm's logs, a tarball: not a task. */
			if (!r.skipped++)
				snprintf(r.skipped_first, sizeof(r.skipped_first), "%s", name);
			continue;
		}
		if (r.n == REPORT_TASKS_MAX) {
			k = err_set(e, -E2BIG, "%s has more than %d task directories; report on fewer at a time", dir,
				    REPORT_TASKS_MAX);
			goto fail;
		}
		if (array_grow(&r.t, &cap, r.n, sizeof(*r.t), 256) < 0) {
			k = err_set(e, -ENOMEM, "out of memory");
			goto fail;
		}
		/* Counted before it is read, so that a failure frees its strings. */
		if (task_read(dirfd(d), name, &r.t[r.n++]) < 0) {
			k = err_set(e, -ENOMEM, "out of memory");
			goto fail;
		}
	}
	if (errno) {
		k = err_setc(e, -errno, "%s cannot be read", dir);
		goto fail;
	}
	if (task_file && (k = expect_tasks(&r, &cap, task_file, e)) < 0)
		goto fail;
	if (r.n)
		qsort(r.t, r.n, sizeof(*r.t), by_id);
	if (totals(&r) < 0) {
		k = err_set(e, -ENOMEM, "out of memory");
		goto fail;
	}
	*ret = r;
	return 0;
fail:
	report_free(&r);
	return k;
}

void report_free(struct report *r)
{
	for (size_t i = 0; i < r->n; i++)
		task_clear(&r->t[i]);
	free(r->t);
	free(r->tot.stops);
	free(r->dir);
	memset(r, 0, sizeof(*r));
}
