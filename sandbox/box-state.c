#include "sandbox/box-state.h"

#include <errno.h>
#include <string.h>

static const char *const box_state_names[BOX_ST_COUNT] = {
	[BOX_ST_CREATING] = "creating",
	[BOX_ST_POOLED] = "pooled",
	[BOX_ST_RUNNING] = "running",
	[BOX_ST_LOST] = "lost",
	[BOX_ST_HIBERNATING] = "hibernating",
	[BOX_ST_HIBERNATED] = "hibernated",
	[BOX_ST_WAKING] = "waking",
	[BOX_ST_GOING_COLD] = "going_cold",
	[BOX_ST_COLD] = "cold",
};

#define B(s) (1u << (s))
/* From each state, where the keeper may take it. */
static const unsigned box_state_next[BOX_ST_COUNT] = {
	/* Built: it runs, or waits in its pool. */
	[BOX_ST_CREATING] = B(BOX_ST_RUNNING) | B(BOX_ST_POOLED),
	/* A claim starts it, or cannot. */
	[BOX_ST_POOLED] = B(BOX_ST_RUNNING) | B(BOX_ST_LOST),
	[BOX_ST_RUNNING] = B(BOX_ST_LOST) | B(BOX_ST_HIBERNATING),
	/* Made again, or saved as it is (its files). */
	[BOX_ST_LOST] = B(BOX_ST_RUNNING) | B(BOX_ST_HIBERNATING),
	/* Done; or failed, the box as it was (running, or lost when the
	 * failure took its guest). */
	[BOX_ST_HIBERNATING] = B(BOX_ST_HIBERNATED) | B(BOX_ST_RUNNING) | B(BOX_ST_LOST),
	[BOX_ST_HIBERNATED] = B(BOX_ST_WAKING) | B(BOX_ST_GOING_COLD),
	/* Woken; or failed, the saved state kept where it was. */
	[BOX_ST_WAKING] = B(BOX_ST_RUNNING) | B(BOX_ST_HIBERNATED) | B(BOX_ST_COLD),
	[BOX_ST_GOING_COLD] = B(BOX_ST_COLD) | B(BOX_ST_HIBERNATED),
	[BOX_ST_COLD] = B(BOX_ST_WAKING),
};
#undef B

static const char *const box_step_names[BOX_STEP_COUNT][3] = {
	[BOX_STEP_HIBERNATE] = { "hibernating", "hibernated", "hibernate_failed" },
	[BOX_STEP_WAKE] = { "waking", "woken", "wake_failed" },
	[BOX_STEP_COLD] = { "going_cold", "cold", "cold_failed" },
};

const char *box_state_name(enum box_state s)
{
	return (unsigned)s < BOX_ST_COUNT ? box_state_names[s] : NULL;
}

int box_state_parse(const char *name, enum box_state *ret)
{
	for (unsigned i = 0; name && i < BOX_ST_COUNT; i++)
		if (!strcmp(name, box_state_names[i])) {
			*ret = (enum box_state)i;
			return 0;
		}
	return -EINVAL;
}

bool box_state_legal(enum box_state from, enum box_state to)
{
	if ((unsigned)from >= BOX_ST_COUNT || (unsigned)to >= BOX_ST_COUNT)
		return false;
	return from == to || (box_state_next[from] & (1u << to));
}

int box_state_move(enum box_state *cur, enum box_state to, struct err *e)
{
	if (!box_state_legal(*cur, to))
		return err_set(e, -EINVAL, "a box cannot go from %s to %s", box_state_name(*cur) ?: "?",
			       box_state_name(to) ?: "?");
	*cur = to;
	return 0;
}

bool box_state_busy(enum box_state s)
{
	return s == BOX_ST_HIBERNATING || s == BOX_ST_WAKING || s == BOX_ST_GOING_COLD;
}

bool box_state_saved(enum box_state s)
{
	return s == BOX_ST_HIBERNATED || s == BOX_ST_COLD;
}

bool box_state_name_busy(const char *name)
{
	enum box_state s;
	return box_state_parse(name, &s) == 0 && box_state_busy(s);
}

bool box_state_name_saved(const char *name)
{
	enum box_state s;
	return box_state_parse(name, &s) == 0 && box_state_saved(s);
}

const char *box_step_event_name(enum box_step s, enum box_step_event ev)
{
	return (unsigned)s < BOX_STEP_COUNT && (unsigned)ev < 3 ? box_step_names[s][ev] : NULL;
}

int box_step_event_parse(const char *name, enum box_step *ret_step, enum box_step_event *ret_ev)
{
	for (unsigned s = 0; name && s < BOX_STEP_COUNT; s++)
		for (unsigned ev = 0; ev < 3; ev++)
			if (!strcmp(name, box_step_names[s][ev])) {
				*ret_step = (enum box_step)s;
				*ret_ev = (enum box_step_event)ev;
				return 0;
			}
	return -EINVAL;
}
