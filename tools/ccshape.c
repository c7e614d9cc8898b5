/* The table of Claude Code's tool and field names against ward's. Claude
 * Code's tools and their input fields are those its hooks reference
 * documents (Bash: command, timeout in ms, description; Read: file_path,
 * offset, limit; Write: file_path, content; Edit: file_path, old_string,
 * new_string, replace_all; Grep: pattern, path, glob, -i, output_mode,
 * -C, head_limit; Glob: pattern, path; LS: path; BashOutput: bash_id;
 * KillShell: shell_id; Bash's run_in_background). Claude Code's tools that
 * ward has not (MultiEdit, NotebookEdit, WebFetch, WebSearch, Task,
 * TodoWrite) are not here: a matcher naming only them matches no tool.
 * ward's todo takes one string, not TodoWrite's list: hooks see it, as
 * job_list, by ward's own name. */
#include "tools/ccshape.h"

#include <errno.h>

#include <math.h>
#include <stddef.h>
#include <string.h>

struct ccfield {
	const char *ward;	/* NULL: Claude Code's only, dropped on the way back */
	const char *cc;
	double scale;		/* cc = ward * scale; 0: the same value */
	const char *const *values;	/* string values: pairs {ward, cc, ..., NULL} */
};

struct cctool {
	const char *ward, *cc;
	struct ccfield f[8];
};

static const char *const grep_modes[] = { "files", "files_with_matches", NULL };

static const struct cctool table[] = {
	{ "bash", "Bash", { { "timeout", "timeout", 1000, NULL }, { NULL, "description", 0, NULL },
			    { "background", "run_in_background", 0, NULL } } },
	{ "read", "Read", { { "path", "file_path", 0, NULL } } },
	{ "write", "Write", { { "path", "file_path", 0, NULL } } },
	{ "edit", "Edit", { { "path", "file_path", 0, NULL } } },
	{ "grep", "Grep", { { "ignore_case", "-i", 0, NULL }, { "mode", "output_mode", 0, grep_modes },
			    { "context", "-C", 0, NULL }, { "limit", "head_limit", 0, NULL } } },
	{ "find", "Glob", { { NULL, NULL, 0, NULL } } },
	{ "ls", "LS", { { NULL, NULL, 0, NULL } } },
	{ "job_output", "BashOutput", { { "id", "bash_id", 0, NULL } } },
	{ "job_kill", "KillShell", { { "id", "shell_id", 0, NULL } } },
};

#define NTOOLS (sizeof(table) / sizeof(table[0]))

const char *const ccshape_names[] = { "bash", "read", "write", "edit", "grep", "find", "ls", "job_output",
				      "job_kill", "job_list", "todo", "Bash", "Read", "Write", "Edit", "Grep", "Glob", "LS",
				      "BashOutput", "KillShell", NULL };

static const struct cctool *lookup(const char *ward)
{
	for (size_t i = 0; ward && i < NTOOLS; i++)
		if (!strcmp(table[i].ward, ward))
			return &table[i];
	return NULL;
}

const char *ccshape_name(const char *ward)
{
	const struct cctool *t = lookup(ward);
	return t ? t->cc : ward;
}

static const struct ccfield *field(const struct cctool *t, const char *name, bool cc)
{
	for (size_t i = 0; t && i < sizeof(t->f) / sizeof(t->f[0]) && t->f[i].cc; i++) {
		const char *n = cc ? t->f[i].cc : t->f[i].ward;
		if (n && !strcmp(n, name))
			return &t->f[i];
	}
	return NULL;
}

static cJSON *value(const struct ccfield *f, const cJSON *v, bool to_cc)
{
	if (f && f->scale && cJSON_IsNumber(v)) {
		/* Claude Code's milliseconds to ward's seconds round up: a
		 * limit is never made shorter than asked. */
		double x = to_cc ? v->valuedouble * f->scale : ceil(v->valuedouble / f->scale);
		return cJSON_CreateNumber(x);
	}
	if (f && f->values && cJSON_IsString(v))
		for (const char *const *p = f->values; p[0]; p += 2)
			if (!strcmp(v->valuestring, to_cc ? p[0] : p[1]))
				return cJSON_CreateString(to_cc ? p[1] : p[0]);
	return cJSON_Duplicate(v, 1);
}

static int convert(const char *ward, const cJSON *input, bool to_cc, cJSON **ret, struct err *e)
{
	const struct cctool *t = lookup(ward);
	cJSON *o = !cJSON_IsObject(input) || !t ? cJSON_Duplicate(input, 1) : cJSON_CreateObject();
	if (!o)
		return err_set(e, -ENOMEM, "out of memory");
	for (const cJSON *it = t && cJSON_IsObject(input) ? input->child : NULL; it; it = it->next) {
		const struct ccfield *f = field(t, it->string, !to_cc);
		if (!f && !to_cc)
			f = field(t, it->string, false);	/* ward's own name */
		const char *name = !f ? it->string : to_cc ? f->cc : f->ward;
		if (!name)
			continue;	/* Claude Code's only, and it changes nothing */
		/* Both spellings of one field are one field given twice. */
		if (cJSON_GetObjectItemCaseSensitive(o, name)) {
			cJSON_Delete(o);
			return err_set(e, -EINVAL, "the field \"%s\" is given twice (as \"%s\" and \"%s\")", name,
				       f ? f->ward : name, f ? f->cc : name);
		}
		cJSON *v = value(f, it, to_cc);
		if (!v || !cJSON_AddItemToObject(o, name, v)) {
			cJSON_Delete(v);
			cJSON_Delete(o);
			return err_set(e, -ENOMEM, "out of memory");
		}
	}
	*ret = o;
	return 0;
}

cJSON *ccshape_to_cc(const char *ward, const cJSON *input)
{
	cJSON *o = NULL;
	struct err e = { 0 };
	return convert(ward, input, true, &o, &e) < 0 ? NULL : o;
}

int ccshape_from_cc(const char *ward, const cJSON *input, cJSON **ret, struct err *e)
{
	return convert(ward, input, false, ret, e);
}
