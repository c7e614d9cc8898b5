/* What --publish and ward box port take (sandbox/box-port.c):
 * "[[ADDR:]HOSTPORT:]PORT", each part checked, one message each. */
#include <errno.h>
#include <string.h>

#include "sandbox/box.h"
#include "tap.h"

int main(void)
{
	static const struct {
		const char *in, *addr;
		int host_port, port;
	} good[] = {
		{ "8000", "", 0, 8000 },
		{ "8080:8000", "", 8080, 8000 },
		{ "0:8000", "", 0, 8000 },
		{ "127.0.0.2:0:80", "127.0.0.2", 0, 80 },
		{ "0.0.0.0:65535:1", "0.0.0.0", 65535, 1 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct box_port_spec s;
		struct err e = { 0 };
		int r = box_port_parse(good[i].in, &s, &e);
		ok(r == 0 && !strcmp(s.addr, good[i].addr) && s.host_port == good[i].host_port && s.port == good[i].port,
		   "\"%s\": address \"%s\", host port %d, box port %d (%s)", good[i].in, good[i].addr, good[i].host_port,
		   good[i].port, e.msg);
	}
	static const struct {
		const char *in, *says;
	} bad[] = {
		{ "", "the box's port" },
		{ "0", "the box's port" },
		{ "65536", "the box's port" },
		{ "80a", "the box's port" },
		{ "-1", "the box's port" },
		{ "8000:", "the box's port" },
		{ "x:8000", "the host's port" },
		{ ":8000", "the host's port" },
		{ "70000:80", "the host's port" },
		{ "1.2.3:80:8000", "not an IPv4 address" },
		{ "[::1]:80:8000", "not an IPv4 address" },
		{ "localhost:80:8000", "not an IPv4 address" },
		{ "127.0.0.1:80:80:80", "the host's port" },
		{ "1234567890123456789:80:8000", "not an IPv4 address" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct box_port_spec s = { .port = 7 };
		struct err e = { 0 };
		int r = box_port_parse(bad[i].in, &s, &e);
		ok(r == -EINVAL && strstr(e.msg, bad[i].says) && s.port == 7, "\"%s\" refused: %s", bad[i].in, e.msg);
	}
	return tap_done();
}
