/* Address classes: every range the proxy refuses, with public twins on
 * either side of the edges, and IPv6 forms that carry an IPv4 address. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdbool.h>
#include <string.h>

#include "net/addr.h"
#include "tap.h"

static struct sockaddr_storage sa(const char *text)
{
	struct sockaddr_storage s = { 0 };
	if (strchr(text, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&s;
		a->sin6_family = AF_INET6;
		inet_pton(AF_INET6, text, &a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&s;
		a->sin_family = AF_INET;
		inet_pton(AF_INET, text, &a->sin_addr);
	}
	return s;
}

static enum net_addr_class cls(const char *text)
{
	struct sockaddr_storage s = sa(text);
	return net_addr_class((struct sockaddr *)&s);
}

static const struct {
	const char *addr;
	enum net_addr_class c;
} cases[] = {
	{ "127.0.0.1", NET_ADDR_LOOPBACK },
	{ "127.255.255.254", NET_ADDR_LOOPBACK },
	{ "126.255.255.255", NET_ADDR_PUBLIC },
	{ "128.0.0.0", NET_ADDR_PUBLIC },
	{ "169.254.169.254", NET_ADDR_LINK_LOCAL },
	{ "169.254.0.1", NET_ADDR_LINK_LOCAL },
	{ "169.253.255.255", NET_ADDR_PUBLIC },
	{ "169.255.0.0", NET_ADDR_PUBLIC },
	{ "10.0.0.1", NET_ADDR_PRIVATE },
	{ "11.0.0.1", NET_ADDR_PUBLIC },
	{ "172.16.0.1", NET_ADDR_PRIVATE },
	{ "172.31.255.255", NET_ADDR_PRIVATE },
	{ "172.15.255.255", NET_ADDR_PUBLIC },
	{ "172.32.0.0", NET_ADDR_PUBLIC },
	{ "192.168.1.1", NET_ADDR_PRIVATE },
	{ "192.169.0.0", NET_ADDR_PUBLIC },
	{ "100.64.0.1", NET_ADDR_PRIVATE },
	{ "100.127.255.255", NET_ADDR_PRIVATE },
	{ "100.63.255.255", NET_ADDR_PUBLIC },
	{ "100.128.0.0", NET_ADDR_PUBLIC },
	{ "224.0.0.1", NET_ADDR_MULTICAST },
	{ "239.255.255.255", NET_ADDR_MULTICAST },
	{ "0.0.0.0", NET_ADDR_UNSPECIFIED },
	{ "0.1.2.3", NET_ADDR_UNSPECIFIED },
	{ "240.0.0.1", NET_ADDR_RESERVED },
	{ "255.255.255.254", NET_ADDR_RESERVED },
	{ "255.255.255.255", NET_ADDR_BROADCAST },
	{ "192.0.2.1", NET_ADDR_RESERVED },
	{ "198.51.100.1", NET_ADDR_RESERVED },
	{ "203.0.113.1", NET_ADDR_RESERVED },
	{ "198.18.0.1", NET_ADDR_RESERVED },
	{ "198.19.255.255", NET_ADDR_RESERVED },
	{ "198.20.0.0", NET_ADDR_PUBLIC },
	{ "192.0.0.8", NET_ADDR_RESERVED },
	{ "8.8.8.8", NET_ADDR_PUBLIC },
	{ "93.184.215.14", NET_ADDR_PUBLIC },
	{ "::1", NET_ADDR_LOOPBACK },
	{ "::", NET_ADDR_UNSPECIFIED },
	{ "fe80::1", NET_ADDR_LINK_LOCAL },
	{ "febf::1", NET_ADDR_LINK_LOCAL },
	{ "fec0::1", NET_ADDR_PRIVATE },
	{ "fc00::1", NET_ADDR_PRIVATE },
	{ "fd12:3456::1", NET_ADDR_PRIVATE },
	{ "ff02::1", NET_ADDR_MULTICAST },
	{ "2001:db8::1", NET_ADDR_RESERVED },
	{ "2001:0::1", NET_ADDR_RESERVED },
	{ "2606:4700::1111", NET_ADDR_PUBLIC },
	{ "2a00:1450:4001::1", NET_ADDR_PUBLIC },
	{ "4000::1", NET_ADDR_RESERVED },
	{ "::ffff:127.0.0.1", NET_ADDR_LOOPBACK },
	{ "::ffff:169.254.169.254", NET_ADDR_LINK_LOCAL },
	{ "::ffff:10.0.0.1", NET_ADDR_PRIVATE },
	{ "::ffff:8.8.8.8", NET_ADDR_PUBLIC },
	{ "::127.0.0.1", NET_ADDR_LOOPBACK },
	{ "::8.8.8.8", NET_ADDR_PUBLIC },
	{ "64:ff9b::7f00:1", NET_ADDR_LOOPBACK },
	{ "64:ff9b::a9fe:a9fe", NET_ADDR_LINK_LOCAL },
	{ "64:ff9b::808:808", NET_ADDR_PUBLIC },
	{ "64:ff9b:1::1", NET_ADDR_PRIVATE },
	{ "2002:7f00:1::1", NET_ADDR_LOOPBACK },
	{ "2002:a9fe:a9fe::1", NET_ADDR_LINK_LOCAL },
	{ "2002:c0a8:0101::1", NET_ADDR_PRIVATE },
	{ "2002:808:808::1", NET_ADDR_PUBLIC },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_int(cls(cases[i].addr), cases[i].c, "%s is %s", cases[i].addr, net_addr_class_name(cases[i].c));

	like(net_addr_class_name(NET_ADDR_LOOPBACK), "loopback", "class names read in a sentence");
	like(net_addr_class_name(NET_ADDR_LINK_LOCAL), "metadata", "link-local says where metadata lives");

	/* The host's own addresses: every one getifaddrs lists is found, as
	 * is its mapped form; a public address not on the host is not. */
	struct net_addr_own *own;
	is_int(net_addr_own_new(&own), 0, "snapshot of the host's addresses");
	struct ifaddrs *ifa;
	getifaddrs(&ifa);
	bool all = true, any = false;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		any = true;
		all &= net_addr_own_has(own, i->ifa_addr);
		if (net_addr_class(i->ifa_addr) == NET_ADDR_PUBLIC)
			all &= net_addr_check(own, i->ifa_addr) == NET_ADDR_HOST_OWN;
		if (i->ifa_addr->sa_family == AF_INET) {
			char t[64], m[80];
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, t, sizeof(t));
			snprintf(m, sizeof(m), "::ffff:%s", t);
			struct sockaddr_storage s = sa(m);
			all &= net_addr_own_has(own, (struct sockaddr *)&s);
		}
	}
	freeifaddrs(ifa);
	ok(any && all, "each of the host's addresses is its own (mapped forms too; a public one is refused as the host's)");
	struct sockaddr_storage pub = sa("192.88.99.200");
	ok(!net_addr_own_has(own, (struct sockaddr *)&pub), "an address elsewhere is not");
	struct sockaddr_storage lo = sa("127.0.0.1");
	is_int(net_addr_check(own, (struct sockaddr *)&lo), NET_ADDR_LOOPBACK, "loopback stays loopback");
	pub = sa("8.8.8.8");
	is_int(net_addr_check(own, (struct sockaddr *)&pub), NET_ADDR_PUBLIC, "a public address not here is public");
	net_addr_own_free(own);

	char t[64];
	struct sockaddr_storage s6 = sa("2001:db8::1");
	net_addr_text((struct sockaddr *)&s6, t, sizeof(t));
	is_str(t, "2001:db8::1", "text of an IPv6 address");
	return tap_done();
}
