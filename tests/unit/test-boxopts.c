/* A box's options reach the keeper program as JSON (sandbox/box-opts.c):
 * every field makes the trip unchanged, and options that are not what ward
 * writes are refused, naming the field. */
#include <stdio.h>
#include <string.h>

#include "sandbox/box.h"
#include "tap.h"

static void same_list(const char *const *a, size_t na, const char *const *b, size_t nb, const char *what)
{
	bool same = na == nb;
	for (size_t i = 0; same && i < na; i++)
		same = !strcmp(a[i], b[i]);
	ok(same, "%s: the same %zu strings", what, na);
}

int main(void)
{
	static const char *const allow[] = { "example.com", "*.pypi.org", "internal.test=127.0.0.1:8080" };
	static const char *const labels[] = { "team=infra", "cost=42" };
	static const char *const publish[] = { "8000", "127.0.0.1:8080:80" };
	static const char *const secrets[] = { "API_KEY@api.example.com", "GH@github.com,api.github.com" };
	static const char *const values[] = { "sk-1", "ghp-2" };
	/* Every field set, none to its default. */
	struct box_opts a = {
		.name = "box-a", .backend = "vm", .ttl_ms = 3600001, .idle_ms = 60002, .on_idle = BOX_IDLE_HIBERNATE,
		.cold_after_ms = 7003, .store = "s3://bucket/prefix", .persistent = true, .keep_layers = true,
		.no_snapshot = true, .lim = { .memory = 3ULL << 30, .pids = 77, .cpus_milli = 1500, .disk = 5ULL << 30 },
		.net = BOX_NET_ALLOW, .allow = allow, .nallow = 3, .net_max_bytes = 12345678901ULL,
		.secrets = secrets, .nsecrets = 2, .secret_values = values, .nsecret_values = 2,
		.secret_ca = "-----BEGIN CERTIFICATE-----\n",
		.workspace = "/srv/ws",
		.image = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", .rw = true, .git_rw = true, .grace_ms = 2500, .guest_path = "/usr/libexec/ward/ward-guest",
		.keeper_path = "/usr/libexec/ward/ward-keeper", .owner = 4242, .labels = labels, .nlabels = 2,
		.pool = true, .publish = publish, .npublish = 2, .fork_of = "box-parent",
	};
	cJSON *j = box_opts_to_json(&a);
	struct box_opts b;
	struct err e = { 0 };
	is_int(box_opts_from_json(j, &b, &e), 0, "options written are read back (%s)", e.msg);
	cJSON_Delete(j);
	is_str(b.name, a.name, "name");
	is_str(b.backend, a.backend, "backend");
	ok(b.ttl_ms == a.ttl_ms && b.idle_ms == a.idle_ms && b.cold_after_ms == a.cold_after_ms && b.grace_ms == a.grace_ms,
	   "ttl, idle, cold-after and grace");
	ok(b.on_idle == a.on_idle, "on_idle");
	is_str(b.store, a.store, "store");
	ok(b.persistent && b.keep_layers && b.no_snapshot && b.rw && b.git_rw && b.pool, "every flag");
	ok(b.lim.memory == a.lim.memory && b.lim.pids == a.lim.pids && b.lim.cpus_milli == a.lim.cpus_milli &&
	   b.lim.disk == a.lim.disk, "limits");
	ok(b.net == a.net && b.net_max_bytes == a.net_max_bytes, "net and its byte budget");
	same_list(b.allow, b.nallow, a.allow, a.nallow, "allow");
	same_list(b.secrets, b.nsecrets, a.secrets, a.nsecrets, "secrets");
	same_list(b.secret_values, b.nsecret_values, a.secret_values, a.nsecret_values, "secret_values");
	is_str(b.secret_ca, a.secret_ca, "secret_ca");
	is_str(b.workspace, a.workspace, "workspace");
	is_str(b.image, a.image, "image");
	is_str(b.guest_path, a.guest_path, "guest_path");
	is_str(b.keeper_path, a.keeper_path, "keeper_path");
	ok(b.owner == a.owner, "owner");
	same_list(b.labels, b.nlabels, a.labels, a.nlabels, "labels");
	same_list(b.publish, b.npublish, a.publish, a.npublish, "publish");
	is_str(b.fork_of, a.fork_of, "fork_of");
	box_opts_release(&b);

	/* Absent strings stay absent; empty lists stay empty. */
	struct box_opts d;
	box_opts_default(&d);
	j = box_opts_to_json(&d);
	is_int(box_opts_from_json(j, &b, &e), 0, "the defaults are read back");
	cJSON_Delete(j);
	ok(!b.name && !b.store && !b.workspace && !b.image && !b.guest_path && b.nallow == 0 && b.nlabels == 0 &&
	   b.npublish == 0 && !b.fork_of,
	   "absent strings and empty lists stay so");
	ok(b.ttl_ms == d.ttl_ms && b.lim.disk == d.lim.disk && !strcmp(b.backend, "ns"), "and the defaults are kept");
	box_opts_release(&b);

	/* What ward never writes is refused, saying which field. */
	static const struct {
		const char *json, *field;
	} bad[] = {
		{ "[]", "not a JSON object" },
		{ "{\"backend\":\"ns\",\"ttl_ms\":-1}", "ttl_ms" },
		{ "{\"backend\":\"ns\",\"ttl_ms\":1.5}", "ttl_ms" },
		{ "{\"backend\":7}", "backend" },
		{ "{}", "ttl_ms" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *bj = cJSON_Parse(bad[i].json);
		e = (struct err){ 0 };
		ok(box_opts_from_json(bj, &b, &e) < 0 && strstr(e.msg, bad[i].field), "%s is refused: %s", bad[i].json,
		   e.msg);
		cJSON_Delete(bj);
	}
	j = box_opts_to_json(&a);
	cJSON_ReplaceItemInObject(j, "net", cJSON_CreateNumber(9));
	ok(box_opts_from_json(j, &b, &e) < 0 && strstr(e.msg, "net"), "a network kind that does not exist is refused");
	cJSON_Delete(j);
	return tap_done();
}
