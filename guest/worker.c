/* In-process tools (read, write, edit, grep, find, ls) run on threads. A
 * thread drops its capabilities before touching the file system (Linux
 * capabilities are per thread), so a tool sees exactly what a tool command
 * would. Cancellation is cooperative: the tool polls its token between units
 * of work and its io_uring waits on the token's eventfd. */
#include "guest/guest.h"
#include "tools/uio.h"

#include <errno.h>
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
	struct job *next_done;
};

static pthread_mutex_t worker_lock = PTHREAD_MUTEX_INITIALIZER;
static struct job *worker_done;

static void *worker_main(void *arg)
{
	struct job *j = arg;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	syscall(SYS_capset, &h, d);

	struct uio *u = NULL;
	int r = uio_new(&u, j->cancel.efd);
	if (r < 0) {
		tool_result_set(&j->res, OUTCOME_FAILED, "internal error: io_uring: %s", strerror(-r));
	} else {
		struct tool_ctx ctx = {
			.args = j->call->args,
			.cancel = &j->cancel,
			.uio = u,
			.root = "/workspace",
		};
		j->call->tool->run(&ctx, &j->res);
		uio_free(u);
	}
	pthread_mutex_lock(&worker_lock);
	j->next_done = worker_done;
	worker_done = j;
	pthread_mutex_unlock(&worker_lock);
	uint64_t one = 1;
	ssize_t n = write(j->done_efd, &one, sizeof(one));
	(void)n;
	return NULL;
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
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1u << 20);
	/* Workers take no signals: the main loop reads them from a signalfd. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	r = -pthread_create(&t, &attr, worker_main, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		cancel_free(&j->cancel);
		free(j);
		return r;
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
	return j->next_done;
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
