/* ward's side of a box: spawning its keeper, and calls over the keeper's
 * socket. */
#include "sandbox/box.h"
#include "sandbox/layers.h"
#include "sandbox/proto.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "tools/bash.h"
#include "tools/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct box_pending {
	uint32_t id;
	int64_t limit_ms, deadline;	/* client side: past it the keeper is killed */
	bool cancelled;
	struct box_call_cbs cbs;
	void *ud;
	struct box_pending *next;
};

struct box_conn {
	int fd;
	char name[BOX_NAME_MAX + 1];
	char boxdir[PATH_MAX];
	struct proto_reader rd;
	uint32_t next_id;
	int64_t grace_ms;
	struct box_pending *pending;	/* async calls */
};

void box_opts_default(struct box_opts *o)
{
	*o = (struct box_opts){
		.backend = "ns",
		.ttl_ms = BOX_DEFAULT_TTL_MS,
		.idle_ms = BOX_DEFAULT_IDLE_MS,
		.lim = { .memory = BOX_DEFAULT_MEMORY, .pids = BOX_DEFAULT_PIDS, .disk = BOX_DEFAULT_DISK },
		.grace_ms = 2000,
	};
}

static void box_gen_name(char *out, size_t n)
{
	uint8_t r[4] = { 0 };
	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		r[0] = (uint8_t)getpid();
	snprintf(out, n, "box-%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
}

int box_create(const struct box_opts *o, char *ret_name, size_t n, struct err *e)
{
	char name[BOX_NAME_MAX + 1], boxdir[PATH_MAX];
	if (o->name) {
		if (!state_name_valid(o->name))
			return err_set(e, -EINVAL, "invalid box name \"%s\": use 1-%d letters, digits, '-', '_' or '.'",
				       o->name, BOX_NAME_MAX);
		snprintf(name, sizeof(name), "%s", o->name);
	} else {
		box_gen_name(name, sizeof(name));
	}
	if (!box_backend_find(o->backend))
		return err_set(e, -EINVAL, "unknown backend \"%s\": use ns, vm or auto", o->backend);
	if (o->workspace) {
		struct stat st;
		if (stat(o->workspace, &st) < 0 || !S_ISDIR(st.st_mode))
			return err_set(e, -ENOENT, "workspace %s is not a directory", o->workspace);
	}
	if (access(o->guest_path, X_OK) < 0)
		return err_setc(e, -errno, "ward-guest not found at %s (set WARD_GUEST)", o->guest_path);
	int r = state_box_dir(name, boxdir, sizeof(boxdir), e);
	if (r < 0)
		return r;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", boxdir);
	*strrchr(parent, '/') = 0;
	if ((r = state_mkdir_p(parent, 0700)) < 0)
		return err_setc(e, r, "cannot create %s", parent);
	if (mkdir(boxdir, 0700) < 0) {
		if (errno != EEXIST)
			return err_setc(e, -errno, "cannot create %s", boxdir);
		if (state_keeper_pid(boxdir))
			return err_set(e, -EEXIST, "a box named %s already exists; destroy it or pick another name", name);
		state_rm_rf(boxdir);
		if (mkdir(boxdir, 0700) < 0)
			return err_setc(e, -errno, "cannot create %s", boxdir);
	}
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) < 0)
		return err_setc(e, -errno, "pipe");
	fflush(NULL);
	pid_t mid = fork();
	if (mid < 0) {
		close(ready[0]);
		close(ready[1]);
		return err_setc(e, -errno, "fork");
	}
	if (mid == 0) {
		/* Detach: new session, then a grandchild that init adopts. */
		close(ready[0]);
		setsid();
		signal(SIGHUP, SIG_IGN);
		pid_t k = fork();
		if (k != 0)
			_exit(k < 0 ? 1 : 0);
		struct box_opts ko = *o;
		keeper_main(&ko, name, boxdir, ready[1]);
	}
	close(ready[1]);
	waitpid(mid, NULL, 0);
	char msg[600];
	size_t got = 0;
	int64_t until = now_ms() + BOX_CREATE_TIMEOUT_MS + 2000;
	for (;;) {
		int64_t left = until - now_ms();
		struct pollfd pf = { .fd = ready[0], .events = POLLIN };
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0) {
			close(ready[0]);
			return err_set(e, -ETIMEDOUT, "the box did not come up within %d s", BOX_CREATE_TIMEOUT_MS / 1000 + 2);
		}
		ssize_t k = read(ready[0], msg + got, sizeof(msg) - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got >= sizeof(msg) - 1)
			break;
	}
	close(ready[0]);
	msg[got] = 0;
	if (strcmp(msg, "ok\n")) {
		msg[strcspn(msg, "\n")] = 0;
		return err_set(e, -EIO, "%s", got ? msg : "the box's keeper died during setup");
	}
	snprintf(ret_name, n, "%s", name);
	return 0;
}

int box_connect(const char *name, struct box_conn **ret, struct err *e)
{
	if (!state_name_valid(name))
		return err_set(e, -EINVAL, "invalid box name \"%s\"", name);
	_cleanup_free_ struct box_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(e, -ENOMEM, "out of memory");
	int r = state_box_dir(name, c->boxdir, sizeof(c->boxdir), e);
	if (r < 0)
		return r;
	snprintf(c->name, sizeof(c->name), "%s", name);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", c->boxdir) >= sizeof(sa.sun_path))
		return err_set(e, -ENAMETOOLONG, "box socket path too long");
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return err_setc(e, -errno, "socket");
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(c->fd);
		return err_set(e, -ENOENT, "no box named %s (see `ward box ls`)", name);
	}
	struct frame f;
	uint8_t *p = NULL;
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = proto_recv(c->fd, &f, &p);
	if (r == 0)
		r = proto_hello_check(&f);
	free(p);
	tv.tv_sec = 0;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (r < 0) {
		close(c->fd);
		return err_set(e, r, "box %s did not answer (%s)", name, strerror(-r));
	}
	uint8_t hello[8];
	proto_hello_payload(hello);
	proto_send(c->fd, PROTO_HELLO, 0, 0, hello, sizeof(hello));
	proto_reader_init(&c->rd);
	c->grace_ms = 2000;
	*ret = TAKE_PTR(c);
	return 0;
}

void box_disconnect(struct box_conn *c)
{
	if (!c)
		return;
	while (c->pending) {
		struct box_pending *p = c->pending;
		c->pending = p->next;
		free(p);
	}
	close(c->fd);
	proto_reader_free(&c->rd);
	free(c);
}

/* Wait for one frame of interest, with a deadline. */
static int box_wait_frame(struct box_conn *c, int64_t deadline, int cancel_fd, bool *cancelled,
			  struct frame *ret)
{
	for (;;) {
		int r = proto_reader_next(&c->rd, ret);
		if (r != -EAGAIN)
			return r;
		struct pollfd pf[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = cancel_fd, .events = POLLIN } };
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		int pr = poll(pf, cancel_fd >= 0 && !*cancelled ? 2 : 1, (int)MIN(left, 1000));
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr > 0 && cancel_fd >= 0 && !*cancelled && (pf[1].revents & POLLIN)) {
			*cancelled = true;
			return -ECANCELED;
		}
		if (pr > 0 && pf[0].revents) {
			r = proto_reader_fill(&c->rd, c->fd);
			if (r == 0)
				return -ECONNRESET;
			if (r < 0 && r != -EAGAIN)
				return r;
		}
	}
}

/* The keeper did not answer past the host's deadline: it is broken or
 * stopped. Kill it; the box dies with it (PDEATHSIG). */
static void box_kill_keeper(struct box_conn *c)
{
	pid_t k = state_keeper_pid(c->boxdir);
	if (k > 0)
		kill(k, SIGKILL);
}

static int64_t box_call_limit(const char *tool, const cJSON *args)
{
	const struct tool *t = tool_lookup(tool);
	if (t && t->inproc)
		return 30000;
	const cJSON *tm = cJSON_GetObjectItemCaseSensitive(args, "timeout");
	if (cJSON_IsNumber(tm) && tm->valuedouble >= 1)
		return (int64_t)tm->valuedouble * 1000;
	return BASH_TIMEOUT_DEFAULT_S * 1000;
}

/* One CALL frame: {tool, args, timeout_ms, stream, key}; the key is
 * made up when none is given. */
static int box_send_call(struct box_conn *c, uint32_t id, const char *tool, const cJSON *args, const char *key,
			 int64_t limit_ms, bool stream, struct err *e)
{
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "tool", tool);
	cJSON_AddItemToObject(req, "args", cJSON_Duplicate(args, 1));
	cJSON_AddNumberToObject(req, "timeout_ms", (double)limit_ms);
	cJSON_AddBoolToObject(req, "stream", stream);
	char gen[64];
	snprintf(gen, sizeof(gen), "%s-%d-%u", c->name, getpid(), id);
	cJSON_AddStringToObject(req, "key", key && *key ? key : gen);
	_cleanup_free_ char *s = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!s)
		return err_set(e, -ENOMEM, "out of memory");
	int r = proto_send(c->fd, PROTO_CALL, 0, id, s, strlen(s));
	return r < 0 ? err_setc(e, r, "box %s: send", c->name) : 0;
}

static cJSON *box_synth_result(const char *outcome, const char *text, bool destroyed)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "outcome", outcome);
	cJSON_AddStringToObject(j, "text", text);
	if (destroyed)
		cJSON_AddBoolToObject(j, "box_destroyed", 1);
	return j;
}

/* The keeper did not answer past the host's deadline and was killed. */
static cJSON *box_timed_out(int64_t limit_ms)
{
	char msg[300];
	snprintf(msg, sizeof(msg), "timed out after %lld s; the box did not answer and was destroyed\n",
		 (long long)((limit_ms + 999) / 1000));
	return box_synth_result("timed_out", msg, true);
}

int box_call(struct box_conn *c, const char *tool, const cJSON *args, bool stream,
	     box_output_cb *cb, void *ud, int cancel_fd, cJSON **ret_result, struct err *e)
{
	uint32_t id = ++c->next_id;
	int64_t limit = box_call_limit(tool, args);
	int r = box_send_call(c, id, tool, args, NULL, limit, stream, e);
	if (r < 0)
		return r;
	/* The keeper destroys a stuck box at limit + grace + margin; this
	 * process gives it that much and a few seconds more. */
	int64_t deadline = now_ms() + limit + c->grace_ms + BOX_HOST_MARGIN_MS + 4000;
	bool cancelled = false;
	for (;;) {
		struct frame f;
		r = box_wait_frame(c, deadline, cancel_fd, &cancelled, &f);
		if (r == -ECANCELED) {
			proto_send(c->fd, PROTO_CANCEL, 0, id, NULL, 0);
			int64_t d = now_ms() + c->grace_ms + BOX_HOST_MARGIN_MS + 4000;
			if (d < deadline)
				deadline = d;
			continue;
		}
		if (r == -ETIMEDOUT) {
			box_kill_keeper(c);
			*ret_result = box_timed_out(limit);
			return 0;
		}
		if (r < 0) {
			if (r == -ECONNRESET)
				return err_set(e, r, "box %s went away during the call; its outcome is unknown", c->name);
			return err_setc(e, r, "box %s", c->name);
		}
		if (f.id != id)
			continue;
		if (f.type == PROTO_OUTPUT && cb)
			cb((const char *)f.payload, f.len, ud);
		else if (f.type == PROTO_ERROR)
			return err_set(e, -EPROTO, "box %s refused the call: %.*s", c->name, (int)f.len, f.payload);
		else if (f.type == PROTO_RESULT) {
			cJSON *j = cJSON_ParseWithLength((const char *)f.payload, f.len);
			if (!j)
				return err_set(e, -EPROTO, "box %s sent a malformed result", c->name);
			*ret_result = j;
			return 0;
		}
	}
}

static int box_request(struct box_conn *c, uint8_t type, uint32_t id, cJSON **ret, struct err *e)
{
	int r = proto_send(c->fd, type, 0, id, NULL, 0);
	if (r < 0)
		return err_setc(e, r, "box %s", c->name);
	bool cancelled = false;
	int64_t deadline = now_ms() + 5000;
	for (;;) {
		struct frame f;
		r = box_wait_frame(c, deadline, -1, &cancelled, &f);
		if (r < 0)
			return err_setc(e, r, "box %s did not answer", c->name);
		if (f.type != type || f.id != id)
			continue;
		cJSON *j = cJSON_ParseWithLength((const char *)f.payload, f.len);
		if (!j)
			return err_set(e, -EPROTO, "box %s sent malformed JSON", c->name);
		*ret = j;
		return 0;
	}
}

int box_info(struct box_conn *c, cJSON **ret, struct err *e)
{
	return box_request(c, PROTO_INFO, ++c->next_id, ret, e);
}

int box_evidence(struct box_conn *c, uint32_t id, cJSON **ret, struct err *e)
{
	return box_request(c, PROTO_EVIDENCE, id ? id : ++c->next_id, ret, e);
}

int box_destroy(const char *name, struct err *e)
{
	struct box_conn *c;
	char boxdir[PATH_MAX];
	int r = state_box_dir(name, boxdir, sizeof(boxdir), e);
	if (r < 0)
		return r;
	pid_t keeper = state_keeper_pid(boxdir);
	r = box_connect(name, &c, e);
	if (r < 0) {
		if (!keeper)
			return r;
		/* A keeper that does not answer is killed; the box dies with it. */
		kill(keeper, SIGKILL);
	} else {
		proto_send(c->fd, PROTO_DESTROY, 0, 0, NULL, 0);
		/* The keeper closes the socket when the box is gone. */
		char tmp[256];
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		int64_t until = now_ms() + 5000;
		while (now_ms() < until && poll(&pf, 1, 100) >= 0)
			if ((pf.revents & (POLLIN | POLLHUP)) && read(c->fd, tmp, sizeof(tmp)) <= 0)
				break;
		box_disconnect(c);
	}
	int64_t until = now_ms() + 3000;
	while (keeper && state_keeper_alive(keeper) && now_ms() < until)
		usleep(1000);
	if (keeper && state_keeper_alive(keeper)) {
		kill(keeper, SIGKILL);
		usleep(10000);
	}
	return 0;
}

static int box_each(cJSON *arr, bool reap, unsigned *ret_n, struct err *e)
{
	char rt[PATH_MAX - 32], dir[PATH_MAX];
	int r = state_runtime_dir(rt, sizeof(rt), e);
	if (r < 0)
		return r;
	snprintf(dir, sizeof(dir), "%s/boxes", rt);
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	unsigned n = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !state_name_valid(de->d_name))
			continue;
		char boxdir[PATH_MAX + 64];
		snprintf(boxdir, sizeof(boxdir), "%s/%s", dir, de->d_name);
		pid_t k = state_keeper_pid(boxdir);
		if (reap) {
			if (k)
				continue;
			/* A box being created has no keeper.pid yet: leave young
			 * directories alone. */
			char pidf[PATH_MAX + 80];
			struct stat st;
			snprintf(pidf, sizeof(pidf), "%s/keeper.pid", boxdir);
			if (stat(pidf, &st) < 0 && stat(boxdir, &st) == 0 &&
			    time(NULL) - st.st_mtime < BOX_CREATE_TIMEOUT_MS / 1000 + 5)
				continue;
			/* The keeper is gone: so is the box (PDEATHSIG). Remove what
			 * it left: cgroups named in info.json, the layers of a
			 * non-persistent box, the runtime dir. */
			char p[PATH_MAX + 80];
			snprintf(p, sizeof(p), "%s/info.json", boxdir);
			_cleanup_free_ char *txt = NULL;
			if (fdio_read_file(AT_FDCWD, p, 65536, &txt, NULL) == 0) {
				cJSON *j = cJSON_Parse(txt);
				struct cgroup_set cg = { 0 };
				const char *v;
				if ((v = cJSON_GetStringValue(cJSON_GetObjectItem(j, "cgroup_v2"))))
					snprintf(cg.v2, sizeof(cg.v2), "%s", v);
				if ((v = cJSON_GetStringValue(cJSON_GetObjectItem(j, "cgroup_memory"))))
					snprintf(cg.mem1, sizeof(cg.mem1), "%s", v);
				if ((v = cJSON_GetStringValue(cJSON_GetObjectItem(j, "cgroup_pids"))))
					snprintf(cg.pids1, sizeof(cg.pids1), "%s", v);
				cg.v2_kill = true;
				cgroup_kill(&cg);
				cgroup_remove(&cg);
				/* A session's layers outlive its box: they are its
				 * changes, kept until applied or dropped. */
				if (!cJSON_IsTrue(cJSON_GetObjectItem(j, "keep_layers")))
					layers_drop(de->d_name);
				cJSON_Delete(j);
			}
			state_rm_rf(boxdir);
			n++;
			continue;
		}
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "name", de->d_name);
		cJSON_AddBoolToObject(b, "alive", k != 0);
		if (k) {
			struct box_conn *c;
			cJSON *info = NULL;
			if (box_connect(de->d_name, &c, NULL) == 0) {
				box_info(c, &info, NULL);
				box_disconnect(c);
			}
			if (info) {
				cJSON_Delete(b);
				b = info;
				cJSON_AddBoolToObject(b, "alive", 1);
			}
		}
		cJSON_AddItemToArray(arr, b);
		n++;
	}
	if (ret_n)
		*ret_n = n;
	return 0;
}

int box_list(cJSON **ret, struct err *e)
{
	cJSON *arr = cJSON_CreateArray();
	int r = box_each(arr, false, NULL, e);
	if (r < 0) {
		cJSON_Delete(arr);
		return r;
	}
	*ret = arr;
	return 0;
}

int box_reap(unsigned *ret_n, struct err *e)
{
	return box_each(NULL, true, ret_n, e);
}

/* Async calls, for a caller with its own event loop. */

int box_conn_fd(const struct box_conn *c)
{
	return c->fd;
}

int box_call_start(struct box_conn *c, const char *tool, const cJSON *args, const char *key, int64_t limit_ms,
		   bool stream, const struct box_call_cbs *cbs, void *ud, uint32_t *ret_id, struct err *e)
{
	struct box_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return err_set(e, -ENOMEM, "out of memory");
	p->id = ++c->next_id;
	p->limit_ms = limit_ms > 0 ? limit_ms : box_call_limit(tool, args);
	p->deadline = now_ms() + p->limit_ms + c->grace_ms + BOX_HOST_MARGIN_MS + 4000;
	p->cbs = *cbs;
	p->ud = ud;
	int r = box_send_call(c, p->id, tool, args, key, p->limit_ms, stream, e);
	if (r < 0) {
		free(p);
		return r;
	}
	p->next = c->pending;
	c->pending = p;
	if (ret_id)
		*ret_id = p->id;
	return 0;
}

static struct box_pending *box_pending_take(struct box_conn *c, uint32_t id, bool remove)
{
	for (struct box_pending **pp = &c->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct box_pending *p = *pp;
			if (remove)
				*pp = p->next;
			return p;
		}
	return NULL;
}

int box_call_cancel(struct box_conn *c, uint32_t id)
{
	struct box_pending *p = box_pending_take(c, id, false);
	if (!p || p->cancelled)
		return 0;
	p->cancelled = true;
	/* After a cancel the guest has its grace to end the call. */
	int64_t d = now_ms() + c->grace_ms + BOX_HOST_MARGIN_MS + 4000;
	if (d < p->deadline)
		p->deadline = d;
	return proto_send(c->fd, PROTO_CANCEL, 0, id, NULL, 0);
}

static void box_pending_finish(struct box_conn *c, struct box_pending *p, cJSON *res)
{
	struct box_call_cbs cbs = p->cbs;
	void *ud = p->ud;
	uint32_t id = p->id;
	free(p);
	if (cbs.result)
		cbs.result(ud, id, res);
	else
		cJSON_Delete(res);
}

/* The connection is gone: every pending call's outcome is unknown. */
static void box_fail_all(struct box_conn *c, const char *why)
{
	while (c->pending) {
		struct box_pending *p = c->pending;
		c->pending = p->next;
		box_pending_finish(c, p, box_synth_result("unknown", why, false));
	}
}

int box_conn_read(struct box_conn *c)
{
	int r = proto_reader_fill(&c->rd, c->fd);
	if (r == 0 || (r < 0 && r != -EAGAIN)) {
		char why[300];
		snprintf(why, sizeof(why),
			 "the connection to box %s was lost while this call ran; its outcome is unknown\n", c->name);
		box_fail_all(c, why);
		return r == 0 ? -ECONNRESET : r;
	}
	for (;;) {
		struct frame f;
		r = proto_reader_next(&c->rd, &f);
		if (r == -EAGAIN)
			return 0;
		if (r < 0) {
			box_fail_all(c, "box protocol error; the call's outcome is unknown\n");
			return r;
		}
		struct box_pending *p = box_pending_take(c, f.id, false);
		if (!p)
			continue;
		if (f.type == PROTO_OUTPUT && p->cbs.output) {
			p->cbs.output(p->ud, p->id, (const char *)f.payload, f.len);
		} else if (f.type == PROTO_ERROR) {
			box_pending_take(c, f.id, true);
			char msg[600];
			snprintf(msg, sizeof(msg), "the box refused the call: %.*s\n", (int)MIN(f.len, 500u), f.payload);
			box_pending_finish(c, p, box_synth_result("bad_input", msg, false));
		} else if (f.type == PROTO_RESULT) {
			box_pending_take(c, f.id, true);
			cJSON *j = cJSON_ParseWithLength((const char *)f.payload, f.len);
			box_pending_finish(c, p, j ? j : box_synth_result("unknown", "the box sent a malformed result\n", false));
		}
	}
}

int64_t box_conn_deadline(const struct box_conn *c)
{
	int64_t d = -1;
	for (const struct box_pending *p = c->pending; p; p = p->next)
		if (d < 0 || p->deadline < d)
			d = p->deadline;
	return d;
}

void box_conn_tick(struct box_conn *c)
{
	int64_t now = now_ms();
	bool killed = false;
	for (;;) {
		struct box_pending *p = c->pending;
		while (p && p->deadline > now)
			p = p->next;
		if (!p)
			break;
		box_pending_take(c, p->id, true);
		if (!killed) {
			/* The keeper itself is not answering: kill it, the box with it. */
			box_kill_keeper(c);
			killed = true;
		}
		box_pending_finish(c, p, box_timed_out(p->limit_ms));
	}
}
