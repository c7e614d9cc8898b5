/* Holding a workspace's layers where there is no image (no --disk cap, or
 * a machine that cannot make one): a box's hold and a rewind's exclusive
 * hold exclude each other on the lock beside the layers, as on an image.
 * A second process stands for the box (its keeper holds the layers while
 * it runs, and takes them again to wake). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workspace/layers.h"
#include "base/state.h"
#include "tap.h"

static char root[] = "/tmp/ward-test-layers-XXXXXX";

static long long ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The box: holds NAME's layers (layers_open, as a keeper making or waking
 * a box), writes the milliseconds the hold took (or -1) to out, then holds
 * them until a byte comes on in. ours: this process's lock, not the box's. */
static pid_t box_hold(int *to_box, int *from_box, int ours)
{
	int a[2], b[2];
	if (pipe(a) < 0 || pipe(b) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		/* A process of its own: not one with this one's lock. */
		if (ours >= 0)
			close(ours);
		close(a[1]);
		close(b[0]);
		struct layers L;
		struct err e = { 0 };
		long long t0 = ms_now();
		int r = layers_open("s-test", 0, &L, &e);
		long long took = r < 0 ? -1 : ms_now() - t0;
		if (write(b[1], &took, sizeof(took)) != sizeof(took))
			_exit(1);
		char c;
		if (read(a[0], &c, 1) < 0)
			_exit(1);
		if (r >= 0)
			layers_release(&L);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	*to_box = a[1];
	*from_box = b[0];
	return pid;
}

static long long box_took(int from_box)
{
	long long took = -2;
	if (read(from_box, &took, sizeof(took)) != sizeof(took))
		return -2;
	return took;
}

static void box_end(pid_t pid, int to_box, int from_box)
{
	if (write(to_box, "x", 1) < 0)
		kill(pid, SIGKILL);
	close(to_box);
	close(from_box);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	if (!mkdtemp(root))
		return 1;
	setenv("XDG_STATE_HOME", root, 1);
	struct err e = { 0 };
	struct layers L;

	is_int(layers_find("s-test", &L, &e), 0, "no layers yet: layers_find says none");
	is_int(layers_open("s-test", 0, &L, &e), 0, "layers_open without a cap makes them");
	ok(!L.image && L.lock_fd >= 0, "with no image, held all the same (a lock beside them)");
	ok(layers_alone(&L), "held by nobody else: alone");
	layers_release(&L);

	/* A box holds them: a rewind is not alone. */
	int to_box, from_box;
	pid_t box = box_hold(&to_box, &from_box, -1);
	long long took = box_took(from_box);
	ok(took >= 0 && took < 1000, "the box holds the layers (%lld ms)", took);
	is_int(layers_find("s-test", &L, &e), 1, "a second user finds them while the box holds them");
	ok(!layers_alone(&L), "and is not alone: a rewind would not touch them under the box");
	box_end(box, to_box, from_box);
	ok(layers_alone(&L), "positive twin: once the box lets go, alone");

	/* Held alone: a box made or woken meanwhile waits for the release. */
	box = box_hold(&to_box, &from_box, L.lock_fd);
	usleep(500 * 1000);
	long long t_release = ms_now();
	layers_release(&L);
	took = box_took(from_box);
	ok(took >= 450, "a box taking the layers while a rewind has them alone waits for it (%lld ms)", took);
	ok(took >= 0 && ms_now() - t_release < 1000, "and has them once the rewind lets go");
	box_end(box, to_box, from_box);

	char lock[PATH_MAX];
	snprintf(lock, sizeof(lock), "%s/ward/workspaces/s-test.lock", root);
	ok(access(lock, F_OK) == 0, "the lock is a file beside the layers (%s)", lock);
	layers_drop("s-test");
	ok(access(lock, F_OK) < 0, "and dropping the layers removes it");
	state_rm_rf(root);
	return tap_done();
}
