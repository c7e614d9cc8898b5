#include "cmd/edit.h"
#include "base/cleanup.h"

#include <dlfcn.h>
#include <errno.h>
#include <histedit.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#define EDIT_HISTORY_MAX 1000

/* libedit's entry points, found at run time. */
static struct {
	__typeof__(el_init) *el_init;
	__typeof__(el_end) *el_end;
	__typeof__(el_gets) *el_gets;
	__typeof__(el_set) *el_set;
	__typeof__(el_resize) *el_resize;
	__typeof__(history_init) *history_init;
	__typeof__(history_end) *history_end;
	__typeof__(history) *history;
	__typeof__(el_line) *el_line;
} ed_lib;

static int edit_load(struct err *e)
{
	static int loaded;
	if (loaded)
		return loaded > 0 ? 0 : err_set(e, -ENOENT, "cannot load libedit.so.2 (install the libedit2 package)");
	loaded = -1;
	void *h = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return err_set(e, -ENOENT, "cannot load libedit.so.2 (install the libedit2 package)");
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f) { #f, offsetof(__typeof__(ed_lib), f) }
		SYM(el_init), SYM(el_end), SYM(el_gets), SYM(el_set), SYM(el_resize),
		SYM(history_init), SYM(history_end), SYM(history), SYM(el_line),
#undef SYM
	};
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f)
			return err_set(e, -ENOSYS, "libedit.so.2 has no %s; it is too old", syms[i].name);
		memcpy((char *)&ed_lib + syms[i].off, &f, sizeof(f));
	}
	loaded = 1;
	return 0;
}

struct editor {
	EditLine *el;
	History *hist;
	char *hist_path;
	edit_byte_fn *byte;
	void *ud;
	char prompt[512];
	mbstate_t mb;
};

/* el_set's EL_CLIENTDATA is read back with el_get, which we do not load;
 * one editor exists at a time, so a static pointer does. */
static struct editor *ed_cur;

static char *ed_prompt_fn(EditLine *el)
{
	return ed_cur ? ed_cur->prompt : (char *)"";
}

/* Bytes to wide characters for libedit, one character per call. */
static int ed_getc(EditLine *el, wchar_t *wc)
{
	struct editor *ed = ed_cur;
	for (;;) {
		unsigned char c;
		if (!ed || ed->byte(ed->ud, &c) <= 0)
			return 0;
		char b = (char)c;
		size_t r = mbrtowc(wc, &b, 1, &ed->mb);
		if (r == (size_t)-2)
			continue;	/* more bytes of this character */
		if (r == (size_t)-1) {
			memset(&ed->mb, 0, sizeof(ed->mb));
			*wc = 0xfffd;
		}
		return 1;
	}
}

const char *editor_buffer(struct editor *ed, size_t *cursor, size_t *len)
{
	const LineInfo *li = ed_lib.el_line(ed->el);
	if (!li) {
		*cursor = *len = 0;
		return "";
	}
	*cursor = (size_t)(li->cursor - li->buffer);
	*len = (size_t)(li->lastchar - li->buffer);
	return li->buffer;
}

void editor_history_add(struct editor *ed, const char *s)
{
	if (!s || !s[strspn(s, " \t\n")])
		return;
	HistEvent ev;
	ed_lib.history(ed->hist, &ev, H_ENTER, s);
}

int editor_open(struct editor **ret, const char *history_path, edit_byte_fn *byte, void *ud, struct err *e)
{
	int r = edit_load(e);
	if (r < 0)
		return r;
	struct editor *ed = calloc(1, sizeof(*ed));
	if (!ed)
		return err_set(e, -ENOMEM, "out of memory");
	ed->byte = byte;
	ed->ud = ud;
	ed->el = ed_lib.el_init("ward", stdin, stdout, stderr);
	ed->hist = ed_lib.history_init();
	if (!ed->el || !ed->hist) {
		if (ed->el)
			ed_lib.el_end(ed->el);
		free(ed);
		return err_set(e, -EIO, "libedit could not start on this terminal");
	}
	HistEvent ev;
	ed_lib.history(ed->hist, &ev, H_SETSIZE, EDIT_HISTORY_MAX);
	ed_lib.history(ed->hist, &ev, H_SETUNIQUE, 1);
	if (history_path) {
		ed->hist_path = strdup(history_path);
		ed_lib.history(ed->hist, &ev, H_LOAD, history_path);
	}
	ed_lib.el_set(ed->el, EL_EDITOR, "emacs");
	ed_lib.el_set(ed->el, EL_SIGNAL, 0);
	ed_lib.el_set(ed->el, EL_HIST, ed_lib.history, ed->hist);
	ed_lib.el_set(ed->el, EL_PROMPT, ed_prompt_fn);
	ed_lib.el_set(ed->el, EL_GETCFN, ed_getc);
	/* Ctrl-C reaches the byte source as a byte, not as SIGINT; Enter (CR)
	 * is not Ctrl-J (LF). */
	ed_lib.el_set(ed->el, EL_SETTY, "-d", "-isig", "-icrnl", "-inlcr", NULL);
	/* The byte source's own keys (Ctrl-T, Ctrl-Z, Tab) end with this one,
	 * which draws the line again after what they printed. (Not functions
	 * of ward's own through EL_ADDFN: libedit 3.1 never frees their names.) */
	ed_lib.el_set(ed->el, EL_BIND, EDITOR_REDRAW_KEY, "ed-redisplay", NULL);
	ed_cur = ed;
	*ret = ed;
	return 0;
}

char *editor_line(struct editor *ed, const char *prompt, bool history)
{
	snprintf(ed->prompt, sizeof(ed->prompt), "%s", prompt);
	memset(&ed->mb, 0, sizeof(ed->mb));
	ed_lib.el_resize(ed->el);
	int count = 0;
	const char *line = ed_lib.el_gets(ed->el, &count);
	if (!line || count <= 0)
		return NULL;
	char *s = strndup(line, (size_t)count);
	if (!s)
		return NULL;
	s[strcspn(s, "\n")] = 0;
	if (history && s[strspn(s, " \t")]) {
		HistEvent ev;
		ed_lib.history(ed->hist, &ev, H_ENTER, s);
	}
	return s;
}

void editor_close(struct editor *ed)
{
	if (!ed)
		return;
	if (ed->hist_path) {
		HistEvent ev;
		mode_t old = umask(077);
		ed_lib.history(ed->hist, &ev, H_SAVE, ed->hist_path);
		umask(old);
		free(ed->hist_path);
	}
	ed_lib.el_end(ed->el);
	ed_lib.history_end(ed->hist);
	if (ed_cur == ed)
		ed_cur = NULL;
	free(ed);
}
