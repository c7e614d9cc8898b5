/* What the terminal session prints: model text and thinking, a card for
 * each call (its output capped, its result), the live line with a spinner,
 * and the approval question. Everything untrusted is made term-safe here. */
#include "cmd/tui.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "cmd/term.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tui_cols(void)
{
	struct winsize w;
	if (ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_col >= 20)
		return w.ws_col;
	return 80;
}

/* Attributes only: the cursor does not move. */
void tui_put_attr(struct tui *u, const char *s)
{
	fputs(s, stdout);
}

void tui_put(struct tui *u, const char *s)
{
	size_t n = strlen(s);
	if (!n)
		return;
	fwrite(s, 1, n, stdout);
	u->bol = s[n - 1] == '\n';
}

void tui_putf(struct tui *u, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n >= 0)
		tui_put(u, s);
	free(s);
}

/* Untrusted text (the model's, a tool's, a file's): no control sequence
 * reaches the terminal. */
void tui_put_safe(struct tui *u, const char *p, size_t n)
{
	_cleanup_free_ char *s = utf8_term_safe(p, n);
	if (s)
		tui_put(u, s);
}

/* The session's one-line form is ward's one (cmd/term.h). */
char *tui_short_n(const char *s, size_t n, size_t max)
{
	return term_line(s, n, max);
}

char *tui_short(const char *s, size_t max)
{
	return tui_short_n(s, strlen(s), max);
}

char *tui_fit(const char *s, int cols)
{
	size_t chars = 0, i = 0, n = strlen(s), cut = n;
	for (; i < n; chars++) {
		if ((int)chars == cols - 1 && cut == n)
			cut = i;	/* where "…" would go */
		size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
		i += k ? k : 1;
	}
	if ((int)chars <= cols)
		return tui_short_n(s, n, n);
	return tui_short_n(s, n, cut);
}

void tui_newline(struct tui *u)
{
	if (u->thinking_open) {
		tui_put_attr(u, UNDIM);
		u->thinking_open = false;
	}
	if (!u->bol)
		tui_put(u, "\n");
}

void tui_live_clear(struct tui *u)
{
	if (u->live) {
		fputs("\r\033[K", stdout);
		u->live = false;
	}
}

void tui_live_draw(struct tui *u)
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

void tui_flush(struct tui *u)
{
	fflush(stdout);
}

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
			if (u->bol)
				tui_put(u, DIM "  │ " UNDIM);
			tui_put_safe(u, p, seg);
			if (nl)
				u->out_lines++;
		}
		p += seg;
	}
}

static void card_result(struct tui *u, const cJSON *call, const cJSON *result)
{
	const char *id = json_str(call, "id") ? json_str(call, "id") : "";
	if (!u->bol)
		tui_put(u, "\n");
	if (u->out_more)
		tui_putf(u, DIM "  │ … %zu more line%s" UNDIM "\n", u->out_more, u->out_more == 1 ? "" : "s");
	u->out_more = 0;
	if (strcmp(id, u->card_id)) {
		/* Calls that ran side by side: say whose result this is. */
		_cleanup_free_ char *n = tui_short(json_str(call, "name") ? json_str(call, "name") : "?", 31);
		_cleanup_free_ char *a = tui_short(session_call_arg(call), 60);
		tui_putf(u, "  " BOLD "%s" RESET " %s\n", n ? n : "", a ? a : "");
	}
	const char *outcome = json_str(result, "outcome");
	const cJSON *ec = cJSON_GetObjectItemCaseSensitive(result, "exit_code");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(result, "elapsed_ms");
	bool ok = outcome && !strcmp(outcome, "ok") && (!cJSON_IsNumber(ec) || ec->valueint == 0);
	bool cancelled = outcome && !strcmp(outcome, "cancelled");
	tui_putf(u, "  ⎿ %s%s" RESET, ok ? GREEN : cancelled ? YELLOW : RED,
	     !outcome ? "?" : !strcmp(outcome, "ok") && !ok ? "failed" : !strcmp(outcome, "timed_out") ? "timed out" : outcome);
	if (cJSON_IsNumber(ec))
		tui_putf(u, " (exit %d)", ec->valueint);
	if (cJSON_IsNumber(ms))
		tui_putf(u, " in %.1f s", ms->valuedouble / 1000);
	tui_put(u, "\n");
	if (!ok) {
		/* What the model was told: the reason, the tail, the hint. */
		const char *t = json_str(result, "text");
		int lines = 0;
		while (t && *t && lines < 8) {
			size_t l = strcspn(t, "\n");
			if (l) {
				_cleanup_free_ char *s = tui_short_n(t, l, (size_t)tui_cols() - 6);
				tui_putf(u, DIM "    %s" UNDIM "\n", s ? s : "");
				lines++;
			}
			t += l + (t[l] == '\n');
		}
	}
}

void tui_on_event(void *ud, const struct turn_event *ev)
{
	struct tui *u = ud;
	tui_live_clear(u);
	switch (ev->type) {
	case EV_ROUND:
		u->streamed = false;
		u->waiting = true;
		u->since = now_ms();
		break;
	case EV_TEXT:
		u->waiting = false;
		if (u->thinking_open)
			tui_newline(u);
		tui_put_safe(u, ev->text, ev->len);
		u->streamed = true;
		break;
	case EV_THINKING:
		u->waiting = false;
		if (!u->thinking_open) {
			tui_newline(u);
			tui_put(u, DIM "✻ ");
			u->thinking_open = true;
		}
		tui_put_attr(u, DIM);
		tui_put_safe(u, ev->text, ev->len);
		break;
	case EV_RETRY: {
		tui_newline(u);
		_cleanup_free_ char *s = tui_short(ev->text, 300);
		tui_putf(u, YELLOW "↻ %s; retrying in %.1f s" RESET "\n", s ? s : "", (double)ev->n / 1000);
		break;
	}
	case EV_TOOL_CALL: {
		u->waiting = false;
		tui_newline(u);
		/* The name is the model's: term-safe, also for the live line. */
		const char *name = json_str(ev->call, "name");
		_cleanup_free_ char *n = tui_short(name ? name : "?", 24);
		snprintf(u->call_name, sizeof(u->call_name), "%s", n ? n : "?");
		const char *a = session_call_arg(ev->call);
		_cleanup_free_ char *s = tui_short(a, (size_t)MAX(20, tui_cols() - (int)strlen(u->call_name) - 6));
		snprintf(u->card_id, sizeof(u->card_id), "%s", json_str(ev->call, "id") ? json_str(ev->call, "id") : "");
		u->streamed = false;
		tui_putf(u, CYAN "●" RESET " " BOLD "%s" RESET " %s\n", u->call_name, s ? s : "");
		u->out_lines = 0;
		u->out_more = 0;
		break;
	}
	case EV_APPROVAL:
		if (ev->n == GATE_ALLOW) {
			u->call_running = true;
			u->since = now_ms();
		} else {
			_cleanup_free_ char *s = tui_short(ev->text, 400);
			tui_putf(u, RED "  ✗ %s" RESET "\n", s ? s : "");
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
	case EV_BOX: {
		const char *what = json_str(ev->result, "event");
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(ev->result, "ms");
		if (what && !strcmp(what, "woken"))
			tui_putf(u, DIM "  ⏻ box woken from hibernation in %.0f ms" UNDIM "\n",
				 cJSON_IsNumber(ms) ? ms->valuedouble : 0);
		break;
	}
	case EV_NET: {
		/* Between a card's output and its result: what the box reached. */
		const char *host = json_str(ev->result, "host"), *why = json_str(ev->result, "why");
		const cJSON *port = cJSON_GetObjectItemCaseSensitive(ev->result, "port");
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ev->result, "allowed"))) {
			_cleanup_free_ char *s = tui_short(why ? why : "", 400);
			tui_putf(u, RED "  ✗ network: %s" RESET "\n", s ? s : "");
		} else {
			_cleanup_free_ char *s = tui_short(host ? host : "?", 200);
			tui_putf(u, DIM "  ⇄ %s:%d" UNDIM "\n", s ? s : "", cJSON_IsNumber(port) ? port->valueint : 0);
		}
		break;
	}
	case EV_COMPACT: {
		tui_newline(u);
		_cleanup_free_ char *s = tui_short(ev->text ? ev->text : "", 300);
		tui_putf(u, DIM "⋯ compacted: %lld messages replaced by a summary (%s)" UNDIM "\n", (long long)ev->n,
			 s ? s : "");
		break;
	}
	case EV_HOOK:	/* the terminal session runs no hooks yet */
		break;
	case EV_STOP: {
		const struct turn_stop *st = ev->stop;
		if (st->kind == TURN_CANCELLED && u->streamed)
			tui_put(u, DIM " [interrupted: the partial answer is kept]" UNDIM);
		tui_newline(u);
		u->waiting = u->call_running = false;
		if (st->kind != TURN_DONE) {
			_cleanup_free_ char *s = tui_short(st->why, 400);
			tui_putf(u, "%s■ %s: %s" RESET "\n", st->kind == TURN_CANCELLED ? YELLOW : RED, turn_stop_name(st->kind),
			     s ? s : "");
		}
		break;
	}
	}
	tui_live_draw(u);
	tui_flush(u);
}

void tui_show_field(struct tui *u, const char *label, const char *v)
{
	size_t n = strlen(v);
	size_t k = MIN(n, (size_t)TUI_ASK_SHOW);
	while (k > 0 && k < n && ((unsigned char)v[k] & 0xc0) == 0x80)
		k--;
	/* The key is the model's too. */
	_cleanup_free_ char *l = tui_short(label ? label : "?", 60);
	tui_putf(u, "  %s:\n", l ? l : "");
	const char *p = v, *end = v + k;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		tui_put(u, "    ");
		tui_put_safe(u, p, l);
		tui_put(u, "\n");
		p += l + (nl != NULL);
	}
	if (k < n)
		tui_putf(u, DIM "    … cut here: %zu more bytes not shown" UNDIM "\n", n - k);
}


