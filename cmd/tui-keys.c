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

static void paste_end(struct tui *u)
{
	u->pasting = false;
	const char *p = u->paste.data ? u->paste.data : "";
	size_t n = u->paste.len;
	size_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += p[i] == '\n' || (p[i] == '\r' && (i + 1 == n || p[i + 1] != '\n'));
	if (lines == 0 || u->npastes >= TUI_PASTES) {
		/* One line: typed in as it is (without controls). */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] >= 0x20 || p[i] == '\t')
				q_push(u, &p[i], 1);
	} else {
		u->pastes[u->npastes] = strndup(p, n);
		char tag[64];
		int k = snprintf(tag, sizeof(tag), "[pasted text #%d, %zu lines]", u->npastes + 1, lines + 1);
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

/* The editor's byte source: the queue, else the terminal, watching the
 * signals while it waits. */
int tui_byte(void *ud, unsigned char *c)
{
	struct tui *u = ud;
	for (;;) {
		if (u->quit_sig || u->gone)
			return 0;
		if (u->qt != u->qh) {
			*c = u->q[u->qh++ % TUI_QUEUE];
			if (*c == 3) {
				/* Ctrl-C: the line is given up. */
				u->ctrl_c = true;
				*c = '\r';
			}
			return 1;
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
		bool lone_esc = buf[i] == 033 && i == n - 1;
		if (buf[i] == 3 || lone_esc) {
			bool now = u->interrupts++ > 0 && turn_stopping(t);
			tui_live_clear(u);
			turn_interrupt(t, now, buf[i] == 3 ? "interrupted by the user (Ctrl-C)" : "interrupted by the user (Esc)");
			continue;
		}
		buf_append(&u->ahead, &buf[i], 1);
	}
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
		tcflush(u->in, TCIFLUSH);
		u->ahead.len = 0;
		u->qh = u->qt;
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
		/* A key that sends a sequence (an arrow) is not an answer. */
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

