#include "cmd/run-watchdog.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/proctitle.h"
#include "base/timeutil.h"
#include "turn/journal.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

void run_watchdog_start(const struct journal *j, int64_t deadline_abs_ms)
{
	pid_t ward = getpid();
	pid_t pid = fork();
	if (pid != 0)
		return;	/* ward, or a failed fork: the loop's own deadline still holds */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != ward)
		_exit(0);
	prctl(PR_SET_NAME, "ward-watchdog");
	/* Not exec'd (it needs the journal as ward has it, and reads nothing
	 * but the clock and ward's pidfd), but what /proc shows of it is
	 * wiped: ward's command line (the task), its environment (the keys). */
	proctitle_wipe("ward-watchdog");
	int keep[] = { j->fd };
	fdio_close_all_but(3, keep, 1);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_IGN);
	int pfd = (int)syscall(SYS_pidfd_open, ward, 0);
	int64_t until = deadline_abs_ms + RUN_WATCHDOG_GRACE_MS;
	for (;;) {
		int64_t left = until - now_ms();
		if (left <= 0)
			break;
		struct pollfd pf = { .fd = pfd, .events = POLLIN };
		if (pfd >= 0 && poll(&pf, 1, (int)MIN(left, 1000)) > 0)
			_exit(0);	/* ward ended on its own */
		if (pfd < 0)
			usleep(100000);
	}
	/* The record first: whoever sees ward gone finds the reason there. */
	struct journal jj = *j;
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "reason", "deadline");
	cJSON_AddStringToObject(rec, "why", "the watchdog ended the run: ward was still running " STRINGIFY(RUN_WATCHDOG_GRACE_MS) " ms past the deadline");
	cJSON_AddBoolToObject(rec, "watchdog", 1);
	journal_write(&jj, "stop", rec);
	cJSON_Delete(rec);
	if (pfd >= 0)
		syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	else
		kill(ward, SIGKILL);
	_exit(0);
}
