#pragma once
#include <stdint.h>

struct journal;

/* How long past a run's deadline the watchdog waits for ward to end on its
 * own. */
#define RUN_WATCHDOG_GRACE_MS 5000

/* A process of its own that kills ward (SIGKILL) if it still runs
 * RUN_WATCHDOG_GRACE_MS past deadline_abs_ms, writing a "stop" record to
 * the journal first; it ends with ward. A failed fork leaves the loop's
 * own deadline as the only one. */
void run_watchdog_start(const struct journal *j, int64_t deadline_abs_ms);
