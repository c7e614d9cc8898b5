#include "sandbox/egress.h"
#include "sandbox/box-start.h"
#include "sandbox/box.h"
#include "net/proxy.h"
#include "net/tlsterm.h"
#include "sandbox/spawn-env.h"
#include "base/child.h"
#include "base/cleanup.h"
#include "sandbox/backend.h"
#include "base/fdio.h"
#include "base/loop.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* One event line at most this long (a host name, a reason, numbers). */
#define EGRESS_LINE_MAX 4096
/* How long a stopping proxy has to end its connections and report them. */
#define EGRESS_STOP_MS 500

void egress_init(struct egress *g)
{
	*g = (struct egress){ .pidfd = -1, .ev_fd = -1, .host_fd = -1 };
	buf_init(&g->line, EGRESS_LINE_MAX);
}

/* Where curl, Python (ssl, requests), Node, git and AWS's SDKs and CLI
 * (botocore) look for CAs. */
static const char *const egress_ca_vars[] = { "SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
					      "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "AWS_CA_BUNDLE" };

static int egress_ca(struct egress *g, const char *name, struct err *e)
{
	int r = net_tls_ca_make(name, &g->ca_key, &g->ca_cert, e);
	if (r < 0)
		return r;
	char *sys = NULL;
	size_t n = 0;
	if (fdio_read_file(AT_FDCWD, NET_TLS_SYSTEM_CAS, 16u << 20, &sys, &n) < 0)
		n = 0;
	size_t cl = strlen(g->ca_cert);
	g->ca_bundle = malloc(n + cl + 2);
	if (!g->ca_bundle) {
		free(sys);
		return err_set(e, -ENOMEM, "out of memory");
	}
	memcpy(g->ca_bundle, sys ? sys : "", n);
	if (n && g->ca_bundle[n - 1] != '\n')
		g->ca_bundle[n++] = '\n';
	memcpy(g->ca_bundle + n, g->ca_cert, cl + 1);
	free(sys);
	static char kv[ARRAY_SIZE(egress_ca_vars)][64];
	for (size_t i = 0; i < ARRAY_SIZE(egress_ca_vars); i++) {
		snprintf(kv[i], sizeof(kv[i]), "%s=/etc/" BOX_CA_FILE, egress_ca_vars[i]);
		g->env[g->nenv++] = kv[i];
	}
	return 0;
}

int egress_secrets(struct egress *g, const char *name, const struct box_opts *o, struct err *e)
{
	if (o->nsecrets > NET_SECRET_MAX || o->nsecret_values != o->nsecrets)
		return err_set(e, -EINVAL, "the box's secrets are not what ward writes");
	g->nenv = 0;
	for (size_t i = 0; i < o->nsecrets; i++) {
		struct net_secret_spec sp;
		int r = net_secret_spec_parse(o->secrets[i], &sp, e);
		if (r < 0)
			return r;
		if (sp.path)
			return err_set(e, -EINVAL, "secret %s: its file is read by ward, not the keeper", sp.name);
		r = net_secret_placeholder(g->ph[i], sizeof(g->ph[i]));
		if (r < 0)
			return err_set(e, r, "no randomness for secret %s's placeholder", sp.name);
		if (net_secret_is_aws(sp.name)) {
			/* AWS's three names, each the placeholder: the box signs
			 * with it; the session token's only where there is one. */
			const char *c1 = strchr(o->secret_values[i], ':');
			bool token = c1 && strchr(c1 + 1, ':');
			for (int k = 0; k < 2 + token; k++) {
				snprintf(g->aws_kv[k], sizeof(g->aws_kv[k]), "%s=%s", net_secret_aws_vars[k], g->ph[i]);
				g->env[g->nenv++] = g->aws_kv[k];
			}
			continue;
		}
		snprintf(g->env_kv[i], sizeof(g->env_kv[i]), "%s=%s", sp.name, g->ph[i]);
		g->env[g->nenv++] = g->env_kv[i];
	}
	return o->nsecrets ? egress_ca(g, name, e) : 0;
}

int egress_listen(struct egress *g, const char *boxdir, struct err *e)
{
	if ((size_t)snprintf(g->host_path, sizeof(g->host_path), "%s/" EGRESS_SOCK, boxdir) >= sizeof(g->host_path))
		return err_set(e, -ENAMETOOLONG, "the box's egress socket path is too long");
	g->host_fd = fdio_unix_listen(g->host_path, 64, true);
	if (g->host_fd < 0) {
		int r = err_setc(e, g->host_fd, "cannot listen on %s", g->host_path);
		g->host_path[0] = 0;
		return r;
	}
	return 0;
}

void egress_free(struct egress *g)
{
	if (g->host_fd >= 0) {
		close(g->host_fd);
		unlink(g->host_path);
	}
	g->host_fd = -1;
	buf_free(&g->line);
	if (g->ca_key)
		explicit_bzero(g->ca_key, strlen(g->ca_key));
	free(g->ca_key);
	free(g->ca_cert);
	free(g->ca_bundle);
	g->ca_key = g->ca_cert = g->ca_bundle = NULL;
}

/* The host's connections (ward's, for the box): its owner's only. */
struct egress_host {
	struct net_proxy *p;
	uid_t owner;
	int reserve;		/* given up when out of descriptors (fdio_accept) */
};

static void egress_on_host(struct loop *l, int fd, uint32_t events, void *data)
{
	struct egress_host *h = data;
	for (int i = 0; i < 16; i++) {
		int c = fdio_accept(fd, NULL, NULL, &h->reserve);
		if (c == -EMFILE)
			continue;	/* (shed: out of descriptors) */
		if (c < 0)
			return;
		if (!fdio_peer_is(c, h->owner)) {
			close(c);
			continue;
		}
		net_proxy_add_client(h->p, c);
	}
}

/* SIGTERM (egress_stop): the proxy ends its connections, reporting what
 * each carried, and exits. */
static void egress_on_term(struct loop *l, int fd, uint32_t events, void *data)
{
	net_proxy_stop(data);
}

/* The proxy's descriptors as egress_start hands them over. */
enum { EGRESS_CFG_FD = 3, EGRESS_NET_FD, EGRESS_EV_FD, EGRESS_HOST_FD };
/* Its configuration JSON at most: 256 host patterns, with room. */
#define EGRESS_CFG_MAX (1u << 20)

static __attribute__((noreturn, format(printf, 1, 2))) void egress_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ward-proxy: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	_exit(1);
}

/* What the keeper said, from EGRESS_CFG_FD: the box's allow-list (into
 * allow, strings the process keeps), its byte budget, and more. */
static void egress_cfg(struct net_proxy_cfg *cfg, bool *listen, bool *host, pid_t *keeper)
{
	char *txt = NULL;
	size_t n = 0;
	int r = fdio_read_fd(EGRESS_CFG_FD, EGRESS_CFG_MAX, &txt, &n);
	close(EGRESS_CFG_FD);
	if (r < 0)
		egress_die("no configuration from the keeper (%s)", strerror(-r));
	cJSON *j = cJSON_ParseWithLength(txt, n);
	explicit_bzero(txt, n);
	free(txt);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "allow"), *v;
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(j, "max_bytes");
	const cJSON *used = cJSON_GetObjectItemCaseSensitive(j, "used_before");
	const cJSON *kp = cJSON_GetObjectItemCaseSensitive(j, "keeper");
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > BOX_ALLOW_MAX || !cJSON_IsNumber(max) ||
	    !cJSON_IsNumber(used) || !cJSON_IsNumber(kp) || max->valuedouble < 0 || used->valuedouble < 0)
		egress_die("the keeper's configuration is not what it should be");
	char **allow = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*allow));
	size_t na = 0;
	cJSON_ArrayForEach(v, a) {
		if (!allow || !cJSON_IsString(v) || !(allow[na++] = strdup(v->valuestring)))
			egress_die("the keeper's allow-list is not what it should be");
	}
	cfg->allow = (const char *const *)allow;
	cfg->nallow = na;
	cfg->max_bytes = (uint64_t)max->valuedouble;
	cfg->used_before = (uint64_t)used->valuedouble;
	const cJSON *sa = cJSON_GetObjectItemCaseSensitive(j, "secrets");
	if (!cJSON_IsArray(sa) || cJSON_GetArraySize(sa) > NET_SECRET_MAX)
		egress_die("the keeper's secrets are not what they should be");
	static struct net_secret secrets[NET_SECRET_MAX];
	size_t ns = 0;
	cJSON_ArrayForEach(v, sa) {
		const char *spec = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "spec"));
		const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "ph"));
		cJSON *val = cJSON_GetObjectItemCaseSensitive(v, "value");
		struct net_secret_spec sp;
		struct err se = { 0 };
		if (!spec || !ph || !cJSON_IsString(val) || net_secret_spec_parse(spec, &sp, &se) < 0 ||
		    !net_secret_is_placeholder(ph))
			egress_die("the keeper's secrets are not what they should be");
		struct net_secret *s = &secrets[ns++];
		memcpy(s->name, sp.name, sizeof(s->name));
		memcpy(s->ph, ph, sizeof(s->ph));
		memcpy(s->host, sp.host, sizeof(s->host));
		s->nhost = sp.nhost;
		s->value_len = strlen(val->valuestring);
		if (!(s->value = strdup(val->valuestring)))
			egress_die("out of memory");
		if (net_secret_load(s) < 0)
			egress_die("the keeper's secrets are not what they should be");
		explicit_bzero(val->valuestring, s->value_len);
	}
	cfg->secrets = secrets;
	cfg->nsecrets = ns;
	cfg->secret_other_ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "secret_other_ok"));
	const char *ck = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "ca_key"));
	const char *cc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "ca_cert"));
	const char *uc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "upstream_ca"));
	if (ns && ck && cc) {
		struct err te = { 0 };
		if (net_tls_new(ck, cc, uc, &cfg->tls, &te) < 0)
			egress_die("%s", te.msg);
		explicit_bzero((char *)ck, strlen(ck));
	}
	*listen = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "listen"));
	*host = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "host"));
	*keeper = (pid_t)kp->valuedouble;
	cJSON_Delete(j);
}

int egress_main(const char *name)
{
	prctl(PR_SET_NAME, EGRESS_ARGV0);
	/* Not dumpable before the secrets are read (confining says it again). */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* It dies with its keeper (checked below, once the keeper's pid is
	 * known: it may have died first). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct net_proxy_cfg cfg = { .listen_fd = -1, .event_fd = EGRESS_EV_FD };
	bool listen = false, has_host = false;
	pid_t keeper = 0;
	egress_cfg(&cfg, &listen, &has_host, &keeper);
	if (getppid() != keeper)
		_exit(1);
	/* The proxy reads only SIGTERM, through a signalfd of its own. */
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_SETMASK, &term, NULL);
	int host_fd = has_host ? EGRESS_HOST_FD : -1;
	int keep[] = { EGRESS_EV_FD, listen ? EGRESS_NET_FD : -1, host_fd };
	fdio_close_all_but(3, keep, 3);
	struct egress_host host = { .owner = getuid(), .reserve = open("/dev/null", O_RDONLY | O_CLOEXEC) };
	int sfd = signalfd(-1, &term, SFD_CLOEXEC | SFD_NONBLOCK);
	struct err e = { 0 };
	if (listen) {
		fdio_set_nonblock(EGRESS_NET_FD, true);
		cfg.listen_fd = EGRESS_NET_FD;
	}
	struct net_proxy *p;
	if (net_proxy_new(&cfg, &p, &e) < 0)
		egress_die("%s", e.msg);
	host.p = p;
	if (host_fd >= 0 && loop_add(net_proxy_loop(p), host_fd, EPOLLIN, egress_on_host, &host) < 0)
		egress_die("cannot serve the box's egress socket");
	if (sfd < 0 || loop_add(net_proxy_loop(p), sfd, EPOLLIN, egress_on_term, p) < 0)
		egress_die("cannot take SIGTERM");
	if (net_proxy_confine(&e) < 0)
		egress_die("%s", e.msg);
	/* A change of uid clears the parent-death signal: set it after. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != keeper)
		_exit(1);
	int r = net_proxy_run(p);
	if (r < 0)
		fprintf(stderr, "ward-proxy: box %s: %s\n", name, strerror(-r));
	/* Each connection still open is reported, with its bytes, as it ends. */
	net_proxy_free(p);
	_exit(r < 0);
}

int egress_start(struct egress *g, const char *name, const struct box_opts *o, struct box_inst *inst, struct err *e)
{
	/* vm: the keeper serves the VM's mux port (keeper-mux.c) and brings
	 * the guest's streams to the host socket; ns: the box's listener is
	 * the proxy's. */
	bool listen = !inst->net_mux;
	if ((listen && inst->net_fd < 0) || g->host_fd < 0)
		return err_set(e, -EINVAL, "the box has no way to its egress proxy");
	/* Its configuration on a descriptor, its environment built: the proxy
	 * is the process a box might take over, and holds nothing else. */
	cJSON *j = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(j, "allow");
	for (size_t i = 0; a && i < o->nallow; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(o->allow[i]));
	cJSON_AddNumberToObject(j, "max_bytes", (double)(o->net_max_bytes ? o->net_max_bytes : BOX_NET_MAX_BYTES_DEFAULT));
	cJSON_AddNumberToObject(j, "used_before", (double)(g->up + g->down));
	cJSON_AddBoolToObject(j, "listen", listen);
	cJSON_AddBoolToObject(j, "host", true);
	cJSON_AddNumberToObject(j, "keeper", (double)getpid());
	/* Secrets: in this sealed memfd only, which the proxy reads and
	 * closes; never a file, never its command line or environment. */
	cJSON_AddBoolToObject(j, "secret_other_ok", o->secret_other_ok);
	cJSON *sa = cJSON_AddArrayToObject(j, "secrets");
	for (size_t i = 0; sa && i < o->nsecrets; i++) {
		cJSON *so = cJSON_CreateObject();
		cJSON_AddStringToObject(so, "spec", o->secrets[i]);
		cJSON_AddStringToObject(so, "ph", g->ph[i]);
		cJSON_AddStringToObject(so, "value", o->secret_values[i]);
		cJSON_AddItemToArray(sa, so);
	}
	if (g->ca_key) {
		cJSON_AddStringToObject(j, "ca_key", g->ca_key);
		cJSON_AddStringToObject(j, "ca_cert", g->ca_cert);
		cJSON_AddStringToObject(j, "upstream_ca", o->secret_ca ? o->secret_ca : "");
	}
	char *txt = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	_cleanup_close_ int cfd = txt ? fdio_sealed_memfd("ward-proxy-cfg", txt, strlen(txt)) : -ENOMEM;
	if (txt)
		explicit_bzero(txt, strlen(txt));
	free(txt);
	if (cfd < 0)
		return err_setc(e, cfd, "cannot hand the egress proxy its configuration");
	_cleanup_free_ char **envp = spawn_env_proxy();
	if (!envp)
		return err_set(e, -ENOMEM, "out of memory");
	int ev[2];
	if (pipe2(ev, O_CLOEXEC) < 0)
		return err_setc(e, -errno, "pipe");
	char *argv[] = { EGRESS_ARGV0, (char *)name, NULL };
	int fds[] = { -1, -1, STDERR_FILENO, [EGRESS_CFG_FD] = cfd, [EGRESS_NET_FD] = listen ? inst->net_fd : -1,
		      [EGRESS_EV_FD] = ev[1], [EGRESS_HOST_FD] = g->host_fd };
	/* The keeper's own program, whatever became of its file since. */
	pid_t pid;
	int r = child_start_env("/proc/self/exe", argv, envp, fds, 7, &pid);
	close(ev[1]);
	if (r < 0) {
		close(ev[0]);
		return err_setc(e, r, "cannot start the egress proxy");
	}
	if (listen) {
		close(inst->net_fd);
		inst->net_fd = -1;
	}
	fdio_set_nonblock(ev[0], true);
	g->pid = pid;
	g->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	g->ev_fd = ev[0];
	g->line.len = 0;
	return 0;
}

static void egress_line(struct egress *g, const char *p, size_t n, void (*on_event)(void *, cJSON *), void *ud)
{
	cJSON *j = cJSON_ParseWithLength(p, n);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return;
	}
	g->conns++;
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "allowed")))
		g->refused++;
	const cJSON *up = cJSON_GetObjectItemCaseSensitive(j, "up"), *down = cJSON_GetObjectItemCaseSensitive(j, "down");
	if (cJSON_IsNumber(up) && up->valuedouble > 0)
		g->up += (uint64_t)up->valuedouble;
	if (cJSON_IsNumber(down) && down->valuedouble > 0)
		g->down += (uint64_t)down->valuedouble;
	if (on_event)
		on_event(ud, j);
	else
		cJSON_Delete(j);
}

int egress_read(struct egress *g, void (*on_event)(void *ud, cJSON *ev), void *ud)
{
	if (g->ev_fd < 0)
		return -EPIPE;
	char b[16384];
	for (;;) {
		ssize_t n = fdio_read_some(g->ev_fd, b, sizeof(b));
		if (n == -EAGAIN)
			return 0;
		if (n <= 0)
			return -EPIPE;
		const char *p = b, *end = b + n;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
			/* A line over the cap is dropped whole. */
			if (!g->overlong && buf_append(&g->line, p, k) < 0)
				g->overlong = true;
			if (nl) {
				if (!g->overlong)
					egress_line(g, g->line.data, g->line.len, on_event, ud);
				g->line.len = 0;
				g->overlong = false;
			}
			p += k + (nl ? 1 : 0);
		}
	}
}

bool egress_running(const struct egress *g)
{
	return g->pid > 0;
}

void egress_stop(struct egress *g, void (*on_event)(void *ud, cJSON *ev), void *ud)
{
	if (g->pid > 0) {
		/* SIGTERM first, so that the bytes of the tunnels it ends count
		 * (the budget is the box's, over its restarts); then, whatever
		 * it did, SIGKILL and the reap. */
		if (g->pidfd >= 0 && syscall(SYS_pidfd_send_signal, g->pidfd, SIGTERM, NULL, 0) == 0) {
			struct pollfd pf = { .fd = g->pidfd, .events = POLLIN };
			poll(&pf, 1, EGRESS_STOP_MS);
		}
		box_kill_reap(g->pid, g->pidfd, -1);
	}
	if (g->ev_fd >= 0) {
		egress_read(g, on_event, ud);
		close(g->ev_fd);
	}
	g->pid = 0;
	g->pidfd = g->ev_fd = -1;
	g->line.len = 0;
}
