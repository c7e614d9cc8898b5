#include "turn/journal.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonprint.h"
#include "base/state.h"
#include "turn/compact.h"
#include "turn/provider.h"
#include "turn/usage.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define JOURNAL_MAX (256u << 20)

int journal_dir(char *out, size_t n, struct err *e)
{
	char base[PATH_MAX];
	int r = state_data_dir(base, sizeof(base), e);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, n, "%s/sessions", base) >= n)
		return err_set(e, -ENAMETOOLONG, "the sessions directory path is too long");
	if (state_mkdir_p(out, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", out);
	/* An existing directory made by someone else's umask is tightened. */
	chmod(out, 0700);
	return 0;
}

static bool journal_id_valid(const char *id)
{
	if (!id || !*id || strlen(id) > 60)
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return false;
	return true;
}

static int journal_path(const char *id, char *out, size_t n, struct err *e)
{
	if (!journal_id_valid(id))
		return err_set(e, -EINVAL, "invalid session id \"%s\" (see `ward sessions`)", id ? id : "");
	char dir[PATH_MAX];
	int r = journal_dir(dir, sizeof(dir), e);
	if (r < 0)
		return r;
	snprintf(out, n, "%s/%s.jsonl", dir, id);
	return 0;
}

/* The header's box labels, kept to go on every record. */
static void journal_keep_labels(struct journal *j, const cJSON *header)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(header, "box_labels");
	if (cJSON_IsObject(l) && l->child)
		j->labels = cJSON_PrintUnformatted(l);
}

/* An existing journal's header: its first line, which journal_create
 * wrote whole (a line longer than this is not one of ours). */
static cJSON *journal_read_header(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char buf[65536];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	char *nl = strchr(buf, '\n');
	if (!nl)
		return NULL;
	*nl = 0;
	return cJSON_Parse(buf);
}

int journal_create(struct journal *j, cJSON *header, struct err *e)
{
	*j = (struct journal){ .fd = -1 };
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	/* Many wards may start in one second (a fleet on one machine): an id
	 * taken is drawn again. */
	for (int tries = 0; j->fd < 0; tries++) {
		uint8_t rnd[3] = { 0 };
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd[0] = (uint8_t)(getpid() + tries);
		snprintf(j->id, sizeof(j->id), "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rnd[0], rnd[1], rnd[2]);
		int r = journal_path(j->id, j->path, sizeof(j->path), e);
		if (r < 0)
			return r;
		j->fd = open(j->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
		if (j->fd < 0 && (errno != EEXIST || tries >= 16))
			return err_setc(e, -errno, "cannot create the session journal %s", j->path);
	}
	flock(j->fd, LOCK_EX | LOCK_NB);	/* (new: nobody else has it) */
	char created[32];
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_DeleteItemFromObject(header, "session");
	cJSON_DeleteItemFromObject(header, "created");
	cJSON_AddStringToObject(header, "session", j->id);
	cJSON_AddStringToObject(header, "created", created);
	journal_keep_labels(j, header);
	int r = journal_write(j, "header", header);
	if (r < 0)
		return err_setc(e, r, "cannot write the session journal %s", j->path);
	return 0;
}

int journal_open(struct journal *j, const char *id, struct err *e)
{
	*j = (struct journal){ .fd = -1 };
	snprintf(j->id, sizeof(j->id), "%s", id);
	int r = journal_path(id, j->path, sizeof(j->path), e);
	if (r < 0)
		return r;
	j->fd = open(j->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (j->fd < 0)
		return err_set(e, -errno, "no session %s (%s)", id, strerror(errno));
	/* One ward per session: two appending to one conversation would
	 * interleave it. The lock goes with the last descriptor. */
	if (flock(j->fd, LOCK_EX | LOCK_NB) < 0) {
		int r = -errno;
		close(j->fd);
		j->fd = -1;
		if (r == -EWOULDBLOCK)
			return err_set(e, -EBUSY, "session %s is open in another ward now; wait for it to end (one ward "
				       "works on a session at a time)", id);
		return err_setc(e, r, "cannot lock the session journal %s", j->path);
	}
	cJSON *h = journal_read_header(j->path);
	journal_keep_labels(j, h);
	cJSON_Delete(h);
	return 0;
}

void journal_sync(struct journal *j)
{
	if (j->fd >= 0)
		fdatasync(j->fd);
}

void journal_close(struct journal *j)
{
	if (j->fd >= 0) {
		fsync(j->fd);
		close(j->fd);
	}
	j->fd = -1;
	free(j->labels);
	j->labels = NULL;
}

int journal_write(struct journal *j, const char *type, cJSON *rec)
{
	if (j->fd < 0)
		return 0;
	cJSON_DeleteItemFromObject(rec, "type");
	_cleanup_free_ char *s = jsonprint_text(rec);
	if (!s || s[0] != '{')
		return -ENOMEM;
	/* "type" first, for a person reading the file; type is ours, plain;
	 * then the box's labels (the header has them already). */
	const char *labels = j->labels && strcmp(type, "header") && !cJSON_HasObjectItem(rec, "box_labels") ? j->labels
														: NULL;
	size_t n = strlen(s), tl = strlen(type), ll = labels ? strlen(labels) : 0;
	size_t cap = n + tl + ll + 32;
	_cleanup_free_ char *line = malloc(cap);
	if (!line)
		return -ENOMEM;
	int k = snprintf(line, cap, "{\"type\":\"%s\"%s%s%s%s\n", type, labels ? ",\"box_labels\":" : "",
			 labels ? labels : "", n > 2 ? "," : "", n > 2 ? s + 1 : "}");
	return fdio_write_full(j->fd, line, (size_t)k);
}

void journal_state_free(struct journal_state *st)
{
	cJSON_Delete(st->header);
	cJSON_Delete(st->messages);
	cJSON_Delete(st->results);
	cJSON_Delete(st->checkpoints);
	cJSON_Delete(st->agents);
	cJSON_Delete(st->agent);
	cJSON_Delete(st->jobs_told);
	*st = (struct journal_state){ 0 };
}

static const char *rec_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The records of the lines a rewind took back: from the line of the
 * checkpoint of the message it went back to, to the rewind itself. One
 * flag a line of data (lines counted from 0), or NULL with e set. */
static uint8_t *journal_rewound(const char *path, const char *data, size_t len, size_t *ret_lines, struct err *e)
{
	size_t lines = 0;
	for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + len - p))); p++)
		lines++;
	uint8_t *gone = calloc(lines + 1, 1);
	size_t *live = calloc(lines + 1, sizeof(*live));	/* live[k - 1]: the line of checkpoint k */
	if (!gone || !live) {
		free(gone);
		free(live);
		err_set(e, -ENOMEM, "out of memory reading %s", path);
		return NULL;
	}
	size_t k = 0, i = 0;
	for (const char *p = data, *nl; (nl = memchr(p, '\n', (size_t)(data + len - p))); p = nl + 1, i++) {
		static const char ck[] = "{\"type\":\"checkpoint\"", rw[] = "{\"type\":\"rewind\"";
		bool is_ck = (size_t)(nl - p) > sizeof(ck) && !memcmp(p, ck, sizeof(ck) - 1);
		bool is_rw = (size_t)(nl - p) > sizeof(rw) && !memcmp(p, rw, sizeof(rw) - 1);
		if (!is_ck && !is_rw)
			continue;
		cJSON *rec = cJSON_ParseWithLength(p, (size_t)(nl - p));
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, is_ck ? "message" : "to");
		int n = cJSON_IsNumber(v) ? v->valueint : -1;
		cJSON_Delete(rec);
		if (n < 1 || (size_t)n > k + is_ck) {
			free(gone);
			free(live);
			err_set(e, -EBADMSG, "%s: line %zu: a %s record that does not fit the messages before it; the journal "
				"is damaged", path, i + 1, is_ck ? "checkpoint" : "rewind");
			return NULL;
		}
		if (is_ck) {
			live[n - 1] = i;
			k = (size_t)n;
		} else {
			memset(gone + live[n - 1], 1, i + 1 - live[n - 1]);
			k = (size_t)n - 1;
		}
	}
	free(live);
	*ret_lines = lines;
	return gone;
}

/* How much of a message the list of checkpoints keeps. */
#define JOURNAL_CHECKPOINT_TEXT 200

/* The totals a record adds to. */
static void journal_spent(struct journal_state *st, const char *type, const cJSON *rec)
{
	if (!type)
		return;
	if (!strcmp(type, "usage")) {
		usage_add_record(&st->usage, rec);
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(rec, "cost_usd");
		if (cJSON_IsNumber(c) && st->cost >= 0)
			st->cost += c->valuedouble;
		else
			st->cost = -1;
	} else if (!strcmp(type, "message") && rec_str(rec, "role") && !strcmp(rec_str(rec, "role"), "assistant") &&
		   !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "partial"))) {
		st->rounds++;
	} else if (!strcmp(type, "intent")) {
		st->calls++;
	} else if (!strcmp(type, "gate") && rec_str(rec, "decision") &&
		   (!strcmp(rec_str(rec, "decision"), "deny") || !strcmp(rec_str(rec, "decision"), "needs_person"))) {
		st->refused++;
	}
}

int journal_job_key(const cJSON *o, char *out, size_t n)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	if (!cJSON_IsNumber(id))
		id = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "job"), "id");
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "hibernated_at");
	if (!cJSON_IsNumber(id) || !cJSON_IsNumber(at) || id->valuedouble < 1 || id->valuedouble > 1e9 ||
	    at->valuedouble < 0 || at->valuedouble > 1e15)
		return -EINVAL;
	return (size_t)snprintf(out, n, "%.0f@%.0f", id->valuedouble, at->valuedouble) < n ? 0 : -ENAMETOOLONG;
}

int journal_load(const char *id, struct journal_state *st, struct err *e)
{
	*st = (struct journal_state){ 0 };
	char path[PATH_MAX];
	int r = journal_path(id, path, sizeof(path), e);
	if (r < 0)
		return r;
	_cleanup_free_ char *data = NULL;
	size_t len;
	r = fdio_read_file(AT_FDCWD, path, JOURNAL_MAX, &data, &len);
	if (r == -ENOENT)
		return err_set(e, r, "no session %s (see `ward sessions`)", id);
	if (r < 0)
		return err_setc(e, r, "cannot read %s", path);
	size_t nlines;
	_cleanup_free_ uint8_t *gone = journal_rewound(path, data, len, &nlines, e);
	if (!gone)
		return -EBADMSG;
	st->messages = cJSON_CreateArray();
	st->results = cJSON_CreateObject();
	st->checkpoints = cJSON_CreateArray();
	st->agents = cJSON_CreateObject();
	st->jobs_told = cJSON_CreateArray();
	cJSON *asked = NULL;	/* the last checkpoint, until its message comes */
	size_t lineno = 0;
	for (char *p = data, *nl; p < data + len; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(data + len - p));
		lineno++;
		if (!nl)
			break;	/* a last line cut by a kill */
		cJSON *rec = cJSON_ParseWithLength(p, (size_t)(nl - p));
		if (!rec) {
			journal_state_free(st);
			return err_set(e, -EBADMSG, "%s: line %zu is not JSON; the journal is damaged", path, lineno);
		}
		const char *type = rec_str(rec, "type");
		journal_spent(st, type, rec);
		if (gone[lineno - 1]) {
			cJSON_Delete(rec);
			continue;	/* rewound */
		}
		const char *cid = rec_str(rec, "call_id");
		if (type && !strcmp(type, "header") && !st->header) {
			st->header = rec;
			continue;
		}
		if (type && !strcmp(type, "message")) {
			cJSON *m = cJSON_CreateObject();
			cJSON_AddItemToObject(m, "role", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "role"), 1));
			cJSON_AddItemToObject(m, "content",
					      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "content"), 1));
			cJSON_AddItemToArray(st->messages, m);
			const char *text = json_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rec, "content"), 0),
						    "text");
			const char *role = rec_str(rec, "role");
			if (asked && text && role && !strcmp(role, "user")) {
				char t[JOURNAL_CHECKPOINT_TEXT + 1];
				snprintf(t, sizeof(t), "%s", text);
				cJSON_ReplaceItemInObject(asked, "text", cJSON_CreateString(t));
			}
			asked = NULL;
		} else if (type && !strcmp(type, "job_told")) {
			char k[64];
			if (journal_job_key(rec, k, sizeof(k)) == 0)
				cJSON_AddItemToArray(st->jobs_told, cJSON_CreateString(k));
		} else if (type && !strcmp(type, "checkpoint")) {
			cJSON *c = cJSON_CreateObject();
			cJSON_AddNumberToObject(c, "message", json_int(rec, "message", 0));
			cJSON_AddStringToObject(c, "at", rec_str(rec, "at") ? rec_str(rec, "at") : "");
			cJSON_AddStringToObject(c, "text", "");
			if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(rec, "layer")))
				cJSON_AddFalseToObject(c, "layer");
			if (rec_str(rec, "error"))
				cJSON_AddStringToObject(c, "error", rec_str(rec, "error"));
			cJSON_AddItemToArray(st->checkpoints, c);
			asked = c;
		} else if (type && !strcmp(type, "clear")) {
			/* /clear: the conversation starts again from here. */
			cJSON_Delete(st->messages);
			st->messages = cJSON_CreateArray();
		} else if (type && !strcmp(type, "compaction")) {
			/* The conversation as the loop left it: the middle replaced. */
			const cJSON *from = cJSON_GetObjectItemCaseSensitive(rec, "from");
			const cJSON *to = cJSON_GetObjectItemCaseSensitive(rec, "to");
			const cJSON *sum = cJSON_GetObjectItemCaseSensitive(rec, "summary");
			struct compact_split sp = { .from = cJSON_IsNumber(from) ? from->valueint : -1,
						    .to = cJSON_IsNumber(to) ? to->valueint : -1 };
			if (!cJSON_IsObject(sum) || compact_splice(st->messages, &sp, cJSON_Duplicate(sum, 1), NULL) < 0) {
				cJSON_Delete(rec);
				journal_state_free(st);
				return err_set(e, -EBADMSG,
					       "%s: line %zu: a compaction record that does not fit the conversation before "
					       "it; the journal is damaged",
					       path, lineno);
			}
			st->compactions++;
		} else if (type && !strcmp(type, "stop") && rec_str(rec, "reason")) {
			snprintf(st->stop, sizeof(st->stop), "%s", rec_str(rec, "reason"));
		} else if (type && !strcmp(type, "result") && cid) {
			cJSON_DeleteItemFromObject(st->results, cid);
			cJSON_AddItemToObject(st->results, cid, cJSON_Duplicate(rec, 1));
		} else if (type && (!strcmp(type, "agent_start") || !strcmp(type, "agent_end")) && cid && rec_str(rec, "agent")) {
			cJSON *a = cJSON_GetObjectItemCaseSensitive(st->agents, cid);
			if (!a)
				a = cJSON_AddObjectToObject(st->agents, cid);
			static const char *const keys[] = { "agent", "description", "session", "stop", "why" };
			for (size_t k = 0; a && k < sizeof(keys) / sizeof(keys[0]); k++)
				if (rec_str(rec, keys[k])) {
					cJSON_DeleteItemFromObject(a, keys[k]);
					cJSON_AddStringToObject(a, keys[k], rec_str(rec, keys[k]));
				}
		} else if (type && !strcmp(type, "agent") && rec_str(rec, "agent") && !st->agent) {
			st->agent = cJSON_Duplicate(rec, 1);
		}
		cJSON_Delete(rec);
	}
	if (!st->header) {
		journal_state_free(st);
		return err_set(e, -EBADMSG, "%s has no header; it is not a ward session", path);
	}
	return 0;
}
