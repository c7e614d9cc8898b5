/* A box's states: every name parses back to its state, every legal move
 * is allowed, the moves the keeper never makes are refused, and the step
 * events are the names on the wire. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sandbox/box-state.h"
#include "tap.h"

int main(void)
{
	/* The names the wire, ward box ls and the state file have. */
	static const char *const names[BOX_ST_COUNT] = { "creating", "pooled", "running", "lost", "hibernating",
							  "hibernated", "waking", "going_cold", "cold" };
	for (unsigned i = 0; i < BOX_ST_COUNT; i++) {
		enum box_state s = BOX_ST_COUNT;
		is_str(box_state_name((enum box_state)i), names[i], "state %u is named %s", i, names[i]);
		ok(box_state_parse(names[i], &s) == 0 && s == i, "%s parses back to its state", names[i]);
	}
	enum box_state s;
	is_int(box_state_parse("asleep", &s), -EINVAL, "a name that is no state is refused");
	is_int(box_state_parse(NULL, &s), -EINVAL, "no name is refused");
	ok(box_state_name(BOX_ST_COUNT) == NULL, "past the table: no name");

	static const struct { enum box_state from, to; } legal[] = {
		{ BOX_ST_CREATING, BOX_ST_RUNNING }, { BOX_ST_CREATING, BOX_ST_POOLED },
		{ BOX_ST_POOLED, BOX_ST_RUNNING }, { BOX_ST_POOLED, BOX_ST_LOST },
		{ BOX_ST_RUNNING, BOX_ST_LOST }, { BOX_ST_RUNNING, BOX_ST_HIBERNATING },
		{ BOX_ST_LOST, BOX_ST_RUNNING }, { BOX_ST_LOST, BOX_ST_HIBERNATING },
		{ BOX_ST_HIBERNATING, BOX_ST_HIBERNATED }, { BOX_ST_HIBERNATING, BOX_ST_RUNNING },
		{ BOX_ST_HIBERNATING, BOX_ST_LOST },
		{ BOX_ST_HIBERNATED, BOX_ST_WAKING }, { BOX_ST_HIBERNATED, BOX_ST_GOING_COLD },
		{ BOX_ST_WAKING, BOX_ST_RUNNING }, { BOX_ST_WAKING, BOX_ST_HIBERNATED }, { BOX_ST_WAKING, BOX_ST_COLD },
		{ BOX_ST_GOING_COLD, BOX_ST_COLD }, { BOX_ST_GOING_COLD, BOX_ST_HIBERNATED },
		{ BOX_ST_COLD, BOX_ST_WAKING },
	};
	unsigned nlegal = 0;
	for (size_t i = 0; i < sizeof(legal) / sizeof(legal[0]); i++) {
		enum box_state cur = legal[i].from;
		ok(box_state_move(&cur, legal[i].to, NULL) == 0 && cur == legal[i].to, "%s -> %s is legal",
		   box_state_name(legal[i].from), box_state_name(legal[i].to));
	}
	/* Every other move between two different states is refused: the
	 * table above is the whole of what is legal. */
	for (unsigned a = 0; a < BOX_ST_COUNT; a++)
		for (unsigned b = 0; b < BOX_ST_COUNT; b++)
			nlegal += a != b && box_state_legal((enum box_state)a, (enum box_state)b);
	is_int(nlegal, sizeof(legal) / sizeof(legal[0]), "no legal move besides the listed ones");
	for (unsigned a = 0; a < BOX_ST_COUNT; a++)
		ok(box_state_legal((enum box_state)a, (enum box_state)a), "staying %s is legal", names[a]);

	static const struct { enum box_state from, to; } illegal[] = {
		{ BOX_ST_HIBERNATED, BOX_ST_RUNNING },	/* only a wake brings it back */
		{ BOX_ST_COLD, BOX_ST_HIBERNATED },
		{ BOX_ST_RUNNING, BOX_ST_HIBERNATED },	/* a hibernate goes through hibernating */
		{ BOX_ST_RUNNING, BOX_ST_POOLED },
		{ BOX_ST_RUNNING, BOX_ST_CREATING },
		{ BOX_ST_WAKING, BOX_ST_HIBERNATING },
		{ BOX_ST_GOING_COLD, BOX_ST_WAKING },
		{ BOX_ST_POOLED, BOX_ST_HIBERNATING },
	};
	for (size_t i = 0; i < sizeof(illegal) / sizeof(illegal[0]); i++) {
		enum box_state cur = illegal[i].from;
		struct err e = { 0 };
		is_int(box_state_move(&cur, illegal[i].to, &e), -EINVAL, "%s -> %s is refused",
		       box_state_name(illegal[i].from), box_state_name(illegal[i].to));
		ok(cur == illegal[i].from && strstr(e.msg, box_state_name(illegal[i].to)),
		   "the state stays, and the refusal names the move");
	}
	ok(!box_state_legal(BOX_ST_COUNT, BOX_ST_RUNNING) && !box_state_legal(BOX_ST_RUNNING, BOX_ST_COUNT),
	   "a state past the table is no state");

	ok(box_state_name_busy("hibernating") && box_state_name_busy("waking") && box_state_name_busy("going_cold"),
	   "the steps' states are busy");
	ok(!box_state_name_busy("running") && !box_state_name_busy("hibernated") && !box_state_name_busy(NULL),
	   "the others are not");
	ok(box_state_name_saved("hibernated") && box_state_name_saved("cold") && !box_state_name_saved("lost"),
	   "saved: hibernated or cold");

	static const char *const events[BOX_STEP_COUNT][3] = {
		{ "hibernating", "hibernated", "hibernate_failed" },
		{ "waking", "woken", "wake_failed" },
		{ "going_cold", "cold", "cold_failed" },
	};
	for (unsigned st = 0; st < BOX_STEP_COUNT; st++)
		for (unsigned ev = 0; ev < 3; ev++) {
			enum box_step rs;
			enum box_step_event re;
			is_str(box_step_event_name((enum box_step)st, (enum box_step_event)ev), events[st][ev],
			       "step %u event %u is %s", st, ev, events[st][ev]);
			ok(box_step_event_parse(events[st][ev], &rs, &re) == 0 && rs == st && re == ev,
			   "%s parses back", events[st][ev]);
		}
	enum box_step rs;
	enum box_step_event re;
	is_int(box_step_event_parse("destroyed", &rs, &re), -EINVAL, "an event of no step is none");
	return tap_done();
}
