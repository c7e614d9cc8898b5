/* The providers: requests built from the conversation, and streams (real SSE
 * bytes, fed whole, byte by byte and at random cuts) assembled into one
 * message with the same result every way. */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "turn/provider.h"
#include "tap.h"

struct run {
	const struct provider *p;
	struct stream *s;
	struct buf shown;	/* text deltas as the sink saw them */
	int tools_begun;
	int err;
	struct err e;
};

static void on_text(void *ud, const char *p, size_t n)
{
	struct run *r = ud;
	buf_append(&r->shown, p, n);
}

static void on_tool(void *ud, const char *id, const char *name)
{
	((struct run *)ud)->tools_begun++;
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
static struct reply assemble(const struct provider *p, const char *body, int cut, struct run *r)
{
	*r = (struct run){ .p = p };
	buf_init(&r->shown, 1 << 20);
	buf_append(&r->shown, "", 0);
	struct stream_sink sink = { .ud = r, .text = on_text, .tool_begin = on_tool };
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

static char *json(const cJSON *j)
{
	return cJSON_PrintUnformatted(j);
}

/* Same content, same stop, same text shown, however the bytes came. */
static void check_cuts(const struct provider *p, const char *name, const char *body)
{
	struct run r0;
	struct reply whole = assemble(p, body, -1, &r0);
	char *want = json(whole.content);
	bool same = true;
	for (int cut = 0; cut <= 100 && same; cut++) {
		struct run r;
		struct reply x = assemble(p, body, cut, &r);
		char *got = json(x.content);
		same = !strcmp(got, want) && x.stop == whole.stop && x.complete == whole.complete &&
		       !strcmp(r.shown.data, r0.shown.data);
		if (!same)
			printf("#   cut %d: %s\n", cut, got);
		free(got);
		reply_free(&x);
		buf_free(&r.shown);
	}
	ok(same, "%s: byte by byte and 100 random cuttings give the same message", name);
	free(want);
	reply_free(&whole);
	buf_free(&r0.shown);
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

#define A_START "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n"
#define A_PING "event: ping\ndata: {\"type\": \"ping\"}\n\n"
#define A_STOP(reason, out) "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" reason "\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":" #out "}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
#define A_TEXT(i, t) "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":{\"type\":\"text_delta\",\"text\":\"" t "\"}}\n\n"
#define A_BSTART(i, blk) "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":" blk "}\n\n"
#define A_BSTOP(i) "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":" #i "}\n\n"
#define A_JSON(i, j) "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" j "\"}}\n\n"

static void test_anthropic(void)
{
	const struct provider *p = &provider_anthropic;
	struct run r;
	const char *text_only = A_START A_BSTART(0, "{\"type\":\"text\",\"text\":\"\"}") A_PING
		A_TEXT(0, "Hello") A_TEXT(0, ", w\\u00f6rld") A_BSTOP(0) A_STOP("end_turn", 12);
	struct reply x = assemble(p, text_only, -1, &r);
	is_str(bstr(&x, 0, "text"), "Hello, wörld", "anthropic: text assembled");
	is_str(r.shown.data, "Hello, wörld", "anthropic: text shown as it streamed");
	is_str(stop_reason_name(x.stop), "end_turn", "anthropic: end_turn");
	ok(x.complete, "anthropic: message_stop seen");
	ok(x.usage.input == 25 && x.usage.output == 12 && x.usage.cache_read == 7, "anthropic: usage (%lld in, %lld out)",
	   (long long)x.usage.input, (long long)x.usage.output);
	{
		struct usage u = { .input = 25, .output = 12, .cache_read = 70, .cache_write = 5 };
		ok(usage_hit_rate(&u) == 0.7, "usage: hit rate 70 of 100 prompt tokens");
		struct usage z = { 0 };
		ok(usage_hit_rate(&z) == 0, "usage: no prompt, no rate (not NaN)");
		cJSON *o = cJSON_CreateObject();
		usage_json(o, &u);
		char *js = cJSON_PrintUnformatted(o);
		is_str(js, "{\"usage\":{\"input_tokens\":25,\"output_tokens\":12,\"cache_read_tokens\":70,"
			   "\"cache_write_tokens\":5,\"cache_hit_rate\":0.7}}", "usage: as JSON");
		free(js);
		cJSON_Delete(o);
	}
	is_str(x.id, "msg_1", "anthropic: message id");
	reply_free(&x);
	buf_free(&r.shown);
	check_cuts(p, "anthropic text", text_only);
	x = assemble(p, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":"
			"{\"input_tokens\":3,\"cache_creation_input_tokens\":900,\"cache_creation\":{\"ephemeral_5m_input_tokens\":"
			"300,\"ephemeral_1h_input_tokens\":600},\"output_tokens\":1}}}\n\n" A_STOP("end_turn", 2), -1, &r);
	ok(x.usage.cache_write == 900 && x.usage.cache_write_1h == 600, "anthropic: cache writes, 600 of 900 kept an hour");
	reply_free(&x);
	buf_free(&r.shown);

	const char *tool = A_START A_BSTART(0, "{\"type\":\"text\",\"text\":\"\"}") A_TEXT(0, "Let me look.") A_BSTOP(0)
		A_BSTART(1, "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\",\"input\":{}}")
		A_JSON(1, "") A_JSON(1, "{\\\"comm") A_JSON(1, "and\\\": \\\"ls -") A_JSON(1, "la ✓\\\"}") A_BSTOP(1)
		A_BSTART(2, "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"ls\",\"input\":{}}") A_BSTOP(2)
		A_STOP("tool_use", 40);
	x = assemble(p, tool, -1, &r);
	is_str(bstr(&x, 1, "type"), "tool_use", "anthropic: tool_use block");
	char *in = binput(&x, 1);
	is_str(in, "{\"command\":\"ls -la ✓\"}", "anthropic: input_json_delta pieces parsed once at the stop");
	free(in);
	in = binput(&x, 2);
	is_str(in, "{}", "anthropic: an empty input is {}");
	free(in);
	ok(!bstr(&x, 1, "_ward_error") && !bstr(&x, 2, "_ward_error"), "anthropic: both calls may run");
	is_int(r.tools_begun, 2, "anthropic: each call announced as it began");
	is_str(stop_reason_name(x.stop), "tool_use", "anthropic: tool_use stop");
	reply_free(&x);
	buf_free(&r.shown);
	check_cuts(p, "anthropic tool input", tool);

	const char *thinking = A_START
		A_BSTART(0, "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}")
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Hmm.\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCkYI\"}}\n\n"
		A_BSTOP(0)
		A_BSTART(1, "{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix\"}") A_BSTOP(1)
		A_BSTART(2, "{\"type\":\"text\",\"text\":\"\"}") A_TEXT(2, "ok") A_BSTOP(2) A_STOP("end_turn", 3);
	x = assemble(p, thinking, -1, &r);
	is_str(bstr(&x, 0, "thinking"), "Hmm.", "anthropic: thinking kept");
	is_str(bstr(&x, 0, "signature"), "EqQBCkYI", "anthropic: with its signature");
	is_str(bstr(&x, 1, "data"), "EmwKAhgBEgy3va3pzix", "anthropic: redacted_thinking kept unmodified");
	reply_free(&x);
	buf_free(&r.shown);

	const char *maxtok = A_START A_BSTART(0, "{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"write\",\"input\":{}}")
		A_JSON(0, "{\\\"path\\\": \\\"a.txt\\\", \\\"content\\\": \\\"lon") A_BSTOP(0) A_STOP("max_tokens", 4096);
	x = assemble(p, maxtok, -1, &r);
	ok(bstr(&x, 0, "_ward_error") != NULL, "anthropic: a tool call cut by max_tokens is marked not to run (%s)",
	   bstr(&x, 0, "_ward_error"));
	is_str(stop_reason_name(x.stop), "max_tokens", "anthropic: max_tokens");
	reply_free(&x);
	buf_free(&r.shown);

	const char *cut = A_START A_BSTART(0, "{\"type\":\"tool_use\",\"id\":\"toolu_3\",\"name\":\"bash\",\"input\":{}}")
		A_JSON(0, "{\\\"command\\\": \\\"ls\\\"}");
	x = assemble(p, cut, -1, &r);
	ok(!x.complete, "anthropic: a stream cut mid-event is not complete");
	ok(bstr(&x, 0, "_ward_error") != NULL, "anthropic: and its unfinished call does not run");
	reply_free(&x);
	buf_free(&r.shown);

	const char *error = A_START A_BSTART(0, "{\"type\":\"text\",\"text\":\"\"}") A_TEXT(0, "par")
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
	x = assemble(p, error, -1, &r);
	ok(x.error, "anthropic: an error event mid-stream");
	is_str(x.error_type, "overloaded_error", "anthropic: its type");
	is_str(x.error_msg, "Overloaded", "anthropic: its message");
	reply_free(&x);
	buf_free(&r.shown);

	x = assemble(p, A_START A_STOP("refusal", 0), -1, &r);
	is_str(stop_reason_name(x.stop), "refusal", "anthropic: refusal");
	reply_free(&x);
	buf_free(&r.shown);
	x = assemble(p, A_START A_STOP("pause_turn", 0), -1, &r);
	is_str(stop_reason_name(x.stop), "pause_turn", "anthropic: pause_turn");
	reply_free(&x);
	buf_free(&r.shown);

	/* The request. */
	cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},"
				  "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"ls\","
				  "\"input\":{},\"_ward_error\":\"x\"}]},"
				  "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"a\\nb\"}]}]");
	cJSON *tools = cJSON_Parse("[{\"name\":\"ls\",\"description\":\"list\",\"input_schema\":{\"type\":\"object\"}},"
				   "{\"name\":\"read\",\"description\":\"read\",\"input_schema\":{\"type\":\"object\"}}]");
	struct provider_cfg cfg = { .api_key = "sk-ant-test", .model = "claude-x", .max_tokens = 1000, .cache_ttl = "5m" };
	struct provider_req q = { .system = "be brief", .tools = tools, .messages = msgs };
	struct http_call hc = { 0 };
	struct err e = { 0 };
	ok(p->request(&cfg, &q, &hc, &e) == 0, "anthropic: request built");
	is_str(hc.url, "https://api.anthropic.com/v1/messages", "anthropic: URL");
	cJSON *b = cJSON_Parse(hc.body);
	const cJSON *sys0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "system"), 0);
	ok(cJSON_GetObjectItem(sys0, "cache_control") != NULL, "anthropic: the system prompt is cached");
	const cJSON *t1 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "tools"), 1);
	ok(cJSON_GetObjectItem(t1, "cache_control") != NULL, "anthropic: the tools are cached (breakpoint on the last)");
	{
		const cJSON *last = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "messages"), 2),
									     "content"), 0);
		ok(cJSON_GetObjectItem(last, "cache_control") != NULL,
		   "anthropic: a rolling breakpoint on the last message's last block");
		int n = 0;
		for (const char *q2 = hc.body; (q2 = strstr(q2, "\"cache_control\"")); q2++)
			n++;
		is_int(n, 3, "anthropic: three breakpoints in all (the API allows four)");
		ok(!strstr(hc.body, "\"ttl\""), "anthropic: 5m is the API's default, no ttl sent");
	}
	ok(!strstr(hc.body, "_ward"), "anthropic: ward's own keys are not sent");
	ok(cJSON_IsTrue(cJSON_GetObjectItem(b, "stream")), "anthropic: streaming");
	bool key = false, ver = false;
	for (int i = 0; hc.headers[i]; i++) {
		key |= !strcmp(hc.headers[i], "x-api-key: sk-ant-test");
		ver |= !strncmp(hc.headers[i], "anthropic-version: ", 19);
	}
	ok(key && ver, "anthropic: key and version headers");
	ok(!strstr(hc.body, "sk-ant-test"), "anthropic: the key is not in the body");
	cJSON_Delete(b);
	http_call_free(&hc);
	cfg.cache_ttl = "1h";
	ok(p->request(&cfg, &q, &hc, &e) == 0 && strstr(hc.body, "\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}"),
	   "anthropic: --cache-ttl 1h asks for an hour");
	http_call_free(&hc);
	cfg.cache_ttl = NULL;
	ok(p->request(&cfg, &q, &hc, &e) == 0 && !strstr(hc.body, "cache_control"), "anthropic: --cache-ttl off: no breakpoint");
	http_call_free(&hc);
	{
		/* The last message ends with thinking: the breakpoint goes on the
		 * block before it. */
		cJSON *m2 = cJSON_Parse("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
					"{\"type\":\"thinking\",\"thinking\":\"x\",\"signature\":\"s\"}]}]");
		struct provider_req q2 = { .messages = m2 };
		cfg.cache_ttl = "5m";
		ok(p->request(&cfg, &q2, &hc, &e) == 0 && strstr(hc.body, "\"text\":\"hi\",\"cache_control\"") &&
			   !strstr(hc.body, "\"signature\":\"s\",\"cache_control\""),
		   "anthropic: never a breakpoint on a thinking block");
		http_call_free(&hc);
		cJSON_Delete(m2);
	}

	/* The OpenAI translation of the same conversation. */
	cfg.api_key = "sk-oa-test";
	cfg.base_url = "http://127.0.0.1:9/v1/";
	ok(provider_openai.request(&cfg, &q, &hc, &e) == 0, "openai: request built");
	is_str(hc.url, "http://127.0.0.1:9/v1/chat/completions", "openai: --base-url respected");
	b = cJSON_Parse(hc.body);
	const cJSON *om = cJSON_GetObjectItem(b, "messages");
	is_int(cJSON_GetArraySize(om), 4, "openai: system, user, assistant, tool");
	is_str(cJSON_GetObjectItem(cJSON_GetArrayItem(om, 0), "role")->valuestring, "system", "openai: system first");
	const cJSON *am = cJSON_GetArrayItem(om, 2);
	const cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(am, "tool_calls"), 0);
	is_str(cJSON_GetObjectItem(tc, "id")->valuestring, "t1", "openai: tool_use becomes tool_calls");
	is_str(cJSON_GetObjectItem(cJSON_GetObjectItem(tc, "function"), "arguments")->valuestring, "{}",
	       "openai: arguments as a JSON string");
	const cJSON *tm = cJSON_GetArrayItem(om, 3);
	is_str(cJSON_GetObjectItem(tm, "role")->valuestring, "tool", "openai: tool_result becomes a tool message");
	is_str(cJSON_GetObjectItem(tm, "content")->valuestring, "a\nb", "openai: with its text");
	key = false;
	for (int i = 0; hc.headers[i]; i++)
		key |= !strcmp(hc.headers[i], "authorization: Bearer sk-oa-test");
	ok(key, "openai: bearer key header");
	cJSON_Delete(b);
	http_call_free(&hc);
	cJSON_Delete(msgs);
	cJSON_Delete(tools);

	char msg[200];
	const char *doc = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"max_tokens: too big\"}}";
	provider_error_json(doc, strlen(doc), msg, sizeof(msg));
	is_str(msg, "invalid_request_error: max_tokens: too big", "an error document becomes one line");
	provider_error_json("<html>\nBad gateway</html>", 25, msg, sizeof(msg));
	is_str(msg, "<html>", "a body that is not JSON: its first line");
}

#define O_CHUNK(delta, fin) "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" fin "}]}\n\n"
#define O_DONE "data: [DONE]\n\n"

static void test_openai(void)
{
	const struct provider *p = &provider_openai;
	struct run r;
	const char *text = O_CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null") O_CHUNK("{\"content\":\"Hi \"}", "null")
		O_CHUNK("{\"content\":\"there\"}", "null") O_CHUNK("{}", "\"stop\"")
		"data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2}}\n\n" O_DONE;
	struct reply x = assemble(p, text, -1, &r);
	is_str(bstr(&x, 0, "text"), "Hi there", "openai: text");
	is_str(stop_reason_name(x.stop), "end_turn", "openai: stop is end_turn");
	ok(x.complete && x.usage.input == 11 && x.usage.output == 2, "openai: complete, usage from the last chunk");
	reply_free(&x);
	buf_free(&r.shown);
	x = assemble(p, O_CHUNK("{\"content\":\"Hi\"}", "\"stop\"")
		     "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":2,"
		     "\"prompt_tokens_details\":{\"cached_tokens\":800}}}\n\n" O_DONE, -1, &r);
	ok(x.usage.input == 200 && x.usage.cache_read == 800,
	   "openai: cached tokens are counted once: 200 not cached, 800 read (%lld, %lld)", (long long)x.usage.input,
	   (long long)x.usage.cache_read);
	ok(usage_prompt(&x.usage) == 1000, "openai: the whole prompt is still 1000");
	reply_free(&x);
	buf_free(&r.shown);
	check_cuts(p, "openai text", text);

	const char *split = O_CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}", "null")
		O_CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"command\\\"\"}}]}", "null")
		O_CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\": \\\"pwd\\\"}\"}}]}", "null")
		O_CHUNK("{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}", "null")
		O_CHUNK("{}", "\"tool_calls\"") O_DONE;
	x = assemble(p, split, -1, &r);
	char *in = binput(&x, 0);
	is_str(in, "{\"command\":\"pwd\"}", "openai: a call's arguments assembled by index");
	free(in);
	is_str(bstr(&x, 1, "id"), "call_b", "openai: a second call by index");
	is_str(stop_reason_name(x.stop), "tool_use", "openai: finish_reason tool_calls");
	reply_free(&x);
	buf_free(&r.shown);
	check_cuts(p, "openai tool call", split);

	/* llama.cpp/Ollama style: whole calls in one delta, all at index 0,
	 * each with a new id. */
	const char *whole = O_CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}", "null")
		O_CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c2\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"}}]}", "null")
		O_CHUNK("{}", "\"tool_calls\"") O_DONE;
	x = assemble(p, whole, -1, &r);
	is_int(cJSON_GetArraySize(x.content), 2, "openai: a repeated index with a new id is a new call");
	in = binput(&x, 1);
	is_str(in, "{\"path\":\"b\"}", "openai: with its own arguments");
	free(in);
	reply_free(&x);
	buf_free(&r.shown);

	const char *noid = O_CHUNK("{\"tool_calls\":[{\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"path\\\":\"}}]}", "null")
		O_CHUNK("{\"tool_calls\":[{\"function\":{\"arguments\":\"\\\".\\\"}\"}}]}", "null") O_CHUNK("{}", "\"tool_calls\"");
	x = assemble(p, noid, -1, &r);
	is_int(cJSON_GetArraySize(x.content), 1, "openai: no ids, no index: one call continued");
	is_str(bstr(&x, 0, "id"), "call_ward_1", "openai: a missing id is made up");
	ok(!bstr(&x, 0, "_ward_error"), "openai: and the call may run (no [DONE] needed after finish_reason)");
	reply_free(&x);
	buf_free(&r.shown);

	const char *length = O_CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"write\",\"arguments\":\"{\\\"path\\\":\\\"x\\\",\\\"content\\\":\\\"lo\"}}]}", "null")
		O_CHUNK("{}", "\"length\"") O_DONE;
	x = assemble(p, length, -1, &r);
	ok(bstr(&x, 0, "_ward_error") != NULL, "openai: finish_reason length: the call does not run");
	is_str(stop_reason_name(x.stop), "max_tokens", "openai: length is max_tokens");
	reply_free(&x);
	buf_free(&r.shown);

	const char *reasoning = O_CHUNK("{\"reasoning_content\":\"think\"}", "null") O_CHUNK("{\"content\":\"done\"}", "\"stop\"") O_DONE;
	x = assemble(p, reasoning, -1, &r);
	is_str(bstr(&x, 0, "thinking"), "think", "openai: reasoning_content becomes thinking");
	is_str(bstr(&x, 1, "text"), "done", "openai: then the text");
	reply_free(&x);
	buf_free(&r.shown);

	x = assemble(p, "data: {\"error\":{\"message\":\"model overloaded\",\"type\":\"server_error\"}}\n\n", -1, &r);
	ok(x.error && !strcmp(x.error_msg, "model overloaded"), "openai: an error in the stream");
	reply_free(&x);
	buf_free(&r.shown);

	x = assemble(p, O_CHUNK("{\"content\":\"par\"}", "null"), -1, &r);
	ok(!x.complete, "openai: a stream without finish_reason or [DONE] is not complete");
	reply_free(&x);
	buf_free(&r.shown);
}

int main(void)
{
	test_anthropic();
	test_openai();
	return tap_done();
}
