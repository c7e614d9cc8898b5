/* Mount steps the box's builders share (the ns backend's setup, and
 * ward-guest's per-call namespaces). */
#pragma once

/* Remount a bind read-only, keeping the flags the kernel locks in a user
 * namespace (nosuid, nodev, noexec, atime) and adding extra. 0 or -errno. */
int mnt_remount_ro(const char *dst, unsigned long extra);
/* Bind src at dst with everything mounted below it, and make every one of
 * those mounts read-only, nosuid and nodev (not only the top one: a host
 * mount under /usr stays read-write otherwise). 0 or -errno. */
int mnt_bind_ro(const char *src, const char *dst);
/* A fresh proc at target for the caller's PID namespace, nosuid, nodev and
 * noexec, with the parts that change the kernel (sysctls, sysrq, irq
 * affinity, bus and fs settings) bound read-only over themselves, and the
 * ones that tell about the host's kernel (kcore, keys, slab and vmalloc
 * statistics, timers, kpage*, ...) masked: /dev/null over a file, an empty
 * read-only tmpfs over a directory. 0, or -errno with *ret_what naming the
 * step that failed. No allocation: safe in a child cloned from a threaded
 * process. */
int mnt_proc(const char *target, const char **ret_what);
