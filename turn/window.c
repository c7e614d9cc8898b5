#include "turn/window.h"
#include "base/cleanup.h"

#include <string.h>

/* Context windows in tokens, by model name prefix: the longest prefix of a
 * family first (gpt-4.1 and gpt-4o before gpt-4). From the providers'
 * model pages; a model with a larger beta window gets its default one. */
static const struct {
	const char *prefix;
	int64_t tokens;
} windows[] = {
	{ "claude-", 200000 },
	{ "gpt-4.1", 1047576 },
	{ "gpt-4o", 128000 },
	{ "gpt-4-turbo", 128000 },
	{ "gpt-4", 8192 },
	{ "gpt-5", 400000 },
	{ "gpt-3.5-turbo", 16385 },
	{ "o1-mini", 128000 },
	{ "o1", 200000 },
	{ "o3", 200000 },
	{ "o4-mini", 200000 },
};

bool window_for(const char *model, int64_t *ret)
{
	if (!model)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(windows); i++)
		if (!strncmp(model, windows[i].prefix, strlen(windows[i].prefix))) {
			*ret = windows[i].tokens;
			return true;
		}
	return false;
}
