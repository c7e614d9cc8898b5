/* What kind of address a name resolved to, so the proxy can refuse all but
 * public ones: an address inside the host or its networks is reachable from
 * the host but must not be from a box. IPv6 forms that carry an IPv4 address
 * (mapped, compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) are classed by the
 * IPv4 address inside them. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

enum net_addr_class {
	NET_ADDR_PUBLIC,
	NET_ADDR_LOOPBACK,	/* 127/8, ::1 */
	NET_ADDR_LINK_LOCAL,	/* 169.254/16 (cloud metadata), fe80::/10 */
	NET_ADDR_PRIVATE,	/* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10 */
	NET_ADDR_MULTICAST,	/* 224/4, ff00::/8 */
	NET_ADDR_UNSPECIFIED,	/* 0/8, :: */
	NET_ADDR_BROADCAST,	/* 255.255.255.255 */
	NET_ADDR_RESERVED,	/* 240/4, documentation, benchmarking, Teredo, not 2000::/3 */
	NET_ADDR_HOST_OWN,	/* on one of the host's interfaces */
};

/* By address range alone (never NET_ADDR_HOST_OWN). */
enum net_addr_class net_addr_class(const struct sockaddr *sa);
/* "a loopback address", to follow "resolves to 127.0.0.1, ". */
const char *net_addr_class_name(enum net_addr_class c);

/* The host's own addresses, as getifaddrs saw them when taken. */
struct net_addr_own;
int net_addr_own_new(struct net_addr_own **ret);
void net_addr_own_free(struct net_addr_own *o);
bool net_addr_own_has(const struct net_addr_own *o, const struct sockaddr *sa);
/* The host's own first, then by range; o may be NULL. */
enum net_addr_class net_addr_check(const struct net_addr_own *o, const struct sockaddr *sa);
/* The address without its port, as inet_ntop writes it. */
void net_addr_text(const struct sockaddr *sa, char *out, size_t n);
