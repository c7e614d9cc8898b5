/* JSON-RPC 2.0, one message a line: the envelope's rules (a version of
 * "2.0", an id a string or a number, a method a string, params an
 * object) are checked here, once, for every message read; what a
 * method means is the caller's. */
#include "acp/rpc.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonprint.h"
#include "base/jsonstrict.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(struct rpc *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct rpc *r, const char *fmt, ...)
{
	if (!r->log)
		return;
	char line[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r->log(r->log_ud, line);
}

void rpc_init(struct rpc *r, int in, int out, size_t line_max)
{
	*r = (struct rpc){ .in = in, .out = out, .next_id = 0, .log = r->log, .log_ud = r->log_ud };
	buf_init(&r->line, line_max);
}

void rpc_free(struct rpc *r)
{
	buf_free(&r->line);
}

static void send_msg(struct rpc *r, cJSON *msg)
{
	_cleanup_free_ char *s = msg ? jsonprint_text(msg) : NULL;
	cJSON_Delete(msg);
	if (!s || r->out < 0)
		return;
	/* The line and its newline in one write: a reader woken by the line
	 * alone would wait for the newline until ward ran again (on a busy
	 * machine, a time slice: bench/acp.py's first update). */
	size_t n = strlen(s);
	char *l = realloc(s, n + 2);
	if (!l)
		return;
	s = l;
	s[n] = '\n';
	s[n + 1] = 0;
	if (fdio_write_full(r->out, s, n + 1) < 0) {
		say(r, "the other side no longer reads: %s", strerror(errno));
		r->out = -1;	/* (the owner's fd: it closes it) */
		r->eof = true;
	}
}

static cJSON *envelope(const cJSON *id)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "jsonrpc", "2.0");
	if (id)
		cJSON_AddItemToObject(m, "id", cJSON_Duplicate(id, 1));
	return m;
}

void rpc_reply(struct rpc *r, const cJSON *id, cJSON *result)
{
	cJSON *m = envelope(id);
	cJSON_AddItemToObject(m, "result", result ? result : cJSON_CreateObject());
	send_msg(r, m);
}

void rpc_error(struct rpc *r, const cJSON *id, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON *m = envelope(NULL);
	cJSON_AddItemToObject(m, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	cJSON *e = cJSON_AddObjectToObject(m, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	send_msg(r, m);
	say(r, "answered an error: %s", msg);
}

void rpc_notify(struct rpc *r, const char *method, cJSON *params)
{
	cJSON *m = envelope(NULL);
	cJSON_AddStringToObject(m, "method", method);
	cJSON_AddItemToObject(m, "params", params ? params : cJSON_CreateObject());
	send_msg(r, m);
}

int64_t rpc_request(struct rpc *r, const char *method, cJSON *params)
{
	int64_t id = r->next_id++;
	cJSON *m = envelope(NULL);
	cJSON_AddNumberToObject(m, "id", (double)id);
	cJSON_AddStringToObject(m, "method", method);
	cJSON_AddItemToObject(m, "params", params ? params : cJSON_CreateObject());
	send_msg(r, m);
	return id;
}

bool rpc_is_response(const struct rpc_msg *m, int64_t id)
{
	return !m->method && cJSON_IsNumber(m->id) && m->id->valuedouble == (double)id &&
	       (cJSON_GetObjectItemCaseSensitive(m->m, "result") || cJSON_GetObjectItemCaseSensitive(m->m, "error"));
}

static void json_freep(cJSON **p)
{
	cJSON_Delete(*p);
}

static void one_line(struct rpc *r, const char *line, size_t n, void (*on_msg)(void *, const struct rpc_msg *),
		     void *ud)
{
	while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	if (!n)
		return;
	__attribute__((cleanup(json_freep))) cJSON *m = NULL;
	struct err e = { 0 };
	if (jsonstrict_parse(line, n, &m, &e) < 0) {
		rpc_error(r, NULL, RPC_PARSE, "not one JSON value: %s", e.msg);
		return;
	}
	if (!cJSON_IsObject(m)) {
		rpc_error(r, NULL, RPC_INVALID, "a message is a JSON object");
		return;
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id) && !cJSON_IsNull(id)) {
		rpc_error(r, NULL, RPC_INVALID, "id must be a string or a number");
		return;
	}
	const char *ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "jsonrpc"));
	if (!ver || strcmp(ver, "2.0")) {
		rpc_error(r, id, RPC_INVALID, "\"jsonrpc\" must be \"2.0\"");
		return;
	}
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
	struct rpc_msg msg = { .m = m, .id = id };
	if (!method) {
		if (!id)
			rpc_error(r, NULL, RPC_INVALID, "a message has a method, or is a response with an id");
		else
			on_msg(ud, &msg);
		return;
	}
	if (!cJSON_IsString(method)) {
		rpc_error(r, id, RPC_INVALID, "method must be a string");
		return;
	}
	msg.method = method->valuestring;
	msg.params = cJSON_GetObjectItemCaseSensitive(m, "params");
	if (msg.params && !cJSON_IsObject(msg.params)) {
		if (id)
			rpc_error(r, id, RPC_PARAMS, "%.100s: params must be an object", msg.method);
		return;
	}
	on_msg(ud, &msg);
}

void rpc_read(struct rpc *r, void (*on_msg)(void *ud, const struct rpc_msg *m), void *ud)
{
	char tmp[65536];
	ssize_t n = fdio_read_some(r->in, tmp, sizeof(tmp));
	if (n <= 0) {
		r->eof = true;
		return;
	}
	/* A line past the ceiling is dropped to its newline, which may come
	 * in this read or a later one; what follows it is kept. */
	size_t from = 0;
	while ((size_t)n > from) {
		while (r->skipping && from < (size_t)n)
			if (tmp[from++] == '\n')
				r->skipping = false;
		if (from >= (size_t)n || buf_append(&r->line, tmp + from, (size_t)n - from) == 0)
			break;
		r->line.len = 0;
		r->skipping = true;
		rpc_error(r, NULL, RPC_INVALID, "a message longer than %zu MiB: skipped", r->line.cap >> 20);
	}
	for (;;) {
		char *nl = r->line.len ? memchr(r->line.data, '\n', r->line.len) : NULL;
		if (!nl)
			break;
		size_t len = (size_t)(nl - r->line.data);
		_cleanup_free_ char *line = malloc(len + 1);
		if (!line)
			return;
		memcpy(line, r->line.data, len);
		line[len] = 0;
		buf_consume(&r->line, len + 1);
		one_line(r, line, len, on_msg, ud);
	}
}
