/* Mount steps the box's builders share (the ns backend's setup, and
 * ward-guest's per-call namespaces). */
#pragma once

/* Remount a bind read-only, keeping the flags the kernel locks in a user
 * namespace (nosuid, nodev, noexec, atime) and adding extra. 0 or -errno. */
int mnt_remount_ro(const char *dst, unsigned long extra);
/* A fresh proc at target for the caller's PID namespace, nosuid, nodev and
 * noexec, with the parts that change the kernel (sysctls, sysrq, irq
 * affinity, bus and fs settings) bound read-only over themselves. 0, or
 * -errno with *ret_what naming the step that failed. No allocation: safe in
 * a child cloned from a threaded process. */
int mnt_proc(const char *target, const char **ret_what);
