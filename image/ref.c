/* Image references, by the grammar of docker's distribution/reference:
 *   reference := name [":" tag] ["@" digest]
 *   name      := [domain "/"] path-component ["/" path-component]*
 *   domain    := the first component when it has a '.' or a ':', or is
 *                "localhost" (or has an upper-case letter); else docker.io
 *   component := [a-z0-9]+ (separator [a-z0-9]+)*, separator [_.] __ -*
 *   tag       := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
 * docker.io's one-component names are library/NAME; index.docker.io is
 * docker.io; no tag and no digest is :latest. */
#include "image/ref.h"
#include "net/addr.h"
#include "net/allow.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ref_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool ref_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool image_ref_digest_valid(const char *d)
{
	return !strncmp(d, "sha256:", 7) && strlen(d + 7) == 64 && ref_hex(d + 7, 64);
}

bool image_ref_is_digest(const char *s)
{
	size_t n = strncmp(s, "sha256:", 7) ? 0 : strlen(s + 7);
	return n >= 12 && n <= 64 && ref_hex(s + 7, n);
}

/* One path component: alphanumerics joined by '.', '_', "__" or dashes. */
static bool ref_component(const char *s, size_t n)
{
	if (!n || !ref_lower_alnum(s[0]) || !ref_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i < n; i++) {
		if (ref_lower_alnum(s[i]))
			continue;
		if (s[i] == '.' || s[i] == '_') {
			/* One '.', one '_' or "__", then an alphanumeric. */
			size_t k = s[i] == '_' && s[i + 1] == '_' ? 2 : 1;
			if (!ref_lower_alnum(s[i + k]))
				return false;
			i += k - 1;
		} else if (s[i] != '-' || s[i + 1] == '.' || s[i + 1] == '_') {
			return false;
		}
	}
	return true;
}

/* host[:port], host a name of [A-Za-z0-9-.] labels or a bracketed IPv6
 * address. */
static bool ref_domain(const char *s, size_t n)
{
	size_t h = n;
	if (n && s[0] == '[') {
		const char *rb = memchr(s, ']', n);
		if (!rb)
			return false;
		h = (size_t)(rb - s) + 1;
	} else {
		const char *c = memchr(s, ':', n);
		if (c)
			h = (size_t)(c - s);
		for (size_t i = 0; i < h; i++) {
			char ch = s[i];
			if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
			      ch == '.'))
				return false;
		}
	}
	if (!h)
		return false;
	if (h == n)
		return true;
	if (s[h] != ':' || h + 1 == n || n - h - 1 > 5)
		return false;
	for (size_t i = h + 1; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool ref_tag(const char *s)
{
	size_t n = strlen(s);
	if (!n || n >= IMAGE_REF_TAG_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool w = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
		if (!w && (i == 0 || (c != '.' && c != '-')))
			return false;
	}
	return true;
}

int image_ref_parse(const char *s, struct image_ref *ret, struct err *e)
{
	struct image_ref r = { 0 };
	char buf[IMAGE_REF_NAME_MAX + IMAGE_REF_TAG_MAX + IMAGE_DIGEST_MAX];
	size_t len = strlen(s);
	if (!len || len >= sizeof(buf))
		return err_set(e, -EINVAL, "an image reference is 1 to %zu characters", sizeof(buf) - 1);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return err_set(e, -EINVAL, "an image reference is printable ASCII without spaces");
	memcpy(buf, s, len + 1);
	char *at = strrchr(buf, '@');
	if (at) {
		*at = 0;
		if (!image_ref_digest_valid(at + 1))
			return err_set(e, -EINVAL, "\"%s\": the digest after '@' must be sha256: and 64 lowercase hex digits", at + 1);
		snprintf(r.digest, sizeof(r.digest), "%s", at + 1);
	}
	char *slash = strrchr(buf, '/'), *colon = strrchr(buf, ':');
	if (colon && (!slash || colon > slash)) {
		*colon = 0;
		if (!ref_tag(colon + 1))
			return err_set(e, -EINVAL, "\"%s\" is not a tag: 1 to 128 of letters, digits, '_', '.' and '-', not starting "
				       "with '.' or '-'", colon + 1);
		if (!r.digest[0])
			snprintf(r.tag, sizeof(r.tag), "%s", colon + 1);
	} else if (!r.digest[0]) {
		snprintf(r.tag, sizeof(r.tag), "latest");
	}
	/* The domain, if the first component is one. */
	const char *path = buf;
	char *first = strchr(buf, '/');
	if (first) {
		size_t fl = (size_t)(first - buf);
		bool upper = false;
		for (size_t i = 0; i < fl; i++)
			upper |= buf[i] >= 'A' && buf[i] <= 'Z';
		if (memchr(buf, '.', fl) || memchr(buf, ':', fl) || (fl == 9 && !strncmp(buf, "localhost", 9)) || upper) {
			if (!ref_domain(buf, fl))
				return err_set(e, -EINVAL, "\"%.*s\" is not a registry (host or host:port)", (int)fl, buf);
			snprintf(r.registry, sizeof(r.registry), "%.*s", (int)fl, buf);
			path = first + 1;
		}
	}
	if (!r.registry[0] || !strcmp(r.registry, "index.docker.io"))
		snprintf(r.registry, sizeof(r.registry), "docker.io");
	/* Every path component, checked. */
	for (const char *p = path;;) {
		size_t l = strcspn(p, "/");
		if (!ref_component(p, l))
			return err_set(e, -EINVAL, "\"%s\": \"%.*s\" is not a name component (lowercase letters and digits, "
				       "joined by '.', '_', \"__\" or '-')", s, (int)l, p);
		if (!p[l])
			break;
		p += l + 1;
	}
	bool library = !strcmp(r.registry, "docker.io") && !strchr(path, '/');
	int n = snprintf(r.name, sizeof(r.name), "%s/%s%s", r.registry, library ? "library/" : "", path);
	if (n < 0 || (size_t)n >= sizeof(r.name))
		return err_set(e, -EINVAL, "\"%s\": a name is at most %d characters", s, IMAGE_REF_NAME_MAX - 1);
	if (r.digest[0])
		snprintf(r.key, sizeof(r.key), "%s@%s", r.name, r.digest);
	else
		snprintf(r.key, sizeof(r.key), "%s:%s", r.name, r.tag);
	*ret = r;
	return 0;
}

int image_ref_public(const struct image_ref *r, struct err *e)
{
	/* The host a pull connects to first: docker.io's registry is
	 * registry-1.docker.io. (Where it is sent on, by a redirect to a blob
	 * store, is the registry's to say: see SECURITY.md.) */
	char host[IMAGE_REF_NAME_MAX];
	const char *reg = r->registry;
	if (!strcmp(reg, "docker.io"))
		reg = "registry-1.docker.io";
	size_t hl = reg[0] == '[' ? strcspn(reg, "]") + 1 : strcspn(reg, ":");
	snprintf(host, sizeof(host), "%.*s", (int)hl, reg);
	struct net_host h;
	struct err he = { 0 };
	if (net_allow_host(host, strlen(host), &h, &he) < 0)
		return err_set(e, -EACCES, "the registry %s: %s", r->registry, he.msg);
	struct net_addr_own *own = NULL;
	if (net_addr_own_new(&own) < 0)
		own = NULL;	/* by range alone, then */
	int ret = 0;
	if (h.kind != NET_HOST_NAME) {
		struct sockaddr_storage ss = { 0 };
		if (h.kind == NET_HOST_IPV4) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			a->sin_family = AF_INET;
			a->sin_addr = h.addr.v4;
		} else {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			a->sin6_family = AF_INET6;
			a->sin6_addr = h.addr.v6;
		}
		enum net_addr_class c = net_addr_check(own, (struct sockaddr *)&ss);
		if (c != NET_ADDR_PUBLIC)
			ret = err_set(e, -EACCES, "the registry %s is %s", r->registry, net_addr_class_name(c));
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
		int g = getaddrinfo(h.name, "443", &hints, &res);
		if (g) {
			ret = err_set(e, -EHOSTUNREACH, "the registry %s does not resolve (%s)", r->registry, gai_strerror(g));
		} else {
			for (struct addrinfo *a = res; a; a = a->ai_next) {
				enum net_addr_class c = net_addr_check(own, a->ai_addr);
				if (c == NET_ADDR_PUBLIC)
					continue;
				char txt[64];
				net_addr_text(a->ai_addr, txt, sizeof(txt));
				ret = err_set(e, -EACCES, "the registry %s resolves to %s, %s", r->registry, txt,
					      net_addr_class_name(c));
				break;
			}
			freeaddrinfo(res);
		}
	}
	net_addr_own_free(own);
	return ret;
}
