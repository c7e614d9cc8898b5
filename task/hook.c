/* Running the user's programs on the host (hooks and --approve-cmd), and
 * the hooks of the user's config file, matched and answered as Claude
 * Code's are. */
#include "task/hook.h"
#include "task/hook-guard.h"
#include "task/hook-cgroup.h"
#include "base/child.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonprint.h"
#include "base/jsonstrict.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "tools/ccshape.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Read what is there; true at the end of the pipe. */
static bool drain(int fd, char *buf, size_t cap, size_t *got)
{
	ssize_t n = -1;
	while (*got < cap - 1) {
		n = read(fd, buf + *got, cap - 1 - *got);
		if (n <= 0)
			break;
		*got += (size_t)n;
	}
	if (*got == cap - 1) {	/* full: what it prints past the cap is thrown away */
		/* A bounded amount a wake-up, so that a hook writing without end
		 * cannot keep ward from its clocks. */
		char sink[4096];
		for (int k = 0; k < 16 && (n = read(fd, sink, sizeof(sink))) > 0; k++)
			;
	}
	return n == 0;
}

int hook_exec(const char *cmd, const char *input, const char *tool, int64_t timeout_ms, int64_t deadline_ms,
	      struct hook_run *ret)
{
	int in[2], out[2], er[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		int r = -errno;
		close(in[0]);
		close(in[1]);
		return r;
	}
	if (pipe2(er, O_CLOEXEC) < 0) {
		int r = -errno;
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		return r;
	}
	int64_t t0 = now_ms();
	/* Its own process group, signals at their defaults, only stdin, stdout
	 * and stderr: when it is done, or out of time, the whole group goes,
	 * so nothing it started keeps ward's stderr (a CI step's pipe) open. */
	if (tool)
		setenv("WARD_TOOL", tool, 1);
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	int fds[] = { in[0], out[1], er[1] };
	pid_t pid;
	/* A cgroup of its own where one can be made: then what it starts
	 * outside its group (setsid) goes with it too. */
	struct hook_cgroup cg;
	int r = hook_cgroup_new(&cg) == 0 ? hook_cgroup_spawn(&cg, argv, fds, &pid) : -ENOTSUP;
	if (r < 0) {
		hook_cgroup_end(&cg);
		r = child_start_group(argv, fds, 3, &pid);
	}
	if (tool)
		unsetenv("WARD_TOOL");
	close(in[0]);
	close(out[1]);
	close(er[1]);
	/* If ward dies now, even by SIGKILL, the guard kills the group. */
	if (r == 0 && (r = hook_guard_watch(pid, cg.fd >= 0 ? cg.seq : 0)) < 0) {
		kill(-pid, SIGKILL);
		hook_cgroup_end(&cg);
		child_reap(pid);
	}
	if (r < 0) {
		close(in[1]);
		close(out[0]);
		close(er[0]);
		return r;
	}
	memset(ret, 0, sizeof(*ret));
	signal(SIGPIPE, SIG_IGN);
	/* The event goes in as the program reads it, within the same bound:
	 * one that never reads cannot hold ward. */
	fdio_set_nonblock(in[1], true);
	fdio_set_nonblock(out[0], true);
	fdio_set_nonblock(er[0], true);
	size_t len = strlen(input), sent = 0, got = 0, egot = 0;
	int infd = in[1];
	int64_t until = t0 + timeout_ms;
	ret->by_deadline = deadline_ms && deadline_ms < until;
	if (ret->by_deadline)
		until = deadline_ms;
	siginfo_t si = { 0 };
	bool oeof = false, eeof = false;	/* a closed output is not polled again (it would spin) */
	/* Its exit and ward's stop signals wake the wait (a signalfd is
	 * readable while one is pending; it is never read: the loop's is). */
	_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	sigset_t stops;
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGHUP);
	_cleanup_close_ int sfd = signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK);
	/* ward's own stop signals are blocked and read by its loop: one that
	 * came while the hook runs ends the hook now, and stays pending. */
	for (;;) {
		/* Exited? Looked at without reaping, so its group id stays its own
		 * until the group is killed below. */
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			break;
		int64_t left = until - now_ms();
		if (left <= 0) {
			ret->timed_out = true;
			break;
		}
		sigset_t pend;
		if (sigpending(&pend) == 0 && (sigismember(&pend, SIGTERM) || sigismember(&pend, SIGINT) ||
					       sigismember(&pend, SIGHUP))) {
			ret->interrupted = true;
			break;
		}
		if (infd >= 0 && sent == len) {
			close(infd);
			infd = -1;
		}
		struct pollfd pf[5] = { { .fd = oeof ? -1 : out[0], .events = POLLIN },
					{ .fd = eeof ? -1 : er[0], .events = POLLIN },
					{ .fd = pfd, .events = POLLIN },
					{ .fd = sfd, .events = POLLIN },
					{ .fd = infd, .events = POLLOUT } };
		/* Without a pidfd or a signalfd, a short tick looks instead. */
		int tick = pfd < 0 || sfd < 0 ? 50 : 1000;
		if (poll(pf, infd >= 0 ? 5 : 4, (int)MIN(left, tick)) <= 0)
			continue;
		if (pf[0].revents & (POLLIN | POLLHUP))
			oeof = drain(out[0], ret->out, sizeof(ret->out), &got);
		if (pf[1].revents & (POLLIN | POLLHUP))
			eeof = drain(er[0], ret->err, sizeof(ret->err), &egot);
		if (infd >= 0 && (pf[4].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(infd, input + sent, len - sent);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				sent = len;	/* it closed its stdin: it has what it wanted */
		}
	}
	if (infd >= 0)
		close(infd);
	/* Done or out of time: the whole group goes now, whatever it started
	 * in the background with it. */
	kill(-pid, SIGKILL);
	hook_cgroup_end(&cg);
	hook_guard_forget(pid);
	ret->status = child_reap(pid);
	drain(out[0], ret->out, sizeof(ret->out), &got);
	drain(er[0], ret->err, sizeof(ret->err), &egot);
	close(out[0]);
	close(er[0]);
	ret->out[got] = 0;
	ret->err[egot] = 0;
	ret->elapsed_ms = now_ms() - t0;
	return 0;
}

/* The config's hooks. */
#define HOOKS_MAX 64
static const char *const events[] = { "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
				      "PreCompact" };

struct hook {
	const char *event;
	bool tool_event;
	bool any;		/* no matcher, "" or "*" */
	regex_t re;
	char *command;
	int64_t timeout_ms;
};

struct hooks {
	struct hook h[HOOKS_MAX];
	size_t n;
	const int64_t *deadline_ms;
	note_fn *note;
	void *note_ud;
};

void hooks_free(struct hooks *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		if (!h->h[i].any)
			regfree(&h->h[i].re);
		free(h->h[i].command);
	}
	free(h);
}

void hooks_set_deadline(struct hooks *h, const int64_t *deadline_ms)
{
	h->deadline_ms = deadline_ms;
}

static int bad(struct hooks *h, struct err *e, int code, const char *from, const char *what)
{
	hooks_free(h);
	return err_set(e, code,
		       "%s: \"hooks\"%s; e.g. {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"bash\", \"hooks\": "
		       "[{\"type\": \"command\", \"command\": \"./check.sh\", \"timeout\": 30}]}]}}",
		       from, what);
}

static void note(const struct hooks *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const struct hooks *h, const char *fmt, ...)
{
	if (!h->note)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	h->note(h->note_ud, line);
}

/* A matcher that matches no tool's name in either spelling (tools/ccshape.h)
 * is one line, once, when the hooks are read: a hook that can never run is
 * more likely a typo (or one of Claude Code's tools ward has not) than a
 * wish. An MCP tool's name is known only once its server runs, so a
 * matcher that begins with mcp__ is taken as it is. */
static void warn_no_tool(const struct hooks *h, const struct hook *k, const char *event, const char *ms)
{
	if (!strncmp(ms, "mcp__", 5))
		return;
	for (const char *const *n = ccshape_names; *n; n++)
		if (!regexec(&k->re, *n, 0, NULL, 0))
			return;
	_cleanup_free_ char *s = utf8_term_safe(ms, strnlen(ms, 60));
	note(h, "%s hook matcher \"%s\" matches no tool (ward's: bash, read, write, edit, grep, find, ls; "
		"as Claude Code names them: Bash, Read, Write, Edit, Grep, Glob, LS; MCP tools: mcp__SERVER__TOOL); "
		"its hook will not run", event, s ? s : "?");
}

int hooks_new(const cJSON *conf, const char *from, note_fn *nf, void *ud, struct hooks **ret, struct err *e)
{
	struct hooks *h = calloc(1, sizeof(*h));
	if (!h)
		return bad(h, e, -ENOMEM, from, ": out of memory");
	h->note = nf;
	h->note_ud = ud;
	char what[300];
	if (!cJSON_IsObject(conf))
		return bad(h, e, -EINVAL, from, " must be an object of events");
	for (const cJSON *ev = conf->child; ev; ev = ev->next) {
		const char *name = NULL;
		for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
			if (!strcmp(ev->string, events[i]))
				name = events[i];
		if (!name) {
			_cleanup_free_ char *s = utf8_term_safe(ev->string, strnlen(ev->string, 60));
			snprintf(what, sizeof(what), ": no event named \"%s\" (the events: SessionStart, UserPromptSubmit, "
				 "PreToolUse, PostToolUse, Stop, PreCompact)", s ? s : "?");
			return bad(h, e, -EINVAL, from, what);
		}
		if (!cJSON_IsArray(ev)) {
			snprintf(what, sizeof(what), ".%s must be an array of {matcher, hooks}", name);
			return bad(h, e, -EINVAL, from, what);
		}
		for (const cJSON *g = ev->child; g; g = g->next) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(g, "matcher");
			const cJSON *list = cJSON_GetObjectItemCaseSensitive(g, "hooks");
			if (!cJSON_IsObject(g) || (m && !cJSON_IsString(m)) || !cJSON_IsArray(list)) {
				snprintf(what, sizeof(what), ".%s: each entry is {\"matcher\": a string, \"hooks\": an array}",
					 name);
				return bad(h, e, -EINVAL, from, what);
			}
			for (const cJSON *one = list->child; one; one = one->next) {
				const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(one, "type"));
				const char *command = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(one, "command"));
				const cJSON *to = cJSON_GetObjectItemCaseSensitive(one, "timeout");
				if (!type || strcmp(type, "command") || !command || !*command ||
				    (to && (!cJSON_IsNumber(to) || to->valuedouble <= 0 || to->valuedouble > 86400))) {
					snprintf(what, sizeof(what), ".%s: each hook is {\"type\": \"command\", \"command\": "
						 "a string, \"timeout\": seconds (optional, 1 to 86400)}", name);
					return bad(h, e, -EINVAL, from, what);
				}
				if (h->n == HOOKS_MAX) {
					snprintf(what, sizeof(what), ": more than %d hooks", HOOKS_MAX);
					return bad(h, e, -EINVAL, from, what);
				}
				struct hook *k = &h->h[h->n];
				k->event = name;
				k->tool_event = !strcmp(name, "PreToolUse") || !strcmp(name, "PostToolUse");
				const char *ms = m ? m->valuestring : "";
				k->any = !k->tool_event || !*ms || !strcmp(ms, "*");
				if (!k->any) {
					/* A regex over the whole tool name, as Claude Code's. */
					size_t n = strlen(ms) + 8;
					_cleanup_free_ char *anch = malloc(n);
					if (!anch)
						return bad(h, e, -ENOMEM, from, ": out of memory");
					snprintf(anch, n, "^(%s)$", ms);
					if (regcomp(&k->re, anch, REG_EXTENDED | REG_NOSUB)) {
						_cleanup_free_ char *s = utf8_term_safe(ms, strnlen(ms, 60));
						snprintf(what, sizeof(what), ".%s: the matcher \"%s\" is not a regular expression",
							 name, s ? s : "?");
						k->any = true;
						return bad(h, e, -EINVAL, from, what);
					}
					warn_no_tool(h, k, name, ms);
				}
				k->command = strdup(command);
				k->timeout_ms = to ? (int64_t)(to->valuedouble * 1000) : HOOK_TIMEOUT_MS_DEFAULT;
				h->n++;
				if (!k->command)
					return bad(h, e, -ENOMEM, from, ": out of memory");
			}
		}
	}
	*ret = h;
	return 0;
}

/* A line from what a hook printed: its first non-empty line, safe to show. */
static void first_line(const char *s, char *out, size_t cap)
{
	while (*s == '\n' || *s == ' ')
		s++;
	size_t l = strcspn(s, "\n");
	_cleanup_free_ char *t = utf8_dup(s, MIN(l, cap - 1));
	snprintf(out, cap, "%s", t ? t : "");
}

bool hooks_turn_run(void *ud, const char *event, const char *tool, const cJSON *ev, cJSON *runs, char *why,
		    size_t why_cap, char *ctx, size_t ctx_cap)
{
	struct hooks *h = ud;
	/* The one serialisation the journal and --json show too. */
	_cleanup_free_ char *input = jsonprint_text(ev);
	bool blocked = false;
	size_t clen = 0;
	for (size_t i = 0; i < h->n && !blocked; i++) {
		struct hook *k = &h->h[i];
		/* Claude Code's name of the tool or ward's own: either matches. */
		if (strcmp(k->event, event) ||
		    (!k->any && (!tool || (regexec(&k->re, tool, 0, NULL, 0) &&
					   regexec(&k->re, ccshape_name(tool), 0, NULL, 0)))))
			continue;
		_cleanup_free_ struct hook_run *r = calloc(1, sizeof(*r));
		if (!r)
			break;
		int64_t dl = h->deadline_ms ? *h->deadline_ms : 0;
		const char *decision = "continue";
		char line[1024] = "";
		int rc = hook_exec(k->command, input ? input : "{}", tool, k->timeout_ms, dl, r);
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "event", event);
		cJSON_AddStringToObject(rec, "command", k->command);
		if (rc < 0) {
			decision = "error";
			snprintf(line, sizeof(line), "could not be started: %s", strerror(-rc));
			cJSON_AddNullToObject(rec, "exit");
		} else if (r->interrupted) {
			decision = "interrupted";
			snprintf(line, sizeof(line), "killed with its process group: ward was asked to stop");
			cJSON_AddNullToObject(rec, "exit");
		} else if (r->timed_out) {
			decision = "timeout";
			if (r->by_deadline)
				snprintf(line, sizeof(line), "killed at the run's deadline, with its process group");
			else
				snprintf(line, sizeof(line), "killed after its timeout of %lld s, with its process group",
					 (long long)(k->timeout_ms / 1000));
			cJSON_AddNullToObject(rec, "exit");
		} else if (!WIFEXITED(r->status)) {
			decision = "error";
			snprintf(line, sizeof(line), "killed by signal %d", WTERMSIG(r->status));
			cJSON_AddNullToObject(rec, "exit");
		} else {
			int code = WEXITSTATUS(r->status);
			cJSON_AddNumberToObject(rec, "exit", code);
			if (code == 2) {
				decision = "block";
				first_line(r->err, line, sizeof(line));
				if (!line[0])
					snprintf(line, sizeof(line), "the hook exited 2 and gave no reason");
			} else if (code != 0) {
				decision = "error";
				char e1[600];
				first_line(r->err, e1, sizeof(e1));
				snprintf(line, sizeof(line), "exited %d%s%s", code, e1[0] ? ": " : "", e1);
			} else {
				/* Claude Code's answer on stdout, when it is JSON: read
				 * strictly (base/jsonstrict.h), since a hook may build it
				 * from what the model sent; {"decision": "block",
				 * "decision": "approve"} is no answer. */
				cJSON *o = NULL;
				struct err pe = { 0 };
				const char *ans = r->out + strspn(r->out, " \t\r\n");
				if (*ans == '{' && jsonstrict_parse(r->out, strlen(r->out), &o, &pe) < 0) {
					bool pre = !strcmp(event, "PreToolUse");
					decision = pre ? "block" : "error";
					snprintf(line, sizeof(line), "%s JSON that is not valid (%s)",
						 pre ? "the hook answered with" : "answered with", pe.msg);
				}
				const cJSON *hso = cJSON_GetObjectItemCaseSensitive(o, "hookSpecificOutput");
				const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "decision"));
				const char *pd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hso, "permissionDecision"));
				const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "reason"));
				const char *pr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hso, "permissionDecisionReason"));
				const char *ac = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "additionalContext"));
				if (!ac)
					ac = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hso, "additionalContext"));
				if ((d && !strcmp(d, "block")) || (pd && !strcmp(pd, "deny"))) {
					decision = "block";
					snprintf(line, sizeof(line), "%s", pr ? pr : reason ? reason : "the hook said no");
				} else if (pd && !strcmp(pd, "ask")) {
					/* permissionDecision before the older decision, as
					 * Claude Code reads them; the gate takes it
					 * (turn/gate.h). */
					decision = "ask";
					if (pr)
						snprintf(line, sizeof(line), "%s", pr);
				} else if ((pd && !strcmp(pd, "allow")) || (!pd && d && !strcmp(d, "approve"))) {
					decision = "approve";
					if (pr || reason)
						snprintf(line, sizeof(line), "%s", pr ? pr : reason);
				}
				/* Claude Code's updatedInput: the call's new input, in
				 * Claude Code's names, checked again as the model's
				 * input is (turn/turn-calls.c). */
				const cJSON *ui = cJSON_GetObjectItemCaseSensitive(hso, "updatedInput");
				if (ui && !strcmp(event, "PreToolUse") && strcmp(decision, "block")) {
					if (cJSON_IsObject(ui)) {
						cJSON_AddItemToObject(rec, "updated_input", cJSON_Duplicate(ui, 1));
					} else {
						decision = "block";
						snprintf(line, sizeof(line), "the hook's updatedInput is not a JSON object");
					}
				}
				if (ac && clen + 2 < ctx_cap) {
					int n = snprintf(ctx + clen, ctx_cap - clen, "%s%s", clen ? "\n" : "", ac);
					clen = n > 0 ? MIN(ctx_cap - 1, clen + (size_t)n) : clen;
				}
				cJSON_Delete(o);
			}
		}
		cJSON_AddNumberToObject(rec, "elapsed_ms", (double)r->elapsed_ms);
		cJSON_AddStringToObject(rec, "decision", decision);
		if (line[0]) {
			_cleanup_free_ char *safe = utf8_dup(line, strlen(line));
			cJSON_AddStringToObject(rec, "why", safe ? safe : "");
		}
		cJSON_AddItemToArray(runs, rec);
		/* A PreToolUse hook is a check: a call it could not finish
		 * checking does not run. */
		if (!strcmp(decision, "block") || (!strcmp(decision, "interrupted") && !strcmp(event, "PreToolUse"))) {
			blocked = true;
			snprintf(why, why_cap, "%s", line);
		} else if (!strcmp(decision, "error") || !strcmp(decision, "timeout")) {
			_cleanup_free_ char *c = utf8_term_safe(k->command, strnlen(k->command, 80));
			note(h, "%s hook `%s` %s; going on", event, c ? c : "?", line);
		}
	}
	return blocked;
}

void hooks_install(struct hooks *h, struct turn_cfg *cfg, const int64_t *deadline_ms)
{
	hooks_set_deadline(h, deadline_ms);
	cfg->hooks = (struct turn_hooks){ hooks_turn_run, h };
}
