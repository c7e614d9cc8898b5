/* The todo tool: the plan checked here (host and guest both), and the
 * guest's answer, the plan's count. */
#include "tools/todo.h"

#include <errno.h>
#include <string.h>

static const struct arg_spec todo_args[] = {
	{ .name = "plan", .type = ARG_STRING, .required = true },
	{ .name = NULL },
};

int todo_parse(const char *plan, struct todo_step v[TODO_STEPS_MAX], size_t *ret_n, struct err *e)
{
	size_t n = 0;
	int line = 0;
	for (const char *p = plan; *p;) {
		size_t l = strcspn(p, "\n");
		const char *q = p, *end = p + l;
		line++;
		p = *end ? end + 1 : end;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		while (end > q && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			end--;
		if (q == end)
			continue;
		if (end - q < 6 || (q[0] != '-' && q[0] != '*') || q[1] != ' ' || q[2] != '[' || q[4] != ']' || q[5] != ' ')
			return err_set(e, -EINVAL, "todo: line %d is not a step: each line is \"- [ ] step\" (to do), "
						   "\"- [~] step\" (in progress) or \"- [x] step\" (done)", line);
		enum todo_state st = q[3] == ' ' ? TODO_PENDING : q[3] == '~' ? TODO_IN_PROGRESS
				   : q[3] == 'x' || q[3] == 'X' ? TODO_DONE : (enum todo_state)-1;
		if ((int)st < 0)
			return err_set(e, -EINVAL, "todo: line %d: the box is [ ], [~] or [x], not [%c]", line, q[3]);
		q += 6;
		while (q < end && *q == ' ')
			q++;
		if (q == end)
			return err_set(e, -EINVAL, "todo: line %d: a step needs its text", line);
		if ((size_t)(end - q) > TODO_STEP_MAX)
			return err_set(e, -EINVAL, "todo: line %d: a step is %d bytes at most; say it shorter", line, TODO_STEP_MAX);
		if (n == TODO_STEPS_MAX)
			return err_set(e, -EINVAL, "todo: a plan has %d steps at most; group them", TODO_STEPS_MAX);
		v[n++] = (struct todo_step){ .state = st, .text = q, .len = (size_t)(end - q) };
	}
	if (!n)
		return err_set(e, -EINVAL, "todo: the plan has no steps");
	*ret_n = n;
	return 0;
}

static int todo_check(const cJSON *args, struct err *e)
{
	struct todo_step v[TODO_STEPS_MAX];
	size_t n;
	return todo_parse(tool_arg_str(args, "plan", ""), v, &n, e) < 0 ? -1 : 0;
}

static int todo_run(struct tool_ctx *ctx, struct tool_result *res)
{
	struct todo_step v[TODO_STEPS_MAX];
	size_t n, k[3] = { 0 };
	struct err e = { 0 };
	if (todo_parse(tool_arg_str(ctx->args, "plan", ""), v, &n, &e) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "%s", e.msg);
	for (size_t i = 0; i < n; i++)
		k[v[i].state]++;
	return tool_result_set(res, OUTCOME_OK, "The plan is kept: %zu step%s (%zu done, %zu in progress, %zu to do).",
			       n, n == 1 ? "" : "s", k[TODO_DONE], k[TODO_IN_PROGRESS], k[TODO_PENDING]);
}

const struct tool tool_todo = {
	.name = "todo",
	.description =
		"Keep a plan of a task of several steps where the person sees it. Give the whole plan each "
		"time, one step a line: \"- [ ] step\" to do, \"- [~] step\" in progress (one at a time), "
		"\"- [x] step\" done. Update it as steps finish. It changes nothing; skip it for a one-step task.",
	.args = todo_args,
	.inproc = true,
	.readonly = true,
	.run = todo_run,
	.check = todo_check,
};
