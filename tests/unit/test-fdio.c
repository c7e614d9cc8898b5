/* fdio_accept: a listener with a connection waiting, in a process out of
 * descriptors, sheds it (the peer sees it closed) instead of leaving the
 * listener readable for ever; with a descriptor free, it accepts. And the
 * unix socket helpers, both ways. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fdio.h"
#include "tap.h"

int main(void)
{
	char dir[] = "/tmp/ward-fdio-XXXXXX", path[64];
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/s", dir);
	int lfd = fdio_unix_listen(path, 8, true);
	ok(lfd >= 0, "fdio_unix_listen makes a listener");
	int a = fdio_unix_connect(path, false);
	ok(a >= 0, "fdio_unix_connect reaches it");
	int reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int got = fdio_accept(lfd, NULL, NULL, &reserve);
	ok(got >= 0, "with descriptors free: accepted");
	close(got);

	/* Out of descriptors: the soft limit lowered to what is open now. */
	int b = fdio_unix_connect(path, false);
	ok(b >= 0, "a second connection waits");
	struct rlimit old, low;
	getrlimit(RLIMIT_NOFILE, &old);
	int top = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(top);
	low = old;
	low.rlim_cur = (rlim_t)top;	/* every descriptor below top is in use */
	setrlimit(RLIMIT_NOFILE, &low);
	int plain = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	is_int(plain, -1, "plain accept4 at the limit fails (%s)", strerror(errno));
	int shed = fdio_accept(lfd, NULL, NULL, &reserve);
	is_int(shed, -EMFILE, "fdio_accept at the limit: -EMFILE, the connection shed");
	ok(reserve >= 0, "and the reserve is open again");
	struct pollfd pf = { .fd = lfd, .events = POLLIN };
	is_int(poll(&pf, 1, 0), 0, "the listener is no longer readable (nothing waits)");
	char c;
	is_int((int)read(b, &c, 1), 0, "the peer sees its connection closed");
	setrlimit(RLIMIT_NOFILE, &old);
	int d = fdio_unix_connect(path, false);
	got = fdio_accept(lfd, NULL, NULL, &reserve);
	ok(got >= 0, "twin: with the limit back, the next one is accepted");
	close(got);
	close(d);
	close(b);
	close(a);
	close(lfd);
	close(reserve);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
