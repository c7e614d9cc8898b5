/* Reading "mcpServers": each entry checked whole before any is kept, so a
 * bad file adds nothing. */
#include "mcp/mcp-config.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define MCP_FILE_MAX (1u << 20)
#define MCP_VALUE_MAX (64u * 1024)

static void server_free(struct mcp_server_cfg *s)
{
	free(s->command);
	free(s->url);
	for (size_t i = 0; i < s->nargs; i++)
		free(s->args[i]);
	for (size_t i = 0; i < s->nenv; i++)
		free(s->env[i]);
	for (size_t i = 0; i < s->nheaders; i++)
		free(s->headers[i]);
	free(s->args);
	free(s->env);
	free(s->headers);
	memset(s, 0, sizeof(*s));
}

void mcp_config_free(struct mcp_config *c)
{
	for (size_t i = 0; i < c->n; i++)
		server_free(&c->v[i]);
	c->n = 0;
}

/* ${VAR} and ${VAR:-default}; a variable that is unset and has no default
 * is an error (a server started with a token missing fails far from here). */
static char *expand(const char *in, const char *what, struct err *e)
{
	struct buf b;
	buf_init(&b, MCP_VALUE_MAX);
	for (const char *p = in; *p;) {
		if (p[0] != '$' || p[1] != '{') {
			if (buf_append(&b, p, 1) < 0)
				goto big;
			p++;
			continue;
		}
		const char *end = strchr(p + 2, '}');
		if (!end) {
			err_set(e, -EINVAL, "%s: \"${\" without its \"}\"", what);
			goto fail;
		}
		char name[256];
		size_t n = (size_t)(end - (p + 2));
		if (n == 0 || n >= sizeof(name)) {
			err_set(e, -EINVAL, "%s: an empty or over-long ${...}", what);
			goto fail;
		}
		memcpy(name, p + 2, n);
		name[n] = 0;
		char *dflt = strstr(name, ":-");
		if (dflt) {
			*dflt = 0;
			dflt += 2;
		}
		const char *v = getenv(name);
		if (!v || (!*v && dflt))
			v = dflt;
		if (!v) {
			err_set(e, -EINVAL, "%s: ${%s} is not set in ward's environment (set it, or give ${%s:-default})",
				what, name, name);
			goto fail;
		}
		if (buf_append(&b, v, strlen(v)) < 0)
			goto big;
		p = end + 1;
	}
	if (buf_cstr(&b) < 0)
		goto big;
	if (!b.data)
		return strdup("");
	return b.data;
big:
	err_set(e, -E2BIG, "%s: longer than %u bytes", what, MCP_VALUE_MAX);
fail:
	buf_free(&b);
	return NULL;
}

static int seconds(const cJSON *o, const char *key, int64_t dflt, int64_t max, int64_t *ret, const char *what,
		   struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v) {
		*ret = dflt;
		return 0;
	}
	/* Under a millisecond would be a limit of 0, which no server meets. */
	if (!cJSON_IsNumber(v) || v->valuedouble * 1000 < 1 || v->valuedouble * 1000 > (double)max)
		return err_set(e, -EINVAL, "%s: \"%s\" must be a number of seconds from 0.001 to %lld", what, key,
			       (long long)(max / 1000));
	*ret = (int64_t)(v->valuedouble * 1000);
	return 0;
}

static int server_parse(const char *name, const cJSON *o, const char *from, struct mcp_server_cfg *s,
			struct err *e)
{
	char what[MCP_NAME_MAX + 300];
	snprintf(what, sizeof(what), "%s: MCP server \"%s\"", from, name);
	size_t nl = strlen(name);
	if (nl == 0 || nl > MCP_NAME_MAX || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != nl)
		return err_set(e, -EINVAL, "%s: a server's name is 1 to %d letters, digits, '_' or '-' (it becomes part of "
			       "the tool names mcp__NAME__TOOL)", what, MCP_NAME_MAX);
	if (strstr(name, "__"))
		return err_set(e, -EINVAL, "%s: a server's name may not hold \"__\" (it separates the parts of "
			       "mcp__NAME__TOOL)", what);
	if (!cJSON_IsObject(o))
		return err_set(e, -EINVAL, "%s: must be an object, e.g. {\"command\": \"npx\", \"args\": [...]}", what);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->source, sizeof(s->source), "%s", from);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
	const char *ts = cJSON_GetStringValue(type);
	if (type && !ts)
		return err_set(e, -EINVAL, "%s: \"type\" must be \"stdio\" or \"http\"", what);
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(o, "command");
	const cJSON *url = cJSON_GetObjectItemCaseSensitive(o, "url");
	if (ts && !strcmp(ts, "sse"))
		return err_set(e, -EINVAL, "%s: the SSE transport is deprecated by the MCP specification; ward speaks "
			       "stdio and streamable HTTP (\"type\": \"http\")", what);
	if (ts && strcmp(ts, "stdio") && strcmp(ts, "http"))
		return err_set(e, -EINVAL, "%s: unknown \"type\" \"%s\" (stdio or http)", what, ts);
	s->transport = (ts && !strcmp(ts, "http")) || (!ts && url && !cmd) ? MCP_HTTP : MCP_STDIO;
	if (seconds(o, "startup_timeout_sec", MCP_STARTUP_MS_DEFAULT, MCP_CALL_MS_MAX, &s->startup_ms, what, e) < 0 ||
	    seconds(o, "tool_timeout_sec", MCP_CALL_MS_DEFAULT, MCP_CALL_MS_MAX, &s->call_ms, what, e) < 0)
		return -EINVAL;
	if (s->transport == MCP_HTTP) {
		if (!cJSON_IsString(url) || (strncmp(url->valuestring, "http://", 7) && strncmp(url->valuestring, "https://", 8)))
			return err_set(e, -EINVAL, "%s: \"url\" must be an http:// or https:// URL", what);
		if (!(s->url = expand(url->valuestring, what, e)))
			return -EINVAL;
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "headers");
		if (h && !cJSON_IsObject(h))
			return err_set(e, -EINVAL, "%s: \"headers\" must be an object of strings", what);
		size_t n = (size_t)cJSON_GetArraySize(h);
		s->headers = calloc(n + 1, sizeof(char *));
		if (!s->headers)
			return err_set(e, -ENOMEM, "out of memory");
		const cJSON *it;
		cJSON_ArrayForEach(it, h) {
			if (!cJSON_IsString(it) || strpbrk(it->string, ":\r\n") || strpbrk(it->valuestring, "\r\n"))
				return err_set(e, -EINVAL, "%s: header \"%s\" must be a one-line string", what, it->string);
			_cleanup_free_ char *v = expand(it->valuestring, what, e);
			if (!v)
				return -EINVAL;
			if (asprintf(&s->headers[s->nheaders], "%s: %s", it->string, v) < 0)
				return err_set(e, -ENOMEM, "out of memory");
			s->nheaders++;
		}
		return 0;
	}
	if (!cJSON_IsString(cmd) || !cmd->valuestring[0])
		return err_set(e, -EINVAL, "%s: give \"command\" (a program run inside the box) or \"type\": \"http\" "
			       "with a \"url\"", what);
	if (!(s->command = expand(cmd->valuestring, what, e)))
		return -EINVAL;
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "args");
	if (args && !cJSON_IsArray(args))
		return err_set(e, -EINVAL, "%s: \"args\" must be an array of strings", what);
	s->args = calloc((size_t)cJSON_GetArraySize(args) + 1, sizeof(char *));
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env");
	if (env && !cJSON_IsObject(env))
		return err_set(e, -EINVAL, "%s: \"env\" must be an object of strings", what);
	s->env = calloc((size_t)cJSON_GetArraySize(env) + 1, sizeof(char *));
	if (!s->args || !s->env)
		return err_set(e, -ENOMEM, "out of memory");
	const cJSON *it;
	cJSON_ArrayForEach(it, args) {
		if (!cJSON_IsString(it))
			return err_set(e, -EINVAL, "%s: \"args\" must be an array of strings", what);
		if (!(s->args[s->nargs] = expand(it->valuestring, what, e)))
			return -EINVAL;
		s->nargs++;
	}
	cJSON_ArrayForEach(it, env) {
		size_t kl = strlen(it->string);
		if (!cJSON_IsString(it) || !kl || strspn(it->string, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != kl ||
		    (it->string[0] >= '0' && it->string[0] <= '9'))
			return err_set(e, -EINVAL, "%s: \"env\" holds \"%s\": names are letters, digits and '_', values strings",
				       what, it->string);
		_cleanup_free_ char *v = expand(it->valuestring, what, e);
		if (!v)
			return -EINVAL;
		if (asprintf(&s->env[s->nenv], "%s=%s", it->string, v) < 0)
			return err_set(e, -ENOMEM, "out of memory");
		s->nenv++;
	}
	return 0;
}

int mcp_config_merge(struct mcp_config *dst, struct mcp_config *src, struct err *e)
{
	int r = 0;
	for (size_t i = 0; i < src->n; i++) {
		size_t k = 0;
		while (k < dst->n && strcmp(dst->v[k].name, src->v[i].name))
			k++;
		if (k == dst->n && dst->n == MCP_SERVERS_MAX) {
			r = err_set(e, -E2BIG, "%s: more than %d MCP servers in all", src->v[i].source, MCP_SERVERS_MAX);
			break;
		}
		if (k == dst->n)
			dst->n++;
		else
			server_free(&dst->v[k]);
		dst->v[k] = src->v[i];
		memset(&src->v[i], 0, sizeof(src->v[i]));
	}
	mcp_config_free(src);
	return r;
}

int mcp_config_parse(struct mcp_config *c, const cJSON *servers, const char *from, struct err *e)
{
	mcp_config_free(c);
	if (!cJSON_IsObject(servers))
		return err_set(e, -EINVAL, "%s: \"mcpServers\" must be an object of servers by name", from);
	const cJSON *it;
	cJSON_ArrayForEach(it, servers) {
		if (c->n == MCP_SERVERS_MAX) {
			mcp_config_free(c);
			return err_set(e, -E2BIG, "%s: more than %d MCP servers", from, MCP_SERVERS_MAX);
		}
		/* Counted before it is parsed: a half-parsed entry is freed too. */
		if (server_parse(it->string, it, from, &c->v[c->n++], e) < 0) {
			mcp_config_free(c);
			return -EINVAL;
		}
	}
	return 0;
}

int mcp_config_add(struct mcp_config *c, const cJSON *servers, const char *from, struct err *e)
{
	struct mcp_config *tmp = calloc(1, sizeof(*tmp));
	if (!tmp)
		return err_set(e, -ENOMEM, "out of memory");
	int r = mcp_config_parse(tmp, servers, from, e);
	if (r >= 0)
		r = mcp_config_merge(c, tmp, e);
	mcp_config_free(tmp);
	free(tmp);
	return r;
}

int mcp_config_add_file(struct mcp_config *c, const char *path, struct err *e)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fdio_read_file(AT_FDCWD, path, MCP_FILE_MAX, &data, &len);
	if (r == -EFBIG)
		return err_set(e, r, "%s: larger than %u bytes", path, MCP_FILE_MAX);
	if (r < 0)
		return err_setc(e, r, "cannot read %s", path);
	/* One strict reading (base/jsonstrict.h): a server's "command" given
	 * twice would be one program to ward and another to the user's
	 * other tools that read the file. */
	cJSON *j = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(data, len, &j, &pe) < 0)
		return err_set(e, -EINVAL, "%s: not valid JSON: %s", path, pe.msg);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "mcpServers");
	if (!s) {
		cJSON_Delete(j);
		return err_set(e, -EINVAL, "%s: no \"mcpServers\" object (the shape is {\"mcpServers\": {\"NAME\": "
			       "{\"command\": ..., \"args\": [...]}}})", path);
	}
	r = mcp_config_add(c, s, path, e);
	cJSON_Delete(j);
	return r;
}
