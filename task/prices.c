#include "task/prices.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "turn/price.h"

#include <errno.h>
#include <string.h>

static int bad(struct err *e, int code, const char *where, const char *name, const char *what)
{
	_cleanup_free_ char *n = name ? utf8_term_safe(name, strnlen(name, 80)) : NULL;
	return err_set(e, code,
		       "%s\"prices\"%s%s: %s; e.g. {\"prices\": {\"my-model\": {\"input\": 0.5, \"output\": 1.5, "
		       "\"cache_read\": 0.05}}} (USD per million tokens)",
		       where, n ? "." : "", n ? n : "", what);
}

int prices_load(const cJSON *conf, const char *where, struct err *e)
{
	if (!cJSON_IsObject(conf))
		return bad(e, -EINVAL, where, NULL, "must be an object of model families");
	for (const cJSON *m = conf->child; m; m = m->next) {
		if (!*m->string || !cJSON_IsObject(m))
			return bad(e, -EINVAL, where, m->string, "each is a model family's name and an object of prices");
		double v[5] = { -1, -1, -1, -1, -1 };
		static const char *const names[] = { "input", "output", "cache_read", "cache_write", "cache_write_1h" };
		for (const cJSON *f = m->child; f; f = f->next) {
			size_t i = 0;
			while (i < 5 && strcmp(f->string, names[i]))
				i++;
			if (i == 5)
				return bad(e, -EINVAL, where, m->string, "the prices are input, output, cache_read, cache_write and "
							     "cache_write_1h");
			if (!cJSON_IsNumber(f) || f->valuedouble < 0 || f->valuedouble > 1e6)
				return bad(e, -EINVAL, where, m->string, "a price is a number of USD per million tokens, 0 or more");
			v[i] = f->valuedouble;
		}
		if (v[0] < 0 || v[1] < 0)
			return bad(e, -EINVAL, where, m->string, "input and output are needed");
		/* What is not given is taken at the dearest it could be, as
		 * Anthropic prices it: a budget is never spent unseen. */
		struct price p = { v[0], v[1], v[2] >= 0 ? v[2] : v[0], v[3] >= 0 ? v[3] : v[0] * 1.25,
				   v[4] >= 0 ? v[4] : v[0] * 2 };
		if (price_add(m->string, &p) < 0)
			return bad(e, -ENOSPC, where, m->string, "too many model families (at most 32)");
	}
	return 0;
}
