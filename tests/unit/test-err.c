/* err_wrap: what was being done put before the error, once per level,
 * its code kept. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "tap.h"

static int open_it(struct err *e)
{
	return err_setc(e, -ENOENT, "cannot open %s", "tmp.tar");
}

static int save(struct err *e)
{
	int r = open_it(e);
	return r < 0 ? err_wrap(e, "saving box %s's /tmp", "b1") : 0;
}

int main(void)
{
	struct err e = { 0 };
	is_int(save(&e), -ENOENT, "the code is the innermost one's");
	is_str(e.msg, "saving box b1's /tmp: cannot open tmp.tar: No such file or directory",
	       "each level's words once, outermost first");
	is_int(err_wrap(&e, "hibernating"), -ENOENT, "a second level keeps the code");
	is_str(e.msg, "hibernating: saving box b1's /tmp: cannot open tmp.tar: No such file or directory",
	       "and adds its words once");

	struct err u = { 0 };
	is_int(err_wrap(&u, "doing %d things", 3), -EIO, "an unset error wrapped: -EIO, not success");
	is_str(u.msg, "doing 3 things", "and the words alone, no dangling colon");
	is_int(err_wrap(NULL, "nothing"), -EIO, "no err: -EIO");

	struct err l = { 0 };
	char big[600];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	err_set(&l, -E2BIG, "%s", big);
	err_wrap(&l, "outer");
	ok(!strncmp(l.msg, "outer: xxx", 10), "a long message keeps the wrap's words first");
	is_int(strlen(l.msg), sizeof(l.msg) - 1, "and is cut at its room");
	ok(!strcmp(l.msg + strlen(l.msg) - 3, "..."), "marked as cut");

	struct err a = { 0 };
	err_set(&a, -EIO, "tar failed");
	err_wrap(&a, "cannot save box %s's /tmp", "b1");
	is_int(err_append(&a, "; the box still runs"), -EIO, "what follows keeps the code");
	is_str(a.msg, "cannot save box b1's /tmp: tar failed; the box still runs", "and goes at the end");
	err_append(&l, "; more");
	ok(!strcmp(l.msg + strlen(l.msg) - 3, "..."), "past the room: cut, marked");
	return tap_done();
}
