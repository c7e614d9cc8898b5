/* store: zstd round trips and refusals of cut or corrupted frames; the
 * directory store's verbs, keys, and a directory this user may not use;
 * an S3 store's spec and environment (nothing is sent: store.sh talks to
 * a server). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "tap.h"

static char dir[64];

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static bool write_file(const char *name, const void *buf, size_t len)
{
	char p[128];
	path_of(p, sizeof(p), name);
	FILE *f = fopen(p, "we");
	if (!f)
		return false;
	bool ok = fwrite(buf, 1, len, f) == len;
	return fclose(f) == 0 && ok;
}

/* The whole file, malloc'd; *len its size. */
static char *read_file(const char *name, size_t *len)
{
	char p[128];
	path_of(p, sizeof(p), name);
	FILE *f = fopen(p, "re");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *b = malloc(n > 0 ? (size_t)n : 1);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

static int zstd_file(bool comp, int level, const char *from, const char *to, uint64_t *nin,
		     uint64_t *nout, struct err *e)
{
	char a[128], b[128];
	path_of(a, sizeof(a), from);
	path_of(b, sizeof(b), to);
	int ifd = open(a, O_RDONLY | O_CLOEXEC);
	int ofd = open(b, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int r = comp ? store_compress(ifd, ofd, level, nin, nout, e) : store_decompress(ifd, ofd, nout, e);
	close(ifd);
	close(ofd);
	return r;
}

/* Several MB that are part noise (incompressible) and part text (very
 * compressible), in runs, so both of zstd's paths are crossed. */
static char *sample(size_t n)
{
	char *b = malloc(n);
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	const char *text = "state of box 42: pid 1 ward-guest, /workspace clean; ";
	size_t tl = strlen(text);
	for (size_t i = 0; i < n; i++) {
		if ((i >> 16) % 3 == 0) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (char)x;
		} else {
			b[i] = text[i % tl];
		}
	}
	return b;
}

static void test_zstd(void)
{
	const size_t n = 6u << 20;
	char *orig = sample(n);
	ok(write_file("orig", orig, n), "a %zu-byte sample written", n);
	struct err e = { 0 };
	uint64_t nin = 0, nout = 0, back = 0;
	is_int(zstd_file(true, 3, "orig", "orig.zst", &nin, &nout, &e), 0, "compressed (%s)", e.msg);
	is_int(nin, n, "it read every byte");
	size_t zl = 0;
	char *z = read_file("orig.zst", &zl);
	is_int(nout, zl, "ret_out is the compressed file's size");
	ok(zl < n / 2, "and it is smaller: %zu of %zu", zl, n);
	is_int(zstd_file(false, 0, "orig.zst", "back", NULL, &back, &e), 0, "decompressed (%s)", e.msg);
	size_t bl = 0;
	char *b = read_file("back", &bl);
	ok(bl == n && !memcmp(b, orig, n), "the bytes are the same (%zu)", bl);
	is_int(back, n, "ret_out is the size of the original");
	free(b);

	/* The default level is 3: level 0 gives the same bytes. */
	is_int(zstd_file(true, 0, "orig", "orig0.zst", NULL, NULL, &e), 0, "level 0 compresses");
	size_t zl0 = 0;
	char *z0 = read_file("orig0.zst", &zl0);
	ok(zl0 == zl && !memcmp(z0, z, zl), "level 0 is zstd level 3 (the same %zu bytes)", zl0);
	free(z0);
	is_int(zstd_file(true, 20, "orig", "x.zst", NULL, NULL, &e), -EINVAL, "level 20: refused");
	like(e.msg, "give 1 to 19", "saying which levels");
	is_int(zstd_file(true, 19, "orig", "x.zst", NULL, NULL, &e), 0, "twin: level 19 works");

	/* Cut short: a partial upload or copy. */
	ok(write_file("cut.zst", z, zl - 100), "a copy without its last 100 bytes");
	e = (struct err){ 0 };
	is_int(zstd_file(false, 0, "cut.zst", "x", NULL, NULL, &e), -EBADMSG, "truncated: -EBADMSG");
	like(e.msg, "truncated", "saying it is truncated (%s)", e.msg);
	ok(write_file("half.zst", z, 7), "a copy of 7 bytes (a frame header cut)");
	is_int(zstd_file(false, 0, "half.zst", "x", NULL, NULL, &e), -EBADMSG, "that too: -EBADMSG");
	ok(write_file("empty.zst", z, 0), "an empty file");
	is_int(zstd_file(false, 0, "empty.zst", "x", NULL, NULL, &e), -EBADMSG, "no frame: -EBADMSG");

	/* One byte flipped, in a literal-heavy run (noise) and in a text run. */
	for (size_t at = zl / 3; at < zl; at += zl / 3) {
		z[at] ^= 0x20;
		ok(write_file("flip.zst", z, zl), "a copy with byte %zu flipped", at);
		e = (struct err){ 0 };
		is_int(zstd_file(false, 0, "flip.zst", "x", NULL, NULL, &e), -EBADMSG,
		       "refused: -EBADMSG");
		like(e.msg, "corrupt", "saying it is corrupt (%s)", e.msg);
		z[at] ^= 0x20;
	}
	ok(write_file("flip.zst", z, zl), "twin: the same bytes unflipped");
	is_int(zstd_file(false, 0, "flip.zst", "x", NULL, NULL, &e), 0, "decompress");
	ok(write_file("plain", "not zstd at all, just text", 26), "a file that is not zstd");
	is_int(zstd_file(false, 0, "plain", "x", NULL, NULL, &e), -EBADMSG, "refused: -EBADMSG");
	free(z);
	free(orig);
}

static void test_dir(void)
{
	char sd[128], src[128], got[128];
	path_of(sd, sizeof(sd), "store");
	path_of(src, sizeof(src), "orig");
	path_of(got, sizeof(got), "got");
	struct store *s = NULL;
	struct err e = { 0 };
	is_int(store_open(sd, &s, &e), 0, "a dir store opens where there was none (%s)", e.msg);
	struct stat st;
	ok(stat(sd, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
	   "its directory was made, 0700");
	char want[160];
	snprintf(want, sizeof(want), "dir %s", sd);
	is_str(store_describe(s), want, "described as dir DIR");

	const char *key = "box-1/state.v2_x.zst";
	is_int(store_put(s, key, src, &e), 0, "put %s (%s)", key, e.msg);
	char obj[200];
	snprintf(obj, sizeof(obj), "%s/%s", sd, key);
	ok(stat(obj, &st) == 0 && st.st_size == (off_t)(6u << 20), "the object is there, whole");
	is_int(store_get(s, key, got, &e), 0, "get it back (%s)", e.msg);
	size_t a = 0, b = 0;
	char *x = read_file("orig", &a), *y = read_file("got", &b);
	ok(a == b && x && y && !memcmp(x, y, a), "the same bytes");
	free(x);
	free(y);
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.tmp", got);
	ok(access(tmp, F_OK) < 0, "no %s left", "got.tmp");

	is_int(store_get(s, "box-1/nothing", got, &e), -ENOENT, "get of a missing key: -ENOENT");
	like(e.msg, "no object box-1/nothing", "saying so (%s)", e.msg);
	ok(access(tmp, F_OK) < 0, "and no .tmp left behind");
	ok(stat(got, &st) == 0 && st.st_size == (off_t)(6u << 20), "the old file at path untouched");
	is_int(store_get(s, "nobox/nothing", got, &e), -ENOENT, "a missing key's directory too");

	is_int(store_del(s, key, &e), 0, "del");
	is_int(store_get(s, key, got, &e), -ENOENT, "then get: -ENOENT");
	is_int(store_del(s, key, &e), 0, "del of a missing key: 0");
	is_int(store_del(s, "never/was/here", &e), 0, "del under a missing directory: 0");

	static const char *const bad[] = {
		"", "/abs", "a/../b", "..", "../up", "a//b", "a/", "a b", "a\\b", "k\xc3\xa9y",
		".", "./a", "a/./b", "a/.", "a~1", "a\nb", "a:b",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e = (struct err){ 0 };
		int r = store_put(s, bad[i], src, &e);
		/* TAP lines stay lines: a control character shows as '?'. */
		char shown[32], msg[sizeof(e.msg)];
		snprintf(shown, sizeof(shown), "%s", bad[i]);
		snprintf(msg, sizeof(msg), "%s", e.msg);
		for (char *c = shown; *c; c++)
			*c = *c < 0x20 ? '?' : *c;
		for (char *c = msg; *c; c++)
			*c = *c < 0x20 ? '?' : *c;
		ok(r == -EINVAL && strstr(e.msg, "store key") && !strchr(e.msg, 0x0a), "bad key \"%s\" refused (%s)", shown,
		   msg);
	}
	char longkey[600];
	memset(longkey, 'k', 513);
	longkey[513] = 0;
	is_int(store_put(s, longkey, src, &e), -EINVAL, "a key of 513 characters refused");
	is_int(store_get(s, "../x", got, &e), -EINVAL, "get checks keys too");
	is_int(store_del(s, "/etc/passwd", &e), -EINVAL, "and del");
	for (int i = 200; i < 512; i += 201)
		longkey[i] = '/';
	longkey[512] = 0;
	e = (struct err){ 0 };
	is_int(store_put(s, longkey, src, &e), 0, "twin: a key of 512 in parts of 200 is good (%s)",
	       e.msg);
	memset(longkey, 'k', 201);
	longkey[201] = 0;
	is_int(store_put(s, longkey, src, &e), -EINVAL, "a part of 201 is not");
	like(e.msg, "at most 200", "saying so");
	is_int(store_put(s, "A-z_0.9/..x", src, &e), -EINVAL, "\"..\" inside a part too");
	e = (struct err){ 0 };
	is_int(store_put(s, "A-z_0.9/x.y-z_Q", src, &e), 0, "twin: every allowed character works (%s)",
	       e.msg);
	is_int(store_put(s, "k", "/nonexistent/file", &e), -ENOENT, "put of a missing file: -ENOENT");
	store_free(s);
}

/* A store directory this user may not use is refused at open, in one line
 * that says what to do. As root (no permission bits apply), a child that
 * has become nobody tries. */
static void test_unusable_dir(void)
{
	char locked[128], mine[128];
	path_of(locked, sizeof(locked), "locked");
	path_of(mine, sizeof(mine), "mine");
	mkdir(locked, 0700);
	mkdir(mine, 0700);
	bool root = geteuid() == 0;
	if (root) {
		chmod(dir, 0755);	/* nobody may pass through */
		if (chown(mine, 65534, 65534) < 0)
			printf("# chown: %s\n", strerror(errno));
	} else {
		chmod(locked, 0);
	}
	int pfd[2];
	if (pipe(pfd) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		if (root && (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
			_exit(3);
		struct store *s = NULL;
		struct err e = { 0 };
		int r1 = store_open(locked, &s, &e);
		store_free(r1 == 0 ? s : NULL);
		char line[600];
		int n = snprintf(line, sizeof(line), "%d|%s|", r1, e.msg);
		e = (struct err){ 0 };
		int r2 = store_open(mine, &s, &e);
		if (r2 == 0)
			store_free(s);
		n += snprintf(line + n, sizeof(line) - n, "%d|%s", r2, e.msg);
		if (write(pfd[1], line, (size_t)n) < 0)
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	char line[600] = "";
	ssize_t n = read(pfd[0], line, sizeof(line) - 1);
	line[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	char *r2 = strchr(line, '|') ? strchr(strchr(line, '|') + 1, '|') : NULL;
	is_int(atoi(line), -EACCES, "a store dir this user cannot use: -EACCES");
	like(line, "not readable and writable by uid", "in one line saying what to do: %s", line);
	ok(r2 && atoi(r2 + 1) == 0, "twin: the same user's own directory opens (%s)", r2 ? r2 : "");
	chmod(locked, 0700);
}

/* store_describe of spec, or the error; static. */
static const char *described(const char *spec)
{
	static char out[sizeof(((struct err *)0)->msg)];
	struct store *s = NULL;
	struct err e = { 0 };
	snprintf(out, sizeof(out), "%s", store_open(spec, &s, &e) == 0 ? store_describe(s) : e.msg);
	store_free(s);
	return out;
}

static void test_s3_spec(void)
{
	struct store *s = NULL;
	struct err e = { 0 };
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	unsetenv("WARD_S3_ENDPOINT");
	is_int(store_open("s3://ward-state/boxes", &s, &e), -EINVAL, "s3 without credentials: refused");
	like(e.msg, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "naming the variables: %s", e.msg);
	ok(!strchr(e.msg, '\n'), "in one line");
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	is_int(store_open("s3://ward-state/boxes", &s, &e), -EINVAL, "with the key id only: refused");
	like(e.msg, "(AWS_SECRET_ACCESS_KEY is not set)", "saying which one is missing");
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
	is_str(described("s3://ward-state/boxes/"),
	       "s3 ward-state/boxes at https://s3.us-east-1.amazonaws.com",
	       "twin: with both it opens; default region us-east-1, AWS's endpoint");
	setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
	is_str(described("s3://ward-state"), "s3 ward-state at https://s3.eu-west-3.amazonaws.com",
	       "AWS_DEFAULT_REGION names the region");
	setenv("AWS_REGION", "ap-south-1", 1);
	setenv("WARD_S3_ENDPOINT", "http://127.0.0.1:9/", 1);
	is_str(described("s3://ward-state/a/b"), "s3 ward-state/a/b at http://127.0.0.1:9",
	       "WARD_S3_ENDPOINT is the endpoint; AWS_REGION wins");
	static const char *const bad[] = { "s3://", "s3://AB", "s3://x/../y", "s3://bucket/a//b",
					   "s3://-bucket" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		is_int(store_open(bad[i], &s, &e), -EINVAL, "spec %s refused", bad[i]);
	setenv("WARD_S3_ENDPOINT", "127.0.0.1:9000", 1);
	is_int(store_open("s3://ward-state", &s, &e), -EINVAL, "an endpoint without http(s):// refused");
	like(e.msg, "WARD_S3_ENDPOINT", "naming the variable");
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ward-store-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_zstd();
	test_dir();
	test_unusable_dir();
	test_s3_spec();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return tap_done();
}
