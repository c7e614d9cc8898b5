#include "image/skopeo.h"
#include "image/layout.h"
#include "base/child.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A pull's longest (skopeo's --command-timeout): an image of many GB over
 * a slow link, and never a hang for ever. */
#define SKOPEO_TIMEOUT "2h"
/* What of skopeo's stderr is kept for the message, at most. */
#define SKOPEO_ERR_MAX 4096

/* What skopeo reads from its environment, and why it is given it. */
const char *const image_skopeo_env[] = {
	"PATH",			/* the programs it runs (none for a copy, but its libraries look) */
	"HOME",			/* ~/.docker/config.json, ~/.config/containers */
	"XDG_RUNTIME_DIR",	/* $XDG_RUNTIME_DIR/containers/auth.json, the default auth file */
	"XDG_CONFIG_HOME",	/* containers/registries.conf, auth.json of the user */
	"REGISTRY_AUTH_FILE",	/* the auth file, as podman and skopeo name it */
	"DOCKER_CONFIG",	/* docker's config directory (its auth) */
	"CONTAINERS_REGISTRIES_CONF",	/* registries.conf: mirrors, short names */
	"CONTAINERS_CONF",
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",	/* Go's proxies */
	"SSL_CERT_FILE", "SSL_CERT_DIR",	/* the CAs a registry's certificate is checked against */
	NULL,
};

int image_skopeo_find(char *out, size_t n)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/bin:/bin";
	for (const char *p = path;;) {
		size_t l = strcspn(p, ":");
		if (l) {
			snprintf(out, n, "%.*s/skopeo", (int)l, p);
			if (access(out, X_OK) == 0)
				return 0;
		}
		if (!p[l])
			return -ENOENT;
		p += l + 1;
	}
}

/* skopeo's last words: the msg="..." of its last line, or the line. */
static void last_words(char *buf, size_t len, char *out, size_t n)
{
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = 0;
	char *line = memrchr(buf, '\n', len);
	line = line ? line + 1 : buf;
	char *m = strstr(line, "msg=\"");
	if (m) {
		line = m + 5;
		char *q = strrchr(line, '"');
		if (q)
			*q = 0;
	}
	/* Go's logger quotes within msg="...": \" and \\. */
	size_t o = 0;
	for (const char *s = line; *s && o + 1 < n; s++) {
		if (m && s[0] == '\\' && (s[1] == '"' || s[1] == '\\'))
			s++;
		out[o++] = (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?';
	}
	out[o] = 0;
}

int image_skopeo_copy(const char *src, const char *dir, const char *tmpdir, const struct image_pull_opts *o,
		      struct err *e)
{
	char prog[4096];
	if (image_skopeo_find(prog, sizeof(prog)) < 0)
		return err_set(e, -ENOENT, "skopeo is not installed (apt-get install skopeo): ward pulls and reads docker "
				       "archives through it");
	char dst[4200], authfile[4200], tls[32];
	snprintf(dst, sizeof(dst), "oci:%s:ward", dir);
	bool pull = !strncmp(src, "docker://", 9);
	char *argv[24];
	size_t a = 0;
	argv[a++] = "skopeo";
	argv[a++] = "--command-timeout";
	argv[a++] = SKOPEO_TIMEOUT;
	argv[a++] = "--tmpdir";
	argv[a++] = (char *)tmpdir;
	if (pull) {
		/* The one platform ward runs (a manifest list's other entries
		 * are not fetched). */
		argv[a++] = "--override-os";
		argv[a++] = "linux";
		argv[a++] = "--override-arch";
		argv[a++] = (char *)strchr(image_layout_platform(), '/') + 1;
	}
	argv[a++] = "copy";
	argv[a++] = "--quiet";
	if (pull) {
		argv[a++] = "--retry-times";
		argv[a++] = "2";
	}
	if (o && o->authfile) {
		snprintf(authfile, sizeof(authfile), "--src-authfile=%s", o->authfile);
		argv[a++] = authfile;
	}
	if (o && o->tls_verify >= 0 && pull) {
		snprintf(tls, sizeof(tls), "--src-tls-verify=%s", o->tls_verify ? "true" : "false");
		argv[a++] = tls;
	}
	argv[a++] = (char *)src;
	argv[a++] = dst;
	argv[a] = NULL;

	char *envp[ARRAY_SIZE(image_skopeo_env)];
	size_t ne = 0;
	for (size_t i = 0; image_skopeo_env[i]; i++) {
		const char *v = getenv(image_skopeo_env[i]);
		if (v && asprintf(&envp[ne], "%s=%s", image_skopeo_env[i], v) >= 0)
			ne++;
	}
	envp[ne] = NULL;
	int p[2] = { -1, -1 };
	int r = pipe2(p, O_CLOEXEC);
	pid_t pid = -1;
	if (r == 0) {
		int fds[3] = { -1, -1, p[1] };
		r = child_start_env(prog, argv, envp, fds, 3, &pid);
		close(p[1]);
	} else {
		r = -errno;
	}
	for (size_t i = 0; i < ne; i++)
		free(envp[i]);
	if (r < 0) {
		if (pid < 0 && p[0] >= 0)
			close(p[0]);
		return err_setc(e, r, "cannot run %s", prog);
	}
	/* Its stderr, to its end (the last of it kept): skopeo never waits on
	 * a full pipe. */
	char buf[SKOPEO_ERR_MAX + 1];
	size_t len = 0;
	for (;;) {
		char chunk[4096];
		ssize_t k = fdio_read_some(p[0], chunk, sizeof(chunk));
		if (k <= 0)
			break;
		if ((size_t)k >= SKOPEO_ERR_MAX) {
			memcpy(buf, chunk + k - SKOPEO_ERR_MAX, SKOPEO_ERR_MAX);
			len = SKOPEO_ERR_MAX;
		} else {
			if (len + (size_t)k > SKOPEO_ERR_MAX) {
				size_t drop = len + (size_t)k - SKOPEO_ERR_MAX;
				memmove(buf, buf + drop, len - drop);
				len -= drop;
			}
			memcpy(buf + len, chunk, (size_t)k);
			len += (size_t)k;
		}
	}
	close(p[0]);
	buf[len] = 0;
	int st = child_reap(pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	char why[600];
	last_words(buf, len, why, sizeof(why));
	if (!why[0])
		snprintf(why, sizeof(why), "it %s %d", WIFSIGNALED(st) ? "was killed by signal" : "exited with",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return err_set(e, -EIO, "skopeo could not copy %s: %s", src, why);
}
