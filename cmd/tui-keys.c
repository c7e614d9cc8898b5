/* The terminal under the session: its modes (restored on every way out,
 * a crash included), the keys while a turn runs (Esc and Ctrl-C interrupt;
 * the rest is typeahead for the next prompt), the prompt's byte source with
 * bracketed pastes made one piece, and single-key answers with typeahead
 * thrown away first. */
#include "cmd/tui.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/edit.h"
#include "base/fdio.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

/* The terminal's mode as ward found it, for the crash handler. */
static struct termios tty_saved;
static bool tty_saved_ok;

void tui_tty_restore(void)
{
	if (tty_saved_ok) {
		static const char s[] = PASTE_OFF RESET "\033[?25h";
		ssize_t w = write(1, s, sizeof(s) - 1);
		(void)w;
		tcsetattr(0, TCSANOW, &tty_saved);
	}
}

static void on_crash(int sig)
{
	tui_tty_restore();
	/* SA_RESETHAND: the default action, once the handler returns. */
	raise(sig);
}

void tui_tty_turn(struct tui *u)
{
	struct termios t = u->saved;
	t.c_lflag &= (tcflag_t) ~(ICANON | ECHO | ISIG | IEXTEN);
	t.c_iflag &= (tcflag_t) ~(IXON | ICRNL);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	tcsetattr(u->in, TCSANOW, &t);
}

void tui_tty_quiet(struct tui *u)
{
	struct termios t = u->saved;
	t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
	tcsetattr(u->in, TCSANOW, &t);
}

void tui_tty_save(struct tui *u)
{
	if (tcgetattr(u->in, &u->saved) < 0)
		return;
	tty_saved = u->saved;
	tty_saved_ok = true;
	atexit(tui_tty_restore);
	static const int crash[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGQUIT };
	for (size_t i = 0; i < ARRAY_SIZE(crash); i++) {
		struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_RESETHAND | SA_NODEFER };
		sigaction(crash[i], &sa, NULL);
	}
}

static void q_push(struct tui *u, const char *p, size_t n)
{
	for (size_t i = 0; i < n && u->qt - u->qh < TUI_QUEUE; i++)
		u->q[u->qt++ % TUI_QUEUE] = (unsigned char)p[i];
}

/* Bytes that go before what is queued. */
static void q_push_front(struct tui *u, const char *p, size_t n)
{
	for (size_t i = n; i-- > 0 && u->qt - u->qh < TUI_QUEUE;)
		u->q[--u->qh % TUI_QUEUE] = (unsigned char)p[i];
}

static void paste_end(struct tui *u)
{
	u->pasting = false;
	const char *p = u->paste.data ? u->paste.data : "";
	size_t n = u->paste.len;
	/* Line ends; a paste that ends with one has no empty line after it. */
	size_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += p[i] == '\n' || (p[i] == '\r' && (i + 1 == n || p[i + 1] != '\n'));
	size_t shown = lines + !(n && (p[n - 1] == '\n' || p[n - 1] == '\r'));
	if (lines == 0 || u->npastes >= TUI_PASTES) {
		/* One line: typed in as it is (without controls). */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] >= 0x20 || p[i] == '\t')
				q_push(u, &p[i], 1);
	} else {
		/* A terminal sends a pasted line end as CR (or CR LF): LF. */
		char *t = malloc(n + 1);
		size_t tk = 0;
		for (size_t i = 0; t && i < n; i++) {
			if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
				continue;
			t[tk++] = p[i] == '\r' ? '\n' : p[i];
		}
		if (t)
			t[tk] = 0;
		u->pastes[u->npastes] = t;
		char tag[64];
		int k = snprintf(tag, sizeof(tag), "[pasted text #%d, %zu line%s]", u->npastes + 1, shown, shown == 1 ? "" : "s");
		u->npastes++;
		q_push(u, tag, (size_t)k);
	}
	u->paste.len = 0;
}

/* Raw terminal bytes in: bracketed pastes become one piece. */
void tui_feed(struct tui *u, const char *p, size_t n)
{
	static const char on[] = "\033[200~", off[] = "\033[201~";
	for (size_t i = 0; i < n; i++) {
		const char *marker = u->pasting ? off : on;
		u->pend[u->npend++] = p[i];
		if (!strncmp(u->pend, marker, u->npend)) {
			if (u->npend == 6) {
				u->npend = 0;
				if (u->pasting)
					paste_end(u);
				else
					u->pasting = true;
			}
			continue;
		}
		if (u->pasting)
			buf_append(&u->paste, u->pend, u->npend);
		else
			q_push(u, u->pend, u->npend);
		u->npend = 0;
	}
}

static void signals_read(struct tui *u)
{
	struct signalfd_siginfo si;
	while (read(u->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP)
			u->quit_sig = (int)si.ssi_signo;
		else if (si.ssi_signo == SIGINT)
			q_push(u, "\003", 1);	/* kill -INT: as Ctrl-C */
	}
}

/* Wait for the terminal or a signal. >0: bytes read; 0: only signals came
 * (now read); -1: the terminal went away. */
static ssize_t tty_wait(struct tui *u, char *buf, size_t cap, int64_t until)
{
	struct pollfd pf[2] = { { .fd = u->in, .events = POLLIN }, { .fd = u->sfd, .events = POLLIN } };
	int64_t left = until ? MAX(until - now_ms(), 0) : -1;
	if (poll(pf, 2, (int)MIN(left, INT_MAX)) < 0 && errno != EINTR) {
		u->gone = true;
		return -1;
	}
	if (pf[1].revents)
		signals_read(u);
	if (!pf[0].revents)
		return 0;
	ssize_t n = fdio_read_some(u->in, buf, cap);
	if (n > 0)
		return n;
	if (n == -EAGAIN)
		return 0;
	u->gone = true;
	return -1;
}

/* Tab: the word before the cursor completed (typed in), or the choices
 * listed. false: nothing to complete. */
static bool complete(struct tui *u)
{
	size_t cur, len;
	const char *line = editor_buffer(u->ed, &cur, &len);
	const char *w = line + cur;
	while (w > line && w[-1] != ' ')
		w--;
	char word[1024];
	size_t wl = (size_t)(line + cur - w);
	if (wl >= sizeof(word))
		return false;
	memcpy(word, w, wl);
	word[wl] = 0;
	char **c = tui_complete(u, word, w == line);
	if (!c || !c[0]) {
		free(c);
		return false;
	}
	size_t common = strlen(c[0]), n;
	for (n = 1; c[n]; n++) {
		size_t k = 0;
		while (k < common && c[n][k] == c[0][k])
			k++;
		common = k;
	}
	if (common > wl) {
		/* Typed in; one whole word (not a directory) ends with a space. */
		char add[1100];
		int k = snprintf(add, sizeof(add), "%.*s%s", (int)MIN(common - wl, (size_t)1024), c[0] + wl,
				 n == 1 && c[0][common - 1] != '/' ? " " : "");
		q_push_front(u, add, (size_t)MAX(k, 0));
	} else if (n > 1) {
		/* Several: listed under the line, which is drawn again. */
		fputs("\r\n\033[J", stdout);
		struct buf b;
		buf_init(&b, 1u << 16);
		for (size_t i = 0; c[i] && i < 60; i++) {
			_cleanup_free_ char *s = tui_short(c[i], 200);
			buf_printf(&b, "%s%s", i ? "  " : "", s ? s : "");
		}
		if (n > 60)
			buf_printf(&b, "  … %zu more", n - 60);
		buf_cstr(&b);
		tui_say(u, NULL, b.data ? b.data : "", 0);
		buf_free(&b);
		tui_prompt_footer(u);
		unsigned char r = EDITOR_REDRAW_BYTE;
		q_push_front(u, (const char *)&r, 1);
	}
	for (size_t i = 0; c[i]; i++)
		free(c[i]);
	free(c);
	return true;
}

/* A key at the prompt that is ward's, not libedit's: taken here (false)
 * or turned into what libedit is to see (true, *c). */
static bool prompt_key(struct tui *u, unsigned char *c)
{
	size_t cur, len;
	switch (*c) {
	case 3:
		/* Ctrl-C: the line is given up. */
		u->ctrl_c = true;
		*c = '\r';
		return true;
	case '\r':
		u->line_end = TUI_END_ENTER;
		return true;
	case '\n':
		/* Ctrl-J (and Shift-Enter, Alt-Enter): the line ends, the
		 * message goes on. */
		u->line_end = TUI_END_NEWLINE;
		*c = '\r';
		return true;
	case 0x7f:
	case 8:
		editor_buffer(u->ed, &cur, &len);
		if (u->allow_back && len == 0) {
			u->line_end = TUI_END_BACK;
			*c = '\r';
		}
		return true;
	case '\t':
		if (!complete(u))
			fputs("\a", stdout);
		fflush(stdout);
		return false;
	case 0x14:	/* Ctrl-T: the last call's whole output */
		fputs("\r\n\033[J", stdout);
		tui_show_last(u);
		tui_prompt_footer(u);
		*c = EDITOR_REDRAW_BYTE;
		return true;
	case 0x0f:	/* Ctrl-O: the last turn's subagents, open */
		if (!u->nagents)
			return true;
		fputs("\r\n\033[J", stdout);
		tui_agents_show(u);
		tui_prompt_footer(u);
		*c = EDITOR_REDRAW_BYTE;
		return true;
	case 0x1a:	/* Ctrl-Z */
		fputs("\r\n\033[J", stdout);
		fputs(DIM "ward is suspended; fg brings it back" UNDIM "\n", stdout);
		fflush(stdout);
		tui_tty_restore();
		raise(SIGTSTP);
		/* Continued. */
		tui_tty_turn(u);
		fputs(PASTE_ON, stdout);
		tui_prompt_footer(u);
		*c = EDITOR_REDRAW_BYTE;
		return true;
	default:
		return true;
	}
}

/* Bytes of the queue from its head: whether the n bytes there are s. */
static bool q_is(struct tui *u, const char *s, size_t n)
{
	if (u->qt - u->qh < n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (u->q[(u->qh + i) % TUI_QUEUE] != (unsigned char)s[i])
			return false;
	return true;
}

/* Wait a little for the rest of a key's sequence after an Esc. */
static void q_wait(struct tui *u, int ms)
{
	int64_t until = now_ms() + ms;
	while (u->qt - u->qh < 2 && now_ms() < until && !u->quit_sig && !u->gone) {
		char buf[4096];
		ssize_t n = tty_wait(u, buf, sizeof(buf), until);
		if (n > 0)
			tui_feed(u, buf, (size_t)n);
	}
}

/* The editor's byte source: the queue, else the terminal, watching the
 * signals while it waits. An Esc alone is never libedit's (it would take
 * it as Meta and eat the next key): one is nothing, two clear the line.
 * Shift-Enter and Alt-Enter are a newline in the message (Ctrl-J). */
int tui_byte(void *ud, unsigned char *c)
{
	struct tui *u = ud;
	for (;;) {
		if (u->quit_sig || u->gone)
			return 0;
		if (u->qt != u->qh) {
			if (u->q[u->qh % TUI_QUEUE] == 033) {
				q_wait(u, 30);
				static const char *const newline[] = { "\033\r", "\033[13;2u", "\033[27;2;13~", "\033\n" };
				bool nl = false;
				for (size_t i = 0; i < ARRAY_SIZE(newline) && !nl; i++)
					if (q_is(u, newline[i], strlen(newline[i]))) {
						u->qh += strlen(newline[i]);
						nl = true;
					}
				if (nl) {
					*c = '\n';
					prompt_key(u, c);
					return 1;
				}
				/* Esc and a key libedit takes with Meta (word moves) or a
				 * key's sequence go to it; Esc before anything else is a
				 * lone Esc, and the key after it is kept. */
				unsigned char nx = u->qt - u->qh >= 2 ? u->q[(u->qh + 1) % TUI_QUEUE] : 0;
				bool meta = nx && strchr("[ObfdBFD\177\010.", nx) && nx != 0;
				if (u->qt - u->qh == 1 || !meta) {
					/* A lone Esc: nothing; a second within a while clears the line. */
					u->qh++;
					int64_t t = now_ms();
					bool twice = t - u->last_esc < 600;
					u->last_esc = twice ? 0 : t;
					if (twice) {
						q_push_front(u, "\005\025", 2);	/* Ctrl-E, Ctrl-U: the whole line goes */
					}
					continue;
				}
			}
			*c = u->q[u->qh++ % TUI_QUEUE];
			if (prompt_key(u, c))
				return 1;
			continue;
		}
		char buf[4096];
		ssize_t n = tty_wait(u, buf, sizeof(buf), 0);
		if (n > 0)
			tui_feed(u, buf, (size_t)n);
	}
}

/* While a turn runs: Esc and Ctrl-C interrupt; the rest is kept for the
 * next prompt. */
void tui_on_keys(void *ud, struct turn *t)
{
	struct tui *u = ud;
	char buf[4096];
	ssize_t n = fdio_read_some(u->in, buf, sizeof(buf));
	if (n <= 0) {
		if (n == -EAGAIN)
			return;
		u->gone = true;
		turn_interrupt(t, true, "cancelled (the terminal went away)");
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		/* Esc, unless it starts a key's sequence (an arrow): a key typed
		 * right after it is typeahead, never Meta with the Esc. */
		bool lone_esc = buf[i] == 033 && (i == n - 1 || (buf[i + 1] != '[' && buf[i + 1] != 'O'));
		if (buf[i] == 3 || lone_esc) {
			bool now = u->interrupts++ > 0 && turn_stopping(t);
			tui_live_clear(u);
			turn_interrupt(t, now, buf[i] == 3 ? "interrupted by the user (Ctrl-C)" : "interrupted by the user (Esc)");
			continue;
		}
		/* A Ctrl-D typed while the model works does not end the session
		 * at the next prompt. */
		if (buf[i] == 4) {
			u->ctrl_d_typed = true;
			continue;
		}
		/* Ctrl-O: the subagents' cards open or close (where any runs;
		 * otherwise it is typeahead, as before). */
		if (buf[i] == 0x0f && u->nagents) {
			u->agents_open = !u->agents_open;
			continue;
		}
		buf_append(&u->ahead, &buf[i], 1);
	}
	/* What was typed is shown, where the prompt will have it. */
	tui_live_clear(u);
	tui_live_draw(u);
	tui_flush(u);
}

void tui_on_tick(void *ud, struct turn *t)
{
	struct tui *u = ud;
	if (!u->live && !(u->bol && (u->waiting || u->call_running)))
		return;
	tui_live_clear(u);
	u->spin++;
	tui_live_draw(u);
	tui_flush(u);
}

/* One key from the person, in turn mode. With discard (an approval),
 * typeahead is thrown away first, so nothing typed before the question
 * answers it; otherwise a key typed early is the answer. 0 when the
 * terminal went away or a signal came; -1 at until (0: none). */
int tui_read_key(struct tui *u, int64_t until, bool discard)
{
	if (discard) {
		/* What was typed before the question is kept as the draft, and
		 * answers nothing. */
		char buf[4096];
		ssize_t n;
		struct pollfd pf = { .fd = u->in, .events = POLLIN };
		while (poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN) && (n = fdio_read_some(u->in, buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] != 4)
					buf_append(&u->ahead, &buf[i], 1);
		while (u->qt != u->qh && u->q[u->qh % TUI_QUEUE] != 3) {
			unsigned char c = u->q[u->qh++ % TUI_QUEUE];
			buf_append(&u->ahead, &c, 1);
		}
	}
	for (;;) {
		if (until && now_ms() >= until)
			return -1;
		char buf[64];
		ssize_t n = tty_wait(u, buf, sizeof(buf), until);
		if (n < 0 || u->quit_sig)
			return 0;
		if (u->qt != u->qh) {
			u->qh = u->qt;	/* kill -INT: as Ctrl-C */
			return 3;
		}
		if (n == 3 && buf[0] == 033 && (buf[1] == '[' || buf[1] == 'O')) {
			if (buf[2] == 'A')
				return TUI_KEY_UP;
			if (buf[2] == 'B')
				return TUI_KEY_DOWN;
		}
		/* Another key that sends a sequence is not an answer. */
		if (n == 1)
			return (unsigned char)buf[0];
	}
}

/* The message with each paste tag replaced by what was pasted. */
char *tui_expand_pastes(struct tui *u, const char *line)
{
	struct buf b;
	buf_init(&b, TUI_MSG_MAX);
	static const char tag[] = "[pasted text #";
	for (const char *p = line; *p;) {
		/* "[pasted text #K, N lines]", as paste_end wrote it. */
		if (!strncmp(p, tag, sizeof(tag) - 1)) {
			char *end;
			unsigned long k = strtoul(p + sizeof(tag) - 1, &end, 10);
			const char *q = end;
			if (k >= 1 && k <= (unsigned long)u->npastes && u->pastes[k - 1] && !strncmp(q, ", ", 2)) {
				strtoul(q + 2, &end, 10);
				if (end > q + 2 && !strncmp(end, " lines]", 7)) {
					buf_append(&b, u->pastes[k - 1], strlen(u->pastes[k - 1]));
					p = end + 7;
					continue;
				}
			}
		}
		buf_append(&b, p, 1);
		p++;
	}
	if (buf_cstr(&b) < 0) {
		buf_free(&b);
		return strdup("");
	}
	return b.data;
}

void tui_pastes_free(struct tui *u)
{
	for (int i = 0; i < u->npastes; i++)
		free(u->pastes[i]);
	u->npastes = 0;
}

