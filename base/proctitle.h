/* A fork that goes on without an exec (ward's hook guard, its watchdog)
 * still shows its maker's command line and environment in /proc: both are
 * the block the kernel laid out at the top of the stack at exec, which
 * /proc/PID/cmdline and /proc/PID/environ read whatever has happened to
 * argv and environ since. */
#pragma once

/* Zero that whole block (as /proc/self/stat bounds it), write title as the
 * only argument, and empty environ. No allocation: safe in the child of a
 * threaded process's fork. 0, or -errno when the bounds cannot be read
 * (nothing is changed then but environ). */
int proctitle_wipe(const char *title);
