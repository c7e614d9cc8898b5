#!/bin/bash
# What a real model on a real project needs from ward: the project's
# instructions in the system prompt, prompt caching, and a final answer a
# pipeline can read (--output-schema). Against the fake LLM server (real
# HTTP and SSE on loopback), in real boxes.
. "$(dirname "$0")/lib.sh"
export XDG_STATE_HOME=$T_TMP/state XDG_CONFIG_HOME=$T_TMP/config
export ANTHROPIC_API_KEY=sk-ant-fake-key

run() { # run [flags] TASK -> OUT, ERR, RC (in $WS, from the directory $CWD or $WS)
	( cd "${CWD:-$WS}" && "$WARD" run --base-url "$URL" --model claude-sonnet-4-fake --workspace "$WS" "$@" \
		>"$T_TMP/out" 2>"$T_TMP/err" </dev/null )
	RC=$?
	OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}
system_of() { # the system prompt of request N, as text
	req "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["body"]; print("".join(b["text"] for b in r.get("system", [])))'
}
journal() { cat "$XDG_STATE_HOME"/ward/sessions/"$1".jsonl; }
session_of() { printf '%s\n' "$OUT" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])'; }

# --- Project instructions ---
WS=$T_TMP/proj
mkdir -p "$WS/svc/api" "$T_TMP/config/ward"
printf 'ROOT-RULE: run make test before you finish.\n' >"$WS/AGENTS.md"
printf 'SVC-CLAUDE: this one is not read, svc has an AGENTS.md.\n' >"$WS/svc/CLAUDE.md"
printf 'SVC-RULE: the service speaks JSON.\n' >"$WS/svc/AGENTS.md"
printf 'API-CLAUDE: handlers are thin.\n' >"$WS/svc/api/CLAUDE.md"
printf 'USER-RULE: answer in English.\n' >"$T_TMP/config/ward/AGENTS.md"
printf 'OUTSIDE-SECRET: never in a prompt.\n' >"$T_TMP/AGENTS.md"
printf 'HOST-SECRET-FILE\n' >"$T_TMP/secret.txt"
serve text
CWD=$WS/svc/api run --json "hello"
is "$RC" 0 "instructions: the run finishes"
SYS=$(system_of 1)
like "$SYS" "ROOT-RULE" "the first request's system prompt holds the root AGENTS.md"
like "$SYS" "SVC-RULE" "and the nested one on the way to the working directory"
like "$SYS" "API-CLAUDE" "and CLAUDE.md where a directory has no AGENTS.md"
unlike "$SYS" "SVC-CLAUDE" "but not CLAUDE.md beside an AGENTS.md"
like "$SYS" "USER-RULE" "and the user's own ~/.config/ward/AGENTS.md"
unlike "$SYS" "OUTSIDE-SECRET" "not an AGENTS.md above the workspace"
ORDER=$(printf '%s' "$SYS" | grep -o 'USER-RULE\|ROOT-RULE\|SVC-RULE\|API-CLAUDE' | tr '\n' ' ')
is "$ORDER" "USER-RULE ROOT-RULE SVC-RULE API-CLAUDE " "in order: the user's, the root's, then deeper ones"
like "$SYS" "You are a coding agent" "ward's own system prompt comes first"
J=$(journal "$(session_of)")
like "$J" '"type":"instructions","files":\[' "the journal records the instruction files"
like "$J" '"path":"AGENTS.md","sha256":"'"$(sha256sum "$WS/AGENTS.md" | cut -c1-64)"'"' "with each path and its SHA-256"
like "$J" '"path":"svc/api/CLAUDE.md"' "the nested ones by their path in the workspace"

# From the workspace root: only the root's (and the user's).
CWD= run "hello"
SYS=$(system_of 2)
like "$SYS" "ROOT-RULE" "from the root: the root's file"
unlike "$SYS" "SVC-RULE" "and no deeper one"

# --no-project-instructions: none of them (twin of the above).
run --no-project-instructions "hello"
SYS=$(system_of 3)
unlike "$SYS" "ROOT-RULE" "--no-project-instructions: the root's file is not read"
unlike "$SYS" "USER-RULE" "nor the user's"
like "$SYS" "You are a coding agent" "ward's own prompt stays"
printf '{"project_instructions": "off", "cache_ttl": "off"}\n' >"$T_TMP/config/ward/config.json"
run "hello"
unlike "$(system_of 4)" "ROOT-RULE" "the config file's \"project_instructions\": \"off\" does the same"
unlike "$(req 4)" "cache_control" "and its \"cache_ttl\": \"off\" sends no breakpoint"
rm "$T_TMP/config/ward/config.json"

# A symlink out of the workspace is not followed, whatever its form.
rm "$WS/svc/AGENTS.md"
ln -s "$T_TMP/secret.txt" "$WS/svc/AGENTS.md"
ln -sf ../../../secret.txt "$WS/svc/api/AGENTS.md"
CWD=$WS/svc/api run "hello"
SYS=$(system_of 5)
unlike "$SYS" "HOST-SECRET-FILE" "an AGENTS.md that links out of the workspace (absolute or ../) is not read"
like "$ERR" "AGENTS.md.*not read" "and ward says so on stderr"
like "$SYS" "ROOT-RULE" "twin: the root's plain file still is"
rm "$WS/svc/AGENTS.md" "$WS/svc/api/AGENTS.md"
ln -s ../AGENTS.md "$WS/svc/AGENTS.md"
CWD=$WS/svc run "hello"
is "$(system_of 6 | grep -c ROOT-RULE)" 2 "twin: a link that stays inside the workspace is followed"
rm "$WS/svc/AGENTS.md"
mkfifo "$WS/svc/AGENTS.md"
t0=$(now_ms)
CWD=$WS/svc run "hello"
is "$RC" 0 "a FIFO named AGENTS.md: the run goes on"
[ $(( $(now_ms) - t0 )) -lt 10000 ]; ok $? "and does not hang on it"
like "$ERR" "svc/AGENTS.md is not a regular file" "and says why it was passed over"
rm "$WS/svc/AGENTS.md"

# The cap: 32 KiB in all, cut and said.
python3 -c 'print("BIG-START " + "x" * 40000 + " BIG-END")' >"$WS/AGENTS.md"
run "hello"
SYS=$(system_of 8)
like "$SYS" "BIG-START" "a big AGENTS.md: its start is in the prompt"
unlike "$SYS" "BIG-END" "its end is not"
like "$SYS" "cut here, at 32 KiB" "and the prompt says it was cut"
like "$ERR" "cut at 32 KiB" "and so does stderr"
[ "$(system_of 8 | wc -c)" -lt $(( 32768 + 4096 )) ]; ok $? "the prompt's instructions stay within the cap"
rm "$WS/AGENTS.md" "$T_TMP/config/ward/AGENTS.md"

# A package of a monorepo: the repository's root (a .git above the
# workspace) and each directory down to the workspace are read first,
# whatever the workspace is; twin: without a .git above, only the
# workspace's. A link out of the repository is not followed.
M=$T_TMP/mono
mkdir -p "$M/.git" "$M/packages/api/src"
printf 'MONO-ROOT: use pnpm.\n' >"$M/AGENTS.md"
printf 'MONO-PKGS: packages are ESM.\n' >"$M/packages/CLAUDE.md"
printf 'MONO-API: the API is REST.\n' >"$M/packages/api/AGENTS.md"
printf 'MONO-SRC: no default exports.\n' >"$M/packages/api/src/AGENTS.md"
WS=$M/packages/api
serve text
CWD=$WS/src run --json "hello"
SYS=$(system_of 1)
is "$(printf '%s' "$SYS" | grep -o 'MONO-[A-Z]*' | tr '\n' ' ')" "MONO-ROOT MONO-PKGS MONO-API MONO-SRC " \
	"a monorepo's package: the repository root's, then down to the working directory, in order"
J=$(journal "$(session_of)")
like "$J" '"path":"\.\./\.\./AGENTS\.md","sha256":"[0-9a-f]{64}","bytes":[0-9]+,"from":"repository"' "the journal says where each came from: the repository's root"
like "$J" '"path":"\.\./CLAUDE\.md",.*"from":"repository"' "the directory between"
like "$J" '"path":"AGENTS\.md",.*"from":"workspace"' "and the workspace's own"
rm -rf "$M/.git"
serve text
CWD=$WS/src run "hello"
is "$(system_of 1 | grep -o 'MONO-[A-Z]*' | tr '\n' ' ')" "MONO-API MONO-SRC " "twin: no .git above the workspace: only the workspace's"
mkdir -p "$M/.git"
rm "$M/packages/CLAUDE.md"
ln -s "$T_TMP/secret.txt" "$M/packages/AGENTS.md"
serve text
run "hello"
unlike "$(system_of 1)" "HOST-SECRET-FILE" "a repository's AGENTS.md that links out of it is not read"
like "$ERR" "\.\./AGENTS\.md: .*link out of the repository" "and ward says so"
like "$(system_of 1)" "MONO-ROOT" "twin: the root's plain file is"
rm -rf "$M"

# --- Prompt caching ---
WS=$T_TMP/cache; mkdir -p "$WS"
serve tool --cache-sim
run --json "write a file"
is "$RC" 0 "caching: a tool-using turn finishes"
BP=$(req 2 | python3 -c '
import json, sys
b = json.load(sys.stdin)["body"]
n = json.dumps(b).count("cache_control")
last = b["messages"][-1]["content"][-1]
print(n, "cache_control" in last, last["type"])')
is "$BP" "3 True tool_result" "request 2: a breakpoint on its last message block (the tool result), three in all (at most four)"
R=$(printf '%s\n' "$OUT" | tail -1)
like "$R" '"cache_read_tokens":[1-9]' "the result event reports cache reads from the server's usage"
like "$R" '"cache_hit_rate":0\.[0-9]' "and a hit rate"
COST=$(printf '%s' "$R" | python3 -c '
import json, sys
r = json.load(sys.stdin); u = r["usage"]
want = (u["input_tokens"] * 3 + u["output_tokens"] * 15 + u["cache_read_tokens"] * 0.3 + u["cache_write_tokens"] * 3.75) / 1e6
print("ok" if abs(r["cost_usd"] - want) < 1e-9 else "cost %s, want %s" % (r["cost_usd"], want))')
is "$COST" ok "the cost uses the cache prices (reads at 0.1x, writes at 1.25x)"
serve tool --cache-sim
run --json --cache-ttl 1h "write a file"
like "$(req 2)" '"cache_control": {"type": "ephemeral", "ttl": "1h"}' "--cache-ttl 1h: the breakpoints ask for an hour"
serve tool --cache-sim
run --json --cache-ttl off "write a file"
unlike "$(req 2)" "cache_control" "--cache-ttl off: no breakpoint"
like "$(printf '%s\n' "$OUT" | tail -1)" '"cache_read_tokens":0,' "and no cache reads"
run --cache-ttl 2h "x"
is "$RC" 64 "--cache-ttl 2h: a usage error"
is "$(printf '%s\n' "$ERR" | wc -l)" 1 "in one line"
like "$ERR" "not 5m, 1h or off" "saying what it takes"

# --- The final answer ---
WS=$T_TMP/answer; mkdir -p "$WS"; printf 'a\n' >"$WS/a"; printf 'b\n' >"$WS/b"
cat >"$T_TMP/schema.json" <<'JSON'
{"type": "object",
 "properties": {"ok": {"type": "boolean"}, "files": {"type": "integer", "minimum": 0}},
 "required": ["ok", "files"], "additionalProperties": false}
JSON
serve answer-json
run --json --output-schema "$T_TMP/schema.json" "count the files"
is "$RC" 0 "--output-schema: a valid answer: exit 0"
R=$(printf '%s\n' "$OUT" | tail -1)
like "$R" '"output":\{"ok":true,"files":2\}' "the result's output is the answer, parsed"
like "$R" '"final_text":"```json' "and final_text is the model's text as it was"
like "$(system_of 1 | tr '\n' ' ')" 'matches this JSON Schema: *\{.*"additionalProperties":false' "the system prompt gives the model the schema"
serve answer-retry
run --json --output-schema "$T_TMP/schema.json" "count the files"
is "$RC" 0 "an answer that does not match is sent back once, and the second is taken"
like "$(req 2)" 'does not match the output schema: at /ok: expected boolean, got string' "the model is told what was wrong"
like "$(printf '%s\n' "$OUT" | tail -1)" '"output":\{"ok":true' "the result holds the corrected answer"
serve answer-bad
run --json --output-schema "$T_TMP/schema.json" "count the files"
is "$RC" 1 "still wrong after one retry: exit 1"
is "$(wc -l <"$LOG" | tr -d ' ')" 2 "after exactly two requests"
R=$(printf '%s\n' "$OUT" | tail -1)
like "$R" '"stop":"output_invalid"' "the stop says output_invalid"
like "$R" '"why":"the final answer does not match --output-schema, after one retry: it is not JSON' "and why"
unlike "$R" '"output"' "and there is no output"
serve text
run --json "hello"
like "$(printf '%s\n' "$OUT" | tail -1)" '"final_text":"Hello from the fake model. Nothing to do."' "without a schema: final_text is the last message's text"
unlike "$(printf '%s\n' "$OUT" | tail -1)" '"output"' "and there is no output"
V=$(validate_events "$T_TMP/out" 2>&1)
like "$V" "^valid [0-9]+" "every --json line validates against the schema"
# Plain mode: stdout is the final answer alone (as claude -p and codex
# exec), progress and interim text on stderr; with --output-schema, the
# checked JSON alone; -o FILE holds it too.
serve answer-json
run --output-schema "$T_TMP/schema.json" "count the files"
is "$OUT" '{"ok":true,"files":2}' "plain --output-schema: stdout is the checked JSON alone"
like "$ERR" 'Counting\.' "the interim text is on stderr"
serve answer-json
run "count the files"
is "$OUT" "$(printf '```json\n{"ok": true, "files": 2}\n```')" "plain: stdout is the last message alone"
unlike "$OUT" 'Counting' "and not the message before it"
serve answer-bad
run --output-schema "$T_TMP/schema.json" "count the files"
is "$RC" 1 "plain, an answer that does not match: exit 1"
is "$OUT" "" "and nothing on stdout"
rm -f "$T_TMP/last.txt"
serve answer-json
run --json -o "$T_TMP/last.txt" --output-schema "$T_TMP/schema.json" "count the files"
is "$(cat "$T_TMP/last.txt" 2>/dev/null)" '{"ok":true,"files":2}' "-o FILE: the checked answer"
is "$(stat -c %a "$T_TMP/last.txt" 2>/dev/null)" 600 "-o FILE is 0600"
like "$(printf '%s\n' "$OUT" | tail -1)" '"type":"result"' "with --json, stdout is still the events"
serve answer-json
UM=$(umask); umask 000; run --output-last-message "$T_TMP/last2.txt" "count the files"; umask "$UM"
like "$(cat "$T_TMP/last2.txt" 2>/dev/null)" '"ok": true' "--output-last-message FILE: the last message"
is "$(stat -c %a "$T_TMP/last2.txt" 2>/dev/null)" 600 "0600 whatever the umask"
run -o "" "x"
is "$RC" 64 "-o with no file name: usage error"

# --json: the stop's one line is on stderr too, for the CI log.
serve answer-bad
run --json --output-schema "$T_TMP/schema.json" "count the files"
like "$ERR" '^ward: output_invalid: the final answer does not match --output-schema' "--json: a failed run's stop is one line on stderr"
serve text
run --json "hello"
like "$ERR" '^ward: done: ' "--json: a finished run's too"
is "$(printf '%s\n' "$ERR" | grep -c '^ward: done')" 1 "once"

printf '{"type": "object", "propertyNames": {}}' >"$T_TMP/bad-schema.json"
run --output-schema "$T_TMP/bad-schema.json" "x"
is "$RC" 64 "a schema with a keyword ward does not check: usage error"
is "$(printf '%s\n' "$ERR" | wc -l)" 1 "in one line"
like "$ERR" 'bad-schema.json: at #: the keyword "propertyNames" is not one ward checks \(it checks type' "naming the file and the keyword, and the keywords it checks"
printf '{"type":\n  "object",\n  "required": [1, }\n' >"$T_TMP/bad-schema.json"
run --output-schema "$T_TMP/bad-schema.json" "x"
like "$ERR" 'bad-schema.json: not JSON: .*\(line 3' "a schema that is not JSON: the file, what and the line"
run --output-schema "$T_TMP/none.json" "x"
is "$RC" 64 "a missing schema file: usage error"
done_testing
