#include "net/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/cleanup.h"

/* First match wins (broadcast before 240/4). Sources: RFC 6890 and the IANA
 * special-purpose registries. */
static const struct {
	uint32_t net;
	unsigned bits;
	enum net_addr_class c;
} addr_v4[] = {
	{ 0x00000000, 8, NET_ADDR_UNSPECIFIED },	/* "this network" */
	{ 0x0a000000, 8, NET_ADDR_PRIVATE },
	{ 0x64400000, 10, NET_ADDR_PRIVATE },		/* 100.64/10, carrier-grade NAT */
	{ 0x7f000000, 8, NET_ADDR_LOOPBACK },
	{ 0xa9fe0000, 16, NET_ADDR_LINK_LOCAL },	/* 169.254.169.254 is cloud metadata */
	{ 0xac100000, 12, NET_ADDR_PRIVATE },
	{ 0xc0000000, 24, NET_ADDR_RESERVED },		/* IETF protocol assignments */
	{ 0xc0000200, 24, NET_ADDR_RESERVED },		/* TEST-NET-1 */
	{ 0xc0586300, 24, NET_ADDR_RESERVED },		/* 6to4 relay anycast (deprecated) */
	{ 0xc0a80000, 16, NET_ADDR_PRIVATE },
	{ 0xc6120000, 15, NET_ADDR_RESERVED },		/* 198.18/15, benchmarking */
	{ 0xc6336400, 24, NET_ADDR_RESERVED },		/* TEST-NET-2 */
	{ 0xcb007100, 24, NET_ADDR_RESERVED },		/* TEST-NET-3 */
	{ 0xe0000000, 4, NET_ADDR_MULTICAST },
	{ 0xffffffff, 32, NET_ADDR_BROADCAST },
	{ 0xf0000000, 4, NET_ADDR_RESERVED },
};

static const struct {
	uint8_t net[16];
	unsigned bits;
	enum net_addr_class c;
} addr_v6[] = {
	{ { 0 }, 128, NET_ADDR_UNSPECIFIED },
	{ { [15] = 1 }, 128, NET_ADDR_LOOPBACK },
	{ { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, NET_ADDR_PRIVATE },	/* local-use NAT64 */
	{ { 0x01, 0x00 }, 64, NET_ADDR_RESERVED },				/* discard-only */
	{ { 0x20, 0x01, 0x00, 0x00 }, 32, NET_ADDR_RESERVED },			/* Teredo: the IPv4 inside is hidden */
	{ { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, NET_ADDR_RESERVED },	/* benchmarking */
	{ { 0x20, 0x01, 0x00, 0x10 }, 28, NET_ADDR_RESERVED },			/* ORCHID */
	{ { 0x20, 0x01, 0x00, 0x20 }, 28, NET_ADDR_RESERVED },			/* ORCHIDv2 */
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, NET_ADDR_RESERVED },			/* documentation */
	{ { 0x3f, 0xff }, 20, NET_ADDR_RESERVED },				/* documentation (RFC 9637) */
	{ { 0xfc }, 7, NET_ADDR_PRIVATE },					/* unique local */
	{ { 0xfe, 0x80 }, 10, NET_ADDR_LINK_LOCAL },
	{ { 0xfe, 0xc0 }, 10, NET_ADDR_PRIVATE },				/* site-local (deprecated) */
	{ { 0xff }, 8, NET_ADDR_MULTICAST },
};

static bool addr_prefix(const uint8_t *a, const uint8_t *net, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	if (memcmp(a, net, whole))
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[whole] & mask) == (net[whole] & mask);
}

/* The IPv4 address an IPv6 one carries: ::ffff:a.b.c.d, ::a.b.c.d,
 * 64:ff9b::a.b.c.d, and 2002:AABB:CCDD::/48 (6to4). */
static bool addr_embedded_v4(const uint8_t *a, uint8_t v4[4])
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t compat[12] = { 0 };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	if (!memcmp(a, mapped, 12) || !memcmp(a, nat64, 12) ||
	    (!memcmp(a, compat, 12) && (a[12] | a[13] | a[14] | (a[15] & 0xfe)))) {
		memcpy(v4, a + 12, 4);
		return true;
	}
	if (a[0] == 0x20 && a[1] == 0x02) {
		memcpy(v4, a + 2, 4);
		return true;
	}
	return false;
}

static enum net_addr_class addr_class4(const uint8_t *b)
{
	uint32_t a = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	for (size_t i = 0; i < ARRAY_SIZE(addr_v4); i++) {
		uint32_t mask = addr_v4[i].bits ? ~0u << (32 - addr_v4[i].bits) : 0;
		if ((a & mask) == addr_v4[i].net)
			return addr_v4[i].c;
	}
	return NET_ADDR_PUBLIC;
}

static enum net_addr_class addr_class6(const uint8_t *a)
{
	uint8_t v4[4];
	for (size_t i = 0; i < 2; i++)	/* :: and ::1 before the compatible form */
		if (addr_prefix(a, addr_v6[i].net, addr_v6[i].bits))
			return addr_v6[i].c;
	if (addr_embedded_v4(a, v4))
		return addr_class4(v4);
	for (size_t i = 2; i < ARRAY_SIZE(addr_v6); i++)
		if (addr_prefix(a, addr_v6[i].net, addr_v6[i].bits))
			return addr_v6[i].c;
	/* Global unicast is 2000::/3; anything else is not allocated. */
	if ((a[0] & 0xe0) != 0x20)
		return NET_ADDR_RESERVED;
	return NET_ADDR_PUBLIC;
}

enum net_addr_class net_addr_class(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return addr_class4((const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return addr_class6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	return NET_ADDR_RESERVED;
}

const char *net_addr_class_name(enum net_addr_class c)
{
	switch (c) {
	case NET_ADDR_PUBLIC: return "a public address";
	case NET_ADDR_LOOPBACK: return "a loopback address";
	case NET_ADDR_LINK_LOCAL: return "a link-local address (cloud metadata lives there)";
	case NET_ADDR_PRIVATE: return "a private-network address";
	case NET_ADDR_MULTICAST: return "a multicast address";
	case NET_ADDR_UNSPECIFIED: return "an unspecified (this-network) address";
	case NET_ADDR_BROADCAST: return "the broadcast address";
	case NET_ADDR_RESERVED: return "a reserved address";
	case NET_ADDR_HOST_OWN: return "an address of this host";
	}
	return "an unknown kind of address";
}

/* Addresses kept as IPv6, IPv4 ones mapped (::ffff:a.b.c.d). */
struct net_addr_own {
	struct in6_addr *a;
	size_t n, cap;
};

static bool addr_as6(const struct sockaddr *sa, struct in6_addr *out)
{
	if (sa->sa_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		return true;
	}
	if (sa->sa_family == AF_INET) {
		memset(out, 0, sizeof(*out));
		out->s6_addr[10] = out->s6_addr[11] = 0xff;
		memcpy(out->s6_addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	return false;
}

int net_addr_own_new(struct net_addr_own **ret)
{
	struct net_addr_own *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa) < 0) {
		int r = -errno;
		free(o);
		return r;
	}
	int r = 0;
	for (struct ifaddrs *i = ifa; i && r >= 0; i = i->ifa_next) {
		struct in6_addr a;
		if (!i->ifa_addr || !addr_as6(i->ifa_addr, &a))
			continue;
		r = array_grow(&o->a, &o->cap, o->n, sizeof(*o->a), 8);
		if (r >= 0)
			o->a[o->n++] = a;
	}
	freeifaddrs(ifa);
	if (r < 0) {
		net_addr_own_free(o);
		return r;
	}
	*ret = o;
	return 0;
}

void net_addr_own_free(struct net_addr_own *o)
{
	if (!o)
		return;
	free(o->a);
	free(o);
}

static bool addr_own_has6(const struct net_addr_own *o, const struct in6_addr *a)
{
	for (size_t i = 0; i < o->n; i++)
		if (!memcmp(&o->a[i], a, sizeof(*a)))
			return true;
	return false;
}

bool net_addr_own_has(const struct net_addr_own *o, const struct sockaddr *sa)
{
	struct in6_addr a;
	if (!o || !addr_as6(sa, &a))
		return false;
	if (addr_own_has6(o, &a))
		return true;
	uint8_t v4[4];
	if (sa->sa_family == AF_INET6 && addr_embedded_v4(a.s6_addr, v4)) {
		struct in6_addr m = { .s6_addr = { [10] = 0xff, [11] = 0xff } };
		memcpy(m.s6_addr + 12, v4, 4);
		return addr_own_has6(o, &m);
	}
	return false;
}

enum net_addr_class net_addr_check(const struct net_addr_own *o, const struct sockaddr *sa)
{
	enum net_addr_class c = net_addr_class(sa);
	if (c == NET_ADDR_PUBLIC && net_addr_own_has(o, sa))
		return NET_ADDR_HOST_OWN;
	return c;
}

void net_addr_text(const struct sockaddr *sa, char *out, size_t n)
{
	const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
						  : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
	if (n && !inet_ntop(sa->sa_family, a, out, (socklen_t)n))
		out[0] = 0;
}
