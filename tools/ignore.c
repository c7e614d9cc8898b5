#include "tools/ignore.h"
#include "base/array.h"
#include "tools/glob.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <stdlib.h>
#include <string.h>

struct ignore_rule {
	char *pat;
	bool neg, dir_only, anchored;
};

struct ignore {
	char *base;		/* dir of the .gitignore, relative to the walk root ("" = root) */
	struct ignore_rule *rules;
	size_t n, cap;
	size_t total;		/* rules here and in the levels above */
	struct ignore *parent;
};

/* One line of a .gitignore as a rule; false for a blank line or a comment. */
static bool ignore_parse(char *line, struct ignore_rule *ret)
{
	size_t l = strlen(line);
	if (l && line[l - 1] == '\r')
		line[--l] = 0;
	while (l && line[l - 1] == ' ' && (l < 2 || line[l - 2] != '\\'))
		line[--l] = 0;
	if (!l || line[0] == '#')
		return false;
	struct ignore_rule r = { 0 };
	if (line[0] == '!') {
		r.neg = true;
		line++, l--;
	}
	if (l && line[l - 1] == '/') {
		r.dir_only = true;
		line[--l] = 0;
	}
	if (line[0] == '/') {
		r.anchored = true;
		line++;
	} else if (strchr(line, '/')) {
		r.anchored = true;
	}
	if (!*line)
		return false;
	r.pat = line;
	*ret = r;
	return true;
}

static int ignore_add(struct ignore *ig, const struct ignore_rule *r)
{
	if (array_grow(&ig->rules, &ig->cap, ig->n, sizeof(*ig->rules), 16) < 0)
		return -1;
	char *pat = strdup(r->pat);
	if (!pat)
		return -1;
	ig->rules[ig->n] = *r;
	ig->rules[ig->n++].pat = pat;
	ig->total++;
	return 0;
}

struct ignore *ignore_load(int dirfd, const char *reldir, struct ignore *parent)
{
	_cleanup_free_ char *txt = NULL;
	if (fdio_read_file(dirfd, ".gitignore", 1 << 20, &txt, NULL) < 0)
		return parent;
	struct ignore *ig = calloc(1, sizeof(*ig));
	if (!ig)
		return parent;
	ig->base = strdup(reldir);
	if (!ig->base) {
		free(ig);
		return parent;
	}
	ig->parent = parent;
	ig->total = parent ? parent->total : 0;
	for (char *line = txt, *next; line && *line && ig->total < IGNORE_RULES_MAX; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		struct ignore_rule r;
		if (ignore_parse(line, &r) && ignore_add(ig, &r) < 0)
			break;
	}
	return ig;
}

void ignore_free(struct ignore *ig)
{
	if (!ig)
		return;
	for (size_t i = 0; i < ig->n; i++)
		free(ig->rules[i].pat);
	free(ig->rules);
	free(ig->base);
	free(ig);
}

/* git's rule: the last matching pattern wins, deeper files override. */
bool ignore_match(const struct ignore *ig, const char *relpath, bool is_dir, struct cancel *cancel)
{
	for (; ig; ig = ig->parent) {
		size_t bl = strlen(ig->base);
		const char *rel = relpath;
		if (bl) {
			if (strncmp(relpath, ig->base, bl) || relpath[bl] != '/')
				continue;
			rel = relpath + bl + 1;
		}
		const char *name = strrchr(rel, '/');
		name = name ? name + 1 : rel;
		for (size_t i = ig->n; i-- > 0;) {
			const struct ignore_rule *r = &ig->rules[i];
			if (cancel && cancel_is_set(cancel))
				return false;
			if (r->dir_only && !is_dir)
				continue;
			if (glob_match(r->pat, r->anchored ? rel : name))
				return !r->neg;
		}
	}
	return false;
}
