/* The requests to a box's keeper that are answered once, each bounded:
 * its info, hibernate, wake, a pool box's claim; and destroy, which kills
 * a keeper that does not answer and removes what it left. */
#include "sandbox/box.h"
#include "sandbox/box-conn-int.h"
#include "sandbox/box-state.h"
#include "sandbox/box-int.h"
#include "base/state.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool box_reply_done(void *ud)
{
	return ((struct box_conn *)ud)->reply != NULL;
}

/* One request to the keeper and its reply, an INFO frame with the same id. */
static int box_request(struct box_conn *c, uint8_t type, const char *payload, int64_t ms, cJSON **ret,
		       struct err *e)
{
	c->want_type = PROTO_INFO;
	c->want_id = ++c->next_id;
	int r = box_conn_queue(c, type, c->want_id, payload, payload ? strlen(payload) : 0);
	if (r >= 0)
		r = box_conn_drive(c, box_reply_done, c, now_ms() + ms, -1, 0, NULL);
	c->want_type = 0;
	if (r < 0 || !cJSON_IsObject(c->reply)) {
		cJSON_Delete(c->reply);
		c->reply = NULL;
		return err_set(e, r < 0 ? r : -EPROTO, "box %s did not answer (%s)", c->name,
			       r == -ETIMEDOUT ? "no reply in time" : r < 0 ? strerror(-r) : "a malformed reply");
	}
	*ret = c->reply;
	c->reply = NULL;
	return 0;
}

int box_info(struct box_conn *c, cJSON **ret, struct err *e)
{
	return box_request(c, PROTO_INFO, NULL, BOX_CONNECT_TIMEOUT_MS, ret, e);
}

/* A request answered {ok, ...} or {error, code}: the error is the
 * keeper's one line (HIBERNATE, WAKE, CLAIM). */
int box_request_ok(struct box_conn *c, uint8_t type, const char *payload, int64_t ms, cJSON **ret,
			  struct err *e)
{
	cJSON *j = NULL;
	int r = box_request(c, type, payload, ms, &j, e);
	if (r < 0)
		return r;
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "error"));
	if (why) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
		r = err_set(e, cJSON_IsNumber(code) && code->valueint < 0 ? code->valueint : -EIO, "%s", why);
		cJSON_Delete(j);
		return r;
	}
	*ret = j;
	return 0;
}

int box_hibernate(struct box_conn *c, cJSON **ret, struct err *e)
{
	return box_request_ok(c, PROTO_HIBERNATE, NULL, BOX_HIBERNATE_TIMEOUT_MS, ret, e);
}

int box_hibernate_keep(struct box_conn *c, cJSON **ret, struct err *e)
{
	return box_request_ok(c, PROTO_HIBERNATE, "{\"keep\":true}", BOX_HIBERNATE_TIMEOUT_MS, ret, e);
}

int box_own(struct box_conn *c, struct err *e)
{
	cJSON *j = NULL;
	int r = box_request_ok(c, PROTO_OWN, NULL, BOX_CONNECT_TIMEOUT_MS, &j, e);
	cJSON_Delete(j);
	return r;
}

int box_claim(struct box_conn *c, const char *json, struct err *e)
{
	cJSON *j = NULL;
	int r = box_request_ok(c, PROTO_CLAIM, json, BOX_CREATE_TIMEOUT_MS, &j, e);
	cJSON_Delete(j);
	return r;
}

int box_wake(struct box_conn *c, cJSON **ret, struct err *e)
{
	return box_request_ok(c, PROTO_WAKE, NULL, BOX_HIBERNATE_TIMEOUT_MS, ret, e);
}

bool box_is_hibernated(const char *name)
{
	struct box_conn *c;
	cJSON *info = NULL;
	if (box_connect(name, &c, NULL) < 0)
		return false;
	box_info(c, &info, NULL);
	box_disconnect(c);
	const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "state"));
	bool hib = box_state_name_saved(st);
	cJSON_Delete(info);
	return hib;
}

/* How long a destroy waits for the keeper to close its socket, the box
 * gone: its teardown, the clients' drain (KEEPER_DRAIN_MS) within it. */
#define BOX_DESTROY_CLOSE_MS 5000

/* DESTROY (payload: its condition, or NULL), and wait for the keeper to
 * close the socket when the box is gone (bounded: BOX_DESTROY_CLOSE_MS). */
/* The request written whole (bounded), and not waited on: the keeper
 * reads it before it sees the connection closed. */
static void box_send_destroy_only(struct box_conn *c, const char *payload)
{
	box_conn_queue(c, PROTO_DESTROY, 0, payload, payload ? strlen(payload) : 0);
	int64_t until = now_ms() + BOX_DESTROY_CLOSE_MS;
	while (proto_pending(&c->wr) && now_ms() < until) {
		struct pollfd pf = { .fd = c->fd, .events = POLLOUT };
		if (poll(&pf, 1, 100) < 0 && errno != EINTR)
			break;
		if (pf.revents & (POLLERR | POLLHUP))
			break;
		if (pf.revents & POLLOUT)
			box_conn_flush(c);
	}
}

/* The same, then until the keeper closes the connection (it is ending),
 * within the same bound. */
static void box_send_destroy(struct box_conn *c, const char *payload)
{
	int64_t until = now_ms() + BOX_DESTROY_CLOSE_MS;
	box_send_destroy_only(c, payload);
	char tmp[256];
	while (now_ms() < until) {
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		if (poll(&pf, 1, 100) < 0 && errno != EINTR)
			break;
		if ((pf.revents & (POLLIN | POLLHUP | POLLERR)) && read(c->fd, tmp, sizeof(tmp)) == 0)
			break;
	}
}

int box_destroy_if_pooled(const char *name)
{
	struct box_conn *c;
	if (box_connect(name, &c, NULL) < 0)
		return -ENOENT;
	box_send_destroy(c, "{\"if_pooled\":true}");
	box_disconnect(c);
	return 0;
}

bool box_has_keeper(const char *name)
{
	char boxdir[PATH_MAX];
	return state_box_dir(name, boxdir, sizeof(boxdir), NULL) == 0 && state_keeper_pid(boxdir) > 0;
}

int box_keeper_pidfd(const char *boxdir)
{
	char sock[PATH_MAX];
	if ((size_t)snprintf(sock, sizeof(sock), "%s/" BOX_SOCK, boxdir) >= sizeof(sock))
		return -ENAMETOOLONG;
	/* A keeper that is stopped still has its socket listening: the
	 * connection is made by the kernel, and says who listens. */
	_cleanup_close_ int fd = fdio_unix_connect(sock, true);
	if (fd < 0)
		return fd == -ENOENT || fd == -ECONNREFUSED ? -ESRCH : fd;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return -errno;
	if (cr.pid <= 1)
		return -ESRCH;
	int pfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	if (pfd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	/* The connection still stands: its keeper has not ended, so the pid
	 * was not reused, and the pidfd is the keeper's. */
	struct pollfd pf = { .fd = fd, .events = POLLRDHUP };
	if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
		close(pfd);
		return -ESRCH;
	}
	return pfd;
}

bool box_pidfd_end(int pidfd, int sig, int64_t ms)
{
	if (sig)
		syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
	for (int64_t until = now_ms() + ms;;) {
		struct pollfd pf = { .fd = pidfd, .events = POLLIN };
		int64_t left = until - now_ms();
		int r = poll(&pf, 1, left > 0 ? (int)left : 0);
		if (r > 0)
			return true;
		if ((r < 0 && errno != EINTR) || left <= 0)
			return false;
	}
}

/* How long a destroyed box's keeper has to end on its own, and then (when
 * it was killed) to be gone before what it left is removed here. */
#define BOX_DESTROY_WAIT_MS 3000
#define BOX_DESTROY_KILLED_MS 2000

int box_destroy_each(const char *const *names, size_t n, void (*fail)(void *ud, const struct err *e), void *ud)
{
	/* Each keeper is told first and then all are waited for: their ends
	 * (the box's processes killed, its mounts, cgroups and image gone)
	 * run side by side, each in its own process. */
	int *keeper = malloc((n ? n : 1) * sizeof(int));
	bool *killed = calloc(n ? n : 1, sizeof(bool));
	if (!keeper || !killed) {
		free(keeper);
		free(killed);
		struct err e = { 0 };
		err_set(&e, -ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			if (fail)
				fail(ud, &e);
		return (int)n;
	}
	int failed = 0;
	bool any_killed = false;
	for (size_t i = 0; i < n; i++) {
		struct err e = { 0 };
		struct box_conn *c;
		char boxdir[PATH_MAX];
		keeper[i] = -1;
		if (state_box_dir(names[i], boxdir, sizeof(boxdir), &e) < 0) {
			failed++;
			if (fail)
				fail(ud, &e);
			continue;
		}
		keeper[i] = box_keeper_pidfd(boxdir);
		/* A keeper busy hibernating is not waited for: killed, its torn
		 * state removed below. */
		if (box_connect_quick(names[i], &c, &e) < 0) {
			if (keeper[i] < 0) {
				failed++;
				if (fail)
					fail(ud, &e);
				continue;
			}
			/* A keeper that does not answer is killed; the box dies with it. */
			box_pidfd_end(keeper[i], SIGKILL, 0);
			killed[i] = any_killed = true;
		} else {
			box_send_destroy_only(c, NULL);
			box_disconnect(c);
		}
	}
	int64_t until = now_ms() + BOX_DESTROY_WAIT_MS;
	for (size_t i = 0; i < n; i++) {
		if (keeper[i] < 0 || killed[i])
			continue;
		int64_t left = until - now_ms();
		if (!box_pidfd_end(keeper[i], 0, left > 0 ? left : 0)) {
			/* Stuck (stopped, or blocked in a long hibernate). */
			box_pidfd_end(keeper[i], SIGKILL, 0);
			killed[i] = any_killed = true;
		}
	}
	if (any_killed) {
		/* What a killed keeper would have removed is removed here, as
		 * reap does, rather than at the next ward's start. */
		until = now_ms() + BOX_DESTROY_KILLED_MS;
		for (size_t i = 0; i < n; i++)
			if (killed[i]) {
				int64_t left = until - now_ms();
				box_pidfd_end(keeper[i], 0, left > 0 ? left : 0);
			}
		box_reap(NULL, NULL);
	}
	for (size_t i = 0; i < n; i++)
		if (keeper[i] >= 0)
			close(keeper[i]);
	free(keeper);
	free(killed);
	return failed;
}

static void destroy_fail(void *ud, const struct err *e)
{
	struct err *out = ud;
	if (out)
		*out = *e;
}

int box_destroy(const char *name, struct err *e)
{
	struct err one = { 0 };
	if (box_destroy_each(&name, 1, destroy_fail, &one) == 0)
		return 0;
	if (e)
		*e = one;
	return one.code ? one.code : -ENOENT;
}

int box_port_open(struct box_conn *c, const struct box_port_spec *s, cJSON **ret, struct err *e)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "port", s->port);
	cJSON_AddNumberToObject(j, "host_port", s->host_port);
	if (s->addr[0])
		cJSON_AddStringToObject(j, "addr", s->addr);
	char *txt = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!txt)
		return err_set(e, -ENOMEM, "out of memory");
	int r = box_request_ok(c, PROTO_PORT, txt, BOX_CONNECT_TIMEOUT_MS, ret, e);
	free(txt);
	return r;
}

int box_ports(struct box_conn *c, cJSON **ret, struct err *e)
{
	return box_request_ok(c, PROTO_PORT, NULL, BOX_CONNECT_TIMEOUT_MS, ret, e);
}

int box_jobs(struct box_conn *c, cJSON **ret, struct err *e)
{
	cJSON *args = cJSON_CreateObject(), *res = NULL;
	const struct box_call_req rq = { .tool = "job_list", .args = args, .left_ms = BOX_JOBS_TIMEOUT_MS };
	int r = box_call(c, &rq, NULL, NULL, -1, &res, e);
	cJSON_Delete(args);
	if (r < 0)
		return r;
	cJSON *jobs = cJSON_DetachItemFromObjectCaseSensitive(res, "jobs");
	if (!cJSON_IsArray(jobs)) {
		const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "text"));
		r = err_set(e, -EPROTO, "box %s did not list its jobs: %s", c->name, text ? text : "no answer");
		cJSON_Delete(jobs);
		cJSON_Delete(res);
		return r;
	}
	cJSON_Delete(res);
	*ret = jobs;
	return 0;
}
