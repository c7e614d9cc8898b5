/* The openai-responses provider: Responses-API SSE event sequences (fed
 * whole, byte by byte and at random cuts) assembled into one message; the
 * request built from a conversation, reasoning items included; and the
 * other providers' builders skipping the reasoning block. */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "turn/provider.h"
#include "tap.h"

struct run {
	const struct provider *p;
	struct stream *s;
	struct buf shown, thought;
	int tools_begun;
	char first_tool[64];
	int err;
	struct err e;
};

static void on_text(void *ud, const char *p, size_t n)
{
	buf_append(&((struct run *)ud)->shown, p, n);
}

static void on_thinking(void *ud, const char *p, size_t n)
{
	buf_append(&((struct run *)ud)->thought, p, n);
}

static void on_tool(void *ud, const char *id, const char *name)
{
	struct run *r = ud;
	if (!r->tools_begun++)
		snprintf(r->first_tool, sizeof(r->first_tool), "%s %s", id, name);
}

static int on_event(void *ud, const struct sse_event *ev)
{
	struct run *r = ud;
	int x = r->p->stream_event(r->s, ev, &r->e);
	if (x < 0 && !r->err)
		r->err = x;
	return 0;
}

/* cut: -1 whole, 0 byte by byte, >0 random cuts from that seed. */
static struct reply assemble(const char *body, int cut, struct run *r)
{
	const struct provider *p = &provider_openai_responses;
	*r = (struct run){ .p = p };
	buf_init(&r->shown, 1 << 20);
	buf_append(&r->shown, "", 0);
	buf_init(&r->thought, 1 << 20);
	buf_append(&r->thought, "", 0);
	struct stream_sink sink = { .ud = r, .text = on_text, .thinking = on_thinking, .tool_begin = on_tool };
	r->s = p->stream_new(&sink);
	struct sse sse;
	sse_init(&sse, 1 << 20, on_event, r);
	size_t len = strlen(body), i = 0;
	unsigned seed = (unsigned)cut;
	while (i < len) {
		size_t n = cut < 0 ? len : cut == 0 ? 1 : 1 + (size_t)(rand_r(&seed) % 9);
		if (n > len - i)
			n = len - i;
		sse_feed(&sse, body + i, n);
		i += n;
	}
	sse_finish(&sse);
	sse_free(&sse);
	struct reply out;
	p->stream_end(r->s, &out);
	p->stream_free(r->s);
	return out;
}

static void run_free(struct run *r)
{
	buf_free(&r->shown);
	buf_free(&r->thought);
}

static char *json(const cJSON *j)
{
	return cJSON_PrintUnformatted(j);
}

static void check_cuts(const char *name, const char *body)
{
	struct run r0;
	struct reply whole = assemble(body, -1, &r0);
	char *want = json(whole.content);
	bool same = true;
	for (int cut = 0; cut <= 100 && same; cut++) {
		struct run r;
		struct reply x = assemble(body, cut, &r);
		char *got = json(x.content);
		same = !strcmp(got, want) && x.stop == whole.stop && x.complete == whole.complete &&
		       !strcmp(r.shown.data, r0.shown.data) && !strcmp(r.thought.data, r0.thought.data);
		if (!same)
			printf("#   cut %d: %s\n", cut, got);
		free(got);
		reply_free(&x);
		run_free(&r);
	}
	ok(same, "%s: byte by byte and 100 random cuttings give the same message", name);
	free(want);
	reply_free(&whole);
	run_free(&r0);
}

static const cJSON *block(const struct reply *r, int i)
{
	return cJSON_GetArrayItem(r->content, i);
}

static const char *bstr(const struct reply *r, int i, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(block(r, i), k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *binput(const struct reply *r, int i)
{
	return json(cJSON_GetObjectItemCaseSensitive(block(r, i), "input"));
}

/* Events as the API sends them: an event line and a data line each. */
#define EV(name, data) "event: " name "\ndata: " data "\n\n"
#define CREATED EV("response.created", "{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-5-x\",\"output\":[],\"usage\":null}}") \
	EV("response.in_progress", "{\"type\":\"response.in_progress\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}")
#define USAGE "\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":12},\"output_tokens\":5,\"output_tokens_details\":{\"reasoning_tokens\":2},\"total_tokens\":35}"
#define COMPLETED EV("response.completed", "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"model\":\"gpt-5-x\"," USAGE "}}")
#define MSG_ADDED(i) EV("response.output_item.added", "{\"type\":\"response.output_item.added\",\"output_index\":" #i ",\"item\":{\"id\":\"msg_" #i "\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}") \
	EV("response.content_part.added", "{\"type\":\"response.content_part.added\",\"item_id\":\"msg_" #i "\",\"output_index\":" #i ",\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}}")
#define TEXT(i, t) EV("response.output_text.delta", "{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_" #i "\",\"output_index\":" #i ",\"content_index\":0,\"delta\":\"" t "\"}")
#define MSG_DONE(i, t) EV("response.output_text.done", "{\"type\":\"response.output_text.done\",\"item_id\":\"msg_" #i "\",\"output_index\":" #i ",\"content_index\":0,\"text\":\"" t "\"}") \
	EV("response.content_part.done", "{\"type\":\"response.content_part.done\",\"item_id\":\"msg_" #i "\",\"output_index\":" #i ",\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"" t "\"}}") \
	EV("response.output_item.done", "{\"type\":\"response.output_item.done\",\"output_index\":" #i ",\"item\":{\"id\":\"msg_" #i "\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"" t "\",\"annotations\":[]}]}}")
#define CALL_ADDED(i, cid, name) EV("response.output_item.added", "{\"type\":\"response.output_item.added\",\"output_index\":" #i ",\"item\":{\"id\":\"fc_" #i "\",\"type\":\"function_call\",\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"" cid "\",\"name\":\"" name "\"}}")
#define ARGS(i, d) EV("response.function_call_arguments.delta", "{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_" #i "\",\"output_index\":" #i ",\"delta\":\"" d "\"}")
#define CALL_DONE(i, cid, name, args) EV("response.function_call_arguments.done", "{\"type\":\"response.function_call_arguments.done\",\"item_id\":\"fc_" #i "\",\"output_index\":" #i ",\"arguments\":\"" args "\"}") \
	EV("response.output_item.done", "{\"type\":\"response.output_item.done\",\"output_index\":" #i ",\"item\":{\"id\":\"fc_" #i "\",\"type\":\"function_call\",\"status\":\"completed\",\"arguments\":\"" args "\",\"call_id\":\"" cid "\",\"name\":\"" name "\"}}")
#define RS_ADDED(i) EV("response.output_item.added", "{\"type\":\"response.output_item.added\",\"output_index\":" #i ",\"item\":{\"id\":\"rs_" #i "\",\"type\":\"reasoning\",\"summary\":[]}}")
#define RS_SUM(i, k, d) EV("response.reasoning_summary_text.delta", "{\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_" #i "\",\"output_index\":" #i ",\"summary_index\":" #k ",\"delta\":\"" d "\"}")
#define RS_DONE(i, enc, sum) EV("response.output_item.done", "{\"type\":\"response.output_item.done\",\"output_index\":" #i ",\"item\":{\"id\":\"rs_" #i "\",\"type\":\"reasoning\",\"encrypted_content\":\"" enc "\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"" sum "\"}]}}")

static void test_text(void)
{
	struct run r;
	const char *text = CREATED MSG_ADDED(0) TEXT(0, "Hello") TEXT(0, ", w\\u00f6") TEXT(0, "rld") MSG_DONE(0, "Hello, wörld") COMPLETED;
	struct reply x = assemble(text, -1, &r);
	is_int(r.err, 0, "text: every event understood");
	is_int(cJSON_GetArraySize(x.content), 1, "text: one block");
	is_str(bstr(&x, 0, "type"), "text", "text: a text block");
	is_str(bstr(&x, 0, "text"), "Hello, wörld", "text: assembled from the deltas");
	is_str(r.shown.data, "Hello, wörld", "text: shown as it streamed, once (not again at done)");
	is_str(stop_reason_name(x.stop), "end_turn", "text: end_turn");
	is_str(x.stop_raw, "completed", "text: in the API's word");
	ok(x.complete, "text: response.completed seen");
	ok(x.usage.input == 18 && x.usage.output == 5 && x.usage.cache_read == 12 && usage_prompt(&x.usage) == 30,
	   "text: usage, the 12 cached of 30 counted once, as cache reads (%lld in, %lld out, %lld cached)", (long long)x.usage.input,
	   (long long)x.usage.output, (long long)x.usage.cache_read);
	is_str(x.id, "resp_1", "text: response id");
	is_str(x.model, "gpt-5-x", "text: model");
	reply_free(&x);
	run_free(&r);
	check_cuts("text", text);

	/* A server that sends the text only whole, at output_item.done. */
	const char *nodelta = CREATED MSG_ADDED(0) MSG_DONE(0, "all at once") COMPLETED;
	x = assemble(nodelta, -1, &r);
	is_str(bstr(&x, 0, "text"), "all at once", "text without deltas: taken from output_item.done");
	is_str(r.shown.data, "all at once", "text without deltas: and shown");
	reply_free(&x);
	run_free(&r);

	/* The stream cut before response.completed. */
	x = assemble(CREATED MSG_ADDED(0) TEXT(0, "par"), -1, &r);
	ok(!x.complete, "a stream without response.completed is not complete");
	reply_free(&x);
	run_free(&r);

	const char *refusal = CREATED MSG_ADDED(0)
		EV("response.refusal.delta", "{\"type\":\"response.refusal.delta\",\"item_id\":\"msg_0\",\"output_index\":0,\"content_index\":0,\"delta\":\"I can't help with that.\"}") COMPLETED;
	x = assemble(refusal, -1, &r);
	is_str(stop_reason_name(x.stop), "refusal", "a refusal part: the refusal stop");
	is_str(r.shown.data, "I can't help with that.", "a refusal part: its words shown");
	reply_free(&x);
	run_free(&r);
}

static void test_call(void)
{
	struct run r;
	/* The arguments split across deltas, mid-key and mid-escape. */
	const char *call = CREATED CALL_ADDED(0, "call_A", "bash") ARGS(0, "{\\\"comm") ARGS(0, "and\\\": \\\"ls ") ARGS(0, "-la \\u2713")
		ARGS(0, "\\\"}") CALL_DONE(0, "call_A", "bash", "{\\\"command\\\": \\\"ls -la \\u2713\\\"}") COMPLETED;
	struct reply x = assemble(call, -1, &r);
	is_int(cJSON_GetArraySize(x.content), 1, "call: one block");
	is_str(bstr(&x, 0, "type"), "tool_use", "call: a tool_use block");
	is_str(bstr(&x, 0, "id"), "call_A", "call: its id is the call_id (not the item id)");
	is_str(bstr(&x, 0, "name"), "bash", "call: its name");
	char *in = binput(&x, 0);
	is_str(in, "{\"command\":\"ls -la ✓\"}", "call: arguments split across deltas parsed whole");
	free(in);
	ok(!bstr(&x, 0, "_ward_error"), "call: it may run");
	is_str(stop_reason_name(x.stop), "tool_use", "call: tool_use stop");
	is_str(r.first_tool, "call_A bash", "call: announced when its item was added");
	reply_free(&x);
	run_free(&r);
	check_cuts("call", call);

	/* Only deltas, no arguments.done (the item's done has none either). */
	const char *deltas = CREATED CALL_ADDED(0, "call_D", "ls") ARGS(0, "{\\\"path\\\":") ARGS(0, "\\\".\\\"}")
		EV("response.output_item.done", "{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"fc_0\",\"type\":\"function_call\",\"status\":\"completed\",\"call_id\":\"call_D\",\"name\":\"ls\"}}")
		COMPLETED;
	x = assemble(deltas, -1, &r);
	in = binput(&x, 0);
	is_str(in, "{\"path\":\".\"}", "call: the deltas alone make the arguments");
	free(in);
	reply_free(&x);
	run_free(&r);

	const char *bad = CREATED CALL_ADDED(0, "call_B", "bash") CALL_DONE(0, "call_B", "bash", "{\\\"command\\\": ") COMPLETED;
	x = assemble(bad, -1, &r);
	ok(bstr(&x, 0, "_ward_error") != NULL, "call: arguments that are not JSON: not run (%s)", bstr(&x, 0, "_ward_error"));
	reply_free(&x);
	run_free(&r);
}

/* Reasoning, a message, then two calls in one response. */
#define TWO_CALLS CREATED RS_ADDED(0) RS_SUM(0, 0, "Look at ") RS_SUM(0, 0, "both.") RS_SUM(0, 1, "Then read.") \
	RS_DONE(0, "gAAAAenc-1", "Look at both.") MSG_ADDED(1) TEXT(1, "Reading two.") MSG_DONE(1, "Reading two.") \
	CALL_ADDED(2, "call_1", "read") ARGS(2, "{\\\"path\\\":") ARGS(2, "\\\"a.txt\\\"}") \
	CALL_DONE(2, "call_1", "read", "{\\\"path\\\":\\\"a.txt\\\"}") \
	CALL_ADDED(3, "call_2", "read") ARGS(3, "{\\\"path\\\":\\\"b.txt\\\"}") \
	CALL_DONE(3, "call_2", "read", "{\\\"path\\\":\\\"b.txt\\\"}") COMPLETED

static void test_two_calls(void)
{
	struct run r;
	struct reply x = assemble(TWO_CALLS, -1, &r);
	is_int(cJSON_GetArraySize(x.content), 4, "two calls: reasoning, text, two tool_use blocks");
	is_str(bstr(&x, 0, "type"), "reasoning", "two calls: the reasoning item kept, first");
	is_str(bstr(&x, 0, "id"), "rs_0", "two calls: with its item id");
	is_str(bstr(&x, 0, "encrypted_content"), "gAAAAenc-1", "two calls: and its encrypted content");
	const cJSON *sum = cJSON_GetArrayItem(cJSON_GetObjectItem(block(&x, 0), "summary"), 0);
	is_str(cJSON_GetObjectItem(sum, "text")->valuestring, "Look at both.", "two calls: and its summary");
	is_str(r.thought.data, "Look at both.\n\nThen read.", "two calls: the summary shown as thinking, a paragraph a part");
	is_str(bstr(&x, 1, "text"), "Reading two.", "two calls: the text");
	is_str(bstr(&x, 2, "id"), "call_1", "two calls: the first call, first");
	is_str(bstr(&x, 3, "id"), "call_2", "two calls: the second call, second");
	char *in = binput(&x, 3);
	is_str(in, "{\"path\":\"b.txt\"}", "two calls: each with its own arguments");
	free(in);
	ok(!bstr(&x, 2, "_ward_error") && !bstr(&x, 3, "_ward_error"), "two calls: both may run");
	is_int(r.tools_begun, 2, "two calls: both announced");
	is_str(stop_reason_name(x.stop), "tool_use", "two calls: tool_use stop");
	reply_free(&x);
	run_free(&r);
	check_cuts("two calls", TWO_CALLS);
}

static void test_incomplete_and_errors(void)
{
	struct run r;
	/* A whole call, then one cut by max_output_tokens. */
	const char *inc = CREATED CALL_ADDED(0, "call_ok", "ls") CALL_DONE(0, "call_ok", "ls", "{}")
		CALL_ADDED(1, "call_cut", "write") ARGS(1, "{\\\"path\\\": \\\"a.txt\\\", \\\"content\\\": \\\"lon")
		EV("response.incomplete", "{\"type\":\"response.incomplete\",\"response\":{\"id\":\"resp_2\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"}," USAGE "}}");
	struct reply x = assemble(inc, -1, &r);
	ok(x.complete, "incomplete: the stream said it was done");
	is_str(stop_reason_name(x.stop), "max_tokens", "incomplete: max_output_tokens is the max_tokens stop");
	is_str(x.stop_raw, "max_output_tokens", "incomplete: in the API's words");
	is_int(cJSON_GetArraySize(x.content), 2, "incomplete: both calls kept");
	is_str(bstr(&x, 1, "id"), "call_cut", "incomplete: the cut call, with its call_id from output_item.added");
	ok(bstr(&x, 1, "_ward_error") && strstr(bstr(&x, 1, "_ward_error"), "max_output_tokens"),
	   "incomplete: the cut call is marked not to run (%s)", bstr(&x, 1, "_ward_error"));
	ok(!bstr(&x, 0, "_ward_error"), "incomplete: twin: the call finished before the cut may run");
	is_int(x.usage.output, 5, "incomplete: usage counted");
	reply_free(&x);
	run_free(&r);
	check_cuts("incomplete", inc);

	/* The limit hit right after the arguments, before the call was done:
	 * they parse, and still the call does not run. */
	x = assemble(CREATED CALL_ADDED(0, "call_w", "bash") ARGS(0, "{\\\"command\\\":\\\"ls\\\"}")
		     EV("response.incomplete", "{\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}"),
		     -1, &r);
	ok(bstr(&x, 0, "_ward_error") != NULL, "incomplete: a call with whole arguments but no output_item.done does not run");
	reply_free(&x);
	run_free(&r);

	/* A stream that ends mid-call, with no final event. */
	x = assemble(CREATED CALL_ADDED(0, "call_x", "bash") ARGS(0, "{\\\"command\\\":\\\"ls\\\"}"), -1, &r);
	ok(!x.complete, "cut: not complete");
	ok(bstr(&x, 0, "_ward_error") != NULL, "cut: its unfinished call does not run");
	reply_free(&x);
	run_free(&r);

	const char *error = CREATED MSG_ADDED(0) TEXT(0, "par")
		EV("error", "{\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The server had an error\",\"param\":null,\"sequence_number\":5}");
	x = assemble(error, -1, &r);
	ok(x.error, "error event: reply.error");
	is_str(x.error_type, "server_error", "error event: its code as the type");
	is_str(x.error_msg, "The server had an error", "error event: its message");
	reply_free(&x);
	run_free(&r);

	const char *failed = CREATED MSG_ADDED(0) TEXT(0, "par")
		EV("response.failed", "{\"type\":\"response.failed\",\"response\":{\"id\":\"resp_3\",\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down\"}}}");
	x = assemble(failed, -1, &r);
	ok(x.error && !x.complete, "response.failed: an error, not a complete message");
	is_str(x.error_type, "rate_limit_exceeded", "response.failed: the error's code");
	is_str(x.error_msg, "Slow down", "response.failed: the error's message");
	reply_free(&x);
	run_free(&r);

	x = assemble(TWO_CALLS, -1, &r);
	ok(!x.error, "twin: a stream without error or failed events is no error");
	reply_free(&x);
	run_free(&r);

	char msg[200];
	const char *doc = "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}";
	provider_openai_responses.error_text(doc, strlen(doc), msg, sizeof(msg));
	is_str(msg, "invalid_request_error: Incorrect API key provided", "error_text: OpenAI's error document in one line");
}

static const cJSON *item(const cJSON *input, int i)
{
	return cJSON_GetArrayItem(input, i);
}

static const char *istr(const cJSON *input, int i, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(item(input, i), k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_request(void)
{
	const struct provider *p = provider_find("openai-responses");
	ok(p == &provider_openai_responses, "provider_find knows openai-responses");
	is_str(p->key_env, "OPENAI_API_KEY", "its key comes from OPENAI_API_KEY");
	is_str(p->default_base, "https://api.openai.com/v1", "its default base is openai's");

	/* The assistant message as the stream above assembled it: reasoning
	 * kept there must be in the next request. */
	struct run r;
	struct reply x = assemble(TWO_CALLS, -1, &r);
	cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"read both\"}]}]");
	cJSON *am = cJSON_CreateObject();
	cJSON_AddStringToObject(am, "role", "assistant");
	cJSON_AddItemToObject(am, "content", x.content);
	x.content = NULL;
	cJSON_AddItemToArray(msgs, am);
	cJSON_AddItemToArray(msgs, cJSON_Parse("{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"call_1\",\"content\":\"alpha\"},"
					       "{\"type\":\"tool_result\",\"tool_use_id\":\"call_2\",\"content\":[{\"type\":\"text\",\"text\":\"be\"},{\"type\":\"text\",\"text\":\"ta\"}],\"is_error\":true}]}"));
	/* Another provider's thinking is not sent. */
	cJSON_AddItemToArray(msgs, cJSON_Parse("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"sig\"},"
					       "{\"type\":\"tool_use\",\"id\":\"call_3\",\"name\":\"ls\",\"input\":{},\"_ward_error\":\"cut\"}]}"));
	cJSON *tools = cJSON_Parse("[{\"name\":\"read\",\"description\":\"read a file\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}]");
	struct provider_cfg cfg = { .api_key = "sk-oa-test", .model = "gpt-5", .max_tokens = 1000,
				    .base_url = "http://127.0.0.1:9/v1/" };
	struct provider_req q = { .system = "be brief", .tools = tools, .messages = msgs };
	struct http_call hc = { 0 };
	struct err e = { 0 };
	ok(p->request(&cfg, &q, &hc, &e) == 0, "request built");
	is_str(hc.url, "http://127.0.0.1:9/v1/responses", "the URL is --base-url's /responses");
	cJSON *b = cJSON_Parse(hc.body);
	is_str(cJSON_GetObjectItem(b, "model")->valuestring, "gpt-5", "model");
	is_str(cJSON_GetObjectItem(b, "instructions")->valuestring, "be brief", "the system prompt as instructions");
	ok(cJSON_IsTrue(cJSON_GetObjectItem(b, "stream")), "stream: true");
	ok(cJSON_IsFalse(cJSON_GetObjectItem(b, "store")), "store: false");
	is_int(cJSON_GetObjectItem(b, "max_output_tokens")->valuedouble, 1000, "max_output_tokens");
	char *inc = json(cJSON_GetObjectItem(b, "include"));
	is_str(inc, "[\"reasoning.encrypted_content\"]", "include: reasoning.encrypted_content");
	free(inc);
	ok(!cJSON_GetObjectItem(b, "messages"), "no Chat Completions messages");
	const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "tools"), 0);
	is_str(cJSON_GetObjectItem(t0, "type")->valuestring, "function", "tool: type function");
	is_str(cJSON_GetObjectItem(t0, "name")->valuestring, "read", "tool: its name at the top level");
	is_str(cJSON_GetObjectItem(t0, "description")->valuestring, "read a file", "tool: its description");
	ok(cJSON_IsObject(cJSON_GetObjectItem(cJSON_GetObjectItem(t0, "parameters"), "properties")),
	   "tool: its input_schema as parameters");

	const cJSON *in = cJSON_GetObjectItem(b, "input");
	char types[400] = "";
	for (int i = 0; i < cJSON_GetArraySize(in); i++) {
		strcat(types, istr(in, i, "type") ? istr(in, i, "type") : "?");
		strcat(types, " ");
	}
	is_str(types, "message reasoning message function_call function_call function_call_output function_call_output function_call ",
	       "input items in the conversation's order (thinking not sent)");
	is_str(istr(in, 0, "role"), "user", "user message");
	const cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(item(in, 0), "content"), 0);
	ok(!strcmp(cJSON_GetObjectItem(p0, "type")->valuestring, "input_text") &&
	   !strcmp(cJSON_GetObjectItem(p0, "text")->valuestring, "read both"), "user text as input_text");
	is_str(istr(in, 1, "encrypted_content"), "gAAAAenc-1", "the reasoning item sent back with its encrypted content");
	ok(!istr(in, 1, "id"), "the reasoning item without its id (store false keeps none to refer to)");
	ok(cJSON_IsArray(cJSON_GetObjectItem(item(in, 1), "summary")), "the reasoning item with its summary");
	is_str(istr(in, 2, "role"), "assistant", "assistant message");
	const cJSON *p2 = cJSON_GetArrayItem(cJSON_GetObjectItem(item(in, 2), "content"), 0);
	is_str(cJSON_GetObjectItem(p2, "type")->valuestring, "output_text", "assistant text as output_text");
	is_str(istr(in, 3, "call_id"), "call_1", "function_call: call_id");
	is_str(istr(in, 3, "name"), "read", "function_call: name");
	is_str(istr(in, 3, "arguments"), "{\"path\":\"a.txt\"}", "function_call: arguments as a JSON string");
	is_str(istr(in, 4, "call_id"), "call_2", "the second function_call");
	is_str(istr(in, 5, "call_id"), "call_1", "function_call_output: call_id");
	is_str(istr(in, 5, "output"), "alpha", "function_call_output: output");
	is_str(istr(in, 6, "output"), "beta", "function_call_output: text blocks joined");
	ok(!strstr(hc.body, "_ward") && !strstr(hc.body, "hmm"), "neither ward's keys nor another provider's thinking are sent");
	bool key = false;
	for (int i = 0; hc.headers[i]; i++)
		key |= !strcmp(hc.headers[i], "authorization: Bearer sk-oa-test");
	ok(key, "bearer key header");
	ok(!strstr(hc.body, "sk-oa-test"), "the key is not in the body");
	cJSON_Delete(b);
	http_call_free(&hc);

	/* A model that does not reason refuses include: not sent to it. */
	cfg.model = "gpt-4o";
	cfg.base_url = NULL;
	q.system = NULL;
	ok(p->request(&cfg, &q, &hc, &e) == 0, "request for gpt-4o built");
	is_str(hc.url, "https://api.openai.com/v1/responses", "the default URL");
	b = cJSON_Parse(hc.body);
	ok(!cJSON_GetObjectItem(b, "include"), "gpt-4o: no include (twin of the include above)");
	ok(!cJSON_GetObjectItem(b, "instructions"), "no system prompt: no instructions");
	cJSON_Delete(b);
	http_call_free(&hc);

	/* The other providers skip the reasoning block; a message of only
	 * reasoning is not sent to Anthropic at all. */
	cJSON_AddItemToArray(msgs, cJSON_Parse("{\"role\":\"assistant\",\"content\":[{\"type\":\"reasoning\",\"id\":\"rs_9\",\"encrypted_content\":\"gAAAAenc-9\",\"summary\":[]}]}"));
	cJSON_AddItemToArray(msgs, cJSON_Parse("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"go on\"}]}"));
	cfg.model = "m";
	ok(provider_anthropic.request(&cfg, &q, &hc, &e) == 0, "anthropic: a conversation with reasoning blocks builds");
	b = cJSON_Parse(hc.body);
	ok(!strstr(hc.body, "gAAAAenc") && !strstr(hc.body, "\"reasoning\""), "anthropic: reasoning blocks are not sent");
	ok(strstr(hc.body, "\"thinking\":\"hmm\"") != NULL, "anthropic: twin: its own thinking block is");
	const cJSON *am2 = cJSON_GetObjectItem(b, "messages");
	is_int(cJSON_GetArraySize(am2), 5, "anthropic: the message of only reasoning is dropped (no empty content)");
	const cJSON *amsg;
	bool nonempty = true;
	cJSON_ArrayForEach(amsg, am2)
		nonempty &= cJSON_GetArraySize(cJSON_GetObjectItem(amsg, "content")) > 0;
	ok(nonempty, "anthropic: no message has empty content");
	cJSON_Delete(b);
	http_call_free(&hc);
	ok(provider_openai.request(&cfg, &q, &hc, &e) == 0, "openai: a conversation with reasoning blocks builds");
	b = cJSON_Parse(hc.body);
	ok(!strstr(hc.body, "gAAAAenc") && !strstr(hc.body, "\"reasoning\""), "openai: reasoning blocks are not sent");
	const cJSON *om = cJSON_GetObjectItem(b, "messages");
	const cJSON *omsg;
	bool sendable = true;
	cJSON_ArrayForEach(omsg, om) {
		const char *role = cJSON_GetObjectItem(omsg, "role")->valuestring;
		if (!strcmp(role, "assistant"))
			sendable &= cJSON_IsString(cJSON_GetObjectItem(omsg, "content")) ||
				    cJSON_GetObjectItem(omsg, "tool_calls") != NULL;
	}
	ok(sendable, "openai: no assistant message without content or calls");
	is_str(cJSON_GetObjectItem(cJSON_GetArrayItem(om, cJSON_GetArraySize(om) - 1), "content")->valuestring, "go on",
	       "openai: twin: the text after it is sent");
	cJSON_Delete(b);
	http_call_free(&hc);

	cJSON_Delete(msgs);
	cJSON_Delete(tools);
	run_free(&r);
}

int main(void)
{
	test_text();
	test_call();
	test_two_calls();
	test_incomplete_and_errors();
	test_request();
	return tap_done();
}
