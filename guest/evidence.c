#include "guest/guest.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EVIDENCE_MAX_PROCS 32

static void evidence_proc(cJSON *arr, int dfd, const char *pid)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "pid", pid);
	_cleanup_free_ char *stat = NULL, *wchan = NULL, *cmd = NULL;
	size_t n;
	if (fdio_read_file(dfd, "stat", 4096, &stat, NULL) == 0) {
		/* "pid (comm) S ppid ..." — comm may hold spaces and parens. */
		char *rp = strrchr(stat, ')');
		if (rp && rp[1] == ' ' && rp[2]) {
			char st[2] = { rp[2], 0 };
			cJSON_AddStringToObject(p, "state", st);
		}
	}
	if (fdio_read_file(dfd, "wchan", 256, &wchan, NULL) == 0 && wchan[0] && strcmp(wchan, "0"))
		cJSON_AddStringToObject(p, "wchan", wchan);
	if (fdio_read_file(dfd, "cmdline", 4096, &cmd, &n) == 0 && n) {
		for (size_t i = 0; i + 1 < n; i++)
			if (!cmd[i] || cmd[i] == '\n' || cmd[i] == '\t')
				cmd[i] = ' ';
		if (n > 200)
			cmd[200] = 0;
		cJSON_AddStringToObject(p, "cmd", cmd);
	}
	char link[256];
	ssize_t l = readlinkat(dfd, "fd/0", link, sizeof(link) - 1);
	if (l > 0) {
		link[l] = 0;
		cJSON_AddStringToObject(p, "stdin", link);
	}
	/* Sockets held: tells "waiting on the network" from "on a terminal". */
	int sockets = 0;
	_cleanup_closedir_ DIR *fds = NULL;
	int fdd = openat(dfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fdd >= 0 && !(fds = fdopendir(fdd)))
		close(fdd);
	struct dirent *de;
	while (fds && (de = readdir(fds)) && sockets < 1000) {
		ssize_t k = readlinkat(dirfd(fds), de->d_name, link, sizeof(link) - 1);
		if (k > 7 && !strncmp(link, "socket:", 7))
			sockets++;
	}
	cJSON_AddNumberToObject(p, "sockets", sockets);
	cJSON_AddItemToArray(arr, p);
}

cJSON *evidence_collect(const struct call *c, int64_t budget_ms)
{
	int64_t until = now_ms() + budget_ms;
	cJSON *ev = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(ev, "processes");
	int count = 0, box = 0;
	bool cut = false;
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		box++;
		if (!c || !c->pidns)
			continue;
		if (now_ms() > until) {
			cut = true;
			break;
		}
		_cleanup_close_ int dfd = openat(dirfd(d), de->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (dfd < 0 || fstatat(dfd, "ns/pid", &st, 0) < 0 || st.st_ino != c->pidns)
			continue;
		/* The call's own init is ward-guest's, not the command's. */
		if (atoi(de->d_name) == c->init_pid)
			continue;
		if (count++ < EVIDENCE_MAX_PROCS)
			evidence_proc(arr, dfd, de->d_name);
	}
	cJSON_AddNumberToObject(ev, "count", count);
	cJSON_AddNumberToObject(ev, "box_processes", box);
	if (cut)
		cJSON_AddBoolToObject(ev, "incomplete", 1);
	if (c && c->cap.total) {
		char tail[BASH_TAIL_EVIDENCE + 1];
		size_t n = capture_tail(&c->cap, tail, BASH_TAIL_EVIDENCE);
		tail[n] = 0;
		cJSON_AddStringToObject(ev, "tail", tail);
		cJSON_AddNumberToObject(ev, "output_bytes", (double)c->cap.total);
	}
	return ev;
}
