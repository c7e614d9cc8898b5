/* The flags that make a box (ward box create, run and pool). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sandbox/box.h"

struct flag_cmd;
/* Parse the flags of t (cmd/flagtab.c: box create, run, exec or pool) into
 * o (and, where not NULL, `box run`'s --timeout and the idle limit). Returns the index of
 * the first argument that is not a flag, or -1 after printing why. */
int box_flags_parse(const struct flag_cmd *t, int argc, char **argv, struct box_opts *o, int64_t *timeout_s, int64_t *idle_s);
/* --workspace made absolute (into buf, n bytes): 0, or -1 after printing
 * that it does not exist. */
int box_flags_workspace(struct box_opts *o, char *buf, size_t n);
/* --memory or --disk (flag names it, eg is an example): a size of at least
 * BOX_SIZE_MIN into *ret; -1 after printing why it is not one. */
int box_flag_size(const char *flag, const char *arg, const char *eg, uint64_t *ret);
