#include "cmd/mdcode.h"
#include "base/cleanup.h"
#include "base/utf8.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define C_KW "\033[35m"
#define C_STR "\033[32m"
#define C_NUM "\033[36m"
#define C_COM "\033[2;37m"
#define C_ADD "\033[32m"
#define C_DEL "\033[31m"
#define C_HUNK "\033[36m"
#define C_KEY "\033[34m"
#define C_OFF "\033[0m"

enum { L_DIFF = 0 };

struct lang {
	const char *names;	/* space-separated, with a space at each end */
	const char *shown;
	const char *line1, *line2;	/* line comments */
	const char *bopen, *bclose;	/* a block comment */
	bool triple;		/* """ and ''' strings (Python) */
	bool backtick;		/* `...` strings (JavaScript, Go, shell) */
	bool keys;		/* JSON, YAML, TOML: a key before ':' or '=' is coloured */
	const char *kw;		/* space-separated, with a space at each end */
};

static const struct lang langs[] = {
	{ " diff patch udiff ", "diff" },
	{ " py python python3 ", "python", "#", NULL, NULL, NULL, true, false, false,
	  " and as assert async await break class continue def del elif else except False finally for from global if "
	  "import in is lambda None nonlocal not or pass raise return True try while with yield self match case " },
	{ " js javascript jsx mjs cjs ts typescript tsx ", "javascript", "//", NULL, "/*", "*/", false, true, false,
	  " async await break case catch class const continue debugger default delete do else export extends false "
	  "finally for from function if import in instanceof let new null of return super switch this throw true try "
	  "typeof undefined var void while yield interface type enum implements readonly private public protected " },
	{ " c h cpp c++ cc cxx hpp objc ", "c", "//", NULL, "/*", "*/", false, false, false,
	  " auto bool break case char const continue default do double else enum extern false float for goto if "
	  "inline int long NULL nullptr register return short signed sizeof static struct switch true typedef union "
	  "unsigned void volatile while class namespace template typename public private protected virtual "
	  "#include #define #if #ifdef #ifndef #endif #else #pragma size_t " },
	{ " go golang ", "go", "//", NULL, "/*", "*/", false, true, false,
	  " break case chan const continue default defer else fallthrough for func go goto if import interface map "
	  "package range return select struct switch type var nil true false error string int bool " },
	{ " rs rust ", "rust", "//", NULL, "/*", "*/", false, false, false,
	  " as async await break const continue crate else enum extern false fn for if impl in let loop match mod "
	  "move mut pub ref return self Self static struct super trait true type unsafe use where while Some None Ok "
	  "Err String Vec Option Result " },
	{ " java kotlin kt scala swift cs csharp ", "java", "//", NULL, "/*", "*/", false, false, false,
	  " abstract boolean break byte case catch char class const continue default do double else enum extends "
	  "final finally float for if implements import instanceof int interface long new null package private "
	  "protected public return short static super switch this throw throws true false try void while val var fun "
	  "override let func " },
	{ " sh bash shell zsh console shellsession ", "shell", "#", NULL, NULL, NULL, false, true, false,
	  " if then else elif fi for while until do done case esac function in return export local set unset echo "
	  "cd exit source sudo readonly shift trap " },
	{ " json jsonc json5 ", "json", "//", NULL, NULL, NULL, false, false, true, " true false null " },
	{ " yaml yml ", "yaml", "#", NULL, NULL, NULL, false, false, true, " true false null yes no ~ " },
	{ " toml ini cfg conf ", "toml", "#", ";", NULL, NULL, false, false, true, " true false " },
	{ " sql psql mysql sqlite ", "sql", "--", NULL, "/*", "*/", false, false, false,
	  " select from where and or not insert into values update set delete create table drop alter index join "
	  "left right inner outer on group by order having limit offset as null is in exists primary key references "
	  "distinct union all case when then else end begin commit SELECT FROM WHERE AND OR NOT INSERT INTO VALUES "
	  "UPDATE SET DELETE CREATE TABLE DROP ALTER INDEX JOIN LEFT RIGHT INNER OUTER ON GROUP BY ORDER HAVING LIMIT "
	  "AS NULL IS IN EXISTS PRIMARY KEY REFERENCES DISTINCT UNION ALL CASE WHEN THEN ELSE END " },
	{ " rb ruby ", "ruby", "#", NULL, NULL, NULL, false, false, false,
	  " def end if elsif else unless while until for in do return class module require yield nil true false self "
	  "begin rescue ensure raise then puts attr_reader attr_accessor " },
	{ " make makefile mk dockerfile docker ", "make", "#", NULL, NULL, NULL, false, false, false,
	  " FROM RUN COPY ADD ENV WORKDIR CMD ENTRYPOINT ARG EXPOSE USER LABEL VOLUME ifeq ifneq else endif include "
	  "define endef export .PHONY " },
};

static bool word_in(const char *list, const char *w, size_t n)
{
	if (!list || n == 0 || n > 40)
		return false;
	char key[44];
	key[0] = ' ';
	memcpy(key + 1, w, n);
	key[n + 1] = ' ';
	key[n + 2] = 0;
	return strstr(list, key) != NULL;
}

void mdcode_begin(struct mdcode *c, const char *lang, size_t n)
{
	c->lang = -1;
	c->open[0] = 0;
	size_t w = 0;
	while (w < n && !isspace((unsigned char)lang[w]) && lang[w] != '{' && lang[w] != ',')
		w++;
	char low[41];
	if (w == 0 || w > 40)
		return;
	for (size_t i = 0; i < w; i++)
		low[i] = (char)tolower((unsigned char)lang[i]);
	for (size_t i = 0; i < ARRAY_SIZE(langs); i++)
		if (word_in(langs[i].names, low, w)) {
			c->lang = (int)i;
			return;
		}
}

const char *mdcode_name(const struct mdcode *c)
{
	return c->lang >= 0 ? langs[c->lang].shown : NULL;
}

/* n bytes of p, by the terminal rule. */
static void put_safe(struct buf *out, const char *p, size_t n)
{
	struct utf8_term t = { 0 };
	utf8_term_feed(&t, p, n, out);
	utf8_term_end(&t, out);
}

static void put_col(struct buf *out, const char *col, const char *p, size_t n)
{
	if (!n)
		return;
	buf_append(out, col, strlen(col));
	put_safe(out, p, n);
	buf_append(out, C_OFF, strlen(C_OFF));
}

static bool starts(const char *p, size_t n, const char *tok)
{
	size_t k = tok ? strlen(tok) : 0;
	return k && n >= k && !memcmp(p, tok, k);
}

/* Where the string that opens at p (its quote q, tl bytes of it) ends: the
 * bytes it takes, or n when it is still open at the line's end. */
static size_t string_end(const char *p, size_t n, const char *q, size_t tl)
{
	for (size_t i = tl; i < n; i++) {
		if (p[i] == '\\' && tl == 1) {
			i++;
			continue;
		}
		if (n - i >= tl && !memcmp(p + i, q, tl))
			return i + tl;
	}
	return n;
}

static void diff_line(const char *line, size_t n, struct buf *out)
{
	const char *col = NULL;
	if (n && (line[0] == '+' && !starts(line, n, "+++")))
		col = C_ADD;
	else if (n && line[0] == '-' && !starts(line, n, "---"))
		col = C_DEL;
	else if (starts(line, n, "@@"))
		col = C_HUNK;
	else if (starts(line, n, "diff ") || starts(line, n, "+++") || starts(line, n, "---") || starts(line, n, "index "))
		col = "\033[1m";
	if (col)
		put_col(out, col, line, n);
	else
		put_safe(out, line, n);
}

void mdcode_line(struct mdcode *c, const char *line, size_t n, struct buf *out)
{
	if (c->lang < 0) {
		put_safe(out, line, n);
		return;
	}
	if (c->lang == L_DIFF) {
		diff_line(line, n, out);
		return;
	}
	const struct lang *L = &langs[c->lang];
	size_t i = 0;
	/* What the last line left open. */
	if (c->open[0]) {
		const char *end = c->open;
		size_t el = strlen(end);
		const char *hit = NULL;
		for (size_t k = 0; k + el <= n; k++)
			if (!memcmp(line + k, end, el)) {
				hit = line + k;
				break;
			}
		bool str = end[0] == '"' || end[0] == '\'' || end[0] == '`';
		size_t upto = hit ? (size_t)(hit - line) + el : n;
		put_col(out, str ? C_STR : C_COM, line, upto);
		if (!hit)
			return;
		c->open[0] = 0;
		i = upto;
	}
	bool key_pending = L->keys;
	while (i < n) {
		const char *p = line + i;
		size_t left = n - i;
		if (starts(p, left, L->line1) || starts(p, left, L->line2)) {
			/* "#" starts a comment in shell only at a word's start. */
			if (p[0] != '#' || i == 0 || isspace((unsigned char)line[i - 1])) {
				put_col(out, C_COM, p, left);
				return;
			}
		}
		if (starts(p, left, L->bopen)) {
			size_t bl = strlen(L->bopen), el = strlen(L->bclose);
			size_t k = bl;
			while (k + el <= left && memcmp(p + k, L->bclose, el))
				k++;
			if (k + el <= left) {
				put_col(out, C_COM, p, k + el);
				i += k + el;
				continue;
			}
			put_col(out, C_COM, p, left);
			snprintf(c->open, sizeof(c->open), "%s", L->bclose);
			return;
		}
		if (L->triple && (starts(p, left, "\"\"\"") || starts(p, left, "'''"))) {
			char q[4] = { p[0], p[0], p[0], 0 };
			size_t k = string_end(p, left, q, 3);
			put_col(out, C_STR, p, k);
			if (k == left && !(left >= 6 && !memcmp(p + left - 3, q, 3))) {
				memcpy(c->open, q, 4);
				return;
			}
			i += k;
			continue;
		}
		if (*p == '"' || *p == '\'' || (*p == '`' && L->backtick)) {
			char q[2] = { *p, 0 };
			/* An apostrophe inside a word (shell's don't) is not a quote. */
			if (*p == '\'' && i > 0 && isalnum((unsigned char)line[i - 1]) && !L->keys) {
				put_safe(out, p, 1);
				i++;
				continue;
			}
			size_t k = string_end(p, left, q, 1);
			bool is_key = false;
			if (key_pending) {
				size_t j = i + k;
				while (j < n && (line[j] == ' ' || line[j] == '\t'))
					j++;
				is_key = j < n && (line[j] == ':' || line[j] == '=');
			}
			put_col(out, is_key ? C_KEY : C_STR, p, k);
			key_pending = false;
			i += k;
			continue;
		}
		if (isdigit((unsigned char)*p) && (i == 0 || !(isalnum((unsigned char)line[i - 1]) || line[i - 1] == '_'))) {
			size_t k = 0;
			while (k < left && (isalnum((unsigned char)p[k]) || p[k] == '.' || p[k] == '_'))
				k++;
			put_col(out, C_NUM, p, k);
			i += k;
			continue;
		}
		if (isalpha((unsigned char)*p) || *p == '_' || *p == '#' || *p == '.' || *p == '$') {
			size_t k = 1;
			while (k < left && (isalnum((unsigned char)p[k]) || p[k] == '_' || p[k] == '-' || p[k] == '.'))
				k++;
			/* A word ends before a '-' or '.' that does not join two words. */
			while (k > 1 && (p[k - 1] == '-' || p[k - 1] == '.'))
				k--;
			bool is_key = false;
			if (key_pending) {
				size_t j = i + k;
				while (j < n && (line[j] == ' ' || line[j] == '\t'))
					j++;
				is_key = j < n && (line[j] == ':' || line[j] == '=') && (j + 1 >= n || line[j + 1] != ':');
			}
			if (is_key)
				put_col(out, C_KEY, p, k);
			else if (word_in(L->kw, p, k))
				put_col(out, C_KW, p, k);
			else
				put_safe(out, p, k);
			key_pending = false;
			i += k;
			continue;
		}
		if (*p == ',' || *p == '{')
			key_pending = L->keys;
		else if (!isspace((unsigned char)*p) && *p != '-' && *p != '[')
			key_pending = false;
		/* One character, whole (a multi-byte one too). */
		size_t k = utf8_seq_len((const unsigned char *)p, left);
		if (!k)
			k = 1;
		put_safe(out, p, k);
		i += k;
	}
}
