/* In-process tools (read, write, edit, grep, find, ls) run on threads. A
 * thread drops its capabilities before touching the file system (Linux
 * capabilities are per thread), so a tool sees exactly what a tool command
 * would. Cancellation is cooperative: the tool polls its token between units
 * of work and its io_uring waits on the token's eventfd. */
#include "guest/guest.h"
#include "tools/uio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct job {
	struct call *call;
	struct cancel cancel;
	struct tool_result res;
	int done_efd;
	struct job *next;	/* in the queue, then in the done list */
};

/* A pool of threads, each with its own io_uring ring kept between calls:
 * creating a thread and a ring costs more than a small read. Idle threads
 * wait for work; a call that finds none idle starts another, so a worker
 * stuck in a system call never holds up the next call. */
#define WORKER_IDLE_MAX 8

static pthread_mutex_t worker_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t worker_cond = PTHREAD_COND_INITIALIZER;
static struct job *worker_queue, *worker_queue_tail, *worker_done;
static unsigned worker_idle, worker_queued;

static int worker_root_fd = -1;
static const char *worker_cwd = "/workspace";

int worker_setup(const char *cwd)
{
	/* The box's root, as ward-guest sees it once the box is built: every
	 * path a tool names is resolved beneath it (tools/fsutil.h). */
	worker_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (worker_root_fd < 0)
		return -errno;
	if (cwd)
		worker_cwd = cwd;
	return 0;
}

static void worker_run(struct job *j, struct uio **u)
{
	int r = *u ? uio_rebind(*u, j->cancel.efd) : uio_new(u, j->cancel.efd);
	if (r < 0 && *u) {
		/* A ring that cannot be reset is replaced. */
		uio_free(*u);
		*u = NULL;
		r = uio_new(u, j->cancel.efd);
	}
	if (r < 0) {
		tool_result_set(&j->res, OUTCOME_FAILED, "internal error: io_uring: %s", strerror(-r));
		return;
	}
	struct tool_ctx ctx = {
		.args = j->call->args,
		.cancel = &j->cancel,
		.uio = *u,
		.root_fd = worker_root_fd,
		.cwd = worker_cwd,
	};
	j->call->tool->run(&ctx, &j->res);
}

int worker_uid, worker_gid;

static void *worker_main(void *arg)
{
	/* In-process tools act as the tool user, as tool commands do (a
	 * VM's 1000, an image's User): the files one makes, the other can
	 * change (raw system calls: credentials are per thread, and glibc
	 * would change every thread's). */
	if (worker_uid || worker_gid) {
		syscall(SYS_setresgid, worker_gid, worker_gid, worker_gid);
		syscall(SYS_setresuid, worker_uid, worker_uid, worker_uid);
	}
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	syscall(SYS_capset, &h, d);

	struct uio *u = NULL;
	pthread_mutex_lock(&worker_lock);
	for (;;) {
		while (!worker_queue) {
			if (worker_idle >= WORKER_IDLE_MAX)
				goto out;
			worker_idle++;
			pthread_cond_wait(&worker_cond, &worker_lock);
			worker_idle--;
		}
		struct job *j = worker_queue;
		worker_queue = j->next;
		worker_queued--;
		if (!worker_queue)
			worker_queue_tail = NULL;
		pthread_mutex_unlock(&worker_lock);

		worker_run(j, &u);

		pthread_mutex_lock(&worker_lock);
		j->next = worker_done;
		worker_done = j;
		uint64_t one = 1;
		ssize_t n = write(j->done_efd, &one, sizeof(one));
		(void)n;
	}
out:
	pthread_mutex_unlock(&worker_lock);
	uio_free(u);
	return NULL;
}

static int worker_spawn(void)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1u << 20);
	/* Workers take no signals: the main loop reads them from a signalfd. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int r = -pthread_create(&t, &attr, worker_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return r;
}

int worker_start(struct call *c, int done_efd)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->call = c;
	j->done_efd = done_efd;
	tool_result_init(&j->res);
	int r = cancel_init(&j->cancel);
	if (r < 0) {
		free(j);
		return r;
	}
	pthread_mutex_lock(&worker_lock);
	/* Every queued job needs an idle worker of its own (an idle one
	 * counts until it wakes), or a new one. */
	bool spawn = worker_idle < ++worker_queued;
	if (worker_queue_tail)
		worker_queue_tail->next = j;
	else
		worker_queue = j;
	worker_queue_tail = j;
	pthread_cond_signal(&worker_cond);
	pthread_mutex_unlock(&worker_lock);
	if (spawn) {
		r = worker_spawn();
		if (r < 0) {
			/* Take it back unless an idle worker got to it. */
			pthread_mutex_lock(&worker_lock);
			bool taken = true;
			for (struct job **p = &worker_queue, *prev = NULL; *p; prev = *p, p = &(*p)->next)
				if (*p == j) {
					*p = j->next;
					worker_queued--;
					if (worker_queue_tail == j)
						worker_queue_tail = prev;
					taken = false;
					break;
				}
			pthread_mutex_unlock(&worker_lock);
			if (!taken) {
				cancel_free(&j->cancel);
				free(j);
				return r;
			}
		}
	}
	c->job = j;
	return 0;
}

struct job *worker_take_done(void)
{
	pthread_mutex_lock(&worker_lock);
	struct job *list = worker_done;
	worker_done = NULL;
	pthread_mutex_unlock(&worker_lock);
	return list;
}

struct job *worker_next(struct job *j)
{
	return j->next;
}

struct call *worker_call(struct job *j)
{
	return j->call;
}

struct tool_result *worker_result(struct job *j)
{
	return &j->res;
}

void worker_cancel(struct job *j)
{
	cancel_fire(&j->cancel);
}

void worker_free(struct job *j)
{
	if (!j)
		return;
	cancel_free(&j->cancel);
	buf_free(&j->res.text);
	free(j);
}
