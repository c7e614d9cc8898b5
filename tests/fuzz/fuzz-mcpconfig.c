/* Fuzz target for the reader of an MCP config file (a project's .mcp.json,
 * --mcp-config, as another party may have written it): whatever the
 * bytes, mcp_config_add_file either refuses with a message and adds no
 * server, or adds servers that are each whole (a name within its bound,
 * a command for stdio or a url for http, limits within theirs). Read
 * twice into one config, the second reading replaces each server by name
 * and adds none. Built with libFuzzer when -Dfuzz=true (clang); otherwise
 * main() replays the corpus as a test. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mcp/mcp-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct mcp_config *c)
{
	if (c->n > MCP_SERVERS_MAX)
		abort();
	for (size_t i = 0; i < c->n; i++) {
		const struct mcp_server_cfg *s = &c->v[i];
		size_t nl = strnlen(s->name, sizeof(s->name));
		if (!nl || nl > MCP_NAME_MAX)
			abort();
		if (s->transport == MCP_STDIO ? !s->command || !*s->command : !s->url || !*s->url)
			abort();
		if (s->startup_ms <= 0 || s->call_ms <= 0 || s->call_ms > MCP_CALL_MS_MAX)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->v[j].name, s->name))
				abort();	/* one server by each name */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The file, read by its path as ward reads one. */
	int fd = memfd_create("mcp.json", MFD_CLOEXEC);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* ${VAR} in the file is expanded from the environment: one it has. */
	setenv("WARD_FUZZ_VAR", "x", 1);
	struct mcp_config *c = calloc(1, sizeof(*c));
	struct err e = { 0 };
	int r = mcp_config_add_file(c, path, &e);
	if (r < 0) {
		if (!e.msg[0] || c->n)
			abort();	/* a refusal says why, and adds nothing */
	} else {
		check(c);
		size_t n = c->n;
		struct err e2 = { 0 };
		if (mcp_config_add_file(c, path, &e2) < 0 || c->n != n)
			abort();	/* the same servers again replace themselves */
		check(c);
	}
	mcp_config_free(c);
	free(c);
	close(fd);
	return 0;
}

#include "replay.h"
