#include "sandbox/sdscope.h"
#include "base/cleanup.h"
#include "base/child.h"
#include "base/timeutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SDSCOPE_WAIT_MS 10000

static bool sdscope_find(char run[PATH_MAX])
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t l = strcspn(p, ":");
		if (l && (size_t)snprintf(run, PATH_MAX, "%.*s/systemd-run", (int)l, p) < PATH_MAX &&
		    access(run, X_OK) == 0)
			return true;
		p += l;
		if (*p == ':')
			p++;
	}
	return false;
}

/* systemd manages this user's session: booted with systemd, or the user
 * manager's private socket is there. */
static bool sdscope_systemd(void)
{
	if (access("/run/systemd/system", F_OK) == 0)
		return true;
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char p[PATH_MAX];
	return rt && *rt && (size_t)snprintf(p, sizeof(p), "%s/systemd/private", rt) < sizeof(p) &&
	       access(p, F_OK) == 0;
}

bool sdscope_wanted(const struct cgroup_caps *c, char run[PATH_MAX], char *why, size_t n)
{
	if (c->v2_writable) {
		snprintf(why, n, "the process is in a v2 group it may write already");
		return false;
	}
	if (!sdscope_systemd()) {
		snprintf(why, n, "systemd does not manage this session (no /run/systemd/system, no user manager)");
		return false;
	}
	if (!sdscope_find(run)) {
		snprintf(why, n, "systemd-run is not on PATH");
		return false;
	}
	snprintf(why, n, "systemd-run --user --scope -p Delegate=yes");
	return true;
}

/* Whether pid now runs path (systemd-run exec'd it). */
static bool sdscope_is(pid_t pid, const char *path)
{
	char link[64], exe[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t k = readlink(link, exe, sizeof(exe) - 1);
	if (k <= 0)
		return false;
	exe[k] = 0;
	return !strcmp(exe, path);
}

static void sdscope_status(int st, char *why, size_t n)
{
	if (WIFEXITED(st))
		snprintf(why, n, "systemd-run --user --scope -p Delegate=yes exited %d", WEXITSTATUS(st));
	else
		snprintf(why, n, "systemd-run --user --scope -p Delegate=yes was killed by signal %d", WTERMSIG(st));
}

int sdscope_start(const char *run, const char *path, char *const argv[], char *const envp[], const int *fds,
		  size_t nfds, pid_t *ret_pid, char *why, size_t n)
{
	size_t ac = 0;
	while (argv[ac])
		ac++;
	const char *pre[] = { "systemd-run", SDSCOPE_ARGS, path };
	_cleanup_free_ char **av = calloc(ARRAY_SIZE(pre) + ac + 1, sizeof(*av));
	if (!av)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(pre); i++)
		av[i] = (char *)pre[i];
	for (size_t i = 1; i < ac; i++)	/* argv[0] is path's own name: systemd-run gives it path */
		av[ARRAY_SIZE(pre) + i - 1] = argv[i];
	pid_t pid;
	int r = child_start_env(run, av, envp, fds, nfds, &pid);
	if (r < 0) {
		snprintf(why, n, "cannot start %s: %s", run, strerror(-r));
		return r;
	}
	for (int64_t until = now_ms() + SDSCOPE_WAIT_MS;;) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			sdscope_status(st, why, n);
			return -ECHILD;
		}
		if (sdscope_is(pid, path)) {
			*ret_pid = pid;
			return 0;
		}
		if (now_ms() > until) {
			kill(pid, SIGKILL);
			child_reap(pid);
			snprintf(why, n, "systemd-run --user --scope -p Delegate=yes did not start %s within %d s", path,
				 SDSCOPE_WAIT_MS / 1000);
			return -ETIMEDOUT;
		}
		usleep(2000);
	}
}

bool sdscope_probe(const char *run, char *why, size_t n)
{
	char *argv[] = { "systemd-run", SDSCOPE_ARGS, "true", NULL };
	char *envp[] = { NULL, NULL, NULL, NULL };
	size_t k = 0;
	static const char *const keep[] = { "PATH", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS" };
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
		const char *v = getenv(keep[i]);
		if (v && asprintf(&envp[k], "%s=%s", keep[i], v) >= 0)
			k++;
	}
	pid_t pid;
	int r = child_start_env(run, argv, envp, NULL, 0, &pid);
	int st = r < 0 ? 0 : child_reap(pid);
	for (size_t i = 0; i < k; i++)
		free(envp[i]);
	if (r < 0) {
		snprintf(why, n, "cannot start %s: %s", run, strerror(-r));
		return false;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		snprintf(why, n, "systemd-run --user --scope -p Delegate=yes gives each box's keeper a delegated scope");
		return true;
	}
	sdscope_status(st, why, n);
	return false;
}
