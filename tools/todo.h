/* todo: the model's plan of the task, one step a line, kept where the
 * person sees it (the terminal's call card; an editor's plan, which ward
 * acp sends as ACP's plan updates). It changes nothing. */
#pragma once
#include <stddef.h>

#include "base/err.h"
#include "tools/tool.h"

#define TODO_STEPS_MAX 50
#define TODO_STEP_MAX 500	/* bytes of one step's text */

enum todo_state { TODO_PENDING, TODO_IN_PROGRESS, TODO_DONE };

struct todo_step {
	enum todo_state state;
	const char *text;	/* into the plan's string, len bytes */
	size_t len;
};

/* The plan's lines ("- [ ] step", "- [~] step", "- [x] step"; blank lines
 * skipped): 0 with v[0..*ret_n) set, or -1 with e naming the line. */
int todo_parse(const char *plan, struct todo_step v[TODO_STEPS_MAX], size_t *ret_n, struct err *e);
