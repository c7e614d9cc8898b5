/* ward at a terminal: the interactive session. A person types a message;
 * run_turn works on it in the session's box, and this file renders its
 * events inline (output scrolls into the terminal's own scrollback), asks
 * for approvals, and turns Esc or Ctrl-C into turn_interrupt. It never
 * reaches into the loop: it is one more sink, one input fd and a gate
 * callback.
 *
 * The terminal is in one of two modes: libedit's while a line is edited,
 * and "turn" mode while a turn runs (no echo, no line discipline, no
 * signals from keys: Esc and Ctrl-C arrive as bytes). The mode ward found
 * is restored on every way out: a normal exit, SIGTERM, a hangup, and a
 * crash (SIGSEGV and friends restore it, then die as they would have). */
#include "cmd/cmd.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/edit.h"
#include "cmd/session.h"
#include "sandbox/box.h"
#include "sandbox/wsdiff.h"

#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

/* Lines of a call's output shown on its card; the rest are counted. */
#define TUI_OUT_LINES 12
/* An argument shown in an approval is cut here, and marked. */
#define TUI_ASK_SHOW 1500
#define TUI_TICK_MS 100
#define TUI_QUEUE 65536
#define TUI_PASTES 32
#define TUI_MSG_MAX (1u << 20)

#define DIM "\033[2m"
#define UNDIM "\033[22m"
#define BOLD "\033[1m"
#define RED "\033[31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define CYAN "\033[36m"
#define RESET "\033[0m"
#define PASTE_ON "\033[?2004h"
#define PASTE_OFF "\033[?2004l"

static const struct option tui_opts[] = {
	RUN_FLAG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const char tui_help[] =
	"usage: ward [chat] [FLAGS]   (at a terminal)\n"
	"An interactive session: type a task, watch the model work in its box, approve\n"
	"what needs approving, interrupt with Esc or Ctrl-C, and keep going.\n"
	"  --model M, --provider P, --base-url URL   as for ward run\n"
	"  --approve MODE     ask | edits | auto (default edits: file changes go to the\n"
	"                     copy-on-write workspace; commands are asked; ask with --rw)\n"
	"  --allow RULE, --deny RULE                 as for ward run\n"
	"  --deadline DUR     each message's time limit\n"
	"  --max-rounds N, --max-calls N, --max-tokens N, --max-cost USD\n"
	"  --workspace DIR    the task's directory (default: the current one)\n"
	"  --rw               let the box change DIR directly\n"
	"  --box NAME         use this existing box\n"
	"  --resume ID        continue a session\n";

static const char tui_commands[] =
	"  /help             this list\n"
	"  /box              the box: state and limits; /box recreate destroys it and makes a new one\n"
	"                    (the workspace changes are kept); /box destroy destroys it now\n"
	"  /diff             the workspace changes so far\n"
	"  /apply            apply them to the workspace directory\n"
	"  /cost             tokens and cost so far\n"
	"  /clear            start the conversation again (the box and its changes stay)\n"
	"  /resume [N|ID]    list recent sessions, or continue one\n"
	"  /approve [MODE]   show or change the approval mode: ask, edits or auto\n"
	"  /quit             end the session (Ctrl-D does too)\n"
	"Keys: Esc or Ctrl-C stops the turn (a running call is cancelled in its box);\n"
	"Ctrl-C twice at an empty prompt exits. End a line with \\ to go on to the next;\n"
	"a paste of several lines is taken as one piece.\n";

struct tui {
	struct run_flags f;
	struct session s;
	char ws[PATH_MAX];
	char box[BOX_NAME_MAX + 1];
	bool own_box;
	struct editor *ed;
	int in, sfd;
	struct termios saved;

	/* Input, after paste handling: what the prompt reads next. */
	unsigned char q[TUI_QUEUE];
	size_t qh, qt;
	/* Bytes typed while a turn ran, fed to the next prompt. */
	struct buf ahead;
	char pend[8];		/* a possible paste marker, split across reads */
	size_t npend;
	bool pasting;
	struct buf paste;
	char *pastes[TUI_PASTES];
	int npastes;
	bool gone;		/* the terminal hung up */
	int quit_sig;		/* SIGTERM or SIGHUP seen */
	bool ctrl_c;		/* Ctrl-C ended the line being edited */

	/* Rendering. */
	bool bol;		/* the cursor is at the start of a line */
	bool live;		/* the live line is drawn */
	bool text_open, thinking_open;
	bool streamed;		/* text came since the last round or call */
	bool waiting;		/* for the model's first bytes */
	int64_t since;		/* of the wait, or of the running call */
	char call_name[32];
	char card_id[128];	/* the call whose card is the last one shown */
	bool call_running;
	int out_lines;
	size_t out_more;
	bool out_bol;
	unsigned spin;
	int interrupts;		/* Esc/Ctrl-C during this turn */
	int64_t deadline;	/* this turn's, or 0 */
	struct usage usage;
	bool priced;
	struct price price;
};

/* The terminal's mode as ward found it, for the crash handler. */
static struct termios tty_saved;
static bool tty_saved_ok;

static void tty_restore_now(void)
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
	tty_restore_now();
	/* SA_RESETHAND: the default action, once the handler returns. */
	raise(sig);
}

static void tty_turn_mode(struct tui *u)
{
	struct termios t = u->saved;
	t.c_lflag &= (tcflag_t) ~(ICANON | ECHO | ISIG | IEXTEN);
	t.c_iflag &= (tcflag_t) ~(IXON | ICRNL);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	tcsetattr(u->in, TCSANOW, &t);
}

static void tty_cooked(struct tui *u)
{
	tcsetattr(u->in, TCSANOW, &u->saved);
}

static int term_cols(void)
{
	struct winsize w;
	if (ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_col >= 20)
		return w.ws_col;
	return 80;
}

/* ---- output ---- */

/* Attributes only: the cursor does not move. */
static void put_attr(struct tui *u, const char *s)
{
	fputs(s, stdout);
}

static void put(struct tui *u, const char *s)
{
	size_t n = strlen(s);
	if (!n)
		return;
	fwrite(s, 1, n, stdout);
	u->bol = s[n - 1] == '\n';
}

static void putf(struct tui *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct tui *u, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n >= 0)
		put(u, s);
	free(s);
}

/* Untrusted text (the model's, a tool's, a file's): no control sequence
 * reaches the terminal. */
static void put_safe(struct tui *u, const char *p, size_t n)
{
	_cleanup_free_ char *s = utf8_term_safe(p, n);
	if (s)
		put(u, s);
}

/* At most max bytes of s's n, cut at a character boundary, "…" when
 * cut; newlines shown as ⏎. Term-safe. */
static char *short_safe_n(const char *s, size_t n, size_t max)
{
	size_t k = n;
	if (k > max) {
		k = max;
		while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
	}
	struct buf b;
	buf_init(&b, max * 3 + 16);
	for (size_t i = 0; i < k; i++) {
		if (s[i] == '\n')
			buf_append(&b, "⏎", strlen("⏎"));
		else
			buf_append(&b, &s[i], 1);
	}
	if (k < n)
		buf_append(&b, "…", strlen("…"));
	char *r = utf8_term_safe(b.data ? b.data : "", b.len);
	buf_free(&b);
	return r;
}

static char *short_safe(const char *s, size_t max)
{
	return short_safe_n(s, strlen(s), max);
}

static void newline_if_open(struct tui *u)
{
	if (u->thinking_open) {
		put_attr(u, UNDIM);
		u->thinking_open = false;
	}
	if (!u->bol)
		put(u, "\n");
	u->text_open = false;
}

static void live_clear(struct tui *u)
{
	if (u->live) {
		fputs("\r\033[K", stdout);
		u->live = false;
	}
}

static void live_draw(struct tui *u)
{
	static const char *const frames[] = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" };
	if (!u->bol || (!u->waiting && !u->call_running))
		return;
	double secs = (double)(now_ms() - u->since) / 1000;
	char left[48] = "";
	if (u->deadline) {
		int64_t l = u->deadline - now_ms();
		snprintf(left, sizeof(left), " · %llds left", (long long)(l > 0 ? l / 1000 : 0));
	}
	if (u->call_running)
		fprintf(stdout, DIM "%s %s %.1fs%s · esc to interrupt" UNDIM, frames[u->spin % 10], u->call_name, secs,
			left);
	else
		fprintf(stdout, DIM "%s waiting for the model %.1fs%s · esc to interrupt" UNDIM, frames[u->spin % 10],
			secs, left);
	u->live = true;
}

static void flush(struct tui *u)
{
	fflush(stdout);
}

/* ---- the card of a call ---- */


static void card_output(struct tui *u, const char *p, size_t n)
{
	const char *end = p + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t seg = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		if (u->out_lines >= TUI_OUT_LINES) {
			if (nl)
				u->out_more++;
		} else {
			if (u->out_bol)
				put(u, DIM "  │ " UNDIM);
			put_safe(u, p, seg);
			u->out_bol = nl != NULL;
			if (nl)
				u->out_lines++;
		}
		p += seg;
	}
}

static void card_result(struct tui *u, const cJSON *call, const cJSON *result)
{
	const char *id = json_str(call, "id") ? json_str(call, "id") : "";
	if (!u->out_bol)
		put(u, "\n");
	u->out_bol = true;
	if (u->out_more)
		putf(u, DIM "  │ … %zu more line%s" UNDIM "\n", u->out_more, u->out_more == 1 ? "" : "s");
	u->out_more = 0;
	if (strcmp(id, u->card_id)) {
		/* Calls that ran side by side: say whose result this is. */
		_cleanup_free_ char *n = short_safe(json_str(call, "name") ? json_str(call, "name") : "?", 31);
		_cleanup_free_ char *a = short_safe(session_call_arg(call), 60);
		putf(u, "  " BOLD "%s" RESET " %s\n", n ? n : "", a ? a : "");
	}
	const char *outcome = json_str(result, "outcome");
	const cJSON *ec = cJSON_GetObjectItemCaseSensitive(result, "exit_code");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(result, "elapsed_ms");
	bool ok = outcome && !strcmp(outcome, "ok") && (!cJSON_IsNumber(ec) || ec->valueint == 0);
	bool cancelled = outcome && !strcmp(outcome, "cancelled");
	putf(u, "  ⎿ %s%s" RESET, ok ? GREEN : cancelled ? YELLOW : RED,
	     !outcome ? "?" : !strcmp(outcome, "ok") && !ok ? "failed" : !strcmp(outcome, "timed_out") ? "timed out" : outcome);
	if (cJSON_IsNumber(ec))
		putf(u, " (exit %d)", ec->valueint);
	if (cJSON_IsNumber(ms))
		putf(u, " in %.1f s", ms->valuedouble / 1000);
	put(u, "\n");
	if (!ok) {
		/* What the model was told: the reason, the tail, the hint. */
		const char *t = json_str(result, "text");
		int lines = 0;
		while (t && *t && lines < 8) {
			size_t l = strcspn(t, "\n");
			if (l) {
				_cleanup_free_ char *s = short_safe_n(t, l, (size_t)term_cols() - 6);
				putf(u, DIM "    %s" UNDIM "\n", s ? s : "");
				lines++;
			}
			t += l + (t[l] == '\n');
		}
	}
}

/* ---- events ---- */

static void on_event(void *ud, const struct turn_event *ev)
{
	struct tui *u = ud;
	live_clear(u);
	switch (ev->type) {
	case EV_ROUND:
		u->streamed = false;
		u->waiting = true;
		u->since = now_ms();
		break;
	case EV_TEXT:
		u->waiting = false;
		if (u->thinking_open)
			newline_if_open(u);
		put_safe(u, ev->text, ev->len);
		u->text_open = !u->bol;
		u->streamed = true;
		break;
	case EV_THINKING:
		u->waiting = false;
		if (!u->thinking_open) {
			newline_if_open(u);
			put(u, DIM "✻ ");
			u->thinking_open = true;
		}
		put_attr(u, DIM);
		put_safe(u, ev->text, ev->len);
		break;
	case EV_RETRY: {
		newline_if_open(u);
		_cleanup_free_ char *s = short_safe(ev->text, 300);
		putf(u, YELLOW "↻ %s; retrying in %.1f s" RESET "\n", s ? s : "", (double)ev->n / 1000);
		break;
	}
	case EV_TOOL_CALL: {
		u->waiting = false;
		newline_if_open(u);
		const char *name = json_str(ev->call, "name");
		snprintf(u->call_name, sizeof(u->call_name), "%s", name ? name : "?");
		const char *a = session_call_arg(ev->call);
		_cleanup_free_ char *s = short_safe(a, (size_t)MAX(20, term_cols() - (int)strlen(u->call_name) - 6));
		snprintf(u->card_id, sizeof(u->card_id), "%s", json_str(ev->call, "id") ? json_str(ev->call, "id") : "");
		u->streamed = false;
		_cleanup_free_ char *n = short_safe(u->call_name, 31);
		putf(u, CYAN "●" RESET " " BOLD "%s" RESET " %s\n", n ? n : "", s ? s : "");
		u->out_lines = 0;
		u->out_more = 0;
		u->out_bol = true;
		break;
	}
	case EV_APPROVAL:
		if (ev->n == GATE_ALLOW) {
			u->call_running = true;
			u->since = now_ms();
		} else {
			_cleanup_free_ char *s = short_safe(ev->text, 400);
			putf(u, RED "  ✗ %s" RESET "\n", s ? s : "");
		}
		break;
	case EV_TOOL_OUTPUT:
		card_output(u, ev->text, ev->len);
		break;
	case EV_TOOL_RESULT:
		u->call_running = false;
		card_result(u, ev->call, ev->result);
		break;
	case EV_USAGE:
		u->usage = *ev->usage;
		break;
	case EV_STOP: {
		const struct turn_stop *st = ev->stop;
		if (st->kind == TURN_CANCELLED && u->streamed)
			put(u, DIM " [interrupted: the partial answer is kept]" UNDIM);
		newline_if_open(u);
		u->waiting = u->call_running = false;
		if (st->kind != TURN_DONE) {
			_cleanup_free_ char *s = short_safe(st->why, 400);
			putf(u, "%s■ %s: %s" RESET "\n", st->kind == TURN_CANCELLED ? YELLOW : RED, turn_stop_name(st->kind),
			     s ? s : "");
		}
		break;
	}
	}
	live_draw(u);
	flush(u);
}

/* ---- keys ---- */

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
static void feed(struct tui *u, const char *p, size_t n)
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
	ssize_t n = read(u->in, buf, cap);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	u->gone = true;
	return -1;
}

/* The editor's byte source: the queue, else the terminal, watching the
 * signals while it waits. */
static int tui_byte(void *ud, unsigned char *c)
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
			feed(u, buf, (size_t)n);
	}
}

/* While a turn runs: Esc and Ctrl-C interrupt; the rest is kept for the
 * next prompt. */
static void on_keys(void *ud, struct turn *t)
{
	struct tui *u = ud;
	char buf[4096];
	ssize_t n = read(u->in, buf, sizeof(buf));
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		u->gone = true;
		turn_interrupt(t, true, "cancelled (the terminal went away)");
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		bool lone_esc = buf[i] == 033 && i == n - 1;
		if (buf[i] == 3 || lone_esc) {
			bool now = u->interrupts++ > 0 && turn_stopping(t);
			live_clear(u);
			turn_interrupt(t, now, buf[i] == 3 ? "interrupted by the user (Ctrl-C)" : "interrupted by the user (Esc)");
			continue;
		}
		buf_append(&u->ahead, &buf[i], 1);
	}
	flush(u);
}

static void on_tick(void *ud, struct turn *t)
{
	struct tui *u = ud;
	if (!u->live && !(u->bol && (u->waiting || u->call_running)))
		return;
	live_clear(u);
	u->spin++;
	live_draw(u);
	flush(u);
}

/* One key from the person, in turn mode: typeahead is thrown away first,
 * so nothing typed before the question answers it. 0 when the terminal
 * went away or a signal came; -1 at until (0: none). */
static int read_key(struct tui *u, int64_t until)
{
	tcflush(u->in, TCIFLUSH);
	u->ahead.len = 0;
	u->qh = u->qt;
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

/* ---- approvals ---- */

static void show_field(struct tui *u, const char *label, const char *v)
{
	size_t n = strlen(v);
	size_t k = MIN(n, (size_t)TUI_ASK_SHOW);
	while (k > 0 && k < n && ((unsigned char)v[k] & 0xc0) == 0x80)
		k--;
	/* The key is the model's too. */
	_cleanup_free_ char *l = short_safe(label ? label : "?", 60);
	putf(u, "  %s:\n", l ? l : "");
	const char *p = v, *end = v + k;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		put(u, "    ");
		put_safe(u, p, l);
		put(u, "\n");
		p += l + (nl != NULL);
	}
	if (k < n)
		putf(u, DIM "    … cut here: %zu more bytes not shown" UNDIM "\n", n - k);
}

static int tui_ask(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap)
{
	struct tui *u = ud;
	live_clear(u);
	newline_if_open(u);
	_cleanup_free_ char *tn = short_safe(tool, 31);
	putf(u, YELLOW "? " RESET BOLD "%s" RESET " needs your approval\n", tn ? tn : "");
	const cJSON *f;
	cJSON_ArrayForEach(f, input) {
		if (cJSON_IsString(f)) {
			show_field(u, f->string, f->valuestring);
		} else {
			_cleanup_free_ char *j = cJSON_PrintUnformatted(f);
			show_field(u, f->string, j ? j : "");
		}
	}
	/* What "always" would allow: the gate's own words. */
	char rules[2][GATE_SPEC_MAX], scope[200];
	int nrules = gate_always(tool, input, rules, scope, sizeof(scope));
	_cleanup_free_ char *sc = short_safe(scope, 120);
	putf(u, "  " BOLD "y" RESET " yes   " BOLD "n" RESET " no   " BOLD "a" RESET " always: %s   " BOLD "esc" RESET
		" stop the turn\n",
	     sc ? sc : "");
	flush(u);
	for (;;) {
		/* The message's deadline holds while the question waits. */
		int k = read_key(u, u->deadline);
		switch (k) {
		case -1:
			put(u, RED "  → no answer before the deadline" RESET "\n");
			flush(u);
			snprintf(reason, cap, "no answer came before the deadline");
			return 'n';
		case 'y':
		case 'Y':
			put(u, GREEN "  → yes, once" RESET "\n");
			flush(u);
			return 'y';
		case 'a':
		case 'A':
			if (nrules)
				putf(u, GREEN "  → yes, and from now on %s" RESET "\n", sc ? sc : "");
			else
				put(u, GREEN "  → yes, once (no rule fits this call)" RESET "\n");
			flush(u);
			return 'a';
		case 'n':
		case 'N': {
			put(u, RED "  → no" RESET "\n");
			flush(u);
			tty_cooked(u);
			_cleanup_free_ char *why = editor_line(u->ed, "  why (Enter to skip): ", false);
			tty_turn_mode(u);
			if (why && !u->ctrl_c)
				snprintf(reason, cap, "%s", why);
			u->ctrl_c = false;
			return 'n';
		}
		case 033:
		case 3:
		case 0:
			put(u, YELLOW "  → stop the turn" RESET "\n");
			flush(u);
			return 'q';
		default:
			break;
		}
	}
}

/* ---- the box and the changes ---- */

static int box_up(struct tui *u)
{
	if (u->s.box)
		return 0;
	struct err e = { 0 };
	if (!u->own_box) {
		if (box_connect(u->box, &u->s.box, &e) < 0) {
			fflush(stdout);
			cmd_error("%s", e.msg);
			return -1;
		}
		return 0;
	}
	fflush(stdout);
	if (session_box(&u->s, u->ws[0] ? u->ws : NULL, u->f.rw, u->box, sizeof(u->box)) != 0) {
		u->box[0] = 0;
		return -1;
	}
	return 0;
}

static void box_down(struct tui *u)
{
	if (u->s.box)
		box_disconnect(u->s.box);
	u->s.box = NULL;
	if (u->own_box && u->box[0]) {
		struct err e = { 0 };
		box_destroy(u->box, &e);
		u->box[0] = 0;
	}
}

/* The changes as a diff, coloured, every line term-safe. 0 when there
 * are none. */
static int show_diff(struct tui *u, bool quiet)
{
	struct err e = { 0 };
	char upper[PATH_MAX];
	if (u->f.rw || !u->own_box) {
		if (!quiet)
			put(u, "The box works on the directory directly (--rw or --box): there is no diff to show.\n");
		return 0;
	}
	if (session_layers(u->s.j.id, upper, sizeof(upper), &e) < 0 || access(upper, F_OK) < 0 || !u->ws[0]) {
		if (!quiet)
			put(u, "No changes to the workspace.\n");
		return 0;
	}
	struct ws_changes ch;
	if (ws_changes_read(u->ws, upper, &ch, &e) < 0) {
		putf(u, RED "ward: %s" RESET "\n", e.msg);
		return 0;
	}
	int n = (int)ch.n;
	if (n == 0) {
		if (!quiet)
			put(u, "No changes to the workspace.\n");
		ws_changes_free(&ch);
		return 0;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m) {
		ws_diff(u->ws, upper, &ch, m, &e);
		fclose(m);
	}
	for (char *p = text, *end = text + len; p && p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *col = *p == '+' ? GREEN : *p == '-' ? RED : *p == '@' ? CYAN : "";
		put(u, col);
		put_safe(u, p, l);
		put(u, RESET "\n");
		p += l + 1;
	}
	free(text);
	ws_changes_free(&ch);
	return n;
}

static void apply_now(struct tui *u)
{
	cJSON *files = cJSON_CreateArray();
	fflush(stdout);
	if (session_changes(u->s.j.id, u->ws, true, true, NULL, files) == EXIT_OKAY) {
		int n = cJSON_GetArraySize(files);
		if (n)
			putf(u, "Applied %d change%s to %s.\n", n, n == 1 ? "" : "s", u->ws);
		else
			put(u, "No changes to apply.\n");
	}
	cJSON_Delete(files);
}

static void apply_changes(struct tui *u)
{
	if (u->f.rw || !u->own_box) {
		put(u, "The box works on the directory directly (--rw or --box): nothing to apply.\n");
		return;
	}
	/* The box goes first (its changes are kept); the next message gets a
	 * new one over the updated directory. */
	box_down(u);
	apply_now(u);
}

/* ---- slash commands ---- */

static void print_status(struct tui *u)
{
	putf(u, DIM "%s · box %s · %lld in / %lld out tokens", u->f.cfg.pcfg.model, u->box[0] ? u->box : "(none)",
	     (long long)u->usage.input, (long long)u->usage.output);
	if (u->priced)
		putf(u, " · $%.4f", price_cost(&u->price, &u->usage));
	if (u->f.deadline_ms)
		putf(u, " · %llds per message", (long long)(u->f.deadline_ms / 1000));
	putf(u, " · session %s" UNDIM "\n", u->s.j.id);
}

static void cmd_box_show(struct tui *u)
{
	if (!u->s.box) {
		put(u, "No box now; the next message makes one.\n");
		return;
	}
	cJSON *info = NULL;
	struct err e = { 0 };
	if (box_info(u->s.box, &info, &e) < 0) {
		putf(u, RED "ward: %s" RESET "\n", e.msg);
		return;
	}
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(info, "limits");
	putf(u, "box %s: %s, %s backend, up %.1f s, %d process%s\n", u->box, json_str(info, "state") ? json_str(info, "state") : "?",
	     json_str(info, "backend") ? json_str(info, "backend") : "?", json_int(info, "uptime_ms", 0) / 1000.0,
	     (int)json_int(info, "box_pids", 0), json_int(info, "box_pids", 0) == 1 ? "" : "es");
	putf(u, "  memory %lld MiB (%s), processes %d (%s), cpu %s, network %s\n",
	     (long long)(json_int(l, "memory_bytes", 0) >> 20), json_str(l, "memory_by") ? json_str(l, "memory_by") : "?",
	     (int)json_int(l, "pids", 0), json_str(l, "pids_by") ? json_str(l, "pids_by") : "?",
	     json_str(l, "cpu_by") ? json_str(l, "cpu_by") : "?",
	     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "network")) ? "on" : "off");
	putf(u, "  workspace %s (%s)\n", u->ws[0] ? u->ws : "(none)", u->f.rw ? "read-write" : "copy-on-write");
	cJSON_Delete(info);
}

static void session_switch(struct tui *u, const char *id)
{
	struct run_flags f = u->f;
	f.resume = id;
	struct session s;
	char ws[PATH_MAX];
	fflush(stdout);
	if (session_start(&f, &s, ws) != 0)
		return;
	box_down(u);
	session_end(&u->s);
	u->s = s;
	u->f.rw = f.rw;
	snprintf(u->ws, sizeof(u->ws), "%s", ws);
	u->usage = (struct usage){ 0 };
	int n = cJSON_GetArraySize(u->s.messages);
	putf(u, "Resumed session %s: %d message%s, workspace %s.\n", u->s.j.id, n, n == 1 ? "" : "s", u->ws[0] ? u->ws : "(none)");
	/* The last thing the model said, to pick up the thread. */
	for (int i = n - 1; i >= 0; i--) {
		const cJSON *m = cJSON_GetArrayItem(u->s.messages, i);
		const char *role = json_str(m, "role");
		const cJSON *b;
		bool shown = false;
		cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content")) {
			const char *t = json_str(b, "text");
			if (role && !strcmp(role, "assistant") && t) {
				_cleanup_free_ char *s = short_safe(t, 400);
				putf(u, DIM "  last answer: %s" UNDIM "\n", s ? s : "");
				shown = true;
				break;
			}
		}
		if (shown)
			break;
	}
	box_up(u);
}

static void cmd_resume(struct tui *u, const char *arg)
{
	cJSON *list = NULL;
	struct err e = { 0 };
	if (session_list(&list, &e) < 0) {
		putf(u, RED "ward: %s" RESET "\n", e.msg);
		return;
	}
	int n = cJSON_GetArraySize(list);
	if (!*arg) {
		int from = MAX(0, n - 10);
		if (n == 0)
			put(u, "No sessions yet.\n");
		for (int i = n - 1; i >= from; i--) {
			const cJSON *s = cJSON_GetArrayItem(list, i);
			_cleanup_free_ char *first = short_safe(json_str(s, "first") ? json_str(s, "first") : "", 50);
			putf(u, "  %2d  %s  %-12s %s\n", n - i, json_str(s, "session"), json_str(s, "stop"), first ? first : "");
		}
		if (n)
			put(u, "Continue one with /resume N (its number) or /resume ID.\n");
		cJSON_Delete(list);
		return;
	}
	char *end;
	long k = strtol(arg, &end, 10);
	const char *id = arg;
	if (!*end && k >= 1 && k <= n)
		id = json_str(cJSON_GetArrayItem(list, n - (int)k), "session");
	if (!strcmp(id, u->s.j.id))
		put(u, "That is this session.\n");
	else
		session_switch(u, id);
	cJSON_Delete(list);
}

/* A slash command; false when the session should end. */
static bool slash(struct tui *u, char *line)
{
	char *arg = line + strcspn(line, " \t");
	if (*arg)
		*arg++ = 0;
	arg += strspn(arg, " \t");
	arg[strcspn(arg, " \t")] = 0;
	if (!strcmp(line, "/help")) {
		put(u, tui_commands);
	} else if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) {
		return false;
	} else if (!strcmp(line, "/box")) {
		if (!strcmp(arg, "recreate") || !strcmp(arg, "destroy")) {
			if (!u->own_box) {
				putf(u, "The box %s is not this session's own (--box); ward leaves it alone.\n", u->box);
			} else {
				char old[BOX_NAME_MAX + 1];
				snprintf(old, sizeof(old), "%s", u->box);
				box_down(u);
				putf(u, "Destroyed box %s (the workspace changes are kept).\n", old);
				if (!strcmp(arg, "recreate") && box_up(u) == 0)
					putf(u, "New box %s.\n", u->box);
			}
		} else if (*arg) {
			putf(u, "/box takes recreate or destroy, or nothing.\n");
		} else {
			cmd_box_show(u);
		}
	} else if (!strcmp(line, "/diff")) {
		show_diff(u, false);
	} else if (!strcmp(line, "/apply")) {
		apply_changes(u);
	} else if (!strcmp(line, "/cost")) {
		putf(u, "%lld tokens in, %lld out (%lld cache read, %lld cache write)", (long long)u->usage.input,
		     (long long)u->usage.output, (long long)u->usage.cache_read, (long long)u->usage.cache_write);
		if (u->priced)
			putf(u, ": $%.4f\n", price_cost(&u->price, &u->usage));
		else
			putf(u, "; ward does not know the prices of %s\n", u->f.cfg.pcfg.model);
	} else if (!strcmp(line, "/clear")) {
		cJSON *rec = cJSON_CreateObject();
		journal_write(&u->s.j, "clear", rec);
		cJSON_Delete(rec);
		cJSON_Delete(u->s.messages);
		u->s.messages = cJSON_CreateArray();
		put(u, "The conversation starts again; the box and the workspace changes stay.\n");
	} else if (!strcmp(line, "/resume")) {
		cmd_resume(u, arg);
	} else if (!strcmp(line, "/approve")) {
		static const char *const names[] = { [GATE_ASK] = "ask", [GATE_EDITS] = "edits", [GATE_AUTO] = "auto" };
		if (*arg && gate_mode_parse(arg, &u->f.gate.mode) < 0)
			putf(u, "\"%s\" is not a mode; use ask, edits or auto.\n", arg);
		else
			putf(u, "Approvals: %s (ask: every write and command is asked; edits: file changes run, commands "
				"are asked; auto: everything in the box runs).\n",
			     names[u->f.gate.mode]);
	} else {
		_cleanup_free_ char *s = short_safe(line, 40);
		putf(u, "Unknown command %s; /help lists them.\n", s ? s : "");
	}
	return true;
}

/* ---- the session ---- */

/* The message with each paste tag replaced by what was pasted. */
static char *expand_pastes(struct tui *u, const char *line)
{
	struct buf b;
	buf_init(&b, TUI_MSG_MAX);
	for (const char *p = line; *p;) {
		int k, used = 0;
		size_t lines;
		if (sscanf(p, "[pasted text #%d, %zu lines]%n", &k, &lines, &used) == 2 && used > 0 && k >= 1 &&
		    k <= u->npastes && u->pastes[k - 1]) {
			buf_append(&b, u->pastes[k - 1], strlen(u->pastes[k - 1]));
			p += used;
			continue;
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

static void pastes_free(struct tui *u)
{
	for (int i = 0; i < u->npastes; i++)
		free(u->pastes[i]);
	u->npastes = 0;
}

/* A message from the person: lines ending in \ go on. NULL at the end of
 * input; "" after a Ctrl-C (u->ctrl_c says so). */
static char *read_message(struct tui *u)
{
	struct buf msg;
	buf_init(&msg, TUI_MSG_MAX);
	/* What was typed during the last turn comes first. */
	if (u->ahead.len) {
		feed(u, u->ahead.data, u->ahead.len);
		u->ahead.len = 0;
	}
	fputs(PASTE_ON, stdout);
	fflush(stdout);
	bool first = true;
	for (;;) {
		char *line = editor_line(u->ed, first ? "› " : "… ", true);
		if (!line) {
			buf_free(&msg);
			return NULL;
		}
		if (u->ctrl_c) {
			free(line);
			buf_free(&msg);
			return strdup("");
		}
		size_t l = strlen(line);
		bool more = l > 0 && line[l - 1] == '\\';
		if (more)
			line[--l] = '\n';
		buf_append(&msg, line, l + more);
		free(line);
		first = false;
		if (!more)
			break;
	}
	fputs(PASTE_OFF, stdout);
	fflush(stdout);
	char *out = buf_cstr(&msg) == 0 ? expand_pastes(u, msg.data) : strdup("");
	buf_free(&msg);
	pastes_free(u);
	return out;
}

static void run_message(struct tui *u, const char *text)
{
	if (box_up(u) < 0)
		return;
	struct turn_cfg cfg = u->f.cfg;
	cfg.gate = &u->f.gate;
	cfg.sinks[cfg.nsinks++] = (struct turn_sink){ on_event, u };
	cfg.input = (struct turn_input){ .fd = u->in, .on_ready = on_keys, .tick_ms = TUI_TICK_MS, .on_tick = on_tick, .ud = u };
	u->deadline = u->f.deadline_ms ? now_ms() + u->f.deadline_ms : 0;
	cfg.b.deadline_ms = u->deadline;
	u->interrupts = 0;
	u->bol = true;
	tty_turn_mode(u);
	struct turn_stop stop;
	struct err e = { 0 };
	int r = run_turn(&cfg, &u->s, text, &stop, &e);
	live_clear(u);
	tty_cooked(u);
	if (r < 0)
		putf(u, RED "ward: %s" RESET "\n", e.msg);
	else if (stop.signal == SIGTERM || stop.signal == SIGHUP)
		u->quit_sig = stop.signal;
	if (stop.kind == TURN_BOX_ERROR)
		box_down(u);	/* the next message gets a new one */
	print_status(u);
	fflush(stdout);
}

/* At the end: the changes are offered for review and applying. */
static void offer_changes(struct tui *u)
{
	for (;;) {
		struct err e = { 0 };
		char upper[PATH_MAX];
		struct ws_changes ch;
		if (u->f.rw || !u->own_box || !u->ws[0] || session_layers(u->s.j.id, upper, sizeof(upper), &e) < 0 ||
		    access(upper, F_OK) < 0 || ws_changes_read(u->ws, upper, &ch, &e) < 0)
			return;
		if (ch.n == 0) {
			ws_changes_free(&ch);
			session_layers_drop(u->s.j.id);
			return;
		}
		putf(u, "\nThe session changed %zu file%s in its copy of %s:\n", ch.n, ch.n == 1 ? "" : "s", u->ws);
		for (size_t i = 0; i < ch.n && i < 20; i++) {
			_cleanup_free_ char *s = short_safe(ch.v[i].path, 200);
			putf(u, "  %-9s %s\n", ws_kind_name(ch.v[i].kind), s ? s : "");
		}
		if (ch.n > 20)
			putf(u, "  … and %zu more\n", ch.n - 20);
		ws_changes_free(&ch);
		put(u, "  " BOLD "d" RESET " show the diff   " BOLD "a" RESET " apply them   " BOLD "k" RESET
		       " keep them for later\n");
		fflush(stdout);
		tty_turn_mode(u);
		int k = read_key(u, 0);
		tty_cooked(u);
		if (k == 'd' || k == 'D') {
			show_diff(u, true);
			continue;
		}
		if (k == 'a' || k == 'A') {
			apply_now(u);
			return;
		}
		putf(u, "Kept. Later: ward diff %s, ward apply %s\n", u->s.j.id, u->s.j.id);
		return;
	}
}

static int history_path(char *out, size_t n)
{
	char dir[PATH_MAX];
	struct err e = { 0 };
	if (journal_dir(dir, sizeof(dir), &e) < 0)
		return -1;
	/* The sessions directory's parent: $XDG_STATE_HOME/ward. */
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	snprintf(out, n, "%s/history", dir);
	return 0;
}

static int tui_run(int argc, char **argv)
{
	struct tui *u = calloc(1, sizeof(*u));
	if (!u)
		return EXIT_FAIL;
	run_flags_init(&u->f, GATE_EDITS);
	bool mode_given = false;
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "+h", tui_opts, NULL)) != -1) {
		int k = run_flag(&u->f, c, optarg);
		if (k < 0) {
			free(u);
			return EXIT_USAGE;
		}
		mode_given |= c == 'a';
		if (k > 0)
			continue;
		free(u);
		if (c == 'h') {
			fputs(tui_help, stdout);
			return 0;
		}
		fputs(tui_help, stderr);
		return EXIT_USAGE;
	}
	if (optind != argc) {
		cmd_error("the interactive session takes no task argument; type it at the prompt, or use `ward run TASK`");
		free(u);
		return EXIT_USAGE;
	}
	if (!isatty(0) || !isatty(1)) {
		cmd_error("the interactive session needs a terminal on stdin and stdout; in a script use `ward run TASK`");
		free(u);
		return EXIT_USAGE;
	}
	if (!mode_given && u->f.rw)
		u->f.gate.mode = GATE_ASK;	/* edits would reach the tree at once */
	int r = run_flags_finish(&u->f);
	if (r) {
		free(u);
		return r;
	}
	u->f.gate.ask = tui_ask;
	u->f.gate.ask_ud = u;
	u->priced = price_for(u->f.cfg.pcfg.model, &u->price);
	u->in = 0;
	buf_init(&u->ahead, TUI_QUEUE);
	buf_init(&u->paste, TUI_MSG_MAX);
	setlocale(LC_CTYPE, "");
	if (strcmp(nl_langinfo(CODESET), "UTF-8"))
		setlocale(LC_CTYPE, "C.UTF-8");

	/* Signals: read from a signalfd at the prompt, by the turn's loop in
	 * a turn. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	u->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	/* The terminal as found, restored on every way out. */
	if (tcgetattr(u->in, &u->saved) == 0) {
		tty_saved = u->saved;
		tty_saved_ok = true;
		atexit(tty_restore_now);
		static const int crash[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGQUIT };
		for (size_t i = 0; i < ARRAY_SIZE(crash); i++) {
			struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_RESETHAND | SA_NODEFER };
			sigaction(crash[i], &sa, NULL);
		}
	}

	struct err e = { 0 };
	char hist[PATH_MAX];
	if (editor_open(&u->ed, history_path(hist, sizeof(hist)) == 0 ? hist : NULL, tui_byte, u, &e) < 0) {
		cmd_error("%s", e.msg);
		free(u);
		return EXIT_FAIL;
	}
	r = session_start(&u->f, &u->s, u->ws);
	if (r) {
		editor_close(u->ed);
		free(u);
		return r;
	}
	u->own_box = !u->f.box_name;
	if (!u->own_box)
		snprintf(u->box, sizeof(u->box), "%s", u->f.box_name);
	u->bol = true;
	static const char *const modes[] = { [GATE_ASK] = "ask", [GATE_EDITS] = "edits", [GATE_AUTO] = "auto" };
	putf(u, BOLD "ward" RESET " · %s · workspace %s (%s) · approvals: %s\n", u->f.cfg.pcfg.model,
	     u->ws[0] ? u->ws : "(none)", u->f.rw ? "read-write" : "copy-on-write", modes[u->f.gate.mode]);
	if (u->f.resume)
		putf(u, "Resumed session %s (%d messages).\n", u->s.j.id, cJSON_GetArraySize(u->s.messages));
	fflush(stdout);
	if (box_up(u) < 0) {
		/* As ward run: no box, no session (the journal says why). */
		fflush(stdout);
		session_end(&u->s);
		editor_close(u->ed);
		tty_restore_now();
		close(u->sfd);
		buf_free(&u->ahead);
		buf_free(&u->paste);
		r = u->own_box ? EXIT_NOBOX : EXIT_UNKNOWN_BOX;
		free(u);
		return r;
	}
	putf(u, DIM "box %s · session %s · /help for commands · Esc interrupts" UNDIM "\n", u->box, u->s.j.id);

	int ctrl_c_count = 0;
	while (!u->quit_sig && !u->gone) {
		put(u, "\n");
		fflush(stdout);
		_cleanup_free_ char *line = read_message(u);
		if (!line)
			break;	/* Ctrl-D, a hangup, SIGTERM */
		if (u->ctrl_c) {
			u->ctrl_c = false;
			pastes_free(u);
			if (++ctrl_c_count >= 2)
				break;
			put(u, DIM "(Ctrl-C again to exit)" UNDIM "\n");
			continue;
		}
		ctrl_c_count = 0;
		char *t = line + strspn(line, " \t\n");
		if (!*t)
			continue;
		if (*t == '/') {
			if (!slash(u, t))
				break;
			fflush(stdout);
			continue;
		}
		run_message(u, line);
	}
	fputs(PASTE_OFF, stdout);
	box_down(u);
	if (!u->quit_sig && !u->gone)
		offer_changes(u);
	if (!u->gone)
		printf("\nSession %s. Continue it with: ward --resume %s\n", u->s.j.id, u->s.j.id);
	fflush(stdout);
	session_end(&u->s);
	editor_close(u->ed);
	tty_restore_now();
	pastes_free(u);
	buf_free(&u->ahead);
	buf_free(&u->paste);
	int sig = u->quit_sig ? u->quit_sig : u->gone ? SIGHUP : 0;
	close(u->sfd);
	free(u);
	return sig ? 128 + sig : EXIT_OKAY;
}

const struct command cmd_chat = {
	.name = "chat", .args = "[FLAGS]", .summary = "the interactive session (what `ward` alone starts at a terminal)",
	.run = tui_run,
};
