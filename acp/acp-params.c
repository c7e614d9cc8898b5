/* What the editor's params mean to ward: a prompt's content blocks as
 * the instruction's text, session/new's MCP servers as .mcp.json's. */
#include "acp/acp-params.h"
#include "base/json.h"
#include "turn/provider.h"

#include <stdio.h>
#include <string.h>

/* session/new's mcpServers (ACP's stdio servers: name, command, args,
 * env as [{name, value}]) in .mcp.json's shape, for mcp_config_add: they
 * start in the box as the project's do. NULL and why when one is not
 * taken. ward's config reads ${VAR} in these values from ward's
 * environment; the editor's are literal, so a value holding "${" is
 * refused rather than read another way. */
static bool mcp_literal(const char *v)
{
	return v && !strstr(v, "${");
}

cJSON *acp_params_mcp(const cJSON *list, char *why, size_t cap)
{
	cJSON *out = cJSON_CreateObject();
	int i = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, list) {
		const char *name = json_str(m, "name"), *cmd = json_str(m, "command");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(m, "args");
		const cJSON *env = cJSON_GetObjectItemCaseSensitive(m, "env");
		if (cJSON_GetObjectItemCaseSensitive(m, "type") || !cmd) {
			snprintf(why, cap, "mcpServers[%d]: ward acp takes stdio servers ({name, command, args, env}); "
					   "give HTTP ones in .mcp.json", i);
			goto fail;
		}
		if (!name || !*name || cJSON_GetObjectItemCaseSensitive(out, name)) {
			snprintf(why, cap, "mcpServers[%d]: a server needs a name of its own", i);
			goto fail;
		}
		if ((args && !cJSON_IsArray(args)) || (env && !cJSON_IsArray(env)) || !mcp_literal(cmd)) {
			snprintf(why, cap, "mcpServers[%d] (%.40s): command a string, args an array of strings, env an array "
					   "of {name, value}, with no ${", i, name);
			goto fail;
		}
		cJSON *srv = cJSON_AddObjectToObject(out, name);
		cJSON_AddStringToObject(srv, "command", cmd);
		cJSON *ja = cJSON_AddArrayToObject(srv, "args");
		const cJSON *x;
		cJSON_ArrayForEach(x, args) {
			if (!cJSON_IsString(x) || !mcp_literal(x->valuestring)) {
				snprintf(why, cap, "mcpServers[%d] (%.40s): each arg a string, with no ${", i, name);
				goto fail;
			}
			cJSON_AddItemToArray(ja, cJSON_CreateString(x->valuestring));
		}
		cJSON *je = cJSON_AddObjectToObject(srv, "env");
		cJSON_ArrayForEach(x, env) {
			const char *k = json_str(x, "name"), *v = json_str(x, "value");
			if (!k || !*k || !mcp_literal(v) || cJSON_GetObjectItemCaseSensitive(je, k)) {
				snprintf(why, cap, "mcpServers[%d] (%.40s): each env entry {name, value}, names once, values "
						   "with no ${", i, name);
				goto fail;
			}
			cJSON_AddStringToObject(je, k, v);
		}
		i++;
	}
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}


/* A prompt's content blocks as the instruction's text: text, an
 * embedded resource's text (the editor's buffer), a link's URI. 0, or -1
 * with why. */
int acp_params_prompt(const cJSON *prompt, struct buf *b, char *why, size_t cap)
{
	if (!cJSON_IsArray(prompt) || !cJSON_GetArraySize(prompt)) {
		snprintf(why, cap, "prompt must be a non-empty array of content blocks");
		return -1;
	}
	int i = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, prompt) {
		const char *type = json_str(c, "type");
		int r = -1;
		if (type && !strcmp(type, "text") && json_str(c, "text")) {
			r = buf_printf(b, "%s%s", b->len ? "\n\n" : "", json_str(c, "text"));
		} else if (type && !strcmp(type, "resource")) {
			const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resource");
			const char *uri = json_str(res, "uri"), *text = json_str(res, "text");
			if (!uri || !text) {
				snprintf(why, cap, "prompt[%d]: a resource needs uri and text (ward takes no blobs)", i);
				return -1;
			}
			r = buf_printf(b, "%s<file uri=\"%s\">\n%s\n</file>", b->len ? "\n\n" : "", uri, text);
		} else if (type && !strcmp(type, "resource_link") && json_str(c, "uri")) {
			r = buf_printf(b, "%s[%s]", b->len ? "\n\n" : "", json_str(c, "uri"));
		} else {
			snprintf(why, cap, "prompt[%d]: content of type %.40s is not taken (ward takes text, resource and "
					   "resource_link, each with its fields)", i, type ? type : "(none)");
			return -1;
		}
		if (r < 0) {
			snprintf(why, cap, "the prompt is longer than %zu KiB", b->cap >> 10);
			return -1;
		}
		i++;
	}
	if (buf_cstr(b) < 0 || !b->data[strspn(b->data, " \t\r\n")]) {
		snprintf(why, cap, "the prompt is empty");
		return -1;
	}
	return 0;
}
