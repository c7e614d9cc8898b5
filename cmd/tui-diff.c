/* What a write or an edit changes, for its card and its question: the
 * file before (as the box sees it: its copy-on-write layer over the
 * workspace, read on the host), the file after, and a unified diff of
 * the two with line numbers, coloured, every byte term-safe. */
#include "cmd/tui.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "cmd/session.h"
#include "cmd/term.h"
#include "workspace/layers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Lines the diff compares at most on each side (beyond the common head
 * and tail); past that the middle is shown as removed and added. */
#define DIFF_LCS_MAX 2000
#define DIFF_CONTEXT 3

int tui_file_read(struct tui *u, const char *path, char **ret, size_t *len)
{
	if (!u->ws[0] || !u->own_box)
		return -EOPNOTSUPP;
	struct session_ws sw = tui_changes_at(u);
	return session_file_read(&sw, u->f.rw, path, TUI_FILE_MAX, ret, len);
}

struct lines {
	const char **p;
	size_t *n;
	size_t count;
};

static int lines_split(const char *s, size_t len, struct lines *L)
{
	size_t cap = 1;
	for (size_t i = 0; i < len; i++)
		cap += s[i] == '\n';
	L->p = malloc(cap * sizeof(*L->p));
	L->n = malloc(cap * sizeof(*L->n));
	L->count = 0;
	if (!L->p || !L->n)
		return -ENOMEM;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (s + i)) : len - i;
		L->p[L->count] = s + i;
		L->n[L->count++] = l;
		i += l + 1;
	}
	return 0;
}

static void lines_free(struct lines *L)
{
	free(L->p);
	free(L->n);
}

static bool same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->n[i] == b->n[j] && !memcmp(a->p[i], b->p[j], a->n[i]);
}

/* The edit script: for each step, ' ' (both), '-' (a's), '+' (b's). */
static char *script(const struct lines *a, const struct lines *b, size_t *ret_n)
{
	size_t na = a->count, nb = b->count, pre = 0, suf = 0;
	while (pre < na && pre < nb && same(a, pre, b, pre))
		pre++;
	while (suf < na - pre && suf < nb - pre && same(a, na - 1 - suf, b, nb - 1 - suf))
		suf++;
	size_t ma = na - pre - suf, mb = nb - pre - suf;
	char *out = malloc(na + nb + 1);
	if (!out)
		return NULL;
	size_t k = 0;
	memset(out, ' ', pre);
	k = pre;
	if (ma && mb && ma <= DIFF_LCS_MAX && mb <= DIFF_LCS_MAX) {
		/* LCS over the middle, from the end, so the walk goes forward. */
		uint16_t *t = calloc((ma + 1) * (mb + 1), sizeof(*t));
		if (t) {
#define T(i, j) t[(i) * (mb + 1) + (j)]
			for (size_t i = ma; i-- > 0;)
				for (size_t j = mb; j-- > 0;)
					T(i, j) = same(a, pre + i, b, pre + j) ? (uint16_t)(T(i + 1, j + 1) + 1)
									       : MAX(T(i + 1, j), T(i, j + 1));
			size_t i = 0, j = 0;
			while (i < ma || j < mb) {
				if (i < ma && j < mb && same(a, pre + i, b, pre + j)) {
					out[k++] = ' ';
					i++, j++;
				} else if (i < ma && (j == mb || T(i + 1, j) >= T(i, j + 1))) {
					out[k++] = '-';
					i++;
				} else {
					out[k++] = '+';
					j++;
				}
			}
#undef T
			free(t);
			ma = mb = 0;
		}
	}
	memset(out + k, '-', ma);
	k += ma;
	memset(out + k, '+', mb);
	k += mb;
	memset(out + k, ' ', suf);
	k += suf;
	*ret_n = k;
	return out;
}

static void row(struct buf *out, int cols, const char *col, long num, char sign, const char *p, size_t n)
{
	char head[32];
	if (num > 0)
		snprintf(head, sizeof(head), "  %5ld %c ", num, sign);
	else
		snprintf(head, sizeof(head), "        %c ", sign);
	_cleanup_free_ char *safe = utf8_term_safe(p, n);
	const char *s = safe ? safe : "";
	/* Tabs as spaces: a tab's width is the terminal's to choose. */
	struct buf t;
	buf_init(&t, strlen(s) * 4 + 8);
	for (const char *q = s; *q; q++)
		buf_append(&t, *q == '\t' ? "    " : q, *q == '\t' ? 4 : 1);
	size_t room = (size_t)MAX(cols - (int)strlen(head), 4);
	size_t fit = t.len ? term_fit_bytes(t.data, t.len, room) : 0;
	buf_append(out, col, strlen(col));
	buf_append(out, head, strlen(head));
	if (t.len)
		buf_append(out, t.data, fit);
	if (fit < t.len)
		buf_append(out, "…", strlen("…"));
	buf_append(out, RESET "\n", strlen(RESET "\n"));
	buf_free(&t);
}

/* The diff of a and b in hunks with context: rows appended to out. */
static int diff_rows(const char *a, size_t al, const char *b, size_t bl, bool numbered, int cols, int max_rows,
		     struct buf *out, int *ret_add, int *ret_del)
{
	struct lines A = { 0 }, B = { 0 };
	int rows = 0, add = 0, del = 0;
	size_t n = 0;
	char *s = NULL;
	if (lines_split(a, al, &A) < 0 || lines_split(b, bl, &B) < 0 || !(s = script(&A, &B, &n)))
		goto out;
	for (size_t k = 0; k < n; k++) {
		add += s[k] == '+';
		del += s[k] == '-';
	}
	size_t i = 0, j = 0, hidden = 0;
	long last_shown = -1;
	for (size_t k = 0; k < n; k++) {
		/* Shown: a change, or within DIFF_CONTEXT steps of one. */
		bool near = false;
		for (size_t d = k >= DIFF_CONTEXT ? k - DIFF_CONTEXT : 0; d < n && d <= k + DIFF_CONTEXT; d++)
			if (s[d] != ' ') {
				near = true;
				break;
			}
		if (near) {
			if (rows >= max_rows) {
				hidden += s[k] != ' ';
			} else {
				if (last_shown >= 0 && (size_t)last_shown + 1 < k && rows < max_rows) {
					buf_append(out, DIM "        ⋮" UNDIM "\n", strlen(DIM "        ⋮" UNDIM "\n"));
					rows++;
				}
				if (s[k] == ' ')
					row(out, cols, DIM, numbered ? (long)i + 1 : 0, ' ', A.p[i], A.n[i]);
				else if (s[k] == '-')
					row(out, cols, RED, numbered ? (long)i + 1 : 0, '-', A.p[i], A.n[i]);
				else
					row(out, cols, GREEN, numbered ? (long)j + 1 : 0, '+', B.p[j], B.n[j]);
				rows++;
				last_shown = (long)k;
			}
		}
		i += s[k] != '+';
		j += s[k] != '-';
	}
	if (hidden) {
		buf_printf(out, DIM "        … %zu more changed line%s" UNDIM "\n", hidden, hidden == 1 ? "" : "s");
		rows++;
	}
out:
	free(s);
	lines_free(&A);
	lines_free(&B);
	*ret_add = add;
	*ret_del = del;
	return rows;
}

/* before with the edit applied as the edit tool applies it: the first
 * occurrence of old, or every one with replace_all. NULL when old is not
 * in before. */
static char *apply_edit(const char *before, size_t bl, const char *olds, const char *news, bool all, size_t *ret_n)
{
	size_t ol = strlen(olds), nl = strlen(news);
	if (!ol || !memmem(before, bl, olds, ol))
		return NULL;
	struct buf b;
	buf_init(&b, TUI_FILE_MAX * 2 + nl + 16);
	const char *p = before, *end = before + bl;
	for (const char *m; (m = memmem(p, (size_t)(end - p), olds, ol));) {
		buf_append(&b, p, (size_t)(m - p));
		buf_append(&b, news, nl);
		p = m + ol;
		if (!all)
			break;
	}
	buf_append(&b, p, (size_t)(end - p));
	buf_cstr(&b);
	*ret_n = b.len;
	return b.data ? b.data : strdup("");
}

int tui_diff_call(const char *tool, const cJSON *input, const char *before, size_t before_len, int cols,
		  int max_rows, struct buf *out)
{
	int add = 0, del = 0, rows = 0;
	struct buf body;
	buf_init(&body, 1u << 20);
	if (!strcmp(tool, "write")) {
		const char *c = json_str(input, "content") ? json_str(input, "content") : "";
		rows = diff_rows(before ? before : "", before ? before_len : 0, c, strlen(c), true, cols, max_rows, &body,
				 &add, &del);
	} else {
		const char *o = json_str(input, "old_string") ? json_str(input, "old_string") : "";
		const char *nw = json_str(input, "new_string") ? json_str(input, "new_string") : "";
		bool all = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(input, "replace_all"));
		size_t an = 0;
		_cleanup_free_ char *after = before ? apply_edit(before, before_len, o, nw, all, &an) : NULL;
		if (after)
			rows = diff_rows(before, before_len, after, an, true, cols, max_rows, &body, &add, &del);
		else
			rows = diff_rows(o, strlen(o), nw, strlen(nw), false, cols, max_rows, &body, &add, &del);
	}
	buf_printf(out, "  " GREEN "+%d" RESET " " RED "−%d" RESET "\n", add, del);
	if (body.len)
		buf_append(out, body.data, body.len);
	buf_free(&body);
	return rows + 1;
}
