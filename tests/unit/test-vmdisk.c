/* A vm box's own disk (sandbox/vm-disk.c): an ext4 of the size asked for,
 * sparse (the host's disk holds a few MiB of it, whatever its size), each
 * box's a file of its own copied from one blank per size; one that is
 * there is kept as it is (a wake, a restart); and the stand-in a VM has
 * where a box has no image: zeros. No VM here: the host side only. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/vm-int.h"
#include "tap.h"

static char dir[] = "/tmp/ward-test-vmdisk-XXXXXX";

static bool ext4_magic(const char *path)
{
	unsigned char m[2] = { 0 };
	int fd = open(path, O_RDONLY);
	bool yes = fd >= 0 && pread(fd, m, 2, 1080) == 2 && m[0] == 0x53 && m[1] == 0xef;
	if (fd >= 0)
		close(fd);
	return yes;
}

int main(void)
{
	if (access("/usr/sbin/mkfs.ext4", X_OK) < 0 && access("/sbin/mkfs.ext4", X_OK) < 0) {
		printf("1..0 # SKIP mkfs.ext4 is not installed (apt-get install e2fsprogs)\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	char cache[4096], a[4096], b[4096], s[4096];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	setenv("XDG_CACHE_HOME", cache, 1);
	snprintf(a, sizeof(a), "%s/disks/a.img", dir);
	snprintf(b, sizeof(b), "%s/disks/b.img", dir);

	const uint64_t size = 1ULL << 30;
	struct err e = { 0 };
	int r = vm_disk_make(a, size, &e);
	is_int(r, 0, "a box's disk is made (%s)", e.msg);
	struct stat st = { 0 };
	stat(a, &st);
	is_int(st.st_size, size, "of the size asked for");
	ok((uint64_t)st.st_blocks * 512 < (16u << 20), "sparse: %lld KiB of the host's disk for 1 GiB",
	   (long long)st.st_blocks / 2);
	ok(ext4_magic(a), "an ext4 (its magic)");
	is_int(st.st_mode & 0777, 0600, "the user's alone (0600)");

	/* One that is there is kept: what the box wrote stays. */
	int fd = open(a, O_WRONLY);
	ok(fd >= 0 && pwrite(fd, "box-wrote-this", 14, 512u << 20) == 14, "the box writes its disk");
	if (fd >= 0)
		close(fd);
	r = vm_disk_make(a, size, &e);
	char buf[16] = "";
	fd = open(a, O_RDONLY);
	ok(r == 0 && fd >= 0 && pread(fd, buf, 14, 512u << 20) == 14 && !memcmp(buf, "box-wrote-this", 14),
	   "asked again (a wake), the disk is kept with what it holds");
	if (fd >= 0)
		close(fd);

	/* Another box's: a file of its own, as blank as the first was. */
	r = vm_disk_make(b, size, &e);
	struct stat sb = { 0 };
	stat(b, &sb);
	ok(r == 0 && sb.st_ino != st.st_ino && ext4_magic(b), "another box's disk is a file of its own");
	fd = open(b, O_RDONLY);
	ok(fd >= 0 && pread(fd, buf, 14, 512u << 20) == 14 && memcmp(buf, "box-wrote-this", 14),
	   "which holds nothing of the first box's");
	if (fd >= 0)
		close(fd);
	snprintf(s, sizeof(s), "%s/ward/blanks/ward-disk-%llu.ext4", cache, (unsigned long long)size);
	ok(access(s, R_OK) == 0, "both are copies of one blank per size, in the cache");
	snprintf(s, sizeof(s), "%s/disks/b.img.tmp", dir);
	ok(access(s, F_OK) < 0, "and no temporary file is left");

	/* The stand-in: zeros, the same file for every box. */
	char sa[4096], sb2[4096];
	r = vm_disk_standin(NULL, sa, sizeof(sa), &e);
	is_int(r, 0, "the stand-in for a root with no image is made");
	stat(sa, &st);
	is_int(st.st_size, VM_DISK_STANDIN, "%d bytes", VM_DISK_STANDIN);
	r = vm_disk_standin(NULL, sb2, sizeof(sb2), &e);
	ok(r == 0 && !strcmp(sa, sb2), "and it is one file for every box");
	snprintf(s, sizeof(s), "%s/t.disk", dir);
	r = vm_disk_standin(s, sb2, sizeof(sb2), &e);
	ok(r == 0 && !strcmp(s, sb2) && access(s, R_OK) == 0, "a template's own stand-in where it is asked for");

	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
