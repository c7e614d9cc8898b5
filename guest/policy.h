/* The seccomp filter installed in every tool command before exec. */
#pragma once
/* Compile the filter once, in ward-guest at start (libseccomp allocates). */
int policy_prepare(void);
/* Install it: system calls only, safe in a vfork-style child. Needs
 * no_new_privs. */
int policy_apply(void);
