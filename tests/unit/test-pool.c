/* box_pool_key: what a pool box must match for a create to take it. The
 * same kind gives the same key, whatever the path's spelling; each field a
 * VM is started with changes it; what a claim sets (lifetime, labels,
 * owner) does not. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/backend.h"
#include "sandbox/box-int.h"
#include "sandbox/box.h"
#include "tap.h"

static void key(const struct box_opts *o, char *out)
{
	box_pool_key(o, out, 32);
}

int main(void)
{
	struct box_opts a, b;
	box_opts_default(&a);
	a.backend = "vm";
	a.guest_path = "/g";
	a.workspace = "/tmp";
	char ka[32], kb[32];
	key(&a, ka);
	is_int((int)strlen(ka), 16, "a key is 16 hex digits");
	b = a;
	b.workspace = "/tmp/./";
	key(&b, kb);
	is_str(kb, ka, "the same workspace spelt otherwise: the same key");
	b = a;
	b.ttl_ms = 1;
	b.idle_ms = 2;
	b.persistent = !a.persistent;
	b.owner = 42;
	static const char *const l[] = { "a=b" };
	b.labels = l;
	b.nlabels = 1;
	b.on_idle = BOX_IDLE_HIBERNATE;
	key(&b, kb);
	is_str(kb, ka, "lifetime, owner, labels and idle policy: a claim's, not the key's");
	b = a;
	b.backend = "auto";
	key(&b, kb);
	b.backend = backend_find("auto")->name;
	char kr[32];
	key(&b, kr);
	is_str(kb, kr, "auto is the backend it resolves to");
#define DIFFERS(field, value, what) \
	b = a; \
	b.field = value; \
	key(&b, kb); \
	ok(strcmp(kb, ka) != 0, what " changes the key")
	DIFFERS(lim.memory, 512ULL << 20, "memory");
	DIFFERS(lim.pids, 9, "pids");
	DIFFERS(lim.disk, 1ULL << 30, "disk");
	DIFFERS(lim.cpus_milli, 500, "cpus");
	DIFFERS(workspace, "/usr", "another workspace");
	DIFFERS(workspace, NULL, "no workspace");
	DIFFERS(rw, true, "--rw");
	DIFFERS(keep_layers, true, "keeping the workspace's changes (ward run's)");
	DIFFERS(backend, "ns", "another backend");
	DIFFERS(net, BOX_NET_ALLOW, "the network");
	DIFFERS(guest_path, "/other", "another guest");
	DIFFERS(image, "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "an image");
	b = a;
	b.image = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	key(&b, ka);
	b.image = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
	key(&b, kb);
	ok(strcmp(kb, ka) != 0, "another image changes the key");
	static const char *const al[] = { "example.org" };
	b = a;
	b.net = BOX_NET_ALLOW;
	key(&b, ka);
	b.allow = al;
	b.nallow = 1;
	key(&b, kb);
	ok(strcmp(kb, ka) != 0, "the allow-list changes the key");
	return tap_done();
}
