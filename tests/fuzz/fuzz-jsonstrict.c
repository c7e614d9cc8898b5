/* Fuzz target for the one JSON reader that what other parties send goes
 * through (MCP servers, hooks, ACP clients, task and config files,
 * providers' answers): whatever the bytes, jsonstrict_parse stays within
 * them and either refuses with a message or gives one value; a value it
 * gives, written back by jsonprint_text, reads back to the same text (one
 * meaning: no key twice, no number that changed, no string cut at a NUL),
 * and cJSON's own lenient parser reads that text as the same value too.
 * Built with libFuzzer when -Dfuzz=true (clang); otherwise main() replays
 * the corpus as a test. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonprint.h"
#include "base/jsonstrict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy, so a sanitizer sees any overread. */
	char *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	cJSON *v = NULL;
	struct err e = { 0 };
	int r = jsonstrict_parse(p, size, &v, &e);
	if (r < 0) {
		if (v || !e.msg[0] || (r != -EINVAL && r != -E2BIG && r != -ENOMEM))
			abort();	/* a refusal says why, and gives nothing */
	} else {
		char *t = jsonprint_text(v);
		if (!t)
			abort();
		cJSON *w = NULL;
		struct err e2 = { 0 };
		if (jsonstrict_parse(t, strlen(t), &w, &e2) < 0)
			abort();	/* what it writes, it reads */
		char *t2 = jsonprint_text(w);
		if (!t2 || strcmp(t, t2))
			abort();	/* and reads as the same value */
		cJSON *lenient = cJSON_ParseWithLength(t, strlen(t));
		if (!lenient || !cJSON_Compare(lenient, v, 1))
			abort();	/* the lenient reader agrees on the written text */
		cJSON_Delete(lenient);
		free(t2);
		cJSON_Delete(w);
		free(t);
		cJSON_Delete(v);
	}
	free(p);
	return 0;
}

#include "replay.h"
