#!/bin/bash
# One JSON, one meaning. A model's tool input is parsed once, strictly
# (base/jsonstrict.c): one that is not one unambiguous JSON value is refused
# as bad_input and never reaches a hook, an approver or the box; one that
# is reaches every reader as the same bytes. The hook and the approver here
# are Python, which reads the last of a key given twice where ward's cJSON
# would read the first.
. "$(dirname "$0")/lib.sh"
export ANTHROPIC_API_KEY=sk-ant-fake-key
export OPENAI_API_KEY=sk-fake-key
SRVPY=$(cd "$(dirname "$0")/.." && pwd)/mcp-server.py
mkdir -p "$XDG_CONFIG_HOME/ward"

# The hook and the approver keep what they were given (one JSON a line)
# and allow anything but a command that says EVIL, as a user's check would.
cat >"$T_TMP/hook.py" <<PY
#!/usr/bin/env python3
import json, sys
raw = sys.stdin.read()
post = json.loads(raw).get("hook_event_name") == "PostToolUse"
open("$T_TMP/post.log" if post else "$T_TMP/hook.log", "a").write(raw + "\n")
cmd = str(json.loads(raw).get("tool_input", {}).get("command", ""))
sys.exit(2 if "EVIL" in cmd else 0)
PY
cat >"$T_TMP/approver.py" <<PY
#!/usr/bin/env python3
import json, sys
raw = sys.stdin.read()
open("$T_TMP/approver.log", "a").write(raw + "\n")
cmd = str(json.loads(raw).get("input", {}).get("command", ""))
print("EVIL is not allowed" if "EVIL" in cmd else "fine")
sys.exit(1 if "EVIL" in cmd else 0)
PY
chmod +x "$T_TMP/hook.py" "$T_TMP/approver.py"
H='[{"matcher": ".*", "hooks": [{"type": "command", "command": "'$T_TMP/hook.py'"}]}]'
printf '{"hooks": {"PreToolUse": %s, "PostToolUse": %s}}\n' "$H" "$H" >"$XDG_CONFIG_HOME/ward/config.json"

ws() { WS=$T_TMP/ws-$1; rm -rf "$WS"; mkdir -p "$WS"; cp "$SRVPY" "$WS/srv.py"; rm -f "$T_TMP/hook.log" "$T_TMP/post.log" "$T_TMP/approver.log"; }
run() { # run PROVIDER [flags] TASK -> RC; --json events in $T_TMP/out
	local p=$1; shift
	local base=$URL
	[ "$p" = anthropic ] || base=$URL/v1
	"$WARD" run --json --provider "$p" --base-url "$base" --model fake-model --workspace "$WS" --rw \
		--approve ask --approve-cmd "$T_TMP/approver.py" "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?
}
journal() { cat "$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)"; }
# rawval KEY FILTER < LINES: the text of the value of the first KEY in the
# first line holding FILTER, exactly as it is written there.
rawval() {
	python3 -c '
import json, sys
key, filt = sys.argv[1], sys.argv[2]
for line in sys.stdin.read().split("\n"):
    if filt in line and ("\"%s\":" % key) in line:
        i = line.index("\"%s\":" % key) + len(key) + 3
        _, end = json.JSONDecoder().raw_decode(line, i)
        sys.stdout.write(line[i:end]); break' "$1" "$2"
}
n_lines() { [ -e "$1" ] && grep -c . "$1" || echo 0; }

DUP='{"command":"echo EVIL > canary","command":"echo benign"}'
TWIN='{"command":"printf %s \"caf\u00e9 \u2603 \ud83d\ude00\" > twin.txt","timeout":30}'

# ---- a key given twice, through each provider's stream ----
for p in anthropic openai openai-responses; do
	ws "$p"
	export FAKE_CALLS
	FAKE_CALLS=$(python3 -c 'import json,sys; print(json.dumps([["bash", sys.argv[1]], ["bash", sys.argv[2]]]))' "$DUP" "$TWIN")
	serve raw-calls
	run "$p" "go"
	is "$RC" 0 "$p: a call with a key twice: the run goes on"
	[ ! -e "$WS/canary" ]; ok $? "$p: the command ward would have read first never ran (no canary)"
	like "$(grep '"type":"tool_result"' "$T_TMP/out" | head -1)" '"outcome":"bad_input","text":"not run: the tool input is not one unambiguous JSON value: the key \\"command\\" is given twice in one object \(column 33\)' \
		"$p: it is bad_input, and the model is told which key and where"
	like "$(req 2)" 'the key \\\\?"command\\\\?" is given twice' "$p: the model's next request says so"
	is "$(grep -c EVIL "$T_TMP/hook.log" "$T_TMP/approver.log" 2>/dev/null | awk -F: '{s += $2} END {print s + 0}')" 0 \
		"$p: neither the hook nor the approver was given it"
	# The twin: the same shape with each key once runs, and the hook read it.
	is "$(cat "$WS/twin.txt" 2>/dev/null)" "café ☃ 😀" "$p: twin: a valid call with unicode and a number ran as written"
	is "$(n_lines "$T_TMP/hook.log") $(n_lines "$T_TMP/approver.log")" "1 1" "$p: twin: the hook and the approver were each asked once"
done

# ---- the replay provider: the same, from input_json ----
ws replay
python3 - "$DUP" "$TWIN" >"$T_TMP/replay.json" <<'PY'
import json, sys
print(json.dumps({"turns": [{"tools": [{"name": "bash", "input_json": sys.argv[1]}]},
                            {"tools": [{"name": "bash", "input_json": sys.argv[2]}]},
                            {"text": "done"}]}))
PY
"$WARD" run --json --model "replay:$T_TMP/replay.json" --workspace "$WS" --rw --approve ask \
	--approve-cmd "$T_TMP/approver.py" "go" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
is "$?" 0 "replay: a call with a key twice: the run goes on"
[ ! -e "$WS/canary" ]; ok $? "replay: the command never ran (no canary)"
like "$(grep '"type":"tool_result"' "$T_TMP/out" | head -1)" '"outcome":"bad_input".*the key \\"command\\" is given twice' "replay: bad_input, the key named"
is "$(cat "$WS/twin.txt" 2>/dev/null)" "café ☃ 😀" "replay: twin: the valid call ran"
printf '{"turns": [{"tools": [{"name": "bash", "input": %s}]}]}' "$DUP" >"$T_TMP/replay-dup.json"
"$WARD" run --model "replay:$T_TMP/replay-dup.json" --workspace "$WS" "go" >/dev/null 2>"$T_TMP/err" </dev/null
is "$?" 64 "a replay script with a key twice: exit 64"
like "$(cat "$T_TMP/err")" "replay-dup.json is not valid JSON: the key \"command\" is given twice in one object \(column 81\)" \
	"a replay script with a key twice: one line, the key and where"

# ---- other ways one text means two things ----
ws kinds
FAKE_CALLS=$(python3 -c 'import json; print(json.dumps([
    ["bash", "{\"command\":\"echo EVIL > canary\",\"timeout\":9007199254740993}"],
    ["bash", "{\"command\":\"echo EVIL \\ud800 > canary\"}"],
    ["bash", "{\"command\":\"echo EVIL > canary\",}"],
    ["bash", "{\"command\":\"echo EVIL > canary\"} {}"],
    ["bash", "{\"command\":\"echo EVIL > canary\",\"timeout\":012}"],
    ["bash", "{\"command\":\"echo EVIL\\u0000 > canary\"}"]]))')
serve raw-calls
run anthropic "go"
R=$(grep '"type":"tool_result"' "$T_TMP/out")
[ ! -e "$WS/canary" ]; ok $? "none of six malformed calls ran (no canary)"
is "$(grep -c '"outcome":"bad_input"' <<<"$R")" 6 "each is bad_input"
like "$R" 'the number 9007199254740993 would become 9007199254740992 in a double' "a number a double does not hold: said"
like "$R" 'a lone surrogate \\\\uD800 in a string' "a lone surrogate: said"
like "$R" "a comma before '}'" "a trailing comma: said"
like "$R" "'\{' after the JSON value" "text after the value: said"
like "$R" 'a number with a leading zero' "a leading zero: said"
like "$R" 'a NUL character' "a NUL: said"
is "$(n_lines "$T_TMP/hook.log")" 0 "and no hook was given any of them"

# ---- the twin, whole: unicode, numbers and nesting reach every reader as one text ----
ws canon
python3 - "$WS/mcp.json" <<'PY'
import json, sys
json.dump({"mcpServers": {"t": {"command": "python3", "args": ["/workspace/srv.py", "--mode", "",
           "--log", "/workspace/mcp-log.jsonl"]}}}, open(sys.argv[1], "w"))
PY
IN='{"text": "caf\u00e9 \u2603 \ud83d\ude00 \u2028 tab\t end", "n": [1.50, -0.0, 1E2, 100000000000000000000, 9007199254740992, 0.1],
     "nested": {"a": {"b": [true, null, {"c": "d", "e": {}}]}, "f": []}}'
FAKE_CALLS=$(python3 -c 'import json,sys; print(json.dumps([["mcp__t__echo", sys.argv[1]],
    ["mcp__t__echo", "{\"text\":\"x\",\"nested\":{\"a\":1,\"b\":{\"c\":1,\"c\":2}}}"]]))' "$IN")
serve raw-calls
run anthropic --mcp-config "$WS/mcp.json" "go"
is "$RC" 0 "an MCP call with unicode, numbers and nested objects: exit 0"
HOOK=$(rawval tool_input mcp__t__echo <"$T_TMP/hook.log")
APPR=$(rawval input mcp__t__echo <"$T_TMP/approver.log")
JRNL=$(journal | rawval input '"type":"intent"')
EVNT=$(rawval input '"type":"tool_call"' <"$T_TMP/out")
is "$HOOK" '{"text":"café ☃ 😀 \u2028 tab\t end","n":[1.5,-0,100,1e+20,9007199254740992,0.1],"nested":{"a":{"b":[true,null,{"c":"d","e":{}}]},"f":[]}}' \
	"the hook's tool_input is the one serialisation of the input"
is "$APPR" "$HOOK" "the approver's input: the same bytes"
is "$(rawval tool_input mcp__t__echo <"$T_TMP/post.log")" "$HOOK" "the PostToolUse hook's tool_input: the same bytes"
is "$JRNL" "$HOOK" "the journal's intent: the same bytes"
is "$EVNT" "$HOOK" "--json's tool_call: the same bytes"
BOXV=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]), sort_keys=True))' "$HOOK")
BOX=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("method") == "tools/call":
        print(json.dumps(m["params"]["arguments"], sort_keys=True)); break' "$WS/mcp-log.jsonl" 2>/dev/null)
is "$BOX" "$BOXV" "the server in the box was given the same value"
like "$(req 2)" 'echo: caf' "and its answer reached the model"
SENT=$(req 2 | python3 -c '
import json, sys
for m in json.load(sys.stdin)["body"]["messages"]:
    for b in m["content"] if isinstance(m["content"], list) else []:
        if b.get("type") == "tool_use":
            print(json.dumps(b["input"], sort_keys=True))' 2>/dev/null)
is "$SENT" "$BOXV" "the conversation sent back to the provider holds the same value"
# A key twice deep in an MCP call: refused; the server never got it.
like "$(grep '"type":"tool_result"' "$T_TMP/out" | tail -1)" '"outcome":"bad_input".*the key \\"c\\" is given twice' \
	"an MCP call with a key twice deep down: bad_input"
is "$(grep -c '"tools/call"' "$WS/mcp-log.jsonl")" 1 "and the server got only the first call"
is "$(n_lines "$T_TMP/hook.log")" 1 "and the hook only the first"

# ---- .mcp.json and --mcp-config, and what a server sends back ----
ws mcpconf
printf '{"mcpServers": {"t": {"command": "python3", "command": "sh", "args": ["/workspace/srv.py"]}}}\n' >"$T_TMP/dup-mcp.json"
FAKE_CALLS='[["mcp__t__echo", "{\"text\":\"hi\"}"]]'
serve raw-calls
run anthropic --mcp-config "$T_TMP/dup-mcp.json" "go"
is "$RC" 64 "an --mcp-config with a key twice: exit 64"
like "$(cat "$T_TMP/err")" 'dup-mcp.json: not valid JSON: the key "command" is given twice in one object \(line 1, column 45\)' \
	"an --mcp-config with a key twice: one line, the key and where"
is "$(nreq)" 0 "an --mcp-config with a key twice: nothing was asked of the model"
cp "$T_TMP/dup-mcp.json" "$WS/.mcp.json"
run anthropic --trust-project-mcp "go"
is "$RC" 64 "a project's .mcp.json with a key twice: exit 64, even trusted"
like "$(cat "$T_TMP/err")" '\.mcp\.json: not valid JSON: the key "command" is given twice' "a project's .mcp.json with a key twice: one line"
ws dupanswer
python3 - "$WS/mcp.json" <<'PY'
import json, sys
json.dump({"mcpServers": {"t": {"command": "python3", "args": ["/workspace/srv.py", "--mode", "dup-keys"],
           "tool_timeout_sec": 2}}}, open(sys.argv[1], "w"))
PY
serve raw-calls
run anthropic --mcp-config "$WS/mcp.json" "go"
like "$(cat "$T_TMP/err")" 'MCP server "t" sent a message that is not valid JSON \(ignored\): the key "result" is given twice' \
	"an MCP server's answer with a key twice: ignored, and said"
like "$(grep '"type":"tool_result"' "$T_TMP/out")" '"outcome":"timed_out"' "so the call has no answer: timed out"
unlike "$(req 2)" 'the other answer|echo: hi' "and the model gets neither reading of it"

# ---- the final answer --output-schema checks ----
# {"ok": true, "ok": false} would pass the schema as its first "ok" and be
# read as its last by whoever reads result.output: it is sent back instead.
ws answer-schema
printf '{"type": "object", "properties": {"ok": {"const": true}}, "required": ["ok"]}' >"$T_TMP/ok.schema.json"
python3 - >"$T_TMP/answer.json" <<'PY'
import json
print(json.dumps({"turns": [{"text": '{"ok": true, "ok": false}'},
                            {"expect": "is given twice", "text": '{"ok": true}'}]}))
PY
"$WARD" run --json --model "replay:$T_TMP/answer.json" --workspace "$WS" --output-schema "$T_TMP/ok.schema.json" \
	"answer" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
is "$?" 0 "an answer with a key twice is sent back, and the answer with it once is taken (exit 0)"
is "$(tail -1 "$T_TMP/out" | rawval output '"type":"result"')" '{"ok":true}' "result.output is the answer with each key once"

# ---- what a hook answers is read strictly too ----
# Headless ask mode would refuse the call; a hook's allow runs it. An
# answer that says deny and then allow is no answer: the call does not run.
ws answer
hook_says() { # hook_says ANSWER: a PreToolUse hook that prints ANSWER
	printf '#!/bin/sh\ncat >/dev/null\nprintf "%%s\\n" %s\n' "'$1'" >"$T_TMP/hook2"
	chmod +x "$T_TMP/hook2"
	printf '{"hooks": {"PreToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command": "%s"}]}]}}\n' \
		"$T_TMP/hook2" >"$XDG_CONFIG_HOME/ward/config.json"
}
ask_run() {
	"$WARD" run --json --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw \
		--approve ask "go" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
}
ALLOW='{"hookEventName": "PreToolUse", "permissionDecision": "allow"}'
DENY='{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}'
hook_says "{\"hookSpecificOutput\": $DENY, \"hookSpecificOutput\": $ALLOW}"
FAKE_CALLS='[["bash", "{\"command\":\"echo ran > ran.txt\"}"]]'
serve raw-calls
ask_run
[ ! -e "$WS/ran.txt" ]; ok $? "a PreToolUse hook's answer with a key twice: the call does not run"
like "$(grep '"type":"tool_result"' "$T_TMP/out")" 'refused by a PreToolUse hook: the hook answered with JSON that is not valid \(the key \\"hookSpecificOutput\\" is given twice' \
	"and the model is told why"
hook_says "{\"hookSpecificOutput\": $ALLOW}"
serve raw-calls
ask_run
is "$(cat "$WS/ran.txt" 2>/dev/null)" ran "twin: the allow alone is read, and the call runs"
done_testing
