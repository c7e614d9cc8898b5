#include "base/proctitle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int proctitle_wipe(const char *title)
{
	environ = NULL;
	char b[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	b[n] = 0;
	/* The name, field 2, may hold anything: count from its last ')'.
	 * arg_start, arg_end, env_start and env_end are fields 48 to 51. */
	char *p = strrchr(b, ')');
	unsigned long v[4];
	for (int field = 2, k = 0; p && k < 4;) {
		p = strchr(p + 1, ' ');
		if (!p)
			break;
		field++;
		if (field >= 48)
			v[k++] = strtoul(p + 1, NULL, 10);
		if (k == 4) {
			if (v[1] <= v[0] || v[3] < v[2])
				return -EINVAL;
			memset((void *)v[0], 0, v[1] - v[0]);
			if (v[3] > v[2])
				memset((void *)v[2], 0, v[3] - v[2]);
			/* The last byte stays 0: the kernel then shows the block as
			 * arguments, the title and empty ones, not as a rewritten
			 * title running on into the environment. */
			size_t tl = strnlen(title, v[1] - v[0] - 1);
			memcpy((void *)v[0], title, tl);
			return 0;
		}
	}
	return -EINVAL;
}
