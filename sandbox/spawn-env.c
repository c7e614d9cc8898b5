/* What each helper process of a box gets for an environment. Nothing
 * passes that this table does not name; the rest is built:
 *   keeper     the table's KEEPER names (and STORE's, for a box that may
 *              use an s3 store), from ward's environment
 *   proxy      the table's PROXY names, from the keeper's
 *   VMM        spawn_env_vmm below
 *   ns guest   PATH alone (sandbox/ns.c); a tool command, ward-guest's own
 *              list (guest/proc.c); an MCP server, that and what its
 *              .mcp.json "env" names
 *   diff, mkfs.ext4, ldd (ward's own tools): PATH alone (base/child.c)
 * No locale passes: the keeper parses what its tools print. */
#include "sandbox/spawn-env.h"

#include <stdlib.h>
#include <string.h>

enum {
	SE_KEEPER = 1,
	SE_STORE = 2,	/* the keeper, when the box may move to an s3 store */
	SE_PROXY = 4,
};

static const struct {
	const char *name;
	unsigned to;
	const char *why;
} spawn_env_pass[] = {
	{ "PATH", SE_KEEPER, "the programs the keeper runs: qemu-system-x86_64, mkfs.ext4, ldd, a decompressor" },
	{ "HOME", SE_KEEPER, "ward's state, runtime and cache directories when the XDG variables are not set" },
	{ "XDG_RUNTIME_DIR", SE_KEEPER, "the boxes' runtime directories (base/state.c)" },
	{ "XDG_STATE_HOME", SE_KEEPER, "workspace layers, hibernated states (base/state.c)" },
	{ "XDG_CACHE_HOME", SE_KEEPER, "vm images and snapshots (sandbox/vmimage.c)" },
	{ "XDG_DATA_HOME", SE_KEEPER, "the image store, where a box's root image is found (image/store.c)" },
	{ "AWS_ACCESS_KEY_ID", SE_STORE, "an s3 store's credentials (store/s3.c): the keeper is what talks to it" },
	{ "AWS_SECRET_ACCESS_KEY", SE_STORE, "the same" },
	{ "AWS_SESSION_TOKEN", SE_STORE, "the same, temporary credentials" },
	{ "AWS_REGION", SE_STORE, "the store's region" },
	{ "AWS_DEFAULT_REGION", SE_STORE, "the store's region" },
	{ "WARD_S3_ENDPOINT", SE_STORE, "an S3-compatible server instead of AWS" },
	{ "https_proxy", SE_STORE, "libcurl's way to the store" },
	{ "HTTPS_PROXY", SE_STORE, "libcurl's way to the store" },
	{ "http_proxy", SE_STORE, "libcurl's way to a plain-HTTP endpoint" },
	{ "all_proxy", SE_STORE, "libcurl's way to the store" },
	{ "ALL_PROXY", SE_STORE, "libcurl's way to the store" },
	{ "no_proxy", SE_STORE, "libcurl's way to the store" },
	{ "NO_PROXY", SE_STORE, "libcurl's way to the store" },
	{ "SSL_CERT_FILE", SE_STORE, "the CAs the store's certificate is checked against (OpenSSL)" },
	{ "SSL_CERT_DIR", SE_STORE, "the same" },
	{ "ASAN_OPTIONS", SE_KEEPER | SE_PROXY, "a sanitizer build's settings (the tests'); no secret" },
	{ "UBSAN_OPTIONS", SE_KEEPER | SE_PROXY, "the same" },
	{ "LSAN_OPTIONS", SE_KEEPER | SE_PROXY, "the same" },
};

char *const spawn_env_vmm[] = { "PATH=/usr/bin:/bin", NULL };

#define SPAWN_ENV_N (sizeof(spawn_env_pass) / sizeof(spawn_env_pass[0]))

static char **spawn_env_build(unsigned to)
{
	const char *v[SPAWN_ENV_N];
	size_t n = 0, bytes = 0;
	for (size_t i = 0; i < SPAWN_ENV_N; i++) {
		v[i] = (spawn_env_pass[i].to & to) ? getenv(spawn_env_pass[i].name) : NULL;
		if (v[i]) {
			n++;
			bytes += strlen(spawn_env_pass[i].name) + strlen(v[i]) + 2;
		}
	}
	char **env = malloc((n + 1) * sizeof(char *) + bytes);
	if (!env)
		return NULL;
	char *p = (char *)(env + n + 1);
	size_t k = 0;
	for (size_t i = 0; i < SPAWN_ENV_N; i++) {
		if (!v[i])
			continue;
		size_t nl = strlen(spawn_env_pass[i].name), vl = strlen(v[i]);
		env[k++] = p;
		memcpy(p, spawn_env_pass[i].name, nl);
		p[nl] = '=';
		memcpy(p + nl + 1, v[i], vl + 1);
		p += nl + vl + 2;
	}
	env[k] = NULL;
	return env;
}

char **spawn_env_keeper(const struct box_opts *o)
{
	/* A pool box's store is its claimer's: any. */
	bool s3 = o->pool || (o->store && !strncmp(o->store, "s3://", 5));
	return spawn_env_build(SE_KEEPER | (s3 ? SE_STORE : 0));
}

char **spawn_env_proxy(void)
{
	return spawn_env_build(SE_PROXY);
}
