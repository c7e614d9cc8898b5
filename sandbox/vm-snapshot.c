/* A vm box's snapshot, through QEMU's QMP and its migration stream: the
 * template's device state written to a file (its RAM is a shared file the
 * stream leaves out), and fed back to a VMM started with -incoming defer. */
#include "sandbox/vm-int.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* QMP's bounds: its greeting, a command's reply, a migration's end (out
 * or in), the VMM's connection to the migration socket; and how often a
 * state is polled for. */
#define QMP_GREETING_MS 5000
#define QMP_REPLY_MS 10000
#define VM_MIGRATE_MS 60000
#define VM_MIGRATE_CONNECT_MS 10000
#define QMP_POLL_US 2000

/* QMP, synchronously: connect, leave capability negotiation, commands. */
struct qmp {
	int fd;
	char buf[65536];
	size_t len;
};

static int qmp_line(struct qmp *q, char **line, int64_t until)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		if (nl) {
			*nl = 0;
			*line = q->buf;
			return (int)(nl - q->buf) + 1;
		}
		if (q->len == sizeof(q->buf))
			return -EMSGSIZE;
		struct pollfd pf = { .fd = q->fd, .events = POLLIN };
		int64_t left = until - now_ms();
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		ssize_t n = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		q->len += (size_t)n;
	}
}

static void qmp_consume(struct qmp *q, int n)
{
	memmove(q->buf, q->buf + n, q->len - (size_t)n);
	q->len -= (size_t)n;
}

/* One command; its "return" (or NULL and e set). */
static cJSON *qmp_cmd(struct qmp *q, const char *json, struct err *e)
{
	size_t l = strlen(json);
	if (fdio_write_full(q->fd, json, l) < 0 || fdio_write_full(q->fd, "\n", 1) < 0) {
		err_setc(e, -EPIPE, "QMP");
		return NULL;
	}
	int64_t until = now_ms() + QMP_REPLY_MS;
	for (;;) {
		char *line;
		int n = qmp_line(q, &line, until);
		if (n < 0) {
			err_setc(e, n, "QMP");
			return NULL;
		}
		cJSON *j = cJSON_Parse(line);
		qmp_consume(q, n);
		cJSON *ret = cJSON_DetachItemFromObject(j, "return");
		const cJSON *er = cJSON_GetObjectItemCaseSensitive(j, "error");
		if (er) {
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(er, "desc");
			err_set(e, -EIO, "QMP: %s", cJSON_IsString(d) ? d->valuestring : "error");
			cJSON_Delete(j);
			cJSON_Delete(ret);
			return NULL;
		}
		cJSON_Delete(j);
		if (ret)
			return ret;	/* events are skipped */
	}
}

static int qmp_open(struct qmp *q, const char *path, struct err *e)
{
	q->len = 0;
	int64_t until = now_ms() + VM_CONNECT_MS;
	for (;;) {
		q->fd = fdio_unix_connect(path, false);
		if (q->fd >= 0)
			break;
		if (now_ms() > until)
			return err_set(e, -ETIMEDOUT, "the VMM's QMP socket did not answer");
		usleep(QMP_POLL_US);
	}
	char *line;
	int n = qmp_line(q, &line, now_ms() + QMP_GREETING_MS);
	if (n < 0)
		return err_setc(e, n, "QMP greeting");
	qmp_consume(q, n);
	cJSON *r = qmp_cmd(q, "{\"execute\":\"qmp_capabilities\"}", e);
	if (!r)
		return -EIO;
	cJSON_Delete(r);
	return 0;
}

static int qmp_ok(struct qmp *q, const char *json, struct err *e)
{
	cJSON *r = qmp_cmd(q, json, e);
	if (!r)
		return -EIO;
	cJSON_Delete(r);
	return 0;
}

/* Wait for a migration (out or in) to finish. */
static int qmp_migrated(struct qmp *q, struct err *e)
{
	int64_t until = now_ms() + VM_MIGRATE_MS;
	while (now_ms() < until) {
		cJSON *r = qmp_cmd(q, "{\"execute\":\"query-migrate\"}", e);
		if (!r)
			return -EIO;
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "status"));
		bool done = st && !strcmp(st, "completed"), failed = st && !strcmp(st, "failed");
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "error-desc"));
		if (failed)
			err_set(e, -EIO, "migration failed: %s", why ? why : "?");
		cJSON_Delete(r);
		if (done)
			return 0;
		if (failed)
			return -EIO;
		usleep(QMP_POLL_US);
	}
	return err_set(e, -ETIMEDOUT, "migration did not finish");
}

/* RAM in a shared file is left out of the migration stream. */
static const char qmp_ignore_shared[] =
	"{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"
	"[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}";

/* Copy until EOF; 0 or a negative errno. */
static int vm_copy(int in, int out)
{
	char b[65536];
	for (;;) {
		ssize_t n = fdio_read_some(in, b, sizeof(b));
		if (n <= 0)
			return (int)n;
		int r = fdio_write_full(out, b, (size_t)n);
		if (r < 0)
			return r;
	}
}


/* Stop the VM and write its device state (and its RAM, unless in a
 * shared file) to the file state, through a unix socket QEMU connects to
 * (QEMU 7.2 has no file: migration, and its sandbox forbids exec:). */
static int vm_migrate_out(struct qmp *q, const struct vm_paths *p, const char *state, struct err *e)
{
	int r = 0;
	_cleanup_close_ int lfd = fdio_unix_listen(p->mig, 1, false);
	if (lfd < 0)
		r = err_setc(e, lfd, "migration socket");
	char cmd[PATH_MAX + 96];
	snprintf(cmd, sizeof(cmd), "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:%s\"}}", p->mig);
	if (r >= 0)
		r = qmp_ok(q, "{\"execute\":\"stop\"}", e);
	if (r >= 0)
		r = qmp_ok(q, qmp_ignore_shared, e);
	/* A box's whole RAM goes through the stream: not at QEMU's default
	 * pace (128 MiB/s), which is for a guest that runs meanwhile. */
	if (r >= 0)
		r = qmp_ok(q, "{\"execute\":\"migrate-set-parameters\",\"arguments\":{\"max-bandwidth\":"
			   "68719476736}}", e);
	if (r >= 0)
		r = qmp_ok(q, cmd, e);
	if (r >= 0) {
		struct pollfd pf = { .fd = lfd, .events = POLLIN };
		int cfd = poll(&pf, 1, VM_MIGRATE_CONNECT_MS) > 0 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : -1;
		char tmp[PATH_MAX + 8];
		snprintf(tmp, sizeof(tmp), "%s.tmp", state);
		_cleanup_close_ int ofd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (cfd < 0 || ofd < 0) {
			r = err_setc(e, -EIO, "the VMM did not send its state");
		} else {
			int cr = vm_copy(cfd, ofd);
			if (cr < 0)
				r = err_setc(e, cr, "saving the VM's state");
		}
		if (cfd >= 0)
			close(cfd);
		if (r >= 0)
			r = qmp_migrated(q, e);
		if (r >= 0 && (fsync(ofd) < 0 || rename(tmp, state) < 0))
			r = err_setc(e, -errno, "saving the VM's state");
		if (r < 0)
			unlink(tmp);
	}
	unlink(p->mig);
	return r;
}

/* The booted template waits for START: stop it and write its device state
 * to a file; its RAM is already in the shared file, and x-ignore-shared
 * leaves it out of the stream. */
int vm_snapshot_take(const struct vm_paths *p, const char *state, struct err *e)
{
	struct qmp q = { .fd = -1 };
	int r = qmp_open(&q, p->qmp, e);
	if (r >= 0)
		r = vm_migrate_out(&q, p, state, e);
	if (q.fd >= 0)
		close(q.fd);
	return r;
}

/* Whether QEMU has seen the host side of chardev label go: its socket
 * chardev's filename then starts "disconnected:". */
static int vm_chardev_closed(struct qmp *q, const char *label, struct err *e)
{
	cJSON *r = qmp_cmd(q, "{\"execute\":\"query-chardev\"}", e);
	if (!r)
		return -EIO;
	int closed = 1;	/* a chardev it does not list has no host side */
	const cJSON *c;
	cJSON_ArrayForEach(c, r) {
		const char *l = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "label"));
		const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "filename"));
		if (l && !strcmp(l, label))
			closed = f && !strncmp(f, "disconnected:", 13);
	}
	cJSON_Delete(r);
	return closed;
}

int vm_snapshot_save(const struct vm_paths *p, const char *state, struct err *e)
{
	struct qmp q = { .fd = -1 };
	int r = qmp_open(&q, p->qmp, e);
	/* The host closed the channels first: once QEMU has seen that, the
	 * guest's port-closed event is in the state, and the guest, restored,
	 * opens its port again and says hello to whoever connects. */
	static const char *const chans[] = { "ch", "net" };
	for (size_t i = 0; r >= 0 && i < 2; i++) {
		int64_t until = now_ms() + VM_CONNECT_MS;
		while ((r = vm_chardev_closed(&q, chans[i], e)) == 0 && now_ms() < until)
			usleep(QMP_POLL_US);
		if (r == 0)
			r = err_set(e, -ETIMEDOUT, "the VMM did not see its %s channel close", chans[i]);
	}
	if (r >= 0)
		r = vm_migrate_out(&q, p, state, e);
	if (r < 0 && q.fd >= 0) {
		/* Not saved: the VM runs on as it was. */
		struct err ce = { 0 };
		qmp_ok(&q, "{\"execute\":\"cont\"}", &ce);
	}
	if (q.fd >= 0)
		close(q.fd);
	return r;
}

int vm_snapshot_cont(const struct vm_paths *p, struct err *e)
{
	struct qmp q = { .fd = -1 };
	int r = qmp_open(&q, p->qmp, e);
	if (r >= 0)
		r = qmp_ok(&q, "{\"execute\":\"cont\"}", e);
	if (q.fd >= 0)
		close(q.fd);
	return r;
}

/* A VMM started with -incoming defer: feed it the state and let it run. */
int vm_snapshot_restore(const struct vm_paths *p, const char *state, struct err *e)
{
	struct qmp q = { .fd = -1 };
	int r = qmp_open(&q, p->qmp, e);
	char cmd[PATH_MAX + 96];
	snprintf(cmd, sizeof(cmd), "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"unix:%s\"}}", p->mig);
	unlink(p->mig);
	if (r >= 0)
		r = qmp_ok(&q, qmp_ignore_shared, e);
	if (r >= 0)
		r = qmp_ok(&q, cmd, e);
	if (r >= 0) {
		int fd = -1;
		int64_t until = now_ms() + VM_CONNECT_MS;
		while (fd < 0 && now_ms() < until) {
			fd = fdio_unix_connect(p->mig, false);
			if (fd < 0)
				usleep(1000);
		}
		_cleanup_close_ int sfd = open(state, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || sfd < 0) {
			r = err_set(e, -EIO, "cannot feed the snapshot to the VMM");
		} else {
			vm_copy(sfd, fd);	/* a short feed fails the migration, which says so */
		}
		if (fd >= 0)
			close(fd);
		if (r >= 0)
			r = qmp_migrated(&q, e);
		if (r >= 0)
			r = qmp_ok(&q, "{\"execute\":\"cont\"}", e);
	}
	unlink(p->mig);
	if (q.fd >= 0)
		close(q.fd);
	return r;
}
