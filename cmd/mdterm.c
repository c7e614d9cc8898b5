#include "cmd/mdterm.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "cmd/mdcode.h"
#include "cmd/mdterm-int.h"
#include "cmd/term.h"

#include <md4c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Styles of a piece of inline text. */
enum { S_BOLD = 1, S_DIM = 2, S_ITAL = 4, S_UNDER = 8, S_STRIKE = 16, S_CODE = 32, S_LINK = 64 };
enum { A_WORD, A_SPACE, A_BREAK };

#define MT_DEPTH 32
#define MT_MIN_COLS 8
/* A table needs at least this many columns for each of its columns. */
#define MT_CELL_MIN 3

struct atom {
	size_t off;
	uint32_t len;
	uint16_t cols;
	uint8_t style, kind;
};

struct ctx {
	MD_BLOCKTYPE type;
	char pre1[40], pre2[40];	/* a list item: its first row's prefix, the others' */
	bool used;			/* its first row was written */
	unsigned num;			/* an ordered list: the next item's number */
	bool ordered;
};

struct cell {
	size_t a0, a1;
	unsigned row, col;
	bool head;
};

struct mt {
	int width;
	unsigned base;
	struct buf *out;
	struct buf text;	/* the atoms' bytes, term-safe */
	struct atom *a;
	size_t na, acap;
	unsigned style;
	struct ctx st[MT_DEPTH];
	int depth, lists;
	bool wrote, gap;
	unsigned head_level;
	/* A code block. */
	bool in_code;
	struct buf code;
	struct mdcode mc;
	/* A link: its target, shown after its text when that is not it. */
	char href[1024];
	size_t link_a0;
	/* A table. */
	bool in_table, in_head;
	struct cell *cells;
	size_t ncells, ccap;
	unsigned ncols, row, col;
	MD_ALIGN align[64];
	size_t cell_a0;
};

static void put(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

static void sgr(struct buf *b, unsigned style)
{
	put(b, "\033[0");
	if (style & S_BOLD)
		put(b, ";1");
	if (style & S_DIM)
		put(b, ";2");
	if (style & S_ITAL)
		put(b, ";3");
	if (style & (S_UNDER | S_LINK))
		put(b, ";4");
	if (style & S_STRIKE)
		put(b, ";9");
	if (style & S_CODE)
		put(b, ";36");
	else if (style & S_LINK)
		put(b, ";34");
	put(b, "m");
}

static void atom_add(struct mt *m, int kind, const char *p, size_t n, unsigned style)
{
	if (m->na == m->acap) {
		size_t c = m->acap ? m->acap * 2 : 64;
		struct atom *a = realloc(m->a, c * sizeof(*a));
		if (!a)
			return;
		m->a = a;
		m->acap = c;
	}
	size_t off = m->text.len;
	if (kind == A_WORD) {
		struct utf8_term t = { 0 };
		utf8_term_feed(&t, p, n, &m->text);
		utf8_term_end(&t, &m->text);
	}
	size_t len = m->text.len - off;
	m->a[m->na++] = (struct atom){ .off = off, .len = (uint32_t)len, .kind = (uint8_t)kind,
				       .style = (uint8_t)style,
				       .cols = (uint16_t)MIN(term_cols(m->text.data + off, len), 65535) };
}

/* Inline text: words, and the spaces between them. */
static void inline_text(struct mt *m, const char *p, size_t n, unsigned style)
{
	size_t i = 0;
	while (i < n) {
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\n') {
			while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n'))
				i++;
			if (m->na && m->a[m->na - 1].kind == A_WORD)
				atom_add(m, A_SPACE, " ", 1, style);
			continue;
		}
		size_t j = i;
		while (j < n && p[j] != ' ' && p[j] != '\t' && p[j] != '\n')
			j++;
		atom_add(m, A_WORD, p + i, j - i, style);
		i = j;
	}
}

/* The prefix of the next row: each quote's bar, each list item's bullet
 * (its first row) or indent. */
static size_t prefix(struct mt *m, struct buf *b, bool blank)
{
	size_t cols = 0;
	for (int i = 0; i < m->depth; i++) {
		struct ctx *c = &m->st[i];
		if (c->type == MD_BLOCK_QUOTE) {
			put(b, "\033[2m│\033[0m");
			if (!blank)
				put(b, " ");
			cols += 2;
		} else if (c->type == MD_BLOCK_LI && !blank) {
			const char *s = c->used ? c->pre2 : c->pre1;
			if (!c->used && (m->base & MDTERM_DIM))
				put(b, "\033[2m");
			put(b, s);
			cols += term_cols(s, strlen(s));
		}
	}
	return cols;
}

static int avail(struct mt *m)
{
	int cols = 0;
	for (int i = 0; i < m->depth; i++)
		if (m->st[i].type == MD_BLOCK_QUOTE)
			cols += 2;
		else if (m->st[i].type == MD_BLOCK_LI)
			cols += (int)term_cols(m->st[i].pre2, strlen(m->st[i].pre2));
	return MAX(m->width - cols, MT_MIN_COLS);
}

static void mark_used(struct mt *m)
{
	for (int i = 0; i < m->depth; i++)
		m->st[i].used = true;
}

static void gap(struct mt *m)
{
	if (m->gap && m->wrote) {
		prefix(m, m->out, true);
		put(m->out, "\n");
	}
	m->gap = false;
}

/* Rows of width cols from atoms [a0, a1): each row's text (with its
 * styles, reset at its end) appended to rows, its end offset to ends. */
struct rows {
	struct buf b;
	size_t *ends;
	size_t n, cap;
};

static void rows_end(struct rows *r)
{
	if (r->n == r->cap) {
		size_t c = r->cap ? r->cap * 2 : 16;
		size_t *e = realloc(r->ends, c * sizeof(*e));
		if (!e)
			return;
		r->ends = e;
		r->cap = c;
	}
	r->ends[r->n++] = r->b.len;
}

static void rows_free(struct rows *r)
{
	buf_free(&r->b);
	free(r->ends);
}

static void wrap(struct mt *m, size_t a0, size_t a1, int cols, unsigned extra, struct rows *r)
{
	int used = 0;
	bool any = false;
	unsigned cur = 0xffff;
	size_t i = a0;
	while (i < a1) {
		struct atom *a = &m->a[i];
		if (a->kind == A_BREAK) {
			put(&r->b, "\033[0m");
			rows_end(r);
			cur = 0xffff;
			used = 0;
			any = true;
			i++;
			continue;
		}
		if (a->kind == A_SPACE) {
			i++;
			continue;
		}
		/* A word: the atoms up to the next space or break. */
		size_t j = i;
		int w = 0;
		while (j < a1 && m->a[j].kind == A_WORD)
			w += m->a[j++].cols;
		bool space = i > a0 && m->a[i - 1].kind == A_SPACE && used > 0;
		if (used > 0 && used + space + w > cols) {
			put(&r->b, "\033[0m");
			rows_end(r);
			cur = 0xffff;
			used = 0;
			space = false;
		}
		if (space) {
			unsigned st = m->a[i - 1].style | extra;
			if (st != cur)
				sgr(&r->b, cur = st);
			put(&r->b, " ");
			used++;
		}
		for (size_t k = i; k < j; k++) {
			struct atom *t = &m->a[k];
			unsigned st = t->style | extra;
			if (st != cur)
				sgr(&r->b, cur = st);
			const char *p = m->text.data + t->off;
			size_t n = t->len;
			/* A word wider than a row is cut where the row ends. */
			while (used + (int)term_cols(p, n) > cols) {
				size_t fit = term_fit_bytes(p, n, (size_t)(cols - used));
				if (fit == 0 && used == 0)
					fit = n;	/* one character wider than the row */
				buf_append(&r->b, p, fit);
				put(&r->b, "\033[0m");
				rows_end(r);
				sgr(&r->b, cur);
				used = 0;
				p += fit;
				n -= fit;
			}
			buf_append(&r->b, p, n);
			used += (int)term_cols(p, n);
		}
		any = true;
		i = j;
	}
	if (used > 0 || !any) {
		put(&r->b, "\033[0m");
		rows_end(r);
	}
}

/* The inline text gathered so far, as rows under the prefixes. */
static void flush(struct mt *m)
{
	if (m->in_table || m->na == 0) {
		if (!m->in_table)
			m->text.len = 0;
		return;
	}
	gap(m);
	unsigned extra = m->head_level ? S_BOLD | (m->head_level == 1 ? S_UNDER : 0) : 0;
	if (m->base & MDTERM_DIM)
		extra |= S_DIM;
	struct rows r = { 0 };
	buf_init(&r.b, SIZE_MAX / 2);
	wrap(m, 0, m->na, avail(m), extra, &r);
	for (size_t i = 0, from = 0; i < r.n; from = r.ends[i++]) {
		prefix(m, m->out, false);
		buf_append(m->out, r.b.data + from, r.ends[i] - from);
		put(m->out, "\n");
		mark_used(m);
	}
	m->wrote = true;
	rows_free(&r);
	m->na = 0;
	m->text.len = 0;
}

/* One line of a code block, coloured, in rows under the prefixes. */
static void code_rows(struct mt *m, struct mdcode *mc, const char *line, size_t n)
{
	struct buf c;
	buf_init(&c, SIZE_MAX / 2);
	mdcode_line(mc, line, n, &c);
	int cols = MAX(avail(m) - 2, MT_MIN_COLS);
	const char *p = c.data ? c.data : "";
	size_t left = c.len;
	char last[32] = "";
	do {
		size_t fit = term_fit_bytes(p, left, (size_t)cols);
		if (fit == 0 && left)
			fit = left;
		prefix(m, m->out, false);
		put(m->out, "\033[2m│\033[0m ");
		put(m->out, last);
		buf_append(m->out, p, fit);
		put(m->out, "\033[0m\n");
		mark_used(m);
		/* The colour a cut row was in goes on in the next. */
		for (size_t i = 0; i < fit; i++)
			if (p[i] == 033) {
				size_t e = i + 1;
				while (e < fit && p[e] != 'm')
					e++;
				snprintf(last, sizeof(last), "%.*s", (int)MIN(e + 1 - i, sizeof(last) - 1), p + i);
			}
		p += fit;
		left -= fit;
	} while (left);
	buf_free(&c);
}

static void code_head(struct mt *m, struct mdcode *mc)
{
	prefix(m, m->out, false);
	const char *name = mdcode_name(mc);
	put(m->out, "\033[2m╭─");
	if (name) {
		put(m->out, " ");
		put(m->out, name);
	}
	put(m->out, "\033[0m\n");
	mark_used(m);
	m->wrote = true;
}

static void code_foot(struct mt *m)
{
	prefix(m, m->out, false);
	put(m->out, "\033[2m╰─\033[0m\n");
}

static void code_block(struct mt *m)
{
	code_head(m, &m->mc);
	const char *p = m->code.data ? m->code.data : "";
	size_t n = m->code.len;
	if (n && p[n - 1] == '\n')
		n--;
	for (size_t i = 0; i <= n;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t l = nl ? (size_t)(nl - (p + i)) : n - i;
		code_rows(m, &m->mc, p + i, l);
		i += l + 1;
		if (!nl)
			break;
	}
	code_foot(m);
	m->code.len = 0;
}

/* A table: column widths from the cells, shrunk to the width, cells
 * wrapped; one cell a line where the columns cannot fit. */
static void table_rows(struct mt *m, unsigned ncols, int *w, unsigned rows)
{
	const char *V = "\033[2m│\033[0m";
	for (unsigned r = 0; r <= rows; r++) {
		struct rows cr[64] = { 0 };
		size_t h = 0;
		bool head = false;
		for (size_t i = 0; i < m->ncells; i++) {
			struct cell *c = &m->cells[i];
			if (c->row != r || c->col >= ncols)
				continue;
			head = c->head;
			buf_init(&cr[c->col].b, SIZE_MAX / 2);
			wrap(m, c->a0, c->a1, w[c->col], c->head ? S_BOLD : 0, &cr[c->col]);
			h = MAX(h, cr[c->col].n);
		}
		if (h == 0)
			continue;
		for (size_t line = 0; line < h; line++) {
			prefix(m, m->out, false);
			put(m->out, V);
			for (unsigned c = 0; c < ncols; c++) {
				size_t from = line && line <= cr[c].n ? cr[c].ends[line - 1] : 0;
				size_t to = line < cr[c].n ? cr[c].ends[line] : from;
				const char *s = cr[c].b.data ? cr[c].b.data + from : "";
				int sc = (int)term_cols(s, to - from);
				int padl = 0, padr = w[c] - sc;
				MD_ALIGN al = c < ARRAY_SIZE(m->align) ? m->align[c] : MD_ALIGN_DEFAULT;
				if (al == MD_ALIGN_RIGHT)
					padl = padr, padr = 0;
				else if (al == MD_ALIGN_CENTER)
					padl = padr / 2, padr -= padl;
				buf_printf(m->out, " %*s", padl, "");
				buf_append(m->out, s, to - from);
				buf_printf(m->out, "%*s %s", padr, "", V);
			}
			put(m->out, "\n");
		}
		for (unsigned c = 0; c < ncols; c++)
			rows_free(&cr[c]);
		if (head) {
			prefix(m, m->out, false);
			put(m->out, "\033[2m├");
			for (unsigned c = 0; c < ncols; c++) {
				for (int k = 0; k < w[c] + 2; k++)
					put(m->out, "─");
				put(m->out, c + 1 < ncols ? "┼" : "┤");
			}
			put(m->out, "\033[0m\n");
		}
	}
}

static void table_border(struct mt *m, unsigned ncols, const int *w, const char *l, const char *mid, const char *r)
{
	prefix(m, m->out, false);
	put(m->out, "\033[2m");
	put(m->out, l);
	for (unsigned c = 0; c < ncols; c++) {
		for (int k = 0; k < w[c] + 2; k++)
			put(m->out, "─");
		put(m->out, c + 1 < ncols ? mid : r);
	}
	put(m->out, "\033[0m\n");
}

static void table(struct mt *m)
{
	unsigned ncols = MIN(m->ncols, 64u), rows = 0;
	int nat[64] = { 0 }, minw[64] = { 0 }, w[64];
	for (size_t i = 0; i < m->ncells; i++) {
		struct cell *c = &m->cells[i];
		if (c->col >= ncols)
			continue;
		rows = MAX(rows, c->row);
		int line = 0, word = 0;
		for (size_t k = c->a0; k < c->a1; k++) {
			struct atom *a = &m->a[k];
			line += a->kind == A_BREAK ? 0 : a->kind == A_SPACE ? 1 : a->cols;
			word = a->kind == A_WORD ? word + a->cols : 0;
			minw[c->col] = MAX(minw[c->col], MIN(word, 16));
		}
		nat[c->col] = MAX(nat[c->col], line);
	}
	int room = avail(m) - (int)(3 * ncols + 1);
	int sum = 0;
	for (unsigned c = 0; c < ncols; c++) {
		nat[c] = MAX(nat[c], 1);
		sum += nat[c];
	}
	gap(m);
	m->wrote = true;
	if (room < (int)ncols * MT_CELL_MIN) {
		/* Too narrow for columns: each row's cells, one a line, under
		 * their header. */
		for (unsigned r = 1; r <= rows; r++) {
			for (unsigned c = 0; c < ncols; c++) {
				struct cell *hd = NULL, *cl = NULL;
				for (size_t i = 0; i < m->ncells; i++) {
					if (m->cells[i].col != c)
						continue;
					if (m->cells[i].row == 0)
						hd = &m->cells[i];
					if (m->cells[i].row == r)
						cl = &m->cells[i];
				}
				struct rows rr = { 0 };
				buf_init(&rr.b, SIZE_MAX / 2);
				if (hd)
					wrap(m, hd->a0, hd->a1, avail(m), S_BOLD, &rr);
				size_t nh = rr.n;
				if (cl)
					wrap(m, cl->a0, cl->a1, MAX(avail(m) - 2, MT_MIN_COLS), 0, &rr);
				for (size_t i = 0, from = 0; i < rr.n; from = rr.ends[i++]) {
					prefix(m, m->out, false);
					if (i >= nh)
						put(m->out, "  ");
					buf_append(m->out, rr.b.data + from, rr.ends[i] - from);
					put(m->out, "\n");
				}
				rows_free(&rr);
			}
			if (r < rows) {
				prefix(m, m->out, true);
				put(m->out, "\n");
			}
		}
		return;
	}
	if (sum <= room) {
		memcpy(w, nat, sizeof(w));
	} else {
		/* Each column its natural width up to a fair share; what is left
		 * goes to those that want more. */
		int left = room;
		unsigned want = ncols;
		bool done[64] = { false };
		for (unsigned c = 0; c < ncols; c++)
			w[c] = 0;
		while (want && left > 0) {
			int share = MAX(left / (int)want, 1);
			bool moved = false;
			for (unsigned c = 0; c < ncols && left > 0; c++) {
				if (done[c])
					continue;
				int add = MIN(share, nat[c] - w[c]);
				w[c] += add;
				left -= add;
				moved |= add > 0;
				if (w[c] >= nat[c]) {
					done[c] = true;
					want--;
				}
			}
			if (!moved)
				break;
		}
		for (unsigned c = 0; c < ncols; c++)
			w[c] = MAX(w[c], MT_CELL_MIN);
	}
	table_border(m, ncols, w, "┌", "┬", "┐");
	table_rows(m, ncols, w, rows);
	table_border(m, ncols, w, "└", "┴", "┘");
}

static void entity(struct mt *m, const char *p, size_t n)
{
	static const struct {
		const char *e, *s;
	} ents[] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" }, { "&apos;", "'" },
		     { "&nbsp;", " " }, { "&copy;", "©" }, { "&mdash;", "—" }, { "&ndash;", "–" }, { "&hellip;", "…" } };
	for (size_t i = 0; i < ARRAY_SIZE(ents); i++)
		if (strlen(ents[i].e) == n && !memcmp(ents[i].e, p, n)) {
			atom_add(m, A_WORD, ents[i].s, strlen(ents[i].s), m->style);
			return;
		}
	if (n > 3 && p[1] == '#') {
		unsigned long cp = p[2] == 'x' || p[2] == 'X' ? strtoul(p + 3, NULL, 16) : strtoul(p + 2, NULL, 10);
		char u[5] = { 0 };
		if (cp >= 0x20 && cp < 0x80) {
			u[0] = (char)cp;
		} else if (cp >= 0x80 && cp < 0x800) {
			u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f));
		} else if (cp >= 0x800 && cp < 0x10000 && (cp < 0xd800 || cp > 0xdfff)) {
			u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[2] = (char)(0x80 | (cp & 0x3f));
		} else if (cp >= 0x10000 && cp < 0x110000) {
			u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
			u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f));
		}
		if (u[0]) {
			atom_add(m, A_WORD, u, strlen(u), m->style);
			return;
		}
	}
	atom_add(m, A_WORD, p, n, m->style);
}

static int on_text(MD_TEXTTYPE type, const MD_CHAR *p, MD_SIZE n, void *ud)
{
	struct mt *m = ud;
	if (m->in_code) {
		buf_append(&m->code, p, n);
		return 0;
	}
	switch (type) {
	case MD_TEXT_BR:
	case MD_TEXT_SOFTBR:
		atom_add(m, A_BREAK, "", 0, m->style);
		break;
	case MD_TEXT_NULLCHAR:
		atom_add(m, A_WORD, "^@", 2, m->style);	/* as the rule shows NUL */
		break;
	case MD_TEXT_ENTITY:
		entity(m, p, n);
		break;
	case MD_TEXT_CODE:
		/* An inline code span keeps its spaces. */
		for (size_t i = 0; i < n;) {
			size_t j = i;
			while (j < n && p[j] != ' ')
				j++;
			if (j > i)
				atom_add(m, A_WORD, p + i, j - i, m->style);
			if (j < n)
				atom_add(m, A_WORD, " ", 1, m->style);
			i = j + (j < n);
		}
		break;
	case MD_TEXT_HTML:
		inline_text(m, p, n, m->style | S_DIM);
		break;
	default:
		inline_text(m, p, n, m->style);
		break;
	}
	return 0;
}

static void push(struct mt *m, MD_BLOCKTYPE type)
{
	if (m->depth < MT_DEPTH)
		m->st[m->depth] = (struct ctx){ .type = type };
	m->depth++;
}

static int on_enter(MD_BLOCKTYPE type, void *detail, void *ud)
{
	struct mt *m = ud;
	if (type != MD_BLOCK_TH && type != MD_BLOCK_TD && type != MD_BLOCK_TR && type != MD_BLOCK_THEAD &&
	    type != MD_BLOCK_TBODY)
		flush(m);
	switch (type) {
	case MD_BLOCK_QUOTE:
		gap(m);
		push(m, type);
		break;
	case MD_BLOCK_UL:
	case MD_BLOCK_OL: {
		if (m->lists == 0)
			gap(m);
		else
			m->gap = false;
		push(m, type);
		m->lists++;
		if (m->depth <= MT_DEPTH && type == MD_BLOCK_OL) {
			m->st[m->depth - 1].ordered = true;
			m->st[m->depth - 1].num = ((MD_BLOCK_OL_DETAIL *)detail)->start;
		}
		break;
	}
	case MD_BLOCK_LI: {
		struct ctx *l = NULL;
		if (m->depth > 0 && m->depth <= MT_DEPTH)
			l = &m->st[m->depth - 1];
		push(m, type);
		if (m->depth > MT_DEPTH)
			break;
		struct ctx *c = &m->st[m->depth - 1];
		MD_BLOCK_LI_DETAIL *d = detail;
		static const char *const bullets[] = { "•", "◦", "▪" };
		char mark[24];
		if (l && l->ordered)
			snprintf(mark, sizeof(mark), "%u.", l->num++);
		else
			snprintf(mark, sizeof(mark), "%s", bullets[(m->lists - 1) % 3]);
		if (d->is_task)
			snprintf(mark + strlen(mark), sizeof(mark) - strlen(mark), " %s", d->task_mark == ' ' ? "☐" : "☑");
		snprintf(c->pre1, sizeof(c->pre1), "%s ", mark);
		size_t w = term_cols(c->pre1, strlen(c->pre1));
		snprintf(c->pre2, sizeof(c->pre2), "%*s", (int)MIN(w, 30), "");
		break;
	}
	case MD_BLOCK_HR: {
		gap(m);
		prefix(m, m->out, false);
		put(m->out, "\033[2m");
		for (int i = 0; i < MIN(avail(m), 60); i++)
			put(m->out, "─");
		put(m->out, "\033[0m\n");
		m->wrote = true;
		m->gap = true;
		break;
	}
	case MD_BLOCK_H:
		gap(m);
		m->head_level = ((MD_BLOCK_H_DETAIL *)detail)->level;
		break;
	case MD_BLOCK_CODE: {
		gap(m);
		MD_BLOCK_CODE_DETAIL *d = detail;
		mdcode_begin(&m->mc, d->lang.text ? d->lang.text : "", d->lang.size);
		m->in_code = true;
		m->code.len = 0;
		break;
	}
	case MD_BLOCK_P:
	case MD_BLOCK_HTML:
		gap(m);
		break;
	case MD_BLOCK_TABLE:
		m->in_table = true;
		m->ncols = ((MD_BLOCK_TABLE_DETAIL *)detail)->col_count;
		m->ncells = 0;
		m->row = 0;
		memset(m->align, 0, sizeof(m->align));
		break;
	case MD_BLOCK_THEAD:
		m->in_head = true;
		break;
	case MD_BLOCK_TR:
		m->col = 0;
		break;
	case MD_BLOCK_TH:
	case MD_BLOCK_TD:
		if (m->col < ARRAY_SIZE(m->align) && m->row == 0)
			m->align[m->col] = ((MD_BLOCK_TD_DETAIL *)detail)->align;
		m->cell_a0 = m->na;
		break;
	default:
		break;
	}
	return 0;
}

static int on_leave(MD_BLOCKTYPE type, void *detail, void *ud)
{
	struct mt *m = ud;
	switch (type) {
	case MD_BLOCK_CODE:
		m->in_code = false;
		code_block(m);
		m->gap = true;
		break;
	case MD_BLOCK_TH:
	case MD_BLOCK_TD:
		if (m->ncells == m->ccap) {
			size_t c = m->ccap ? m->ccap * 2 : 32;
			struct cell *n = realloc(m->cells, c * sizeof(*n));
			if (!n)
				break;
			m->cells = n;
			m->ccap = c;
		}
		m->cells[m->ncells++] = (struct cell){ .a0 = m->cell_a0, .a1 = m->na, .row = m->row, .col = m->col,
						       .head = type == MD_BLOCK_TH };
		m->col++;
		break;
	case MD_BLOCK_TR:
		m->row++;
		break;
	case MD_BLOCK_THEAD:
		m->in_head = false;
		break;
	case MD_BLOCK_TABLE:
		table(m);
		m->in_table = false;
		m->na = 0;
		m->text.len = 0;
		m->gap = true;
		break;
	case MD_BLOCK_TBODY:
		break;
	default:
		flush(m);
		if (type == MD_BLOCK_H)
			m->head_level = 0;
		if (type == MD_BLOCK_QUOTE || type == MD_BLOCK_UL || type == MD_BLOCK_OL || type == MD_BLOCK_LI) {
			if (type == MD_BLOCK_UL || type == MD_BLOCK_OL)
				m->lists--;
			m->depth--;
		}
		if (type != MD_BLOCK_LI && (type != MD_BLOCK_UL && type != MD_BLOCK_OL ? true : m->lists == 0))
			m->gap = true;
		break;
	}
	(void)detail;
	return 0;
}

static int on_enter_span(MD_SPANTYPE type, void *detail, void *ud)
{
	struct mt *m = ud;
	switch (type) {
	case MD_SPAN_EM:
		m->style |= S_ITAL;
		break;
	case MD_SPAN_STRONG:
		m->style |= S_BOLD;
		break;
	case MD_SPAN_DEL:
		m->style |= S_STRIKE;
		break;
	case MD_SPAN_CODE:
		m->style |= S_CODE;
		break;
	case MD_SPAN_U:
		m->style |= S_UNDER;
		break;
	case MD_SPAN_A: {
		MD_SPAN_A_DETAIL *d = detail;
		snprintf(m->href, sizeof(m->href), "%.*s", (int)MIN(d->href.size, sizeof(m->href) - 1),
			 d->href.text ? d->href.text : "");
		m->link_a0 = m->na;
		m->style |= S_LINK;
		break;
	}
	case MD_SPAN_IMG: {
		MD_SPAN_IMG_DETAIL *d = detail;
		snprintf(m->href, sizeof(m->href), "%.*s", (int)MIN(d->src.size, sizeof(m->href) - 1),
			 d->src.text ? d->src.text : "");
		m->link_a0 = m->na;
		atom_add(m, A_WORD, "[image:", 7, m->style | S_DIM);
		atom_add(m, A_SPACE, " ", 1, m->style);
		break;
	}
	default:
		break;
	}
	return 0;
}

static int on_leave_span(MD_SPANTYPE type, void *detail, void *ud)
{
	struct mt *m = ud;
	switch (type) {
	case MD_SPAN_EM:
		m->style &= ~(unsigned)S_ITAL;
		break;
	case MD_SPAN_STRONG:
		m->style &= ~(unsigned)S_BOLD;
		break;
	case MD_SPAN_DEL:
		m->style &= ~(unsigned)S_STRIKE;
		break;
	case MD_SPAN_CODE:
		m->style &= ~(unsigned)S_CODE;
		break;
	case MD_SPAN_U:
		m->style &= ~(unsigned)S_UNDER;
		break;
	case MD_SPAN_A:
	case MD_SPAN_IMG: {
		m->style &= ~(unsigned)S_LINK;
		if (type == MD_SPAN_IMG)
			atom_add(m, A_WORD, "]", 1, m->style | S_DIM);
		/* The text, then the target unless the text is the target. */
		struct buf t;
		buf_init(&t, 4096);
		for (size_t i = m->link_a0; i < m->na; i++)
			buf_append(&t, m->text.data + m->a[i].off, m->a[i].len);
		_cleanup_free_ char *h = utf8_term_safe(m->href, strlen(m->href));
		const char *hs = h ? h : "";
		const char *bare = !strncmp(hs, "mailto:", 7) ? hs + 7 : hs;
		bool same = t.len == strlen(bare) && !memcmp(t.data, bare, t.len);
		if (*hs && !same) {
			atom_add(m, A_SPACE, " ", 1, m->style);
			char *wrapd = NULL;
			if (asprintf(&wrapd, "(%s)", m->href) >= 0)
				atom_add(m, A_WORD, wrapd, strlen(wrapd), m->style | S_DIM);
			free(wrapd);
		}
		buf_free(&t);
		break;
	}
	default:
		break;
	}
	(void)detail;
	return 0;
}

void mdterm_render(const char *src, size_t n, int width, unsigned base, struct buf *out)
{
	struct mt m = { .width = MAX(width, MT_MIN_COLS), .base = base, .out = out };
	buf_init(&m.text, SIZE_MAX / 2);
	buf_init(&m.code, SIZE_MAX / 2);
	m.style = base & MDTERM_DIM ? S_DIM : 0;
	MD_PARSER p = {
		.flags = MD_DIALECT_GITHUB | MD_FLAG_NOINDENTEDCODEBLOCKS,
		.enter_block = on_enter,
		.leave_block = on_leave,
		.enter_span = on_enter_span,
		.leave_span = on_leave_span,
		.text = on_text,
	};
	/* CR is a line end to markdown, and a control to the terminal rule:
	 * one of CR LF is the line end, a lone one is shown as the rule shows
	 * it (^M), so it can start no line that looks like ward's. */
	struct buf in;
	buf_init(&in, n * 2 + 1);
	for (size_t i = 0, from = 0; i <= n; i++) {
		if (i < n && src[i] != '\r')
			continue;
		buf_append(&in, src + from, i - from);
		if (i < n && !(i + 1 < n && src[i + 1] == '\n'))
			buf_append(&in, "^M", 2);
		from = i + 1;
	}
	if (md_parse(in.data ? in.data : "", (MD_SIZE)MIN(in.len, (size_t)UINT32_MAX), &p, &m) != 0)
		flush(&m);
	buf_free(&in);
	free(m.a);
	free(m.cells);
	buf_free(&m.text);
	buf_free(&m.code);
}

/* For the stream's own fences (cmd/mdterm-stream.c): at the top level. */
void mdterm_fence_head(struct mdcode *mc, int width, unsigned base, struct buf *out)
{
	struct mt m = { .width = MAX(width, MT_MIN_COLS), .base = base, .out = out };
	code_head(&m, mc);
}

void mdterm_fence_line(struct mdcode *mc, const char *line, size_t n, int width, unsigned base, struct buf *out)
{
	struct mt m = { .width = MAX(width, MT_MIN_COLS), .base = base, .out = out };
	code_rows(&m, mc, line, n);
}

void mdterm_fence_foot(struct buf *out)
{
	struct mt m = { .width = MT_MIN_COLS, .out = out };
	code_foot(&m);
}
