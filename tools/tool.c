#include "tools/tool.h"
#include "tools/bash.h"
#include "tools/job.h"
#include "base/cleanup.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const struct tool *const tool_table[] = {
	&tool_read, &tool_write, &tool_edit, &tool_grep, &tool_find, &tool_ls, &tool_bash,
	&tool_job_output, &tool_job_kill, &tool_job_list, &tool_todo, NULL,
};

const struct tool *tool_lookup(const char *name)
{
	for (const struct tool *const *t = tool_table; *t; t++)
		if (name && !strcmp((*t)->name, name))
			return *t;
	return NULL;
}

const char *tool_call_arg(const cJSON *call)
{
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(call, "input");
	static const char *const keys[] = { "command", "path", "pattern", "description", "prompt" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, keys[i]));
		if (v)
			return v;
	}
	return "";
}

static const char *arg_type_name(enum arg_type t)
{
	return t == ARG_STRING ? "a string" : t == ARG_INT ? "an integer" : "a boolean";
}

int tool_check_args(const struct tool *t, const cJSON *args, struct err *e)
{
	if (!cJSON_IsObject(args))
		return err_set(e, -EINVAL, "%s: arguments must be a JSON object", t->name);
	for (const cJSON *it = args->child; it; it = it->next) {
		const struct arg_spec *s = t->args;
		while (s->name && strcmp(s->name, it->string))
			s++;
		if (!s->name)
			return err_set(e, -EINVAL, "%s: unknown field \"%s\"", t->name, it->string);
		bool ok;
		switch (s->type) {
		case ARG_STRING:
			ok = cJSON_IsString(it);
			break;
		case ARG_BOOL:
			ok = cJSON_IsBool(it);
			break;
		default:
			ok = cJSON_IsNumber(it) && it->valuedouble == floor(it->valuedouble) &&
			     fabs(it->valuedouble) < 9e15;
			break;
		}
		if (!ok)
			return err_set(e, -EINVAL, "%s: field \"%s\" must be %s", t->name, s->name,
				       arg_type_name(s->type));
		if (s->type == ARG_INT && (s->min || s->max)) {
			int64_t v = (int64_t)it->valuedouble;
			if (v < s->min || v > s->max)
				return err_set(e, -ERANGE, "%s: field \"%s\" must be between %lld and %lld, got %lld",
					       t->name, s->name, (long long)s->min, (long long)s->max, (long long)v);
		}
		if (s->type == ARG_STRING && s->choices) {
			const char *const *c = s->choices;
			while (*c && strcmp(*c, it->valuestring))
				c++;
			if (!*c)
				return err_set(e, -EINVAL, "%s: field \"%s\" has unknown value \"%s\"",
					       t->name, s->name, it->valuestring);
		}
		if (s->type == ARG_STRING && strlen(it->valuestring) == 0 && s->required &&
		    strcmp(s->name, "new_string") && strcmp(s->name, "content"))
			return err_set(e, -EINVAL, "%s: field \"%s\" must not be empty", t->name, s->name);
	}
	for (const struct arg_spec *s = t->args; s->name; s++)
		if (s->required && !cJSON_GetObjectItemCaseSensitive(args, s->name))
			return err_set(e, -EINVAL, "%s: missing required field \"%s\"", t->name, s->name);
	return t->check ? t->check(args, e) : 0;
}

cJSON *tool_schema(const struct tool *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "description", t->description);
	cJSON *sch = cJSON_AddObjectToObject(o, "input_schema");
	cJSON_AddStringToObject(sch, "type", "object");
	cJSON *props = cJSON_AddObjectToObject(sch, "properties");
	cJSON *req = cJSON_AddArrayToObject(sch, "required");
	for (const struct arg_spec *s = t->args; s->name; s++) {
		cJSON *p = cJSON_AddObjectToObject(props, s->name);
		cJSON_AddStringToObject(p, "type", s->type == ARG_STRING ? "string" :
					s->type == ARG_INT ? "integer" : "boolean");
		if (s->choices) {
			cJSON *en = cJSON_AddArrayToObject(p, "enum");
			for (const char *const *c = s->choices; *c; c++)
				cJSON_AddItemToArray(en, cJSON_CreateString(*c));
		}
		if (s->required)
			cJSON_AddItemToArray(req, cJSON_CreateString(s->name));
	}
	cJSON_AddBoolToObject(sch, "additionalProperties", 0);
	return o;
}

void tool_result_init(struct tool_result *r)
{
	r->outcome = OUTCOME_OK;
	buf_init(&r->text, TOOL_TEXT_MAX);
}

int tool_result_set(struct tool_result *r, enum outcome o, const char *fmt, ...)
{
	r->outcome = o;
	r->text.len = 0;
	char tmp[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	buf_append(&r->text, tmp, strlen(tmp));
	return 0;
}

cJSON *tool_result_json(const char *outcome, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "outcome", outcome);
	cJSON_AddStringToObject(r, "text", text);
	return r;
}

int64_t tool_limit_ms(const struct tool *t, const cJSON *args)
{
	if (!t || t->inproc)
		return TOOL_FILE_TIMEOUT_MS;
	if (t->job)
		return TOOL_FILE_TIMEOUT_MS + tool_arg_int(args, "wait", 0) * 1000;
	/* Starting a job takes moments; the job's own limit is its own. */
	if (tool_arg_bool(args, "background", false))
		return TOOL_FILE_TIMEOUT_MS;
	return tool_arg_int(args, "timeout", BASH_TIMEOUT_DEFAULT_S) * 1000;
}

int64_t tool_idle_ms(const struct tool *t, const cJSON *args)
{
	return t && !t->inproc && !t->job ? tool_arg_int(args, "idle_timeout", 0) * 1000 : 0;
}

const char *tool_arg_str(const cJSON *args, const char *name, const char *dflt)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(args, name);
	return cJSON_IsString(it) ? it->valuestring : dflt;
}

int64_t tool_arg_int(const cJSON *args, const char *name, int64_t dflt)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(args, name);
	return cJSON_IsNumber(it) ? (int64_t)it->valuedouble : dflt;
}

bool tool_arg_bool(const cJSON *args, const char *name, bool dflt)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(args, name);
	return cJSON_IsBool(it) ? cJSON_IsTrue(it) : dflt;
}
