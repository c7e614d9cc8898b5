#include "net/secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/param.h>
#include <sys/random.h>

#include "net/sigv4.h"

const char *const net_secret_aws_vars[3] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN" };

bool net_secret_is_aws(const char *name)
{
	return !strcmp(name, NET_SECRET_AWS);
}

/* A key's part: printable, no space and no ':' (the value's separator). */
static bool aws_part_ok(const char *s)
{
	for (; *s; s++)
		if (*s <= ' ' || *s >= 0x7f || *s == ':')
			return false;
	return true;
}

int net_secret_aws_value(const char *key, const char *secret, const char *token, char *out, size_t n,
			 struct err *e)
{
	const char *part[3] = { key, secret, token && *token ? token : NULL };
	for (int i = 0; i < 3; i++) {
		if (i < 2 && (!part[i] || !*part[i]))
			return err_set(e, -EINVAL, "secret aws needs %s (with %s; %s for a session's keys)",
				       net_secret_aws_vars[i], net_secret_aws_vars[1 - i], net_secret_aws_vars[2]);
		if (part[i] && !aws_part_ok(part[i]))
			return err_set(e, -EINVAL, "secret aws: %s holds a space, a ':' or a byte that is not printable "
				       "ASCII; no AWS key does", net_secret_aws_vars[i]);
	}
	if ((size_t)snprintf(out, n, "%s:%s%s%s", key, secret, part[2] ? ":" : "", part[2] ? part[2] : "") >= n)
		return err_set(e, -EINVAL, "secret aws: its keys are over %d bytes together", NET_SECRET_VALUE_MAX);
	return 0;
}

static bool name_ok(const char *s, size_t n)
{
	if (!n || n > NET_SECRET_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

int net_secret_spec_parse(const char *spec, struct net_secret_spec *ret, struct err *e)
{
	struct net_secret_spec s = { 0 };
	const char *at = strrchr(spec, '@');
	size_t nl = strcspn(spec, "=@");
	if (!at || !name_ok(spec, nl))
		return err_set(e, -EINVAL,
			       "\"%s\" is not NAME@HOST[,HOST...] (NAME a variable name of letters, digits and _; "
			       "its value from ward's environment, or NAME=@FILE@HOST to read it from FILE)", spec);
	memcpy(s.name, spec, nl);
	if (spec[nl] == '=') {
		if (spec[nl + 1] != '@' || spec + nl + 1 == at || at == spec + nl + 2)
			return err_set(e, -EINVAL, "\"%s\": a value comes from a file as NAME=@FILE@HOST (or from ward's "
				       "environment as NAME@HOST); never on the command line", spec);
		s.path = spec + nl + 2;
		s.path_len = (size_t)(at - s.path);
	} else if (spec + nl != at) {
		return err_set(e, -EINVAL, "\"%s\" is not NAME@HOST[,HOST...]", spec);
	}
	const char *h = at + 1;
	if (!*h)
		return err_set(e, -EINVAL, "\"%s\" names no host: NAME@HOST[,HOST...]", spec);
	while (*h) {
		size_t hl = strcspn(h, ",");
		struct net_allow_rule r;
		char one[NET_HOST_MAX + 8];
		if (!hl || hl >= sizeof(one))
			return err_set(e, -EINVAL, "\"%s\": an empty or overlong host in its list", spec);
		memcpy(one, h, hl);
		one[hl] = 0;
		struct err pe = { 0 };
		if (net_allow_parse(one, &r, &pe) < 0)
			return err_set(e, -EINVAL, "\"%s\": %s", spec, pe.msg);
		if (r.wildcard || strchr(one, '='))
			return err_set(e, -EINVAL, "\"%s\": a secret goes to hosts named exactly (no *. and no =ADDR: "
				       "pin an address with --allow-host %s=ADDR:PORT)", spec, r.host.name);
		if (s.nhost == NET_SECRET_HOSTS_MAX)
			return err_set(e, -EINVAL, "\"%s\": more than %d hosts", spec, NET_SECRET_HOSTS_MAX);
		s.host[s.nhost++] = r.host;
		h += hl;
		if (*h == ',' && !*++h)
			return err_set(e, -EINVAL, "\"%s\": a host list ends with a comma", spec);
	}
	*ret = s;
	return 0;
}

int net_secret_value_check(const char *name, const char *v, size_t n, struct err *e)
{
	if (!n)
		return err_set(e, -EINVAL, "secret %s is empty", name);
	if (n > NET_SECRET_VALUE_MAX)
		return err_set(e, -EINVAL, "secret %s is %zu bytes; at most %d go in a request header", name, n,
			       NET_SECRET_VALUE_MAX);
	for (size_t i = 0; i < n; i++)
		if (v[i] == '\r' || v[i] == '\n' || v[i] == 0)
			return err_set(e, -EINVAL, "secret %s holds a line break or NUL: it cannot go in a request header",
				       name);
	if (strstr(v, NET_SECRET_PH_PREFIX))
		return err_set(e, -EINVAL, "secret %s holds \"" NET_SECRET_PH_PREFIX "\", a placeholder's mark", name);
	return 0;
}

int net_secret_placeholder(char *out, size_t n)
{
	unsigned char r[16];
	if (n < NET_SECRET_PH_LEN + 1)
		return -ENOBUFS;
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	size_t k = (size_t)snprintf(out, n, NET_SECRET_PH_PREFIX);
	for (size_t i = 0; i < sizeof(r); i++)
		k += (size_t)snprintf(out + k, n - k, "%02x", r[i]);
	return 0;
}

bool net_secret_is_placeholder(const char *s)
{
	size_t pl = sizeof(NET_SECRET_PH_PREFIX) - 1;
	if (strlen(s) != NET_SECRET_PH_LEN || strncmp(s, NET_SECRET_PH_PREFIX, pl))
		return false;
	return strspn(s + pl, "0123456789abcdef") == 32;
}

int net_secret_load(struct net_secret *s)
{
	s->aws = net_secret_is_aws(s->name);
	if (!s->aws)
		return 0;
	char *c1 = memchr(s->value, ':', s->value_len);
	char *c2 = c1 ? memchr(c1 + 1, ':', s->value_len - (size_t)(c1 + 1 - s->value)) : NULL;
	if (!c1 || c1 == s->value || c1[1] == ':' || !c1[1] || (c2 && !c2[1]) ||
	    (c2 && memchr(c2 + 1, ':', s->value_len - (size_t)(c2 + 1 - s->value))))
		return -EINVAL;
	*c1 = 0;
	if (c2)
		*c2 = 0;
	s->aws_key = s->value;
	s->aws_secret = c1 + 1;
	s->aws_token = c2 ? c2 + 1 : NULL;
	return 0;
}

bool net_secret_owns(const struct net_secret *s, const struct net_host *h)
{
	for (size_t i = 0; i < s->nhost; i++)
		if (s->host[i].kind == h->kind && !strcmp(s->host[i].name, h->name))
			return true;
	return false;
}

bool net_secret_carried(const struct net_secret *s, const char *p, size_t n)
{
	if (s->aws) {
		const char *part[3] = { s->aws_key, s->aws_secret, s->aws_token };
		for (int i = 0; i < 3; i++)
			if (part[i] && memmem(p, n, part[i], strlen(part[i])))
				return true;
		return memmem(p, n, s->ph, NET_SECRET_PH_LEN);
	}
	return memmem(p, n, s->ph, NET_SECRET_PH_LEN) || (s->value_len && memmem(p, n, s->value, s->value_len));
}

int net_secret_substitute(const struct net_secret *s, struct buf *b)
{
	size_t count = 0;
	if (!b->len)
		return 0;
	for (const char *p = b->data; (p = memmem(p, b->len - (size_t)(p - b->data), s->ph, NET_SECRET_PH_LEN));
	     p += NET_SECRET_PH_LEN)
		count++;
	if (!count)
		return 0;
	size_t len = b->len - count * NET_SECRET_PH_LEN + count * s->value_len;
	if (len > b->cap)
		return -ENOBUFS;
	char *out = malloc(len + 1);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	const char *p = b->data, *end = b->data + b->len;
	for (const char *q; (q = memmem(p, (size_t)(end - p), s->ph, NET_SECRET_PH_LEN)); p = q + NET_SECRET_PH_LEN) {
		memcpy(out + o, p, (size_t)(q - p));
		o += (size_t)(q - p);
		memcpy(out + o, s->value, s->value_len);
		o += s->value_len;
	}
	memcpy(out + o, p, (size_t)(end - p));
	o += (size_t)(end - p);
	out[o] = 0;
	/* The old head held only the placeholder: freed as it is. */
	free(b->data);
	b->data = out;
	b->len = o;
	b->alloc = o + 1;
	return (int)count;
}

bool net_secret_foreign_cred(const struct net_secret *s, const char *head, size_t n)
{
	static const char *const creds[] = { "authorization:", "x-api-key:" };
	const char *p = head, *end = head + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		for (size_t i = 0; i < sizeof(creds) / sizeof(creds[0]); i++) {
			size_t cl = strlen(creds[i]);
			if (ll >= cl && !strncasecmp(p, creds[i], cl) && !memmem(p, ll, s->ph, NET_SECRET_PH_LEN))
				return true;
		}
		p += ll + 1;
	}
	return false;
}

int net_secret_apply(const struct net_secret *s, struct buf *head, const char *body_hash, bool other_ok,
		     struct net_sigv4_seed *ret_seed, char *why, size_t wn)
{
	if (s->aws) {
		struct net_sigv4_keys k = { .ph_key = s->ph, .ph_secret = s->ph, .ph_token = s->aws_token ? s->ph : NULL,
					    .key = s->aws_key, .secret = s->aws_secret, .token = s->aws_token };
		int r = net_sigv4_resign(head, &k, body_hash, ret_seed, why, wn);
		return r == -EPERM && other_ok ? 0 : r;
	}
	if (!other_ok && net_secret_foreign_cred(s, head->data, head->len)) {
		snprintf(why, wn, "a credential that is not secret %s's placeholder", s->name);
		return -EPERM;
	}
	int k = net_secret_substitute(s, head);
	if (k == -ENOBUFS)
		snprintf(why, wn, "the request head is too long with the value in it");
	return k;
}

/* The values one secret puts in a request: its value, or an aws
 * secret's parts (NULL where there is none). */
static size_t mask_values(const struct net_secret *s, const char *v[3], size_t vl[3])
{
	const char *part[3] = { s->aws ? s->aws_key : s->value, s->aws ? s->aws_secret : NULL,
				s->aws ? s->aws_token : NULL };
	size_t k = 0;
	for (int i = 0; i < 3; i++)
		if (part[i] && *part[i]) {
			v[k] = part[i];
			vl[k++] = s->aws ? strlen(part[i]) : s->value_len;
		}
	return k;
}

void net_secret_mask_init(struct net_secret_mask *m, const struct net_secret *s, size_t n)
{
	*m = (struct net_secret_mask){ .s = s, .n = n };
}

/* The longest end of p[0..len) that begins v (shorter than v). */
static size_t mask_open(const char *p, size_t len, const char *v, size_t vl)
{
	for (size_t k = MIN(vl - 1, len); k > 0; k--)
		if (p[len - k] == v[0] && !memcmp(p + len - k, v, k))
			return k;
	return 0;
}

size_t net_secret_mask(struct net_secret_mask *m, char *p, size_t len, bool eof)
{
	/* Every match found on the bytes as they came, then masked together:
	 * a value masked first never hides one that overlaps it ("abc" and
	 * "abc.sig" both go). Past the bitmap, one value after another. */
	static __thread uint8_t mark[NET_SECRET_MASK_MAX / 8];
	bool marks = len <= NET_SECRET_MASK_MAX;
	if (marks)
		memset(mark, 0, (len + 7) / 8);
	size_t hold = 0;
	for (size_t i = 0; i < m->n; i++) {
		const char *v[3];
		size_t vl[3], k = mask_values(&m->s[i], v, vl);
		for (size_t j = 0; j < k; j++) {
			/* A value begun in the last bytes may end in the next. */
			if (!eof)
				hold = MAX(hold, mask_open(p, len, v[j], vl[j]));
			for (char *q = p; (q = memmem(q, len - (size_t)(q - p), v[j], vl[j])); q++) {
				m->masked++;
				if (!marks) {
					memset(q, '*', vl[j]);
					continue;
				}
				for (size_t b = (size_t)(q - p); b < (size_t)(q - p) + vl[j]; b++)
					mark[b / 8] |= (uint8_t)(1u << (b % 8));
			}
		}
	}
	for (size_t b = 0; marks && b < len; b++)
		if (mark[b / 8] & (1u << (b % 8)))
			p[b] = '*';
	return len - hold;
}

void net_secret_wipe(struct net_secret *s)
{
	if (s->value) {
		explicit_bzero(s->value, s->value_len);
		free(s->value);
	}
	explicit_bzero(s, sizeof(*s));
}
