/* What --publish and ward box port say: "[[ADDR:]HOSTPORT:]PORT". The one
 * reader, for ward (a bad flag said at once) and for the keeper (which
 * reads its options again). */
#include "sandbox/box.h"
#include "base/parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static int port_of(const char *s, size_t n, bool zero_ok, uint16_t *ret)
{
	char b[8];
	uint64_t v;
	if (!n || n >= sizeof(b))
		return -EINVAL;
	memcpy(b, s, n);
	b[n] = 0;
	if (parse_u64(b, &v) < 0 || v > 65535 || (!v && !zero_ok))
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

int box_port_parse(const char *s, struct box_port_spec *ret, struct err *e)
{
	struct box_port_spec p = { 0 };
	const char *last = strrchr(s, ':');
	const char *port = last ? last + 1 : s;
	if (port_of(port, strlen(port), false, &p.port) < 0)
		return err_set(e, -EINVAL, "\"%.80s\": the box's port is not a number from 1 to 65535 "
			       "(use [[ADDR:]HOSTPORT:]PORT, e.g. 8000 or 8080:8000)", s);
	if (last) {
		const char *hp = s;
		const char *first = memchr(s, ':', (size_t)(last - s));
		if (first) {
			size_t n = (size_t)(first - s);
			struct in_addr a;
			if (n >= sizeof(p.addr))
				return err_set(e, -EINVAL, "\"%.80s\": the address is not an IPv4 address", s);
			memcpy(p.addr, s, n);
			p.addr[n] = 0;
			if (inet_pton(AF_INET, p.addr, &a) != 1)
				return err_set(e, -EINVAL, "\"%.80s\": \"%s\" is not an IPv4 address", s, p.addr);
			hp = first + 1;
		}
		if (port_of(hp, (size_t)(last - hp), true, &p.host_port) < 0)
			return err_set(e, -EINVAL, "\"%.80s\": the host's port is not a number from 0 to 65535 "
				       "(0: one the kernel picks)", s);
	}
	*ret = p;
	return 0;
}
