/* What the model is told of a tools/call result. */
#include "mcp/mcp.h"
#include "mcp/mcp-int.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Images the model may see in one result; more are described only. */
#define MCP_IMAGES_MAX 8
#define MCP_IMAGE_MAX (5u << 20)

static void add(struct buf *b, const char *s, size_t n)
{
	if (b->len && b->data[b->len - 1] != '\n')
		buf_append(b, "\n", 1);
	buf_append(b, s, n);
}

cJSON *mcp_result(const cJSON *res, const char *server, int64_t elapsed_ms)
{
	struct buf b;
	/* Everything, to be cut to head and tail below: a result is one
	 * message, already in memory (MCP_LINE_MAX bounds it). */
	buf_init(&b, MCP_LINE_MAX);
	cJSON *out = cJSON_CreateObject();
	cJSON *images = NULL;
	char line[300];
	const cJSON *c;
	int n_img = 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(res, "content")) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
		const char *mime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "mimeType"));
		const char *data = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "data"));
		if (!type)
			continue;
		if (!strcmp(type, "text")) {
			const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "text"));
			if (t)
				add(&b, t, strlen(t));
		} else if (!strcmp(type, "image") && mime && data) {
			size_t bytes = strlen(data) / 4 * 3;
			bool shown = n_img < MCP_IMAGES_MAX && strlen(data) <= MCP_IMAGE_MAX &&
				     (!strcmp(mime, "image/png") || !strcmp(mime, "image/jpeg") || !strcmp(mime, "image/gif") ||
				      !strcmp(mime, "image/webp"));
			snprintf(line, sizeof(line), "[image %d: %.40s, about %zu bytes%s]", n_img + 1, mime, bytes,
				 shown ? "; attached where the provider takes images in tool results"
				       : "; not attached (too many, too large, or not PNG, JPEG, GIF or WebP)");
			add(&b, line, strlen(line));
			if (shown) {
				if (!images)
					images = cJSON_AddArrayToObject(out, "images");
				cJSON *im = cJSON_CreateObject();
				cJSON_AddStringToObject(im, "media_type", mime);
				cJSON_AddStringToObject(im, "data", data);
				cJSON_AddItemToArray(images, im);
			}
			n_img++;
		} else if (!strcmp(type, "audio")) {
			snprintf(line, sizeof(line), "[audio: %.40s, about %zu bytes; not passed to the model]",
				 mime ? mime : "unknown type", data ? strlen(data) / 4 * 3 : 0);
			add(&b, line, strlen(line));
		} else if (!strcmp(type, "resource_link")) {
			const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "uri"));
			snprintf(line, sizeof(line), "[resource link: %.200s]", uri ? uri : "");
			add(&b, line, strlen(line));
		} else if (!strcmp(type, "resource")) {
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, "resource");
			const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "uri"));
			const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "text"));
			snprintf(line, sizeof(line), "[resource: %.200s]", uri ? uri : "");
			add(&b, line, strlen(line));
			if (t)
				add(&b, t, strlen(t));
		} else {
			snprintf(line, sizeof(line), "[content of type \"%.40s\", not shown]", type);
			add(&b, line, strlen(line));
		}
	}
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "structuredContent");
	if (st) {
		cJSON_AddItemToObject(out, "structured", cJSON_Duplicate(st, 1));
		/* The specification asks servers to send it as text too; where
		 * one did not, the model gets it so. */
		if (!b.len) {
			_cleanup_free_ char *j = cJSON_PrintUnformatted(st);
			if (j)
				add(&b, j, strlen(j));
		}
	}
	bool is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError"));
	size_t total = b.len;
	struct buf text;
	buf_init(&text, MCP_TEXT_HEAD + MCP_TEXT_TAIL + 512);
	if (is_error) {
		snprintf(line, sizeof(line), "the MCP server \"%s\" reports that the tool failed:\n", server);
		buf_append(&text, line, strlen(line));
	}
	if (total <= MCP_TEXT_HEAD + MCP_TEXT_TAIL) {
		buf_append(&text, b.data ? b.data : "", total);
	} else {
		buf_append(&text, b.data, MCP_TEXT_HEAD);
		snprintf(line, sizeof(line),
			 "\n[ward: the result was %zu bytes; output is capped at %u: the first %u and the last %u are "
			 "shown]\n", total, MCP_TEXT_HEAD + MCP_TEXT_TAIL, MCP_TEXT_HEAD, MCP_TEXT_TAIL);
		buf_append(&text, line, strlen(line));
		buf_append(&text, b.data + total - MCP_TEXT_TAIL, MCP_TEXT_TAIL);
	}
	if (!text.len)
		buf_append(&text, "(the tool returned no content)", 30);
	/* The cut may split a character: the model gets valid UTF-8. */
	_cleanup_free_ char *safe = utf8_dup(text.data, text.len);
	cJSON_AddStringToObject(out, "outcome", is_error ? "failed" : "ok");
	cJSON_AddStringToObject(out, "text", safe ? safe : "");
	cJSON_AddNumberToObject(out, "output_bytes", (double)total);
	cJSON_AddBoolToObject(out, "truncated", total > MCP_TEXT_HEAD + MCP_TEXT_TAIL);
	cJSON_AddNumberToObject(out, "elapsed_ms", (double)elapsed_ms);
	buf_free(&b);
	buf_free(&text);
	return out;
}
