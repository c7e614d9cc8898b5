/* The hooks' guard (hook-guard.h). ward tells it each group over a pipe,
 * two int32 a message: +pgid and the number of its cgroup (0: none) to
 * watch, -pgid to let go (a write of 8 bytes to a pipe is atomic, so the
 * pipe only ever holds whole messages).
 * It learns that ward died from PR_SET_PDEATHSIG (SIGTERM, read through a
 * signalfd) or from the pipe's end of file, whichever comes first; it
 * then takes what ward wrote before it died and kills what is still
 * watched. A fork of ward that only makes system calls: nothing it does
 * allocates, so a fork of a threaded ward is safe. It is not exec'd: it
 * reads nothing but ward's pipe and dies with ward, whose memory holds the
 * same key and task for as long; what /proc shows of it (its command line
 * and environment) is wiped first. */
#include "task/hook-guard.h"
#include "task/hook-cgroup.h"
#include "base/fdio.h"
#include "base/proctitle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

/* Hooks run one at a time on ward's loop, and --approve-cmd inside the
 * gate: two at once at most; the rest is room to spare. */
#define GUARD_GROUPS_MAX 16

static int guard_fd = -1;	/* ward's end of the pipe */
static pid_t guard_pid;
static int watched;
/* ward's cgroup, where the hooks' own are (hook-cgroup.h): found before
 * the fork, so the guard only formats a path into it. */
static char cg_base[PATH_MAX - 64];

/* The messages in the pipe now; true at its end (ward is gone). */
static bool take(int rd, pid_t groups[GUARD_GROUPS_MAX], int32_t cgs[GUARD_GROUPS_MAX])
{
	int32_t m[64][2];
	ssize_t n;
	while ((n = fdio_read_some(rd, m, sizeof(m))) > 0)
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(m[0]); i++)
			for (size_t k = 0; k < GUARD_GROUPS_MAX; k++)
				if (m[i][0] > 0 && !groups[k]) {
					groups[k] = m[i][0];
					cgs[k] = m[i][1];
					break;
				} else if (m[i][0] < 0 && groups[k] == -m[i][0]) {
					groups[k] = 0;
					break;
				}
	return n == 0;
}

static _Noreturn void guard_main(int rd, pid_t ward)
{
	/* Every signal stays blocked (the caller blocked them all around the
	 * fork): SIGTERM is read through the signalfd. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	prctl(PR_SET_NAME, "ward-hookguard");
	/* ward's command line (the task) and environment (the API keys) are
	 * not for it to show in /proc. */
	proctitle_wipe("ward-hookguard");
	/* A group of its own: a terminal's ^C or ^Z is not for it. */
	setpgid(0, 0);
	int keep[] = { rd };
	fdio_close_all_but(0, keep, 1);
	fdio_set_nonblock(rd, true);
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	int sfd = signalfd(-1, &term, SFD_CLOEXEC);
	pid_t groups[GUARD_GROUPS_MAX] = { 0 };
	int32_t cgs[GUARD_GROUPS_MAX] = { 0 };
	bool gone = getppid() != ward;	/* it died before the prctl */
	while (!gone) {
		struct pollfd pf[2] = { { .fd = rd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
		if (poll(pf, sfd >= 0 ? 2 : 1, -1) <= 0)
			continue;
		if (pf[0].revents)
			gone = take(rd, groups, cgs);
		if (sfd >= 0 && pf[1].revents)
			gone = true;
	}
	take(rd, groups, cgs);
	for (size_t k = 0; k < GUARD_GROUPS_MAX; k++) {
		if (!groups[k])
			continue;
		kill(-groups[k], SIGKILL);
		/* The hook's cgroup, whatever left its group (setsid) with it;
		 * the directory is left (ward's sweep, or the next boot). */
		char p[PATH_MAX + 64];
		if (cgs[k] > 0 && cg_base[0]) {
			snprintf(p, sizeof(p), "%s/ward-hook-%d-%d/cgroup.kill", cg_base, (int)ward, (int)cgs[k]);
			int fd = open(p, O_WRONLY | O_CLOEXEC);
			if (fd >= 0) {
				fdio_write_full(fd, "1", 1);
				close(fd);
			}
		}
	}
	_exit(0);
}

static int guard_start(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t ward = getpid();
	if (hook_cgroup_base(cg_base, sizeof(cg_base)) < 0)
		cg_base[0] = 0;
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		guard_main(p[0], ward);
	}
	int r = pid < 0 ? -errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(p[0]);
	if (r < 0) {
		close(p[1]);
		return r;
	}
	guard_fd = p[1];
	guard_pid = pid;
	/* A guard that is gone shows as EPIPE, not as a signal. */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int tell(int32_t pgid, int32_t cg)
{
	int32_t m[2] = { pgid, cg };
	return guard_fd < 0 ? -EPIPE : fdio_write_full(guard_fd, m, sizeof(m));
}

int hook_guard_watch(pid_t pgid, int cgroup_seq)
{
	if (watched >= GUARD_GROUPS_MAX)
		return -EMFILE;
	int r = tell(pgid, cgroup_seq);
	if (r < 0) {
		/* None yet, or it was killed: a new one. */
		if (guard_fd >= 0) {
			close(guard_fd);
			waitpid(guard_pid, NULL, WNOHANG);
			guard_fd = -1;
		}
		r = guard_start();
		if (r == 0)
			r = tell(pgid, cgroup_seq);
	}
	if (r == 0)
		watched++;
	return r;
}

void hook_guard_forget(pid_t pgid)
{
	/* A guard that is gone watches nothing. */
	tell(-pgid, 0);
	watched--;
}
