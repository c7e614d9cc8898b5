/* ward run's flags (struct run_flags) as the target of the settings
 * (task/settings.h): what each value does, how loose it is, and how it
 * reads; with the CLI's error line and exit code. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "cmd/run-flags.h"
#include "task/settings.h"

/* Rebuild f's settings from f->mode_default and the other defaults: the
 * user's file, the project's file (only what narrows: one warning line for
 * each key it may not set), the environment, f->given, then a task line's
 * f->line (likewise only what narrows, by each key's line rule: a value
 * looser than the one in force is one warning line and the tighter one
 * stays). rep (or NULL) gets what came from where. 0, or an exit code
 * after an error line. */
int run_settings_apply(struct run_flags *f, struct settings_report *rep);
/* A flag's long name by its letter, without the dashes. */
const char *run_settings_flag_name(int c);
/* The row of a shared flag by its long name ("max-rounds"); NULL when it is
 * not one of them (a flag of ward run alone: --approve-cmd, --patch, ...). */
const struct settings_key *run_settings_key_of_flag(const char *name);
/* The default of a setting as ward config shows it, with f's defaults
 * (the command's approval mode, the model's window): the flag table's
 * constant, else its note in parentheses, else "(none)". */
const char *run_settings_default_text(const struct run_flags *f, int c, char *buf, size_t n);
/* The user's hooks (settings_hooks, task/hook.h) installed in cfg,
 * bounded by the deadline *deadline_ms holds when one runs: 0 (*ret NULL
 * when there are none; hooks_free it), or EXIT_USAGE after an error line;
 * their warnings are lines on stderr. ward run, the terminal session and
 * ward acp start so. */
struct hooks;
int run_settings_hooks_install(struct turn_cfg *cfg, const int64_t *deadline_ms, struct hooks **ret);
