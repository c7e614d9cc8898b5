/* In-process tools under cancel: an io_uring read blocked on a FIFO that
 * never speaks is interrupted by the cancel token, and a write or edit
 * cancelled before its rename leaves the old file whole. Each refusal has a
 * positive twin. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "tools/tool.h"
#include "tools/uio.h"
#include "tap.h"

static char dir[] = "/tmp/ward-test-inproc-XXXXXX";
/* The tools' root: dir, as the box's root is in the box. */
static int root_fd = -1;
static const char *root_cwd = "/";

struct firer {
	struct cancel *c;
	long delay_us;
};

static void *fire_later(void *p)
{
	struct firer *f = p;
	struct timespec ts = { .tv_sec = f->delay_us / 1000000, .tv_nsec = (f->delay_us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
	cancel_fire(f->c);
	return NULL;
}

static int count_temps(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".ward-tmp-", 10))
			n++;
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	char *b = NULL;
	size_t n;
	if (fdio_read_file(AT_FDCWD, path, 64u << 20, &b, &n) < 0)
		return NULL;
	return b;
}

/* Runs a tool in-process as a worker would; a cancel fires after delay_us
 * (-1: never, 0: before the call starts). */
static enum outcome run_tool(const struct tool *t, cJSON *args, long delay_us, struct tool_result *res)
{
	struct cancel c;
	cancel_init(&c);
	struct uio *u = NULL;
	uio_new(&u, c.efd);
	struct tool_ctx ctx = { .args = args, .cancel = &c, .uio = u, .root_fd = root_fd, .cwd = root_cwd };
	tool_result_init(res);
	pthread_t th;
	struct firer f = { &c, delay_us };
	if (delay_us == 0)
		cancel_fire(&c);
	else if (delay_us > 0)
		pthread_create(&th, NULL, fire_later, &f);
	t->run(&ctx, res);
	if (delay_us > 0)
		pthread_join(th, NULL);
	uio_free(u);
	cancel_free(&c);
	return res->outcome;
}

static void test_fifo_read(void)
{
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ok(mkfifo(fifo, 0600) == 0, "mkfifo");
	/* O_RDWR: the open does not wait for a writer, and a read then blocks
	 * for ever because this process holds the only write end. */
	_cleanup_close_ int fd = open(fifo, O_RDWR | O_CLOEXEC);
	struct cancel c;
	cancel_init(&c);
	struct uio *u = NULL;
	ok(uio_new(&u, c.efd) == 0, "io_uring ring");

	/* Positive twin: data is there, the read returns it. */
	fdio_write_full(fd, "hello", 5);
	char b[64];
	ssize_t n = uio_read(u, fd, b, sizeof(b), -1);
	is_int(n, 5, "a FIFO with data reads through io_uring");

	pthread_t th;
	struct firer f = { &c, 200000 };
	pthread_create(&th, NULL, fire_later, &f);
	uint64_t t0 = now_ms();
	n = uio_read(u, fd, b, sizeof(b), -1);
	uint64_t ms = now_ms() - t0;
	pthread_join(th, NULL);
	is_int(n, -ECANCELED, "a read blocked on a silent FIFO ends as cancelled");
	ok(ms >= 150 && ms < 700, "it ends when the token fires (%llu ms after the read began, cancel at 200 ms)",
	   (unsigned long long)ms);
	n = uio_read(u, fd, b, sizeof(b), -1);
	is_int(n, -ECANCELED, "later I/O on a cancelled ring is refused at once");

	/* A worker keeps its ring for the next call: rebound to a fresh token
	 * it reads again, and the new token still interrupts a blocked read. */
	struct cancel c2;
	cancel_init(&c2);
	ok(uio_rebind(u, c2.efd) == 0, "a cancelled ring is rebound to the next call's token");
	fdio_write_full(fd, "again", 5);
	n = uio_read(u, fd, b, sizeof(b), -1);
	is_int(n, 5, "and reads again");
	struct cancel c3;
	cancel_init(&c3);
	ok(uio_rebind(u, c3.efd) == 0, "a ring whose token was armed and never fired is rebound");
	cancel_fire(&c2);	/* the old call's token: must not reach the new call */
	fdio_write_full(fd, "third", 5);
	n = uio_read(u, fd, b, sizeof(b), -1);
	is_int(n, 5, "the old token no longer cancels anything");
	f = (struct firer){ &c3, 100000 };
	pthread_create(&th, NULL, fire_later, &f);
	t0 = now_ms();
	n = uio_read(u, fd, b, sizeof(b), -1);
	ms = now_ms() - t0;
	pthread_join(th, NULL);
	is_int(n, -ECANCELED, "the new token interrupts a blocked read");
	ok(ms >= 50 && ms < 600, "when it fires (%llu ms, cancel at 100 ms)", (unsigned long long)ms);
	uio_free(u);
	cancel_free(&c);
	cancel_free(&c2);
	cancel_free(&c3);
	unlink(fifo);
}

static void test_write_cancel(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/file.txt", dir);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	fdio_write_full(fd, "old contents\n", 13);

	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "path", "file.txt");
	cJSON_AddStringToObject(args, "content", "new contents\n");
	struct tool_result res;
	enum outcome o = run_tool(&tool_write, args, 0, &res);
	is_str(outcome_name(o), "cancelled", "write cancelled before it starts: cancelled");
	_cleanup_free_ char *s1 = slurp(path);
	is_str(s1, "old contents\n", "the old file is intact");
	struct stat st;
	stat(path, &st);
	is_int(st.st_mode & 0777, 0640, "and keeps its mode");
	is_int(count_temps(), 0, "no temporary file is left beside it");
	buf_free(&res.text);

	o = run_tool(&tool_write, args, -1, &res);
	is_str(outcome_name(o), "ok", "positive twin: the same write without a cancel is ok");
	_cleanup_free_ char *s2 = slurp(path);
	is_str(s2, "new contents\n", "and replaces the file");
	stat(path, &st);
	is_int(st.st_mode & 0777, 0640, "keeping its mode");
	buf_free(&res.text);
	cJSON_Delete(args);

	/* Racing cancels at random points of a 16 MiB write: every run ends
	 * with the old file or the new one, never a mix, and no temp file. */
	size_t big = 16u << 20;
	char *content = malloc(big + 1);
	memset(content, 'n', big);
	content[big] = 0;
	int cancelled = 0, done = 0, torn = 0;
	srand(42);
	for (int i = 0; i < 40; i++) {
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		fdio_write_full(fd, "old contents\n", 13);
		close(TAKE_FD(fd));
		args = cJSON_CreateObject();
		cJSON_AddStringToObject(args, "path", "file.txt");
		cJSON_AddStringToObject(args, "content", content);
		o = run_tool(&tool_write, args, 1 + rand() % 20000, &res);
		buf_free(&res.text);
		cJSON_Delete(args);
		char *now = slurp(path);
		bool is_old = now && !strcmp(now, "old contents\n");
		bool is_new = now && strlen(now) == big && now[big - 1] == 'n' && now[0] == 'n';
		if (o == OUTCOME_CANCELLED && is_old)
			cancelled++;
		else if (o == OUTCOME_OK && is_new)
			done++;
		else
			torn++;
		free(now);
	}
	free(content);
	is_int(torn, 0, "40 writes of 16 MiB with a cancel at a random point: none torn (%d cancelled with the old file, %d done)",
	       cancelled, done);
	ok(cancelled > 0, "some of them were cancelled while running (%d)", cancelled);
	is_int(count_temps(), 0, "no temporary file is left");
}

static void test_edit_cancel(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/edit.txt", dir);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	fdio_write_full(fd, "alpha\nbeta\ngamma\n", 17);
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "path", "edit.txt");
	cJSON_AddStringToObject(args, "old_string", "beta");
	cJSON_AddStringToObject(args, "new_string", "BETA");
	struct tool_result res;
	enum outcome o = run_tool(&tool_edit, args, 0, &res);
	is_str(outcome_name(o), "cancelled", "edit cancelled before commit: cancelled");
	_cleanup_free_ char *s1 = slurp(path);
	is_str(s1, "alpha\nbeta\ngamma\n", "the old file is intact");
	buf_free(&res.text);
	o = run_tool(&tool_edit, args, -1, &res);
	is_str(outcome_name(o), "ok", "positive twin: the edit without a cancel is ok");
	_cleanup_free_ char *s2 = slurp(path);
	is_str(s2, "alpha\nBETA\ngamma\n", "and changes the file");
	buf_free(&res.text);
	cJSON_Delete(args);
	is_int(count_temps(), 0, "no temporary file is left");
}

static enum outcome run_read(const char *path, struct tool_result *res)
{
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "path", path);
	enum outcome o = run_tool(&tool_read, args, -1, res);
	cJSON_Delete(args);
	return o;
}

/* Paths resolve beneath the root, by the kernel: ".." stops at the root, an
 * absolute symlink starts from it, and no /proc magic link is followed. */
static void test_resolve(void)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/etc", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/etc/hostname", dir);
	_cleanup_close_ int hfd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	fdio_write_full(hfd, "inside-root\n", 12);
	snprintf(p, sizeof(p), "%s/abs-link", dir);
	symlink("/etc/hostname", p);
	struct tool_result res;

	run_read("../../../../../etc/hostname", &res);
	like(res.text.data, "inside-root", "\"..\" past the root stays in it: the root's own etc/hostname is read");
	buf_free(&res.text);
	run_read("abs-link", &res);
	like(res.text.data, "inside-root", "an absolute symlink resolves from the root, not the host's /");
	buf_free(&res.text);

	/* With the host's / as the root, a descriptor of dir is a way out of
	 * any root by /proc/self/fd/N/..: refused. */
	int saved_root = root_fd;
	const char *saved_cwd = root_cwd;
	root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	root_cwd = dir;
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(p, sizeof(p), "/proc/self/fd/%d/etc/hostname", dfd);
	is_int(run_read(p, &res), OUTCOME_FAILED, "read through /proc/self/fd/N fails");
	like(res.text.data, "/proc link", "and says that tools do not follow /proc links");
	buf_free(&res.text);
	snprintf(p, sizeof(p), "/proc/self/cwd/%s/etc/hostname", dir);
	is_int(run_read(p, &res), OUTCOME_FAILED, "read through /proc/self/cwd fails");
	buf_free(&res.text);
	snprintf(p, sizeof(p), "%s/etc/hostname", dir);
	is_int(run_read(p, &res), OUTCOME_OK, "twin: the same file by its own path is read");
	buf_free(&res.text);
	close(root_fd);
	root_fd = saved_root;
	root_cwd = saved_cwd;
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("1..0 # SKIP no temporary directory\n");
		return 77;
	}
	root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	test_resolve();
	test_fifo_read();
	test_write_cancel();
	test_edit_cancel();
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return tap_done();
}
