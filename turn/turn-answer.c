/* The model's final answer: its text, and with --output-schema the JSON
 * value it must be, checked, sent back once with what was wrong. */
#include "turn/turn-int.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/jsonstrict.h"
#include "turn/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *turn_final_text(const cJSON *messages)
{
	struct buf b;
	buf_init(&b, 16u << 20);
	for (int i = cJSON_GetArraySize(messages) - 1; i >= 0; i--) {
		const cJSON *m = cJSON_GetArrayItem(messages, i);
		const char *role = json_str(m, "role");
		if (!role || strcmp(role, "assistant"))
			continue;
		const cJSON *blk;
		cJSON_ArrayForEach(blk, cJSON_GetObjectItemCaseSensitive(m, "content")) {
			const char *type = json_str(blk, "type"), *text = json_str(blk, "text");
			if (type && !strcmp(type, "text") && text)
				buf_append(&b, text, strlen(text));
		}
		break;
	}
	if (buf_cstr(&b) < 0) {
		buf_free(&b);
		return strdup("");
	}
	return b.data ? b.data : strdup("");
}

/* The answer's JSON: the whole text, or the one fenced block in it
 * (```json ... ```), which models add though told not to. */
static cJSON *answer_parse(const char *text, char *why, size_t cap)
{
	const char *p = text, *end = text + strlen(text);
	const char *fence = strstr(text, "```");
	if (fence) {
		const char *nl = strchr(fence, '\n');
		const char *close = nl ? strstr(nl, "```") : NULL;
		if (nl && close) {
			p = nl + 1;
			end = close;
		}
	}
	/* Strictly (base/jsonstrict.h): an answer with a key given twice
	 * would pass the schema as ward reads it and mean another thing to
	 * whoever reads the result. */
	cJSON *v = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(p, (size_t)(end - p), &v, &pe) < 0) {
		snprintf(why, cap, "it is not JSON: %s", pe.msg);
		return NULL;
	}
	return v;
}

bool turn_answer(struct turn *t, const char *raw)
{
	const struct schema *sc = t->cfg->output_schema;
	if (!sc)
		return false;
	_cleanup_free_ char *text = turn_final_text(t->s->messages);
	char why[600] = "";
	cJSON *v = answer_parse(text, why, sizeof(why));
	char vwhy[560];
	if (v && schema_check(sc, v, vwhy, sizeof(vwhy)) < 0) {
		snprintf(why, sizeof(why), "%s", vwhy);
		cJSON_Delete(v);
		v = NULL;
	}
	if (v) {
		t->stop->output = v;
		turn_finish(t, TURN_DONE, "the model finished (%s) with an answer that matches the output schema", raw);
		return true;
	}
	if (t->answer_retried) {
		turn_finish(t, TURN_OUTPUT_INVALID, "the final answer does not match --output-schema, after one retry: %s",
			    why);
		return true;
	}
	t->answer_retried = true;
	char msg[900];
	snprintf(msg, sizeof(msg),
		 "ward: your final answer does not match the output schema: %s. Reply with only the JSON value "
		 "that matches the schema in your instructions: no other text, no code fence.",
		 why);
	cJSON *m = provider_user_text(msg);
	journal_write(&t->s->j, "message", m);
	cJSON_AddItemToArray(t->s->messages, m);
	turn_start_round(t);
	return true;
}
