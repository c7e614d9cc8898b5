/* The journal as --resume rebuilds it: a rewind leaves out every record
 * from the checkpoint of the message it went back to, nested rewinds
 * included, and the person's messages are numbered from the checkpoints
 * left; a rewind that does not fit is a damaged journal. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "turn/journal.h"
#include "base/json.h"
#include "turn/provider.h"
#include "tap.h"
#include "wstest.h"

static char root[] = "/tmp/ward-test-journal-XXXXXX";

#define H "{\"type\":\"header\",\"session\":\"s1\"}\n"
#define CK(n) "{\"type\":\"checkpoint\",\"message\":" #n ",\"at\":\"2026-01-01T00:00:0" #n "Z\",\"files\":0}\n"
#define ASK(t) "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}\n"
#define SAY(t) "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}\n"
#define RW(n) "{\"type\":\"rewind\",\"to\":" #n ",\"workspace\":true}\n"

/* The conversation's texts, joined by spaces; the checkpoints' numbers and
 * texts likewise. */
static int load(const char *id, const char *journal, char *conv, char *asked, size_t n, struct err *e)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/ward/sessions", root);
	char file[PATH_MAX + 8];
	snprintf(file, sizeof(file), "%s.jsonl", id);
	put(dir, file, journal);
	struct journal_state st;
	int r = journal_load(id, &st, e);
	if (r < 0)
		return r;
	conv[0] = asked[0] = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, st.messages) {
		const char *t = json_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "content"), 0), "text");
		snprintf(conv + strlen(conv), n - strlen(conv), "%s%s", *conv ? " " : "", t ? t : "?");
	}
	cJSON_ArrayForEach(m, st.checkpoints)
		snprintf(asked + strlen(asked), n - strlen(asked), "%s%lld:%s", *asked ? " " : "",
			 (long long)json_int(m, "message", 0), json_str(m, "text"));
	journal_state_free(&st);
	return 0;
}

int main(void)
{
	if (!mkdtemp(root))
		return 99;
	setenv("XDG_STATE_HOME", root, 1);
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s/ward", root);
	mkdir(d, 0700);
	snprintf(d, sizeof(d), "%s/ward/sessions", root);
	mkdir(d, 0700);
	char conv[4096], asked[4096];
	struct err e = { 0 };

	const char *three = H CK(1) ASK("a") SAY("A") CK(2) ASK("b") SAY("B") CK(3) ASK("c") SAY("C");
	is_int(load("s1", three, conv, asked, sizeof(conv), &e), 0, "three messages load");
	is_str(conv, "a A b B c C", "the whole conversation");
	is_str(asked, "1:a 2:b 3:c", "the person's messages, numbered from their checkpoints");

	char j[8192];
	snprintf(j, sizeof(j), "%s%s%s%s%s", three, RW(2), CK(2), ASK("d"), SAY("D"));
	is_int(load("s2", j, conv, asked, sizeof(conv), &e), 0, "a rewind to 2, then a new message 2");
	is_str(conv, "a A d D", "messages 2 and 3 and what followed them are left out");
	is_str(asked, "1:a 2:d", "and the new message is 2");

	snprintf(j, sizeof(j), "%s%s%s%s%s%s", three, RW(3), CK(3), ASK("e"), SAY("E"), RW(1));
	is_int(load("s3", j, conv, asked, sizeof(conv), &e), 0, "a rewind past an earlier rewind");
	is_str(conv, "", "back before message 1: nothing");
	is_str(asked, "", "and no messages to rewind to");

	snprintf(j, sizeof(j), "%s%s", three, RW(4));
	ok(load("s4", j, conv, asked, sizeof(conv), &e) == -EBADMSG && strstr(e.msg, "line 11: a rewind record"),
	   "a rewind to a message that is not there: a damaged journal, and which line (%s)", e.msg);
	snprintf(j, sizeof(j), "%s%s%s", three, RW(2), RW(3));
	ok(load("s5", j, conv, asked, sizeof(conv), &e) == -EBADMSG, "a rewind to a message an earlier rewind took back");
	snprintf(j, sizeof(j), "%s%s", H, CK(2));
	ok(load("s6", j, conv, asked, sizeof(conv), &e) == -EBADMSG && strstr(e.msg, "checkpoint record"),
	   "a checkpoint that skips a number: damaged");
	snprintf(j, sizeof(j), "%s%s{\"type\":\"rewind\",\"to\":1", three, RW(3));
	is_int(load("s7", j, conv, asked, sizeof(conv), &e), 0, "a rewind record cut by a kill (the last line) is skipped");
	is_str(conv, "a A b B", "and only the whole one counts");
	sh("rm -rf %s", root);
	return tap_done();
}
