#include "cmd/run-out.h"
#include "base/json.h"
#include "cmd/session.h"
#include "cmd/term.h"
#include "base/cleanup.h"
#include "tools/tool.h"
#include "base/fdio.h"
#include "base/jsonprint.h"
#include "base/utf8.h"
#include "turn/usage.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>


void run_out_json_line(FILE *to, cJSON *j)
{
	_cleanup_free_ char *s = jsonprint_text(j);
	if (s) {
		fputs(s, to ? to : stdout);
		fputc('\n', to ? to : stdout);
		fflush(to ? to : stdout);
	}
}

void run_out_agent(const struct run_out *o, cJSON *j)
{
	cJSON_AddStringToObject(j, "agent", o->agent ? o->agent : "main");
	if (o->parent)
		cJSON_AddStringToObject(j, "parent", o->parent);
	else
		cJSON_AddNullToObject(j, "parent");
}

void run_out_event(void *ud, const struct turn_event *ev)
{
	struct run_out *o = ud;
	if (o->json && ev->type == EV_AGENT) {
		/* A subagent's line, as it wrote it (its agent and parent in it). */
		run_out_json_line(o->to, (cJSON *)ev->result);
		return;
	}
	if (o->json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "type", turn_ev_name(ev->type));
		switch (ev->type) {
		case EV_ROUND:
			cJSON_AddNumberToObject(j, "round", (double)ev->n);
			break;
		case EV_TEXT:
		case EV_THINKING:
		case EV_TOOL_OUTPUT: {
			_cleanup_free_ char *t = utf8_dup(ev->text, ev->len);
			cJSON_AddStringToObject(j, "text", t ? t : "");
			if (ev->call)
				cJSON_AddStringToObject(j, "call_id", json_str(ev->call, "id") ? json_str(ev->call, "id") : "");
			break;
		}
		case EV_RETRY:
			cJSON_AddStringToObject(j, "why", ev->text);
			cJSON_AddNumberToObject(j, "delay_ms", (double)ev->n);
			break;
		case EV_TOOL_CALL:
			cJSON_AddItemToObject(j, "call", cJSON_Duplicate(ev->call, 1));
			break;
		case EV_APPROVAL:
			cJSON_AddStringToObject(j, "call_id", json_str(ev->call, "id") ? json_str(ev->call, "id") : "");
			cJSON_AddStringToObject(j, "decision", gate_decision_name((enum gate_decision)ev->n));
			cJSON_AddStringToObject(j, "why", ev->text);
			if (ev->hook)
				cJSON_AddStringToObject(j, "hook", ev->hook);
			break;
		case EV_TOOL_RESULT:
			cJSON_AddStringToObject(j, "call_id", json_str(ev->call, "id") ? json_str(ev->call, "id") : "");
			cJSON_AddItemToObject(j, "result", cJSON_Duplicate(ev->result, 1));
			break;
		case EV_USAGE:
			cJSON_AddNumberToObject(j, "input_tokens", (double)ev->usage->input);
			cJSON_AddNumberToObject(j, "output_tokens", (double)ev->usage->output);
			cJSON_AddNumberToObject(j, "cache_read_tokens", (double)ev->usage->cache_read);
			cJSON_AddNumberToObject(j, "cache_write_tokens", (double)ev->usage->cache_write);
			cJSON_AddNumberToObject(j, "cache_hit_rate", round(usage_hit_rate(ev->usage) * 1000) / 1000);
			break;
		case EV_STOP:
			cJSON_AddStringToObject(j, "reason", turn_stop_name(ev->stop->kind));
			cJSON_AddStringToObject(j, "why", ev->stop->why);
			break;
		case EV_NET:
		case EV_BOX:
		case EV_JOB:
		case EV_COMPACT:
		case EV_HOOK:
		case EV_AGENT:
			for (const cJSON *f = ev->result ? ev->result->child : NULL; f; f = f->next)
				if (f->string && strcmp(f->string, "type"))
					cJSON_AddItemToObject(j, f->string, cJSON_Duplicate(f, 1));
			break;
		}
		/* Last: a line's fields as before, whose it is after them. */
		run_out_agent(o, j);
		run_out_json_line(o->to, j);
		cJSON_Delete(j);
		return;
	}
	/* Plain: progress on stderr, the model's text as it streams too; the
	 * final answer alone goes to stdout at the end (run_out_answer). Model
	 * text is sanitised: no control sequences reach the terminal. */
	switch (ev->type) {
	case EV_TEXT: {
		_cleanup_free_ char *t = utf8_term_safe(ev->text, ev->len);
		if (t) {
			fputs(t, stderr);
			fflush(stderr);
			o->text_open = t[0] && t[strlen(t) - 1] != '\n';
		}
		break;
	}
	case EV_RETRY:
		term_printf(stderr, "ward: %s; retrying in %.1f s\n", ev->text, (double)ev->n / 1000);
		break;
	case EV_TOOL_CALL: {
		if (o->text_open) {
			fputc('\n', stderr);
			o->text_open = false;
		}
		/* One line each, as the session's card: a newline in them
		 * would start a line that looks like ward's. */
		const char *arg = tool_call_arg(ev->call), *name = json_str(ev->call, "name");
		_cleanup_free_ char *n = term_line(name ? name : "?", strlen(name ? name : "?"), 60);
		_cleanup_free_ char *a = term_line(arg, strlen(arg), 200);
		term_printf(stderr, "● %s %s\n", n ? n : "", a ? a : "");
		break;
	}
	case EV_APPROVAL:
		if (ev->n != GATE_ALLOW)
			term_printf(stderr, "  ✗ %s\n", ev->text);
		break;
	case EV_TOOL_RESULT: {
		const char *outcome = json_str(ev->result, "outcome");
		const cJSON *ec = cJSON_GetObjectItemCaseSensitive(ev->result, "exit_code");
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(ev->result, "elapsed_ms");
		term_printf(stderr, "  ⎿ %s", outcome ? outcome : "?");
		if (cJSON_IsNumber(ec))
			term_printf(stderr, " (exit %d)", ec->valueint);
		if (cJSON_IsNumber(ms))
			term_printf(stderr, " in %.1f s", ms->valuedouble / 1000);
		if (outcome && strcmp(outcome, "ok")) {
			/* The first line of what the model was told. */
			const char *t = json_str(ev->result, "text");
			/* "refused: refused: ..." says it once. */
			size_t ol = strlen(outcome);
			if (t && !strncmp(t, outcome, ol) && t[ol] == ':' && t[ol + 1] == ' ')
				t += ol + 2;
			if (t && *t) {
				size_t l = strcspn(t, "\n");
				_cleanup_free_ char *s = utf8_term_safe(t, MIN(l, (size_t)300));
				term_printf(stderr, ": %s", s ? s : "");
			}
		}
		fputc('\n', stderr);
		break;
	}
	case EV_BOX: {
		const char *what = json_str(ev->result, "event"), *why = json_str(ev->result, "why");
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(ev->result, "ms");
		if (what && !strcmp(what, "woken"))
			term_printf(stderr, "  ⏻ the box was hibernated: woken in %.0f ms\n", cJSON_IsNumber(ms) ? ms->valuedouble : 0);
		else if (what && !strcmp(what, "wake_failed")) {
			_cleanup_free_ char *w = utf8_term_safe(why ? why : "", strlen(why ? why : ""));
			term_printf(stderr, "  ✗ the box could not be woken: %s\n", w ? w : "");
		}
		break;
	}
	case EV_JOB: {
		const char *what = json_str(ev->result, "event"), *how = json_str(ev->result, "how");
		const cJSON *job = cJSON_GetObjectItemCaseSensitive(ev->result, "job");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
		const char *cmd = json_str(job, "command");
		if (!how)
			how = "ended";
		_cleanup_free_ char *c = utf8_term_safe(cmd ? cmd : "", strlen(cmd ? cmd : ""));
		_cleanup_free_ char *h = utf8_term_safe(how, strlen(how));
		if (what && !strcmp(what, "ended"))
			term_printf(stderr, "  ⚙ job %d %s: %s\n", cJSON_IsNumber(id) ? (int)id->valuedouble : 0,
				    h ? h : "", c ? c : "");
		break;
	}
	case EV_NET: {
		/* What the box reached, or was refused: one line each. */
		const char *why = json_str(ev->result, "why");
		const cJSON *port = cJSON_GetObjectItemCaseSensitive(ev->result, "port");
		const cJSON *down = cJSON_GetObjectItemCaseSensitive(ev->result, "down");
		_cleanup_free_ char *h = utf8_term_safe(json_str(ev->result, "host") ? json_str(ev->result, "host") : "?",
						       strlen(json_str(ev->result, "host") ? json_str(ev->result, "host") : "?"));
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ev->result, "allowed"))) {
			_cleanup_free_ char *w = utf8_term_safe(why ? why : "", strlen(why ? why : ""));
			term_printf(stderr, "  ✗ network: %s\n", w ? w : "");
		} else {
			term_printf(stderr, "  ⇄ network: %.200s:%d, %.0f bytes in\n", h ? h : "", cJSON_IsNumber(port) ? port->valueint : 0,
				cJSON_IsNumber(down) ? down->valuedouble : 0);
		}
		break;
	}
	case EV_HOOK: {
		/* A hook that said something: one line (errors are warned of
		 * where they are run). */
		const char *d = json_str(ev->result, "decision"), *w = json_str(ev->result, "why");
		if (d && (!strcmp(d, "block") || !strcmp(d, "approve"))) {
			_cleanup_free_ char *s = utf8_term_safe(w ? w : "", strnlen(w ? w : "", 300));
			term_printf(stderr, "  ⚑ %s hook: %s%s%s\n", json_str(ev->result, "event") ? json_str(ev->result, "event") : "?",
				d, s && *s ? ": " : "", s ? s : "");
		}
		break;
	}
	case EV_COMPACT:
		term_printf(stderr, "ward: compacted the conversation: %lld messages replaced by a summary (%s)\n",
			(long long)ev->n, ev->text);
		break;
	case EV_STOP:
		if (o->text_open) {
			fputc('\n', stderr);
			o->text_open = false;
		}
		break;
	default:
		break;
	}
}
int run_out_answer(const char *answer, const char *path, bool to_stdout)
{
	if (!answer)
		return 0;
	size_t n = strlen(answer);
	bool nl = n && answer[n - 1] != '\n';
	if (to_stdout) {
		_cleanup_free_ char *t = utf8_term_safe(answer, n);
		fputs(t ? t : "", stdout);
		if (nl)
			fputc('\n', stdout);
		fflush(stdout);
	}
	if (!path)
		return 0;
	/* The model's text: 0600 whatever the umask, written whole and
	 * renamed; a pipe or a terminal named as the file gets it as it is. */
	_cleanup_free_ char *data = malloc(n + 2);
	if (!data)
		return -ENOMEM;
	memcpy(data, answer, n);
	if (nl)
		data[n++] = '\n';
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		return fd < 0 ? -errno : fdio_write_full(fd, data, n);
	}
	return fdio_write_atomic(path, data, n, 0600);
}
