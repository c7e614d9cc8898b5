#!/bin/bash
# ward run --provider openai-responses end to end: the fake LLM server speaks
# the Responses API (real HTTP and SSE on loopback) and the tools run in real
# boxes.
. "$(dirname "$0")/lib.sh"
export XDG_STATE_HOME=$T_TMP/state
export OPENAI_API_KEY=sk-oa-fake-key

ws() { # a fresh workspace
	WS=$T_TMP/ws-$1
	rm -rf "$WS"; mkdir -p "$WS"
	printf 'alpha\n' >"$WS/a.txt"; printf 'beta\n' >"$WS/b.txt"
}
run() { # run [flags] TASK -> OUT, ERR, RC
	"$WARD" run --provider openai-responses --base-url "$URL/v1" --model fake-model --approve auto \
		--workspace "$WS" "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?
	OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}
# input items of request N as "type" or "type:call_id", one line each
items() {
	req "$1" | python3 -c 'import json, sys
for it in json.load(sys.stdin)["body"].get("input", []):
    print(it.get("type") + (":" + it["call_id"] if "call_id" in it else ""))'
}
field() { # field N PYTHON-EXPR over the request body b
	req "$1" | python3 -c 'import json, sys
b = json.load(sys.stdin)["body"]
print(eval(sys.argv[1]))' "$2"
}

serve text; ws text
run "say hello"
is "$RC" 0 "text only: exit 0"
like "$OUT" "Hello from the fake model" "the answer is on stdout"
like "$ERR" "finished \\(completed\\)" "the stop, in the API's word"
like "$(req 1)" '"path": "/v1/responses"' "the request goes to --base-url's /responses"
like "$(req 1)" '"has_key": true' "the key is sent"
unlike "$ERR$OUT" "fake-key" "the key is never printed"
is "$(field 1 'b["store"]')" False "store: false"
is "$(field 1 'b["stream"]')" True "stream: true"
is "$(field 1 'b["include"]')" "['reasoning.encrypted_content']" "include: reasoning.encrypted_content"
like "$(field 1 'b["instructions"]')" "." "the system prompt as instructions"
is "$(field 1 'sorted(set(t["type"] for t in b["tools"]))')" "['function']" "tools as function tools"
like "$(field 1 '[t["name"] for t in b["tools"]]')" "'bash'" "bash among them"
is "$(items 1)" "message" "the task as one message item"

# The default model, pinned: a reasoning model (the one thing include needs).
serve text; ws default-model
"$WARD" run --provider openai-responses --base-url "$URL/v1" --workspace "$WS" "hi" >/dev/null 2>&1
is "$(field 1 'b["model"]')" gpt-5 "the default model is gpt-5"
# Its default model has prices, so --max-cost works with it; twin: a
# model ward does not know is refused, until the user's config prices it
# (a project's file may not).
serve text; ws max-cost
"$WARD" run --provider openai-responses --base-url "$URL/v1" --workspace "$WS" --max-cost 2 --json "hi" >"$T_TMP/out" 2>"$T_TMP/err"
is "$?" 0 "--max-cost 2 with the default model (gpt-5): it runs"
like "$(tail -1 "$T_TMP/out")" '"cost_usd":0\.[0-9]' "and the result has its cost"
for M in gpt-5-mini o3 gpt-5-2025-08-07; do
	"$WARD" run --provider openai-responses --base-url "$URL/v1" --workspace "$WS" --model $M --max-cost 2 "hi" >/dev/null 2>&1
	is "$?" 0 "--max-cost with $M: it runs"
done
run --model my-model --max-cost 2 "hi"
is "$RC" 64 "twin: --max-cost with a model ward has no prices for: usage error"
like "$ERR" "ward does not know the prices of my-model" "saying so"
mkdir -p "$XDG_CONFIG_HOME/ward" "$WS/.ward"
echo '{"prices": {"my-model": {"input": 1, "output": 2}}}' >"$WS/.ward/config.json"
run --model my-model --max-cost 2 "hi"
is "$RC" 64 "a project's file may not give prices"
like "$ERR" '"prices" ignored: only your own file may give prices' "one line says so"
rm -rf "$WS/.ward"
echo '{"prices": {"my-model": {"input": 1, "output": 2}}}' >"$XDG_CONFIG_HOME/ward/config.json"
serve text
run --model my-model --max-cost 2 --json "hi"
is "$RC" 0 "the user's config prices my-model: --max-cost works"
like "$(tail -1 "$T_TMP/out")" '"cost_usd":5e-05,' "and it is costed at its prices (cache reads, not given, at the input price)"
echo '{"prices": {"my-model": {"input": "cheap"}}}' >"$XDG_CONFIG_HOME/ward/config.json"
run --model my-model "hi"
is "$RC" 64 "a bad price: usage error"
like "$ERR" '"prices".my-model: a price is a number of USD per million tokens' "naming the family"
rm -f "$XDG_CONFIG_HOME/ward/config.json"

# OPENAI_BASE_URL is the Responses provider's too.
serve text; ws env-url
OPENAI_BASE_URL=$URL/v1 "$WARD" run --provider openai-responses --model fake-model --workspace "$WS" "hi" >/dev/null 2>&1
is "$?" 0 "OPENAI_BASE_URL reaches the server with --provider openai-responses"
like "$(req 1)" '"path": "/v1/responses"' "at its /responses"

serve text; ws plain-model
run --model gpt-4o "hi"
is "$(field 1 '"include" in b')" False "twin: a model that does not reason (gpt-4o) is not sent include"

serve resp-reason; ws reason
run --json "write a file"
is "$RC" 0 "reasoning, text and a call: exit 0"
is "$(nreq)" 2 "two requests"
like "$OUT" '"type":"thinking"' "the reasoning summary is shown as thinking"
like "$OUT" '"type":"tool_result".*made-by-tool' "the bash tool really ran"
is "$(items 2 | tr '\n' ' ')" "message reasoning message function_call:call_fake_1_2 function_call_output:call_fake_1_2 " \
	"the second request: task, reasoning, text, function_call, function_call_output, in order"
is "$(field 2 '[i.get("encrypted_content") for i in b["input"] if i["type"] == "reasoning"]')" "['enc-1-0']" \
	"the reasoning item is sent back with its encrypted content"
is "$(field 2 '[i["arguments"] for i in b["input"] if i["type"] == "function_call"]')" \
	"['{\"command\":\"echo made-by-tool > out.txt; cat out.txt\"}']" "the function_call's arguments as a JSON string"
like "$(field 2 '[i["output"] for i in b["input"] if i["type"] == "function_call_output"]')" "made-by-tool" \
	"the function_call_output carries the tool's output"
like "$OUT" '"changed_files":\[\{"path":"out.txt","change":"added"' "the result lists the file the call made"
like "$OUT" '"type":"text","text":"Done: ' "the second answer streamed"

serve resp-two; ws two
run --json --apply "two calls"
is "$RC" 0 "two calls in one response: exit 0"
is "$(cat "$WS/one.txt" 2>/dev/null)" one-ran "the first call ran"
is "$(cat "$WS/two.txt" 2>/dev/null)" two-ran "the second call ran"
is "$(items 2 | tr '\n' ' ')" "message function_call:call_fake_1_0 function_call:call_fake_1_1 function_call_output:call_fake_1_0 function_call_output:call_fake_1_1 " \
	"both calls and both outputs, by call_id, in the second request"

serve resp-cut; ws cut
run --json --apply "cut call"
is "$RC" 0 "incomplete (max_output_tokens) inside a call: exit 0"
[ ! -e "$WS/cut-call-ran.txt" ]; ok $? "the cut call did not run (canary absent)"
[ -e "$WS/first-ran.txt" ]; ok $? "twin: the call finished before the cut ran"
like "$OUT" '"outcome":"bad_input","text":"not run: the response hit max_output_tokens' "the run says why the cut call did not run"
like "$(field 2 '[i["output"] for i in b["input"] if i["type"] == "function_call_output"]')" "not run: the response hit max_output_tokens" \
	"and so is the model told"
is "$(nreq)" 2 "the model is asked again after the cut"

serve error-event; ws error
run --retries 0 "error mid-stream"
is "$RC" 1 "an error event mid-stream, --retries 0: exit 1"
like "$ERR" "provider" "a provider error"
like "$ERR" "server_error: Overloaded" "with the API's code and message"
serve error-event; ws error-twin
run "error mid-stream"
is "$RC" 0 "twin: by default it is retried"
is "$(nreq)" 2 "once"

serve resp-failed; ws failed
run "fail"
is "$RC" 1 "response.failed: exit 1"
like "$ERR" "server_error: The model failed" "with the failure's code and message"

serve 429; ws 429
run "rate limited"
is "$RC" 0 "429 then success: retried through the shared path"
is "$(nreq)" 2 "after one retry"

serve resp-400; ws 400
run "bad"
is "$RC" 1 "a 400 is not retried: exit 1"
is "$(nreq)" 1 "one request"
like "$ERR" "HTTP 400: invalid_request_error: Unsupported parameter: 'temperature'" "OpenAI's error document, in one line"

ws noprov
"$WARD" run --provider openai-responsez --base-url "$URL/v1" --workspace "$WS" "x" >/dev/null 2>"$T_TMP/err"
is "$?" 64 "a misspelt provider: usage error"
like "$(cat "$T_TMP/err")" "use anthropic, openai or openai-responses" "the line names the providers"

kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null
done_testing
