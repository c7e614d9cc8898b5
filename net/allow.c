#include "net/allow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/cleanup.h"

/* Untrusted text in a message: printable ASCII only, cut at 80 bytes. */
static const char *allow_show(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 4 < size; i++) {
		if (o >= 80) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		unsigned char c = (unsigned char)s[i];
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[o] = 0;
	return out;
}

static bool allow_ldh(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* A last label that a URL parser or inet_aton would take for a number:
 * decimal digits, or 0x and hex digits. */
static bool allow_numeric_label(const char *l, size_t n)
{
	if (n >= 2 && l[0] == '0' && l[1] == 'x') {
		for (size_t i = 2; i < n; i++)
			if (!((l[i] >= '0' && l[i] <= '9') || (l[i] >= 'a' && l[i] <= 'f')))
				return false;
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (l[i] < '0' || l[i] > '9')
			return false;
	return n > 0;
}

static int allow_v6(const char *s, size_t n, struct net_host *h, struct err *e)
{
	char tmp[64], show[100];
	if (n < 2 || s[n - 1] != ']' || n - 2 >= sizeof(tmp))
		return err_set(e, -EINVAL, "'%s' is not a bracketed IPv6 address like [2001:db8::1]",
			       allow_show(s, n, show, sizeof(show)));
	memcpy(tmp, s + 1, n - 2);
	tmp[n - 2] = 0;
	if (strchr(tmp, '%'))
		return err_set(e, -EINVAL, "'%s' has a zone index; write the address without %%zone",
			       allow_show(s, n, show, sizeof(show)));
	struct net_host r = { .kind = NET_HOST_IPV6 };
	if (inet_pton(AF_INET6, tmp, &r.addr.v6) != 1)
		return err_set(e, -EINVAL, "'%s' is not an IPv6 address", allow_show(s, n, show, sizeof(show)));
	inet_ntop(AF_INET6, &r.addr.v6, r.name, sizeof(r.name));
	*h = r;
	return 0;
}

int net_allow_host(const char *s, size_t n, struct net_host *ret, struct err *e)
{
	char show[100];
	if (n == 0)
		return err_set(e, -EINVAL, "the host is empty");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return err_set(e, -EINVAL,
				       "'%s' is not ASCII; write the name in its punycode form (xn--...; idn2 prints it)",
				       allow_show(s, n, show, sizeof(show)));
	if (s[0] == '[')
		return allow_v6(s, n, ret, e);
	if (memchr(s, ':', n))
		return err_set(e, -EINVAL, "'%s' has a ':'; an IPv6 address is written in brackets, [2001:db8::1]",
			       allow_show(s, n, show, sizeof(show)));
	struct net_host h = { .kind = NET_HOST_NAME };
	if (n > 1 && s[n - 1] == '.')
		n--;
	if (n > NET_HOST_MAX)
		return err_set(e, -EINVAL, "'%s' is longer than a host name may be (253 bytes)",
			       allow_show(s, n, show, sizeof(show)));
	for (size_t i = 0; i < n; i++)
		h.name[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] - 'A' + 'a') : s[i];
	h.name[n] = 0;
	if (inet_pton(AF_INET, h.name, &h.addr.v4) == 1) {
		h.kind = NET_HOST_IPV4;
		inet_ntop(AF_INET, &h.addr.v4, h.name, sizeof(h.name));
		*ret = h;
		return 0;
	}
	struct in_addr a;
	if (inet_aton(h.name, &a)) {
		char dq[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &a, dq, sizeof(dq));
		return err_set(e, -EINVAL,
			       "'%s' is not a strict dotted-quad IPv4 address (a resolver would read it as %s); write the address as %s",
			       allow_show(s, n, show, sizeof(show)), dq, dq);
	}
	const char *label = h.name;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && h.name[i] != '.') {
			if (!allow_ldh(h.name[i]))
				return err_set(e, -EINVAL,
					       "'%s' has a character a host name cannot have (letters, digits, '-', '_' and '.' only)",
					       allow_show(s, n, show, sizeof(show)));
			continue;
		}
		size_t len = (size_t)(h.name + i - label);
		if (len == 0)
			return err_set(e, -EINVAL, "'%s' has an empty label (two dots, or a dot at the start)",
				       allow_show(s, n, show, sizeof(show)));
		if (len > 63)
			return err_set(e, -EINVAL, "'%s' has a label longer than 63 bytes",
				       allow_show(s, n, show, sizeof(show)));
		if (label[0] == '-' || label[len - 1] == '-')
			return err_set(e, -EINVAL, "'%s' has a label that begins or ends with '-'",
				       allow_show(s, n, show, sizeof(show)));
		if (i == n && allow_numeric_label(label, len))
			return err_set(e, -EINVAL,
				       "'%s' ends in a number, so it is neither a host name nor a dotted-quad IPv4 address",
				       allow_show(s, n, show, sizeof(show)));
		label = h.name + i + 1;
	}
	*ret = h;
	return 0;
}

static int allow_port(const char *pattern, const char *s, uint16_t *ret, struct err *e)
{
	unsigned v = 0;
	size_t n = strlen(s);
	if (n == 0 || n > 5)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			goto bad;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		goto bad;
	*ret = (uint16_t)v;
	return 0;
bad:
	return err_set(e, -EINVAL, "'%s': '%s' is not a port; write a number from 1 to 65535", pattern, s);
}

/* ADDR[:PORT] after '=': a dotted quad or a bracketed IPv6 address. */
static int allow_pinned(const char *pattern, const char *s, struct net_allow_rule *r, struct err *e)
{
	const char *port = NULL;
	size_t n;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close)
			return err_set(e, -EINVAL, "'%s': the IPv6 address after '=' has no closing ']'", pattern);
		n = (size_t)(close - s) + 1;
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return err_set(e, -EINVAL, "'%s': after ']' only ':PORT' may follow", pattern);
	} else {
		const char *colon = strchr(s, ':');
		n = colon ? (size_t)(colon - s) : strlen(s);
		if (colon)
			port = colon + 1;
	}
	struct err e2 = { 0 };
	if (net_allow_host(s, n, &r->addr, &e2) < 0)
		return err_set(e, -EINVAL, "'%s': %s", pattern, e2.msg);
	if (r->addr.kind == NET_HOST_NAME)
		return err_set(e, -EINVAL,
			       "'%s': after '=' comes an address (1.2.3.4 or [2001:db8::1]), not a name", pattern);
	r->has_addr = true;
	return port ? allow_port(pattern, port, &r->port, e) : 0;
}

int net_allow_parse(const char *pattern, struct net_allow_rule *ret, struct err *e)
{
	struct net_allow_rule r = { 0 };
	size_t len = strlen(pattern);
	if (len == 0)
		return err_set(e, -EINVAL, "an empty --allow-host pattern; write a host, e.g. example.org");
	if (len >= sizeof(r.pattern))
		return err_set(e, -EINVAL, "an --allow-host pattern longer than %zu bytes", sizeof(r.pattern) - 1);
	memcpy(r.pattern, pattern, len + 1);
	char work[sizeof(r.pattern)];
	memcpy(work, pattern, len + 1);

	char *eq = strchr(work, '=');
	if (eq) {
		*eq = 0;
		if (strchr(work, '*'))
			return err_set(e, -EINVAL, "'%s': a pinned rule names one host; write name=ADDR, without '*'",
				       pattern);
		if (strchr(work, ':') || strchr(work, '['))
			return err_set(e, -EINVAL, "'%s': the port goes after the address: name=ADDR:PORT", pattern);
		int rc = allow_pinned(pattern, eq + 1, &r, e);
		if (rc < 0)
			return rc;
	}

	char *host = work, *port = NULL;
	if (host[0] == '[') {
		char *close = strchr(host, ']');
		if (!close)
			return err_set(e, -EINVAL, "'%s': the IPv6 address has no closing ']'", pattern);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return err_set(e, -EINVAL, "'%s': after ']' only ':PORT' may follow", pattern);
		close[1] = 0;
	} else {
		char *colon = strchr(host, ':');
		if (colon && strchr(colon + 1, ':'))
			return err_set(e, -EINVAL, "'%s': write an IPv6 address in brackets, e.g. [2001:db8::1]:443",
				       pattern);
		if (colon) {
			*colon = 0;
			port = colon + 1;
		}
	}
	if (port) {
		int rc = allow_port(pattern, port, &r.port, e);
		if (rc < 0)
			return rc;
	}
	if (host[0] == '*') {
		if (host[1] != '.')
			return err_set(e, -EINVAL, "'%s': '*' stands only as a whole first label, as in *.example.org",
				       pattern);
		r.wildcard = true;
		host += 2;
	}
	if (strchr(host, '*'))
		return err_set(e, -EINVAL, "'%s': '*' stands only as a whole first label, as in *.example.org", pattern);
	struct err e2 = { 0 };
	if (net_allow_host(host, strlen(host), &r.host, &e2) < 0)
		return err_set(e, -EINVAL, "'%s': %s", pattern, e2.msg);
	if (r.wildcard) {
		if (r.host.kind != NET_HOST_NAME)
			return err_set(e, -EINVAL, "'%s': '*.' goes before a domain name, not an address", pattern);
		if (!strchr(r.host.name, '.'))
			return err_set(e, -EINVAL,
				       "'%s' would allow a whole top-level domain; name the domain, e.g. *.example.%s",
				       pattern, r.host.name);
	}
	if (eq && r.host.kind != NET_HOST_NAME)
		return err_set(e, -EINVAL, "'%s': before '=' comes a name; an address needs no pinning", pattern);
	if (!eq && r.host.kind != NET_HOST_NAME) {
		r.has_addr = true;
		r.addr = r.host;
	}
	*ret = r;
	return 0;
}

int net_allow_add(struct net_allow *l, const char *pattern, struct err *e)
{
	struct net_allow_rule r;
	int rc = net_allow_parse(pattern, &r, e);
	if (rc < 0)
		return rc;
	rc = array_grow(&l->rule, &l->cap, l->n, sizeof(*l->rule), 8);
	if (rc < 0)
		return err_setc(e, rc, "allow-list");
	l->rule[l->n++] = r;
	return 0;
}

void net_allow_free(struct net_allow *l)
{
	free(l->rule);
	*l = (struct net_allow){ 0 };
}

static bool allow_host_matches(const struct net_allow_rule *r, const struct net_host *h)
{
	if (r->host.kind != h->kind)
		return false;
	switch (h->kind) {
	case NET_HOST_IPV4:
		return !memcmp(&r->host.addr.v4, &h->addr.v4, sizeof(h->addr.v4));
	case NET_HOST_IPV6:
		return !memcmp(&r->host.addr.v6, &h->addr.v6, sizeof(h->addr.v6));
	case NET_HOST_NAME:
		break;
	}
	if (!r->wildcard)
		return !strcmp(r->host.name, h->name);
	size_t hl = strlen(h->name), sl = strlen(r->host.name);
	return hl > sl + 1 && h->name[hl - sl - 1] == '.' && !strcmp(h->name + hl - sl, r->host.name);
}

const struct net_allow_rule *net_allow_match(const struct net_allow *l, const struct net_host *h,
					     uint16_t port)
{
	const struct net_allow_rule *best = NULL;
	int best_score = -1;
	for (size_t i = 0; i < l->n; i++) {
		const struct net_allow_rule *r = &l->rule[i];
		if (r->port ? port != r->port : (port != 443 && port != 80))
			continue;
		if (!allow_host_matches(r, h))
			continue;
		int score = (!r->wildcard) * 4 + (r->port != 0) * 2 + r->has_addr;
		if (score > best_score) {
			best = r;
			best_score = score;
		}
	}
	return best;
}

void net_allow_host_text(const struct net_host *h, char *out, size_t n)
{
	snprintf(out, n, h->kind == NET_HOST_IPV6 ? "[%s]" : "%s", h->name);
}

void net_allow_suggest(const struct net_host *h, uint16_t port, char *out, size_t n)
{
	char ht[NET_HOST_MAX + 3];
	net_allow_host_text(h, ht, sizeof(ht));
	if (port == 443 || port == 80)
		snprintf(out, n, "%s", ht);
	else
		snprintf(out, n, "%s:%u", ht, port);
}

int net_allow_rule_sockaddr(const struct net_allow_rule *r, uint16_t port, struct sockaddr_storage *ret,
			    socklen_t *ret_len)
{
	if (!r->has_addr)
		return -ENOENT;
	*ret = (struct sockaddr_storage){ 0 };
	if (r->addr.kind == NET_HOST_IPV4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ret;
		*s = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = r->addr.addr.v4 };
		*ret_len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ret;
		*s = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = r->addr.addr.v6 };
		*ret_len = sizeof(*s);
	}
	return 0;
}

enum net_addr_class net_allow_rule_class(const struct net_allow_rule *r, const struct net_addr_own *o)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (net_allow_rule_sockaddr(r, r->port, &ss, &len) < 0)
		return NET_ADDR_PUBLIC;
	return net_addr_check(o, (const struct sockaddr *)&ss);
}
