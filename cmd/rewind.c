/* ward rewind, what /rewind does, and the checkpoint before each of the
 * person's messages (cmd/rewind.h). */
#include "cmd/rewind.h"
#include "base/json.h"
#include "cmd/term.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "cmd/cmd.h"
#include "cmd/tui.h"
#include "sandbox/box.h"
#include "workspace/layers.h"
#include "turn/journal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A box destroyed a moment ago may still be letting go of its layers. */
#define REWIND_ALONE_WAIT_MS 3000

static void layer_name(const char *id, char *out, size_t n)
{
	snprintf(out, n, "s-%s", id);
}

void rewind_checkpoint(struct session *s, bool layer)
{
	int n = ++s->asked;
	struct err e = { 0 };
	struct checkpoint_stats st = { 0 };
	int r = 0;
	if (layer) {
		char name[BOX_NAME_MAX + 1], dir[PATH_MAX];
		struct layers L = { .lock_fd = -1 };
		layer_name(s->j.id, name, sizeof(name));
		int k = r = checkpoint_dir(name, dir, sizeof(dir), &e);
		if (r >= 0)
			k = r = layers_find(name, &L, &e);
		if (r >= 0)
			r = checkpoint_take(dir, k > 0 ? L.upper : NULL, n, &st, &e);
		if (k > 0)
			layers_release(&L);
	}
	char at[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddNumberToObject(rec, "message", n);
	cJSON_AddStringToObject(rec, "at", at);
	if (!layer)
		cJSON_AddFalseToObject(rec, "layer");
	cJSON_AddNumberToObject(rec, "files", (double)st.files);
	cJSON_AddNumberToObject(rec, "copied", (double)st.copied);
	cJSON_AddNumberToObject(rec, "bytes_copied", (double)st.bytes_copied);
	cJSON_AddNumberToObject(rec, "ms", (double)st.ms);
	if (st.skipped)
		cJSON_AddNumberToObject(rec, "skipped", (double)st.skipped);
	if (r < 0) {
		cJSON_AddStringToObject(rec, "error", e.msg);
		fflush(stdout);
		term_printf(stderr, "ward: warning: no checkpoint before message %d (%s): its workspace cannot be rewound to\n", n,
			e.msg);
	}
	journal_write(&s->j, "checkpoint", rec);
	cJSON_Delete(rec);
}

int rewind_list(const char *id, cJSON **ret, struct err *e)
{
	struct journal_state st;
	int r = journal_load(id, &st, e);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(st.checkpoints);
	journal_state_free(&st);
	return 0;
}

/* The layers of the session, held by this process alone: 0, or an exit
 * code after the line that says why. */
static int rewind_hold(const char *id, const char *name, uint64_t disk, struct layers *L)
{
	struct err e = { 0 };
	/* A hibernated box holds nothing of the layers: they can be rewound
	 * under it, and its next wake sees the rewound files. */
	if (box_has_keeper(name) && !box_is_hibernated(name)) {
		cmd_error("box %s is running over session %s's workspace; end the ward that runs it, or `ward box destroy "
			  "%s`, then rewind; nothing changed", name, id, name);
		return EXIT_TEMPFAIL;
	}
	int k = layers_find(name, L, &e);
	if (k == 0)
		k = layers_open(name, disk ? disk : BOX_DEFAULT_DISK, L, &e);
	if (k < 0) {
		cmd_error("%s; nothing changed", e.msg);
		return EXIT_FAIL;
	}
	int64_t until = now_ms() + REWIND_ALONE_WAIT_MS;
	while (!layers_alone(L)) {
		if (now_ms() > until) {
			layers_release(L);
			cmd_error("the workspace layers of session %s are in use by a box; end it, then rewind; nothing changed",
				  id);
			return EXIT_TEMPFAIL;
		}
		usleep(50000);
	}
	return 0;
}

int rewind_to(struct session *s, int n, uint64_t disk, void (*stop_box)(void *ud), void *ud, struct rewind_done *ret)
{
	struct err e = { 0 };
	const char *id = s->j.id;
	if (s->asked < 1) {
		cmd_error("session %s has no message to go back before (each one is numbered when it is sent); nothing "
			  "changed", id);
		return EXIT_USAGE;
	}
	if (n < 1 || n > s->asked) {
		cmd_error("there is no message %d: session %s has messages 1 to %d (`ward rewind %s` lists them); nothing "
			  "changed", n, id, s->asked, id);
		return EXIT_USAGE;
	}
	cJSON *list = NULL;
	if (rewind_list(id, &list, &e) < 0) {
		cmd_error("%s; nothing changed", e.msg);
		return EXIT_FAIL;
	}
	const cJSON *c = cJSON_GetArrayItem(list, n - 1);
	if (json_str(c, "error")) {
		cmd_error("no checkpoint was taken before message %d (%s), so its workspace cannot be put back; nothing "
			  "changed", n, json_str(c, "error"));
		cJSON_Delete(list);
		return EXIT_FAIL;
	}
	struct rewind_done d = { .workspace = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "layer")) };
	cJSON_Delete(list);
	if (d.workspace) {
		char name[BOX_NAME_MAX + 1], dir[PATH_MAX];
		layer_name(id, name, sizeof(name));
		if (checkpoint_dir(name, dir, sizeof(dir), &e) < 0) {
			cmd_error("%s; nothing changed", e.msg);
			return EXIT_FAIL;
		}
		if (!checkpoint_has(dir, n)) {
			cmd_error("the checkpoint before message %d of session %s is gone (applying a session's changes to its "
				  "workspace drops its checkpoints); nothing changed", n, id);
			return EXIT_FAIL;
		}
		if (stop_box) {
			stop_box(ud);
			d.box_stopped = true;
			if (ret)
				ret->box_stopped = true;
		}
		struct layers L = { .lock_fd = -1 };
		int r = rewind_hold(id, name, disk, &L);
		if (r)
			return r;
		r = checkpoint_restore(dir, n, L.upper, &d.st, &e);
		layers_release(&L);
		if (r < 0) {
			cmd_error("%s; nothing changed", e.msg);
			return EXIT_FAIL;
		}
		checkpoint_drop_after(dir, n);
	}
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddNumberToObject(rec, "to", n);
	cJSON_AddBoolToObject(rec, "workspace", d.workspace);
	cJSON_AddNumberToObject(rec, "files", (double)d.st.files);
	cJSON_AddNumberToObject(rec, "ms", (double)d.st.ms);
	int r = journal_write(&s->j, "rewind", rec);
	cJSON_Delete(rec);
	journal_sync(&s->j);
	struct journal_state st;
	if (r < 0 || journal_load(id, &st, &e) < 0) {
		/* The layer went back, the conversation did not: said, not hidden. */
		cmd_error("session %s: the workspace went back before message %d, but the conversation could not (%s); "
			  "rewind again", id, n, r < 0 ? strerror(-r) : e.msg);
		return EXIT_FAIL;
	}
	cJSON_Delete(s->messages);
	s->messages = TAKE_PTR(st.messages);
	s->asked = cJSON_GetArraySize(st.checkpoints);
	journal_state_free(&st);
	/* The last prompt's size was that of a longer conversation. */
	s->prompt_tokens = s->prompt_bytes = 0;
	d.messages = cJSON_GetArraySize(s->messages);
	if (ret)
		*ret = d;
	return 0;
}

static const char rewind_usage[] =
	"ward rewind SESSION [N]\n"
	"Without N: the person's messages of the session, numbered from 1 in the order they were sent.\n"
	"With N: put the session back to just before message N: its workspace changes as they were\n"
	"then, and its conversation without message N and all that came after (the checkpoints after\n"
	"it are dropped). `ward run --resume SESSION TASK` goes on from there, TASK being message N.\n"
	"Refused while a ward has the session open; in the interactive session, /rewind N.";

static void rewind_print(const cJSON *list)
{
	printf("%-8s %-21s %s\n", "MESSAGE", "SENT", "TEXT");
	const cJSON *c;
	cJSON_ArrayForEach(c, list) {
		_cleanup_free_ char *t = tui_short(json_str(c, "text") ? json_str(c, "text") : "", 60);
		term_printf(stdout, "%-8lld %-21s %s\n", (long long)json_int(c, "message", 0), json_str(c, "at") ? json_str(c, "at") : "",
		       t ? t : "");
	}
}

static int rewind_run(int argc, char **argv)
{
	int u = cmd_operands_only(argc, argv, "rewind", rewind_usage);
	if (u >= 0)
		return u;
	if (argc != 2 && argc != 3) {
		cmd_error("rewind: give a session and, to go back, a message number; usage: ward rewind SESSION [N]");
		return EXIT_USAGE;
	}
	const char *id = argv[1];
	struct err e = { 0 };
	cJSON *list = NULL;
	if (rewind_list(id, &list, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_USAGE;
	}
	int have = cJSON_GetArraySize(list);
	uint64_t n = 0;
	if (argc == 2)
		rewind_print(list);
	cJSON_Delete(list);
	if (argc == 2)
		return EXIT_OKAY;
	if (parse_u64(argv[2], &n) < 0 || n < 1 || n > INT_MAX) {
		cmd_error("rewind: \"%s\" is not a message number: give one of 1 to %d (`ward rewind %s` lists them)", argv[2],
			  have, id);
		return EXIT_USAGE;
	}
	struct session s = { .j.fd = -1 };
	if (journal_open(&s.j, id, &e) < 0) {
		cmd_error("%s; nothing changed", e.msg);
		return e.code == -EBUSY ? EXIT_TEMPFAIL : EXIT_FAIL;
	}
	/* Counted again under the lock: a ward may have added one since. */
	if (rewind_list(id, &list, &e) < 0) {
		journal_close(&s.j);
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	s.asked = cJSON_GetArraySize(list);
	const cJSON *c = cJSON_GetArrayItem(list, (int)n - 1);
	_cleanup_free_ char *t = tui_short(json_str(c, "text") ? json_str(c, "text") : "", 60);
	cJSON_Delete(list);
	struct rewind_done d;
	int r = rewind_to(&s, (int)n, 0, NULL, NULL, &d);
	journal_close(&s.j);
	cJSON_Delete(s.messages);
	if (r)
		return r;
	term_printf(stderr, "ward: session %s is back before message %llu (\"%s\"): %d message%s in its conversation; %s\n",
		id, (unsigned long long)n, t ? t : "", d.messages, d.messages == 1 ? "" : "s",
		d.workspace ? "its workspace changes are as they were then" : "its workspace was not rewound (the session "
		"kept no layer of it: --rw or --box)");
	term_printf(stderr, "ward: go on with: ward run --resume %s TASK\n", id);
	return EXIT_OKAY;
}

const struct command cmd_rewind = {
	.name = "rewind", .args = "SESSION [N]", .summary = "put a session back to before its message N",
	.run = rewind_run,
};
