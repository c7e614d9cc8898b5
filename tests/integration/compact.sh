#!/bin/bash
# Compaction near the context window, end to end: the fake LLM server
# reports a prompt that grows by 20k tokens a round, or answers that the
# prompt is too long; ward compacts, in real boxes, and says so.
. "$(dirname "$0")/lib.sh"
export XDG_STATE_HOME=$T_TMP/state
export ANTHROPIC_API_KEY=sk-ant-fake-key OPENAI_API_KEY=sk-oa-fake-key

ws() { # a fresh workspace
	WS=$T_TMP/ws-$1
	rm -rf "$WS"; mkdir -p "$WS"
	printf 'alpha\n' >"$WS/a.txt"
}
run() { # run PROVIDER [flags] TASK -> OUT, ERR, RC, MS
	local p=$1; shift
	local base=$URL
	[ "$p" = openai ] && base=$URL/v1
	local t0; t0=$(now_ms)
	"$WARD" run --provider "$p" --base-url "$base" --model fake-model --workspace "$WS" "$@" \
		>"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?
	MS=$(( $(now_ms) - t0 ))
	OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}
# What the log says of request N: tools (how many), bytes (of its body),
# pairs (whether every tool_use has its tool_result right after it, and
# every tool_result its tool_use right before, in either API's shape).
q() {
	python3 - "$LOG" "$1" "$2" <<'PY'
import json, sys
body = json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2]) - 1])["body"]
what = sys.argv[3]
if what == "tools":
    print(len(body.get("tools") or []))
elif what == "bytes":
    print(len(json.dumps(body)))
elif what == "first":
    m = body["messages"][0] if body["messages"][0]["role"] != "system" else body["messages"][1]
    c = m["content"]
    print(c if isinstance(c, str) else "".join(b.get("text", "") for b in c))
elif what == "pairs":
    msgs = [m for m in body["messages"] if m["role"] != "system"]
    bad, uses = [], 0
    for i, m in enumerate(msgs):
        c = m.get("content") if isinstance(m.get("content"), list) else []
        ids = [b["id"] for b in c if b.get("type") == "tool_use"] + [t["id"] for t in m.get("tool_calls") or []]
        uses += len(ids)
        if ids:   # the next message(s) answer each
            if m.get("tool_calls"):
                got = [x.get("tool_call_id") for x in msgs[i + 1:i + 1 + len(ids)] if x["role"] == "tool"]
            else:
                nx = msgs[i + 1] if i + 1 < len(msgs) else {}
                got = [b.get("tool_use_id") for b in nx.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_result"]
            if sorted(got) != sorted(ids):
                bad.append(i)
        res = [b.get("tool_use_id") for b in c if b.get("type") == "tool_result"]
        if m["role"] == "tool":
            res = [m.get("tool_call_id")]
        if res:   # the message(s) before asked for each
            j = i - 1
            while j >= 0 and msgs[j]["role"] == "tool":
                j -= 1
            pc = msgs[j].get("content") if j >= 0 and isinstance(msgs[j].get("content"), list) else []
            asked = [b["id"] for b in pc if b.get("type") == "tool_use"] + [t["id"] for t in (msgs[j].get("tool_calls") if j >= 0 else None) or []]
            if any(r not in asked for r in res):
                bad.append(i)
    print("whole %d" % uses if not bad else "split at %s" % bad)
PY
}
journal() { find "$XDG_STATE_HOME" -name "$1.jsonl" | head -1; }
session_of() { printf '%s\n' "$OUT" | tail -1 | json session; }

# Bad values: one line each, before anything runs.
ws flags
URL=http://127.0.0.1:9
run anthropic --compact-at 5 "x"
is "$RC" 64 "--compact-at 5: a usage error"
like "$ERR" "^ward: --compact-at: \"5\" is not a percentage of the context window from 10 to 100" "it says what is wrong and what is right"
is "$(printf '%s\n' "$ERR" | wc -l)" 1 "in one line"
run anthropic --context-window lots "x"
is "$RC" 64 "--context-window lots: a usage error"
like "$ERR" "not a number of tokens" "it says so"

# The prompt grows by 20k tokens a round against a window of 100k: the
# request that reports 80k (80 %) is followed by the summary request, and
# the next round's request is smaller.
serve compact-grow; ws grow
run anthropic --json --context-window 100000 "grow the conversation"
is "$RC" 0 "growing prompt: the run finishes"
is "$(nreq)" 7 "six rounds and one summary request"
is "$(q 1 tools)$(q 2 tools)$(q 3 tools)$(q 4 tools)" "12121212" "no compaction before the prompt reached 80 % (requests 1-4 are rounds, with the 12 tools: todo and task among them)"
is "$(q 5 tools)" 0 "the summary request, right after the 80k prompt, has no tools"
like "$(req 5)" '"max_tokens": 4096' "and its own max_tokens"
like "$(req 5)" "mark-1" "it carries the replaced rounds"
B4=$(q 4 bytes); B6=$(q 6 bytes)
lt "$B6" "$B4" "the request after the compaction is smaller than the last one before it (bytes)"
is "$(q 6 pairs)" "whole 1" "every tool_use in it has its tool_result"
like "$(req 6)" "summary of the earlier conversation" "the summary is in it, saying what it is"
like "$(req 6)" "SUMMARY-OF-EARLIER" "with the model's summary"
unlike "$(req 6)" "mark-1" "the replaced rounds are not"
like "$(req 6)" "mark-4" "the most recent round is kept verbatim"
is "$(q 6 first)" "grow the conversation" "the first message is kept first"
like "$OUT" '"type":"compaction","reason":"threshold"' "--json has a compaction event"
like "$OUT" '"prompt_tokens":80000,"context_window":100000' "with the prompt and the window"
printf '%s\n' "$OUT" >"$T_TMP/events-grow.jsonl"
V=$(validate_events "$T_TMP/events-grow.jsonl" 2>&1)
like "$V" "^valid [0-9]+" "every --json line validates against the schema ($V)"
IN=$(printf '%s\n' "$OUT" | tail -1 | json usage.input_tokens)
is "$(( IN % 20000 ))" 7777 "the summary request's tokens count in the run's totals ($IN)"
ID=$(session_of)
J=$(journal "$ID")
is "$(grep -c '"type":"compaction"' "$J")" 1 "the journal has one compaction record"
like "$(grep '"type":"compaction"' "$J")" '"replaced":\[.*mark-1' "which keeps the replaced messages"
like "$(grep '"type":"compaction"' "$J")" '"summary":\{"role":"user".*SUMMARY-OF-EARLIER' "and the summary"
like "$("$WARD" sessions)" "$ID +[0-9-]+ [0-9:]+ +done +fake-model +1 " "ward sessions shows the session was compacted once"

# --resume sends the compacted conversation, not what was replaced.
serve text
run anthropic --json --resume "$ID" "and one more thing"
is "$RC" 0 "the compacted session resumes"
like "$(req 1)" "SUMMARY-OF-EARLIER" "its first request carries the summary"
unlike "$(req 1)" "mark-1" "not the replaced messages"
like "$(req 1)" "mark-5" "and the rounds after the compaction"
is "$(q 1 pairs)" "whole 2" "its pairs whole"
is "$(q 1 first)" "grow the conversation" "the first message still first"
like "$(req 1)" "and one more thing" "and the new instruction"

# A compaction record that does not fit the conversation before it: the
# journal is damaged, and --resume says so in one line.
BAD=20000101-000000-0bad00
sed 's/"type":"compaction","reason":"threshold","why":\("[^"]*"\),"from":1,"to":[0-9]*/"type":"compaction","reason":"threshold","why":\1,"from":1,"to":999/' "$J" >"$(dirname "$J")/$BAD.jsonl"
run anthropic --context-window 100000 --resume "$BAD" "go on"
is "$RC" 64 "a damaged compaction record: --resume refuses (exit 64)"
like "$ERR" "$BAD.jsonl: line [0-9]+: a compaction record that does not fit the conversation before it; the journal is damaged" "in one line that says where"
is "$(printf '%s\n' "$ERR" | grep -c .)" 1 "one line"

# Twin: the same conversation in a window of 1M tokens is never compacted.
serve compact-grow; ws grow-twin
run anthropic --json --context-window 1000000 "grow the conversation"
is "$RC" 0 "twin: below the threshold: the run finishes"
is "$(nreq)" 6 "twin: six rounds, no summary request"
unlike "$OUT" '"type":"compaction"' "twin: no compaction event"
is "$(grep -c '"type":"compaction"' "$(journal "$(session_of)")")" 0 "twin: no compaction record"
like "$(req 6)" "mark-1" "twin: the last request still carries the first round"

# The model's window from ward's table, or a default said once.
serve compact-grow; ws window
run anthropic --json "grow the conversation"
is "$(printf '%s\n' "$ERR" | grep -c 'does not know the context window of fake-model; assuming 128000 tokens (set --context-window)')" 1 "an unknown model: one warning line"
is "$(nreq)" 6 "128000 tokens assumed: 100k (78 %) is below the threshold, no summary request"
run anthropic --json --model claude-sonnet-4-20250514 "grow the conversation"
unlike "$ERR" "context window" "twin: a model ward knows: no warning"

# The API says the prompt is too long: compact, and send the round again,
# once. A second such answer stops the run with the API's words.
for P in anthropic openai; do
	serve compact-ctx400; ws ctx-$P
	run $P --json --context-window 100000 "long task"
	is "$RC" 0 "$P: a context-length error: compacted and retried, the run finishes"
	is "$(nreq)" 6 "$P: three rounds, the refused one, the summary, the retry"
	is "$(q 5 tools)" 0 "$P: the summary request has no tools"
	like "$(req 6)" "SUMMARY-OF-EARLIER" "$P: the retry carries the summary"
	unlike "$(req 6)" "mark-1" "$P: not the replaced rounds"
	lt "$(q 6 bytes)" "$(q 4 bytes)" "$P: the retry is smaller than the refused request"
	is "$(q 6 pairs)" "whole 1" "$P: with every tool_use's tool_result"
	like "$OUT" '"type":"compaction","reason":"context_length"' "$P: the compaction event says why"

	serve compact-ctx400-again; ws ctx-again-$P
	run $P --json --context-window 100000 "long task"
	is "$RC" 1 "$P: the context-length error again after compacting: the run stops (exit 1)"
	is "$(nreq)" 6 "$P: no third try"
	lt "$MS" 15000 "$P: promptly"
	W=$( [ $P = openai ] && echo "maximum context length is 128000 tokens" || echo "prompt is too long: 208310 tokens" )
	like "$(printf '%s\n' "$OUT" | tail -1 | json why)" "HTTP 400: .*$W.*compacted for this round already" "$P: with the API's message, and that it compacted already"
done

# The summary request fails: the run stops, and the request known to be
# too big is not sent.
serve compact-summary-fails; ws sumfail
run anthropic --json --context-window 100000 "grow the conversation"
is "$RC" 1 "the summary request failed: the run stops (exit 1)"
is "$(nreq)" 5 "after it, nothing more was sent"
like "$(printf '%s\n' "$OUT" | tail -1 | json why)" "summary request that would have compacted it failed: .*summary refused.*; nothing more was sent" "it says why"

kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null
done_testing
