#include "sandbox/vmimage.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/child.h"
#include "base/state.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* The modules ward-guest loads at boot, with their dependencies from
 * modules.dep: the channel, the 9p shares, and the file systems of the
 * box's root (its image's erofs, its own disk's ext4, the overlay of the
 * two). crc32c_generic first: libcrc32c (erofs) and ext4 ask the crypto
 * API for "crc32c", which only a softdep names, and the guest has no
 * modprobe to load it on demand. */
static const char *const vmimage_modules[] = {
	"virtio_mmio", "virtio_console", "9pnet_virtio", "9p", "crc32c_generic", "overlay", "erofs", "ext4",
};
/* Loaded at boot after the others, with the virtio bus's autoprobe off:
 * bound to its devices only at START, since a block device's driver reads
 * its size (and its first blocks) as it binds, and a snapshot's template
 * is booted with stand-ins for the box's own disks, which a restored box
 * has in their place. */
static const char *const vmimage_modules_start[] = {
	"virtio_blk",
};
/* What the initramfs holds and where: part of the cache's key, so that a
 * new layout is a new image (and a new snapshot). */
#define VMIMAGE_LAYOUT 3

static int kver_cmp(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

int vmimage_kernel(char *vmlinuz, size_t n, char *kver, size_t kn, struct err *e)
{
	glob_t g;
	if (glob("/boot/vmlinuz-*", 0, NULL, &g) != 0 || g.gl_pathc == 0) {
		globfree(&g);
		return err_set(e, -ENOENT, "no kernel in /boot: install linux-image-amd64");
	}
	qsort(g.gl_pathv, g.gl_pathc, sizeof(char *), kver_cmp);
	/* Prefer the running kernel's version when it is there. */
	struct utsname u;
	const char *pick = g.gl_pathv[g.gl_pathc - 1];
	if (uname(&u) == 0)
		for (size_t i = 0; i < g.gl_pathc; i++)
			if (!strcmp(g.gl_pathv[i] + strlen("/boot/vmlinuz-"), u.release))
				pick = g.gl_pathv[i];
	snprintf(vmlinuz, n, "%s", pick);
	snprintf(kver, kn, "%s", pick + strlen("/boot/vmlinuz-"));
	globfree(&g);
	char mods[PATH_MAX];
	snprintf(mods, sizeof(mods), "/lib/modules/%s/modules.dep", kver);
	if (access(mods, R_OK) < 0)
		return err_set(e, -ENOENT, "no modules for kernel %s (%s): install linux-image-%s", kver, mods, kver);
	return 0;
}

/* vmlinuz is a bzImage: a decompressor and a compressed ELF. Find the
 * payload by its magic and decompress it with the matching tool. */
static int extract_vmlinux(const char *vmlinuz, const char *out, struct err *e)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fdio_read_file(AT_FDCWD, vmlinuz, 256u << 20, &data, &len);
	if (r < 0)
		return err_setc(e, r, "cannot read %s", vmlinuz);
	static const struct {
		const char *magic;
		size_t n;
		const char *tool;
	} fmts[] = {
		{ "\xfd" "7zXZ\x00", 6, "xz" },
		{ "\x28\xb5\x2f\xfd", 4, "zstd" },
		{ "\x1f\x8b\x08", 3, "gzip" },
	};
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		for (const char *p = memmem(data, len, fmts[f].magic, fmts[f].n); p;
		     p = memmem(p + 1, len - (size_t)(p + 1 - data), fmts[f].magic, fmts[f].n)) {
			/* The payload through a pipe from a temp file. */
			char pay[PATH_MAX + 8];
			snprintf(pay, sizeof(pay), "%s.payload", out);
			_cleanup_close_ int pfd = open(pay, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (pfd < 0 || fdio_write_full(pfd, p, len - (size_t)(p - data)) < 0 || lseek(pfd, 0, SEEK_SET) < 0)
				return err_setc(e, -errno, "cannot write %s", pay);
			_cleanup_close_ int ofd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (ofd < 0)
				return err_setc(e, -errno, "cannot write %s", tmp);
			char *argv[] = { (char *)fmts[f].tool, "-dc", NULL };
			int fds[] = { pfd, ofd };
			child_wait(argv, fds, 2);	/* trailing bytes make it complain; the ELF is whole */
			unlink(pay);
			char hdr[4];
			_cleanup_close_ int chk = open(tmp, O_RDONLY | O_CLOEXEC);
			if (chk >= 0 && read(chk, hdr, 4) == 4 && !memcmp(hdr, "\x7f" "ELF", 4)) {
				if (rename(tmp, out) < 0)
					return err_setc(e, -errno, "cannot write %s", out);
				return 0;
			}
			unlink(tmp);
		}
	}
	return err_set(e, -EINVAL, "no compressed ELF kernel found in %s (need xz, zstd or gzip)", vmlinuz);
}

/* A newc cpio archive, written as it goes. */
struct cpio {
	FILE *f;
	uint32_t ino;
};

static void cpio_pad(struct cpio *c)
{
	long pos = ftell(c->f);
	while (pos % 4) {
		fputc(0, c->f);
		pos++;
	}
}

static void cpio_entry(struct cpio *c, const char *name, uint32_t mode, const void *data, size_t len)
{
	size_t nl = strlen(name) + 1;
	fprintf(c->f, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08zX%08X", ++c->ino, mode, 0u, 0u, 1u, 0u,
		(uint32_t)len, 0u, 0u, 0u, 0u, nl, 0u);
	fwrite(name, 1, nl, c->f);
	cpio_pad(c);
	if (len)
		fwrite(data, 1, len, c->f);
	cpio_pad(c);
}

static int cpio_file(struct cpio *c, const char *name, const char *src, uint32_t perm)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fdio_read_file(AT_FDCWD, src, 512u << 20, &data, &len);
	if (r < 0)
		return r;
	cpio_entry(c, name, 0100000 | perm, data, len);
	return 0;
}

static void cpio_dir(struct cpio *c, const char *name)
{
	cpio_entry(c, name, 040755, NULL, 0);
}

static void cpio_link(struct cpio *c, const char *name, const char *target)
{
	cpio_entry(c, name, 0120777, target, strlen(target));
}

/* modules.dep: "kernel/a.ko: kernel/b.ko kernel/c.ko". Loads go
 * dependencies first; each module once. */
static int mod_add(const char *dep, size_t deplen, const char *name, char order[][PATH_MAX], size_t *n, size_t max,
		   int depth)
{
	if (depth > 16)
		return -ELOOP;
	/* Find the line for this module: ".../NAME.ko:" (dashes and
	 * underscores are the same in module names). */
	char want[128];
	snprintf(want, sizeof(want), "/%s.ko", name);
	for (char *w = want; *w; w++)
		if (*w == '-')
			*w = '_';
	const char *line = dep, *end = dep + deplen;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);
		const char *colon = memchr(line, ':', ll);
		if (colon) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%.*s", (int)(colon - line), line);
			char norm[PATH_MAX];
			snprintf(norm, sizeof(norm), "%s", path);
			for (char *w = norm; *w; w++)
				if (*w == '-')
					*w = '_';
			const char *base = strrchr(norm, '/');
			size_t bl = base ? strlen(base) : 0;
			bool match = base && (!strncmp(base, want, strlen(want)) &&
					      (bl == strlen(want) || !strcmp(base + strlen(want), ".xz") ||
					       !strcmp(base + strlen(want), ".zst")));
			if (match) {
				for (size_t i = 0; i < *n; i++)
					if (!strcmp(order[i], path))
						return 0;
				/* Dependencies first, each by its own line. */
				char deps[4096];
				snprintf(deps, sizeof(deps), "%.*s", (int)(line + ll - colon - 1), colon + 1);
				char names[32][128];
				int nn = 0;
				char *save = NULL;
				for (char *tok = strtok_r(deps, " ", &save); tok && nn < 32; tok = strtok_r(NULL, " ", &save)) {
					const char *b = strrchr(tok, '/');
					snprintf(names[nn], sizeof(names[nn]), "%s", b ? b + 1 : tok);
					char *dot = strstr(names[nn], ".ko");
					if (dot)
						*dot = 0;
					nn++;
				}
				for (int i = nn - 1; i >= 0; i--) {
					int r = mod_add(dep, deplen, names[i], order, n, max, depth + 1);
					if (r < 0 && r != -ENOENT)
						return r;
				}
				if (*n >= max)
					return -E2BIG;
				snprintf(order[(*n)++], PATH_MAX, "%s", path);
				return 0;
			}
		}
		line += ll + 1;
	}
	return -ENOENT;	/* built in, or absent: the kernel has it or not */
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static uint64_t fnv_stat(uint64_t h, const char *path)
{
	struct stat st;
	h = fnv(h, path, strlen(path));
	if (stat(path, &st) == 0) {
		h = fnv(h, &st.st_size, sizeof(st.st_size));
		h = fnv(h, &st.st_mtim, sizeof(st.st_mtim));
	}
	return h;
}

int vmimage_cache_dir(char *out, size_t n, struct err *e)
{
	const char *x = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (x && *x)
		snprintf(out, n, "%s/ward/images", x);
	else if (home && *home)
		snprintf(out, n, "%s/.cache/ward/images", home);
	else
		return err_set(e, -ENOENT, "no cache directory: set HOME or XDG_CACHE_HOME");
	if (state_mkdir_p(out, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", out);
	return 0;
}

/* Whether an ELF binary names an interpreter (it is dynamically linked). */
static bool elf_dynamic(const char *bin)
{
	_cleanup_close_ int fd = open(bin, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr h;
	if (fd < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h.e_ident, ELFMAG, SELFMAG) ||
	    h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_phentsize != sizeof(Elf64_Phdr))
		return true;	/* not what it seems: ldd says */
	for (unsigned i = 0; i < h.e_phnum && i < 256; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(h.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return true;
		if (ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

/* The shared libraries a binary needs, from ldd (none when it is linked
 * statically). */
static int ldd_libs(const char *bin, char libs[][PATH_MAX], size_t *n, size_t max)
{
	*n = 0;
	if (!elf_dynamic(bin))
		return 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	char *argv[] = { "ldd", (char *)bin, NULL };
	int fds[] = { -1, p[1] };
	pid_t pid;
	int r = child_start(argv, fds, 2, &pid);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		return r;
	}
	FILE *f = fdopen(p[0], "r");
	char line[1024];
	*n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *path = strstr(line, "=> /");
		path = path ? path + 3 : strchr(line, '/');
		if (!path || *n >= max)
			continue;
		path[strcspn(path, " (\n")] = 0;
		snprintf(libs[(*n)++], PATH_MAX, "%s", path);
	}
	if (f)
		fclose(f);
	child_reap(pid);
	return *n ? 0 : -ENOEXEC;
}

/* The modules of names (and their dependencies not in order yet), in load
 * order, into the cpio under ward/modules, and their list as file list. */
static int initrd_modules(struct cpio *c, const char *kver, const char *dep, size_t deplen,
			  const char *const *names, size_t nnames, char order[][PATH_MAX], size_t *norder,
			  size_t max, const char *list_name, struct err *e)
{
	size_t from = *norder;
	for (size_t i = 0; i < nnames; i++)
		mod_add(dep, deplen, names[i], order, norder, max, 0);
	char list[8192] = "";
	for (size_t i = from; i < *norder; i++) {
		const char *base = strrchr(order[i], '/') + 1;
		char src[PATH_MAX], name[PATH_MAX];
		snprintf(src, sizeof(src), "/lib/modules/%s/%s", kver, order[i]);
		snprintf(name, sizeof(name), "ward/modules/%s", base);
		if (strstr(base, ".ko."))
			return err_set(e, -ENOTSUP, "%s is compressed; ward needs uncompressed modules", src);
		if (cpio_file(c, name, src, 0644) < 0)
			return err_setc(e, -errno, "cannot read %s", src);
		strncat(list, base, sizeof(list) - strlen(list) - 2);
		strncat(list, "\n", sizeof(list) - strlen(list) - 1);
	}
	cpio_entry(c, list_name, 0100644, list, strlen(list));
	return 0;
}

/* The initramfs: ward-guest as /init with what it needs to run (its shared
 * libraries, its modules, the directories it mounts on). The box's root
 * is not in it: the host view (sandbox/hostview.c) or an image reaches the
 * VM from outside. */
static int build_initrd(const char *guest_path, const char *kver, const char *out, struct err *e)
{
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return err_setc(e, -errno, "cannot write %s", tmp);
	struct cpio c = { .f = f };
	/* ward-guest's own: where it mounts the box's disks and builds its
	 * root (guest/vm-root.c), and its libraries (Debian's merged /usr:
	 * /lib and /lib64 are links into it). */
	static const char *const dirs[] = {
		"dev", "proc", "sys", "usr", "usr/lib", "usr/lib/x86_64-linux-gnu", "usr/lib64", "ward",
		"ward/modules", "ward/disk", "ward/lower", "ward/host", "ward/root",
	};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		cpio_dir(&c, dirs[i]);
	cpio_link(&c, "lib", "usr/lib");
	cpio_link(&c, "lib64", "usr/lib64");
	int r = cpio_file(&c, "init", guest_path, 0755);
	if (r < 0) {
		fclose(f);
		return err_setc(e, r, "cannot read %s", guest_path);
	}
	static char libs[64][PATH_MAX];
	size_t nlibs = 0;
	r = ldd_libs(guest_path, libs, &nlibs, ARRAY_SIZE(libs));
	if (r < 0) {
		fclose(f);
		return err_setc(e, r, "ldd %s", guest_path);
	}
	for (size_t i = 0; i < nlibs; i++) {
		const char *base = strrchr(libs[i], '/') + 1;
		char name[PATH_MAX];
		snprintf(name, sizeof(name), "usr/lib/x86_64-linux-gnu/%s", base);
		if (cpio_file(&c, name, libs[i], 0755) < 0)
			continue;
		if (strstr(base, "ld-linux")) {
			char l[PATH_MAX];
			snprintf(l, sizeof(l), "usr/lib64/%s", base);
			char t[PATH_MAX];
			snprintf(t, sizeof(t), "../lib/x86_64-linux-gnu/%s", base);
			cpio_link(&c, l, t);
		}
	}
	/* The modules, in load order, and the order itself: those that bind
	 * their devices at boot, then those whose devices are bound at START
	 * (ward/modules/start; a dependency of theirs listed before is not
	 * listed again). */
	char depf[PATH_MAX];
	snprintf(depf, sizeof(depf), "/lib/modules/%s/modules.dep", kver);
	_cleanup_free_ char *dep = NULL;
	size_t deplen;
	r = fdio_read_file(AT_FDCWD, depf, 16u << 20, &dep, &deplen);
	if (r < 0) {
		fclose(f);
		return err_setc(e, r, "cannot read %s", depf);
	}
	static char order[48][PATH_MAX];
	size_t norder = 0;
	r = initrd_modules(&c, kver, dep, deplen, vmimage_modules, ARRAY_SIZE(vmimage_modules), order, &norder,
			   ARRAY_SIZE(order), "ward/modules/order", e);
	if (r >= 0)
		r = initrd_modules(&c, kver, dep, deplen, vmimage_modules_start, ARRAY_SIZE(vmimage_modules_start), order,
				   &norder, ARRAY_SIZE(order), "ward/modules/start", e);
	if (r < 0) {
		fclose(f);
		unlink(tmp);
		return r;
	}
	cpio_entry(&c, "TRAILER!!!", 0, NULL, 0);
	bool bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		unlink(tmp);
		return err_set(e, -EIO, "cannot write %s", tmp);
	}
	if (rename(tmp, out) < 0)
		return err_setc(e, -errno, "cannot write %s", out);
	return 0;
}

struct aged {
	char *path;
	time_t mtime;
};

static int aged_cmp(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;
	return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : 0;
}

void vmimage_prune(const char *pattern, size_t keep, const char *const *suffixes)
{
	glob_t g;
	if (glob(pattern, 0, NULL, &g) != 0) {
		globfree(&g);
		return;
	}
	struct aged *v = calloc(g.gl_pathc, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < g.gl_pathc; i++) {
		struct stat st;
		if (stat(g.gl_pathv[i], &st) == 0)
			v[n++] = (struct aged){ g.gl_pathv[i], st.st_mtime };
	}
	if (v)
		qsort(v, n, sizeof(*v), aged_cmp);
	for (size_t i = keep; v && i < n; i++) {
		unlink(v[i].path);
		/* Files that belong with it: a snapshot's RAM beside its state. */
		char base[PATH_MAX];
		snprintf(base, sizeof(base), "%s", v[i].path);
		char *dot = strrchr(base, '.');
		for (const char *const *sfx = suffixes; dot && sfx && *sfx; sfx++) {
			char other[PATH_MAX + 16];
			snprintf(other, sizeof(other), "%.*s%s", (int)(dot - base), base, *sfx);
			unlink(other);
		}
	}
	free(v);
	globfree(&g);
}

int vmimage_get(const char *guest_path, bool force, struct vm_image *out, struct err *e)
{
	char vmlinuz[PATH_MAX], dir[PATH_MAX];
	int r = vmimage_kernel(vmlinuz, sizeof(vmlinuz), out->kver, sizeof(out->kver), e);
	if (r < 0)
		return r;
	r = vmimage_cache_dir(dir, sizeof(dir), e);
	if (r < 0)
		return r;
	uint64_t kh = fnv_stat(1469598103934665603ULL, vmlinuz);
	snprintf(out->kernel, sizeof(out->kernel), "%s/vmlinux-%s-%016llx", dir, out->kver, (unsigned long long)kh);
	if (force || access(out->kernel, R_OK) < 0) {
		r = extract_vmlinux(vmlinuz, out->kernel, e);
		if (r < 0)
			return r;
	}
	uint64_t layout = VMIMAGE_LAYOUT;
	uint64_t ih = fnv(fnv_stat(kh, guest_path), &layout, sizeof(layout));
	snprintf(out->initrd, sizeof(out->initrd), "%s/initramfs-%016llx.cpio", dir, (unsigned long long)ih);
	if (force || access(out->initrd, R_OK) < 0) {
		r = build_initrd(guest_path, out->kver, out->initrd, e);
		if (r < 0)
			return r;
		/* Each new ward-guest makes a new image: keep the newest few. */
		char pat[PATH_MAX + 32];
		snprintf(pat, sizeof(pat), "%s/initramfs-*.cpio", dir);
		vmimage_prune(pat, VMIMAGE_KEEP, NULL);
	}
	return 0;
}
