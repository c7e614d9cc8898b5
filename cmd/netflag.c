#include "cmd/netflag.h"
#include "cmd/cmd.h"
#include "base/parse.h"
#include "net/allow.h"

#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --secret NAME[=@FILE]@HOST[,HOST...]: the value read now (ward's
 * environment, or the file), never taken from the command line. */
static int netflag_secret(struct netflag *f, const char *arg)
{
	struct net_secret_spec sp;
	struct err e = { 0 };
	if (net_secret_spec_parse(arg, &sp, &e) < 0) {
		cmd_error("--secret: %s", e.msg);
		return -1;
	}
	for (size_t i = 0; i < f->nsecret; i++)
		if (!strncmp(f->arg[i], sp.name, strlen(sp.name)) && strchr("=@", f->arg[i][strlen(sp.name)])) {
			cmd_error("--secret: %s is given twice; give it once, with all its hosts (NAME@HOST,HOST)",
				  sp.name);
			return -1;
		}
	if (f->nsecret == NET_SECRET_MAX) {
		cmd_error("--secret: more than %d secrets", NET_SECRET_MAX);
		return -1;
	}
	size_t i = f->nsecret;
	const char *hosts = strrchr(arg, '@') + 1;
	if (sp.path) {
		char path[PATH_MAX];
		if (sp.path_len >= sizeof(path) ||
		    (size_t)snprintf(f->spec_buf[i], sizeof(f->spec_buf[i]), "%s@%s", sp.name, hosts) >=
			    sizeof(f->spec_buf[i])) {
			cmd_error("--secret: \"%s\" is too long", arg);
			return -1;
		}
		memcpy(path, sp.path, sp.path_len);
		path[sp.path_len] = 0;
		char *v = NULL;
		size_t n = 0;
		int r = fdio_read_file(AT_FDCWD, path, NET_SECRET_VALUE_MAX + 2, &v, &n);
		if (r < 0) {
			cmd_error("--secret %s: cannot read %s (%s); NAME=@FILE@HOST reads the value from FILE", sp.name,
				  path, r == -EFBIG ? "over 4096 bytes" : strerror(-r));
			return -1;
		}
		if (n && v[n - 1] == '\n')
			n--;	/* a file's last line break is not the value's */
		if (n <= NET_SECRET_VALUE_MAX) {
			memcpy(f->value[i], v, n);
			f->value[i][n] = 0;
		}
		explicit_bzero(v, n);
		free(v);
		if (net_secret_value_check(sp.name, f->value[i], n, &e) < 0) {
			cmd_error("--secret: %s (in %s)", e.msg, path);
			return -1;
		}
		if (net_secret_is_aws(sp.name)) {
			/* KEY_ID:SECRET_KEY[:SESSION_TOKEN], one line. */
			char *c1 = strchr(f->value[i], ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (c1)
				*c1 = 0;
			if (c2)
				*c2 = 0;
			char v[NET_SECRET_VALUE_MAX + 1];
			int r2 = c1 ? net_secret_aws_value(f->value[i], c1 + 1, c2 ? c2 + 1 : NULL, v, sizeof(v), &e) : -1;
			explicit_bzero(f->value[i], n);
			if (r2 < 0) {
				cmd_error("--secret: %s holds not KEY_ID:SECRET_KEY[:SESSION_TOKEN]%s%s", path, c1 ? ": " : "",
					  c1 ? e.msg : "");
				explicit_bzero(v, sizeof(v));
				return -1;
			}
			memcpy(f->value[i], v, strlen(v) + 1);
			explicit_bzero(v, sizeof(v));
		}
		f->from_file[i] = true;
	} else if (net_secret_is_aws(sp.name)) {
		/* AWS's own names, as its tools read them. */
		const char *const *n = net_secret_aws_vars;
		if (net_secret_aws_value(getenv(n[0]), getenv(n[1]), getenv(n[2]), f->value[i], sizeof(f->value[i]),
					 &e) < 0 ||
		    net_secret_value_check(sp.name, f->value[i], strlen(f->value[i]), &e) < 0) {
			cmd_error("--secret %s: %s, in ward's environment", arg, e.msg);
			return -1;
		}
		f->from_file[i] = false;
	} else {
		const char *v = getenv(sp.name);
		if (!v) {
			cmd_error("--secret %s: ward's environment has no %s; export it, or give %s=@FILE@%s", sp.name,
				  sp.name, sp.name, hosts);
			return -1;
		}
		if (net_secret_value_check(sp.name, v, strlen(v), &e) < 0) {
			cmd_error("--secret: %s (in $%s)", e.msg, sp.name);
			return -1;
		}
		memcpy(f->value[i], v, strlen(v) + 1);
		f->from_file[i] = false;
	}
	f->arg[i] = arg;
	f->nsecret++;
	return 1;
}

int netflag_parse(struct netflag *f, int c, const char *arg)
{
	if (c == 'N') {
		if (!strcmp(arg, "none")) {
			f->net = BOX_NET_NONE;
		} else if (!strcmp(arg, "host")) {
			f->net = BOX_NET_HOST;
		} else {
			cmd_error("--net: \"%s\" is not a network mode; use none or host (and --allow-host HOST for "
				  "egress to named hosts)", arg);
			return -1;
		}
		f->net_set = true;
		return 1;
	}
	if (c == 'Q') {
		uint64_t v;
		if (parse_size(arg, &v) < 0 || v < 1024) {
			cmd_error("--net-max-bytes: \"%s\" is not a size of at least 1K (e.g. 500M, 10G)", arg);
			return -1;
		}
		f->max_bytes = v;
		return 1;
	}
	if (c == 'k')
		return netflag_secret(f, arg);
	if (c == 'q') {
		char *v = NULL;
		size_t n = 0;
		int r = fdio_read_file(AT_FDCWD, arg, 1u << 20, &v, &n);
		if (r < 0 || !strstr(v, "-----BEGIN CERTIFICATE-----")) {
			cmd_error("--secret-ca: %s %s; give a file of PEM certificates", arg,
				  r < 0 ? strerror(-r) : "holds no certificate");
			free(v);
			return -1;
		}
		free(f->secret_ca);	/* (ward's for its life: the last one counts) */
		f->secret_ca = v;
		return 1;
	}
	if (c == 'V') {
		/* --secret-other-keys, or "network.secret_other_keys": "on"|"off". */
		if (arg && strcmp(arg, "on") && strcmp(arg, "off")) {
			cmd_error("network.secret_other_keys: \"%s\" is not on or off", arg);
			return -1;
		}
		f->other_keys = !arg || !strcmp(arg, "on");
		return 1;
	}
	if (c != 'H')
		return 0;
	struct net_allow_rule rule;
	struct err e = { 0 };
	if (net_allow_parse(arg, &rule, &e) < 0) {
		cmd_error("--allow-host: %s", e.msg);
		return -1;
	}
	if (f->nallow == BOX_ALLOW_MAX) {
		cmd_error("--allow-host: more than %d patterns; use wildcards (*.example.org)", BOX_ALLOW_MAX);
		return -1;
	}
	f->allow[f->nallow++] = arg;
	return 1;
}

/* Whether a pattern of the list allows name (exactly, at some port). */
static bool netflag_has(const char *const *l, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		struct net_allow_rule r;
		struct err e = { 0 };
		if (net_allow_parse(l[i], &r, &e) == 0 && !r.wildcard && !strcmp(r.host.name, name))
			return true;
	}
	return false;
}

int netflag_finish(struct netflag *f, struct box_opts *o)
{
	if ((f->nallow || f->nsecret) && f->net_set) {
		const char *what = f->nallow ? "--allow-host" : "--secret";
		if (f->net == BOX_NET_HOST)
			cmd_error("%s with --net host: the host's network has no proxy and no allow-list; drop one of them",
				  what);
		else
			cmd_error("%s with --net none: the box would reach those hosts; drop --net none", what);
		return -1;
	}
	for (size_t i = 0; i < f->nsecret; i++) {
		f->secret[i] = f->from_file[i] ? f->spec_buf[i] : f->arg[i];
		f->value_p[i] = f->value[i];
	}
	/* The allow-list, and each secret's host that is not on it. */
	size_t n = 0;
	for (; n < f->nallow; n++)
		f->all[n] = f->allow[n];
	for (size_t i = 0; i < f->nsecret; i++) {
		const char *h = strrchr(f->secret[i], '@') + 1;
		while (*h) {
			size_t hl = strcspn(h, ",");
			char one[NET_HOST_MAX + 8];
			snprintf(one, sizeof(one), "%.*s", (int)hl, h);
			struct net_allow_rule r;
			struct err e = { 0 };
			if (net_allow_parse(one, &r, &e) == 0 && !netflag_has(f->all, n, r.host.name)) {
				if (n == BOX_ALLOW_MAX) {
					cmd_error("--secret: its hosts make more than %d allow patterns", BOX_ALLOW_MAX);
					return -1;
				}
				memcpy(f->added[n], one, sizeof(one));
				f->all[n] = f->added[n];
				n++;
			}
			h += hl + (h[hl] == ',');
		}
	}
	o->net = n ? BOX_NET_ALLOW : f->net;
	o->allow = f->all;
	o->nallow = n;
	o->net_max_bytes = f->max_bytes;
	o->secrets = f->secret;
	o->nsecrets = f->nsecret;
	o->secret_values = f->value_p;
	o->nsecret_values = f->nsecret;
	o->secret_ca = f->secret_ca;
	o->secret_other_ok = f->other_keys;
	return 0;
}

void netflag_reset(struct netflag *f)
{
	f->net = BOX_NET_NONE;
	f->net_set = false;
	f->nallow = 0;
	f->max_bytes = 0;
}

bool netflag_given(const struct netflag *f)
{
	return f->net_set || f->nallow || f->max_bytes || f->nsecret || f->other_keys;
}
