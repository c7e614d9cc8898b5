/* Fuzz target for what ward makes of an MCP server's tools/call result (a
 * message another party wrote, read strictly as the MCP reader reads each
 * one): whatever the message, mcp_result gives the model an object whose
 * text is valid UTF-8 within the cap (head, tail and the line naming the
 * cut), an outcome of ok or failed, and at most MCP_IMAGES_MAX images.
 * Built with libFuzzer when -Dfuzz=true (clang); otherwise main() replays
 * the corpus as a test. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonstrict.h"
#include "base/utf8.h"
#include "mcp/mcp.h"
#include "mcp/mcp-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	cJSON *v = NULL;
	if (jsonstrict_parse(p, size, &v, NULL) == 0) {
		cJSON *out = mcp_result(v, "fuzz", 7);
		if (!cJSON_IsObject(out))
			abort();
		const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out, "text"));
		const char *oc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out, "outcome"));
		if (!text || !*text || !oc || (strcmp(oc, "ok") && strcmp(oc, "failed")))
			abort();
		size_t n = strlen(text);
		if (n > MCP_TEXT_HEAD + MCP_TEXT_TAIL + 512)
			abort();	/* the cap holds, whatever the content */
		for (size_t i = 0; i < n;) {
			size_t k = utf8_seq_len((const unsigned char *)text + i, n - i);
			if (!k)
				abort();	/* the model gets valid UTF-8 */
			i += k;
		}
		if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(out, "images")) > 8)
			abort();
		cJSON_Delete(out);
		cJSON_Delete(v);
	}
	free(p);
	return 0;
}

#include "replay.h"
