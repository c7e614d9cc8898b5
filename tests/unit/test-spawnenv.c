/* The environments a box's helpers start with (sandbox/spawn-env.c): the
 * keeper gets what it needs of ward's, the store's credentials only for a
 * box that may move to an s3 store, and neither it nor the egress proxy
 * gets an API key or anything else the table does not name. */
#include <stdlib.h>
#include <string.h>

#include "sandbox/spawn-env.h"
#include "tap.h"

static bool has(char **env, const char *var)
{
	for (char **e = env; e && *e; e++)
		if (!strcmp(*e, var))
			return true;
	return false;
}

static bool names(char **env, const char *name)
{
	size_t n = strlen(name);
	for (char **e = env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return true;
	return false;
}

int main(void)
{
	setenv("ANTHROPIC_API_KEY", "sk-ant-canary", 1);
	setenv("OPENAI_API_KEY", "sk-oa-canary", 1);
	setenv("SOME_TOKEN", "canary", 1);
	setenv("PATH", "/usr/bin:/bin", 1);
	setenv("HOME", "/home/u", 1);
	setenv("XDG_RUNTIME_DIR", "/run/user/1", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "aws-canary", 1);
	setenv("LANG", "de_DE.UTF-8", 1);
	struct box_opts o;
	box_opts_default(&o);
	char **k = spawn_env_keeper(&o);
	ok(k != NULL, "the keeper's environment is built");
	ok(has(k, "PATH=/usr/bin:/bin") && has(k, "HOME=/home/u") && has(k, "XDG_RUNTIME_DIR=/run/user/1"),
	   "the keeper gets PATH, HOME and the XDG directories");
	ok(!names(k, "ANTHROPIC_API_KEY") && !names(k, "OPENAI_API_KEY") && !names(k, "SOME_TOKEN"),
	   "the keeper gets no API key, nor a variable the table does not name");
	ok(!names(k, "AWS_SECRET_ACCESS_KEY"), "nor the store's credentials when its box has no s3 store");
	ok(!names(k, "LANG"), "nor a locale");
	free(k);
	o.store = "s3://bucket/p";
	k = spawn_env_keeper(&o);
	ok(has(k, "AWS_SECRET_ACCESS_KEY=aws-canary"), "twin: a box with an s3 store: its keeper gets the credentials");
	ok(!names(k, "ANTHROPIC_API_KEY"), "and still no API key");
	free(k);
	o.store = "/srv/cold";
	k = spawn_env_keeper(&o);
	ok(!names(k, "AWS_SECRET_ACCESS_KEY"), "a directory store: no credentials");
	free(k);
	setenv("ASAN_OPTIONS", "halt_on_error=1", 1);
	char **p = spawn_env_proxy();
	ok(p != NULL && has(p, "ASAN_OPTIONS=halt_on_error=1"), "the proxy gets a sanitizer build's settings");
	ok(!names(p, "PATH") && !names(p, "HOME") && !names(p, "AWS_SECRET_ACCESS_KEY") && !names(p, "ANTHROPIC_API_KEY"),
	   "and nothing else: no PATH, no HOME, no credentials, no API key");
	free(p);
	ok(spawn_env_vmm[0] && !strcmp(spawn_env_vmm[0], "PATH=/usr/bin:/bin") && !spawn_env_vmm[1],
	   "the VMM's is PATH=/usr/bin:/bin alone");
	return tap_done();
}
