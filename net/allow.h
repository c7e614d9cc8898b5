/* The allow-list of a box's egress proxy: --allow-host patterns, and the one
 * canonical form of a host that patterns and requests are both brought to
 * before they are compared.
 *
 *   example.org             that name, ports 443 and 80
 *   *.example.org           any name below example.org (not the apex)
 *   example.org:8443        that port only (also *.example.org:8443)
 *   1.2.3.4, 1.2.3.4:port,  an address; a rule that names an address allows it
 *   [2001:db8::1]:port      even when it is loopback or private
 *   name=1.2.3.4[:port],    name, connected to that address and never
 *   name=[v6][:port]        resolved (like curl --resolve)
 *
 * A name is ASCII (punycode for anything else), lowercased, one trailing dot
 * dropped, labels of letters, digits, '-' and '_' (at most 63 bytes each, 253
 * in all). An IPv4 address is a strict dotted quad; what only inet_aton
 * would read as one (2130706433, 0x7f.1, 127.1, 0177.0.0.1), or any name whose
 * last label is a number, is refused, since a resolver would turn it into an
 * address the list never named. */
#pragma once
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/err.h"
#include "net/addr.h"

#define NET_HOST_MAX 253

enum net_host_kind {
	NET_HOST_NAME,
	NET_HOST_IPV4,
	NET_HOST_IPV6,
};

struct net_host {
	enum net_host_kind kind;
	/* The name, or the address as inet_ntop writes it (no brackets). */
	char name[NET_HOST_MAX + 1];
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;			/* NET_HOST_IPV4, NET_HOST_IPV6 */
};

struct net_allow_rule {
	struct net_host host;	/* a wildcard's host is the part after "*." */
	bool wildcard;
	uint16_t port;		/* 0: 443 and 80 */
	/* The address to connect to, never resolved: a pinned name's, or the
	 * rule's own when it names an address. */
	bool has_addr;
	struct net_host addr;
	char pattern[300];	/* as given, for messages */
};

struct net_allow {
	struct net_allow_rule *rule;
	size_t n, cap;
};

/* Bring a host as a request or a pattern writes it (a name, a dotted quad or
 * a bracketed IPv6 address; not NUL-terminated) to its canonical form.
 * -EINVAL with one line in e saying what is wrong. */
int net_allow_host(const char *s, size_t n, struct net_host *ret, struct err *e);
/* One --allow-host pattern. -EINVAL with one line in e: what is wrong and
 * what to write instead. */
int net_allow_parse(const char *pattern, struct net_allow_rule *ret, struct err *e);
int net_allow_add(struct net_allow *l, const char *pattern, struct err *e);
void net_allow_free(struct net_allow *l);
/* The rule that allows host:port, or NULL. Of several, the most specific: a
 * name over a wildcard, a named port over the default ones, a pinned address
 * over resolving. */
const struct net_allow_rule *net_allow_match(const struct net_allow *l, const struct net_host *h,
					     uint16_t port);
/* "example.org", "example.org:8443", "[::1]:443": the pattern that would
 * allow host:port, for a refusal to suggest. */
void net_allow_suggest(const struct net_host *h, uint16_t port, char *out, size_t n);
/* The address a rule connects to without resolving (a pinned name's, or an
 * address rule's own), with port: 0, or -ENOENT for a rule whose name is
 * resolved. */
int net_allow_rule_sockaddr(const struct net_allow_rule *r, uint16_t port, struct sockaddr_storage *ret,
			    socklen_t *ret_len);
/* What kind of address that is (net_addr_check: the host's own first, o
 * may be NULL); NET_ADDR_PUBLIC for a rule whose name is resolved, since
 * the proxy checks each address it resolves to. The one answer to "does
 * this rule name an address that is not public", for the proxy and for
 * whoever may give rules only to public hosts. */
enum net_addr_class net_allow_rule_class(const struct net_allow_rule *r, const struct net_addr_own *o);
/* host or [host], as a URL authority writes it. */
void net_allow_host_text(const struct net_host *h, char *out, size_t n);
