#!/bin/bash
# Configuration: the user's file, the project's file (which may only
# narrow), the environment and the flags, each over the one before, all
# read as the flags are; ward config says where each value came from. The
# fake LLM server logs each request, so a test sees which model and which
# server ward used.
. "$(dirname "$0")/lib.sh"
export ANTHROPIC_API_KEY=sk-ant-fake-key OPENAI_API_KEY=sk-oa-fake-key
unset WARD_MODEL ANTHROPIC_MODEL ANTHROPIC_BASE_URL OPENAI_BASE_URL
export XDG_CONFIG_HOME=$T_TMP/cfg
UF=$XDG_CONFIG_HOME/ward/config.json
WS=$T_TMP/ws
PF=$WS/.ward/config.json
mkdir -p "$(dirname "$UF")" "$WS/.ward"

user() { printf '%s\n' "$1" >"$UF"; }
proj() { printf '%s\n' "$1" >"$PF"; }
clean() { rm -f "$UF" "$PF" "$WS"/*.txt; unset WARD_MODEL ANTHROPIC_MODEL ANTHROPIC_BASE_URL OPENAI_BASE_URL; }
wr() { # wr [ward run flags] TASK -> RC OUT ERR, in the workspace (the project's file is found there)
	(cd "$WS" && "$WARD" run "$@") >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?; OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}
cfg() { # cfg [flags] -> RC OUT ERR of ward config
	(cd "$WS" && "$WARD" config "$@") >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?; OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}
sent() { tail -1 "$LOG" | json "body.$1"; }	# what the last request said
path() { tail -1 "$LOG" | json path; }
warnings() { printf '%s\n' "$ERR" | grep -c "^ward: warning: "; }

serve text

# --- Precedence: flag > environment > project file > user file > default.
# The project's model is one no dearer than the user's (ward's prices).
UM=claude-opus-4-1-20250805 PM=claude-3-5-haiku-20241022
clean
user "{\"model\": \"$UM\"}"
proj "{\"model\": \"$PM\"}"
export WARD_MODEL=env-model
wr --base-url "$URL" --model flag-model "hi"
is "$RC" 0 "all four sources: exit 0"
is "$(sent model)" flag-model "all four: the flag's model is the one sent"
cfg --model flag-model
like "$OUT" "^model +flag-model +flag --model$" "ward config: the model comes from the flag"
wr --base-url "$URL" "hi"
is "$(sent model)" env-model "no flag: the environment's (WARD_MODEL) is sent"
cfg
like "$OUT" "^model +env-model +env WARD_MODEL$" "ward config: env WARD_MODEL"
unset WARD_MODEL
wr --base-url "$URL" "hi"
is "$(sent model)" "$PM" "no environment: the project file's is sent"
cfg
like "$OUT" "^model +$PM +project file $PF$" "ward config: the project file, by its path"
like "$OUT" "^# project file: $PF$" "ward config: names the project file it read"
rm -f "$PF"
wr --base-url "$URL" "hi"
is "$(sent model)" "$UM" "no project file: the user file's is sent"
cfg
like "$OUT" "^model +$UM +user file $UF$" "ward config: the user file, by its path"
like "$OUT" "^# project file: $PF \\(not found\\)$" "ward config: a missing project file is fine, and said"
rm -f "$UF"
wr --base-url "$URL" "hi"
is "$RC" 0 "no files at all: exit 0"
is "$(sent model)" claude-sonnet-4-20250514 "no source: the built-in default is sent"

# ANTHROPIC_MODEL is the anthropic provider's; WARD_MODEL beats it.
export ANTHROPIC_MODEL=anthropic-env-model
wr --base-url "$URL" "hi"
is "$(sent model)" anthropic-env-model "ANTHROPIC_MODEL with the anthropic provider"
WARD_MODEL=ward-env-model wr --base-url "$URL" "hi"
is "$(sent model)" ward-env-model "WARD_MODEL over ANTHROPIC_MODEL"
wr --provider openai --base-url "$URL/v1" "hi"
is "$(sent model)" gpt-4o "ANTHROPIC_MODEL is not the openai provider's (its default is sent)"
unset ANTHROPIC_MODEL

# Defaults, pinned: changing one is a decision.
clean
cfg
is "$RC" 0 "ward config with no files: exit 0"
DEFAULTS="model claude-sonnet-4-20250514 default|provider anthropic default|base_url (the provider's) default|approve auto default|allow (none) default|deny (none) default|deadline none default|max_rounds none default|max_calls none default|max_tokens none default|max_cost none default|idle_timeout 2m default|retries 10 default|disk 10G default|image (none) default|network.mode none default|network.allow_hosts (none) default|network.secrets (none) default|network.secret_ca (none) default|network.secret_other_keys off default|network.max_bytes 10G default|context_window 200000 default|compact_at 80 default|cache_ttl 5m default|project_instructions on default|api_key (set) env ANTHROPIC_API_KEY"
is "$(printf '%s\n' "$OUT" | grep -v '^#' | tr -s ' ' | paste -sd'|')" "$DEFAULTS" "ward config: the defaults, one line each"
cfg --json
is "$(printf '%s' "$OUT" | json settings.model.source)" default "ward config --json: the model's source"
is "$(printf '%s' "$OUT" | json settings.max_rounds.value)" none "ward config --json: max_rounds' value"
cfg --help
is "$RC" 0 "ward config --help: exit 0"
like "$OUT" "network.allow_hosts +--allow-host" "ward config --help: lists each key with its flag"

# --- base_url: the user's file and the environment reach the server.
clean
user "{\"base_url\": \"$URL\"}"
N0=$(nreq)
wr "hi"
is "$RC" 0 "base_url from the user file: exit 0"
is "$(nreq)" $((N0 + 1)) "base_url from the user file: the request reached the fake server"
cfg
like "$OUT" "^base_url +$URL +user file $UF$" "ward config: base_url from the user file"
clean
N0=$(nreq)
ANTHROPIC_BASE_URL=$URL wr "hi"
is "$(nreq)" $((N0 + 1)) "ANTHROPIC_BASE_URL reaches the server"
is "$(path)" /v1/messages "as the anthropic provider"
OPENAI_BASE_URL=$URL/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:9/ wr --provider openai "hi"
is "$RC" 0 "--provider openai: OPENAI_BASE_URL applies, ANTHROPIC_BASE_URL does not"
is "$(path)" /v1/chat/completions "the openai provider's path on the server"
ANTHROPIC_BASE_URL=http://127.0.0.1:9/ wr --base-url "$URL" "hi"
is "$RC" 0 "--base-url over ANTHROPIC_BASE_URL"

# --- The project file may only narrow. A second server stands for the
# repository's own: nothing may reach it.
EVIL_LOG=$T_TMP/evil.jsonl
rm -f "$T_TMP/eport"
python3 "$FAKE" --scenario text --port-file "$T_TMP/eport" --log "$EVIL_LOG" &
EVIL=$!
for _ in $(seq 100); do [ -s "$T_TMP/eport" ] && break; sleep 0.05; done
EVIL_URL=http://127.0.0.1:$(cat "$T_TMP/eport")

clean
user "{\"base_url\": \"$URL\"}"
proj "{\"base_url\": \"$EVIL_URL\"}"
N0=$(nreq)
wr "hi"
is "$RC" 0 "a project base_url: the run goes on"
is "$(nreq)" $((N0 + 1)) "a project base_url: the request went to the user's server"
[ ! -s "$EVIL_LOG" ]; ok $? "a project base_url: nothing reached the project's server (the key stays home)"
like "$ERR" "^ward: warning: $PF:1:2: \"base_url\" ignored: a project's file may only narrow what you allow, and this would send your requests and your API key to another server" "a project base_url: one line with file, key and why"
is "$(warnings)" 1 "a project base_url: exactly one line"
proj "{\"base_url\": \"$EVIL_URL\"}"
rm -f "$UF"
wr --base-url "$URL" "hi"
[ ! -s "$EVIL_LOG" ]; ok $? "a project base_url does not apply without a user base_url either"

clean
proj '{"provider": "openai"}'
wr --base-url "$URL" "hi"
is "$(path)" /v1/messages "a project provider is ignored (still anthropic)"
like "$ERR" "$PF:1:2: \"provider\" ignored: a project's file may only narrow" "a project provider: its line"
user '{"provider": "openai"}'
rm -f "$PF"
wr --base-url "$URL/v1" "hi"
is "$(path)" /v1/chat/completions "twin: provider in the user file takes effect"

clean
proj '{"model": "replay:/dev/null"}'
wr --base-url "$URL" "hi"
is "$(sent model)" claude-sonnet-4-20250514 "a project model replay:FILE is ignored"
like "$ERR" "\"model\" ignored: a project's file may pick a model, not a script" "a project replay model: its line"

# Allow rules, auto-approval: the write scenario's call needs approval in
# ask mode; with no terminal it is refused unless a rule or mode allows it.
# The scenario counts requests, so each run gets a fresh server.
clean
user '{"approve": "ask"}'
proj '{"allow": ["write"], "approve": "auto"}'
serve write; wr --base-url "$URL" --apply "write"
[ ! -e "$WS/gated.txt" ]; ok $? "project allow rule and approve auto: the write is still refused"
like "$(tail -1 "$LOG")" "needs a person's approval" "the model is told it needs approval"
like "$ERR" "$PF:1:2: \"allow\" ignored: a project's file may only narrow what you allow, and allow rules widen it" "project allow: its line"
like "$ERR" "$PF:1:33: \"approve\": auto ignored: a project's file may only narrow what you allow, and auto would run every call without asking" "project approve auto: its line"
is "$(warnings)" 2 "one line for each"
clean
user '{"approve": "ask", "allow": ["write"]}'
serve write; wr --base-url "$URL" --apply "write"
is "$(cat "$WS/gated.txt" 2>/dev/null)" written "twin: the allow rule in the user file lets the write run"
clean
user '{"approve": "ask"}'
proj '{"approve": "edits"}'
serve write; wr --base-url "$URL" --apply "write"
[ ! -e "$WS/gated.txt" ]; ok $? "project approve edits over the user's ask: refused (looser)"
like "$ERR" "\"approve\": edits ignored: a project's file may only tighten it, and this is looser than what is in force \\(ask, from user file $UF\\)" "project approve looser: its line says what is in force"
clean
user '{"approve": "auto"}'
serve write; wr --base-url "$URL" --apply "write"
is "$(cat "$WS/gated.txt" 2>/dev/null)" written "twin: approve auto in the user file runs the write"
rm -f "$WS/gated.txt"
proj '{"approve": "ask"}'
serve write; wr --base-url "$URL" --apply "write"
[ ! -e "$WS/gated.txt" ]; ok $? "project approve ask (stricter) takes effect: the write is refused"
is "$(warnings)" 0 "with no warning"
cfg --approve auto
like "$OUT" "^approve +auto +flag --approve$" "ward config: a flag is over the project file"

# A deny rule in the project file takes effect, and refuses the call.
clean
proj '{"deny": ["write"]}'
serve write; wr --base-url "$URL" --apply "write"
[ ! -e "$WS/gated.txt" ]; ok $? "a project deny rule refuses the write"
like "$(tail -1 "$LOG")" "denied by the rule" "the model is told which rule"
is "$(warnings)" 0 "a deny rule is taken without a warning"
rm -f "$PF"
serve write; wr --base-url "$URL" --apply "write"
is "$(cat "$WS/gated.txt" 2>/dev/null)" written "twin: without it the write runs"

# The network: a project may not allow hosts or the host's network; none narrows.
clean
proj '{"network": {"mode": "host", "allow_hosts": ["evil.test"]}}'
cfg
like "$ERR" "$PF:1:22: \"network.mode\": host ignored: .*host would open the host's whole network" "project network.mode host: its line"
like "$ERR" "$PF:1:30: \"network.allow_hosts\" ignored: .*reach those hosts" "project network.allow_hosts: its line"
like "$OUT" "^network.mode +none +default$" "the mode stays none"
like "$OUT" "^network.allow_hosts +\\(none\\) +default$" "no host is allowed"
user '{"network": {"allow_hosts": ["pkgs.example", "files.pkgs.example"]}}'
rm -f "$PF"
cfg
like "$OUT" "^network.allow_hosts +files.pkgs.example +user file $UF$" "twin: allow_hosts in the user file take effect"
proj '{"network": {"mode": "none"}}'
cfg
like "$OUT" "^network.mode +none +project file $PF$" "project network.mode none narrows the user's hosts away"
unlike "$OUT" "pkgs.example" "and no host is left"
rm -f "$PF"
cfg --net none
like "$OUT" "^network.mode +none +flag --net$" "--net none replaces the user file's hosts (no conflict)"
is "$RC" 0 "exit 0"
user '{"network": {"mode": "none", "allow_hosts": ["pkgs.example"]}}'
cfg
is "$RC" 64 "mode none and allow_hosts in one file contradict: exit 64"
like "$ERR" "$UF:1:1: --allow-host with --net none" "and the line names the file"

# Bounds: tighter is taken, looser is ignored; against the user's and the defaults.
clean
user '{"max_rounds": 10, "deadline": "10m", "max_cost": 2}'
proj '{"max_rounds": 50, "deadline": "1h", "max_cost": 5, "retries": 19, "idle_timeout": "1h", "disk": "100G", "max_calls": 3, "max_tokens": 5000}'
cfg
like "$ERR" "\"max_rounds\": 50 ignored: a project's file may only tighten it.*\\(10, from user file $UF\\)" "project max_rounds looser than the user's: ignored"
like "$ERR" "\"deadline\": 1h ignored" "project deadline looser than the user's: ignored"
like "$ERR" "\"max_cost\": 5 ignored" "project max_cost looser: ignored"
like "$ERR" "\"retries\": 19 ignored: .*\\(10, the default\\)" "project retries above the default: ignored"
like "$ERR" "\"idle_timeout\": 1h ignored" "project idle_timeout above the default: ignored"
like "$ERR" "\"disk\": 100G ignored" "project disk above the default: ignored"
is "$(warnings)" 6 "one line for each"
like "$OUT" "^max_rounds +10 +user file" "the user's max_rounds stands"
like "$OUT" "^max_calls +3 +project file" "a project bound where the user has none is taken"
like "$OUT" "^max_tokens +5000 +project file" "and another"
proj '{"max_rounds": 5, "deadline": "5m", "retries": 1}'
cfg
like "$OUT" "^max_rounds +5 +project file" "twin: a tighter max_rounds is taken"
like "$OUT" "^deadline +5m +project file" "twin: a tighter deadline is taken"
like "$OUT" "^retries +1 +project file" "twin: fewer retries are taken"
is "$(warnings)" 0 "with no warning"
serve loop
proj '{"max_rounds": 1}'
wr --base-url "$URL" "loop"
is "$RC" 2 "a project max_rounds 1 stops the run at its bound (exit 2)"
is "$(nreq)" 1 "after one round"
cfg --max-rounds 7
like "$OUT" "^max_rounds +7 +flag --max-rounds$" "a flag is over the project file"

# Symlinks: the project's file is the project's own, never one it points at
# (a file outside the repository, which errors would quote into a CI log).
clean
printf '{"model": "outside"}\n' >"$T_TMP/outside.json"
ln -s "$T_TMP/outside.json" "$PF"
cfg
is "$RC" 64 "a symlinked project file: exit 64"
like "$ERR" "$PF: a symbolic link" "and says so"
rm -f "$PF"
cfg
is "$RC" 0 "twin: without it, exit 0"

# --- Malformed files: one line with FILE:LINE:COLUMN, exit 64; the fixed file works.
serve text
clean
printf '{\n  "model": "m1",\n  "max_rounds": 3,\n}\n' >"$UF"
wr --base-url "$URL" "hi"
is "$RC" 64 "bad JSON: exit 64"
is "$ERR" "ward: $UF: not valid JSON: a comma before '}', after an object's last member (line 4, column 1); fix the file (or move it away)" "bad JSON: one line, the file, what and where"
printf '{\n  "model": "m1",\n  "max_rounds": 3\n}\n' >"$UF"
wr --base-url "$URL" "hi"
is "$RC" 0 "twin: the fixed file works"
is "$(sent model)" m1 "and its model is sent"
printf '{\n  "model": "m1",\n  "max_rounds": "three"\n}\n' >"$UF"
wr --base-url "$URL" "hi"
is "$RC" 64 "a wrong type: exit 64"
is "$ERR" "ward: $UF:3:17: \"max_rounds\" must be a number, e.g. 50" "a wrong type: one line at the value"
printf '{"deny": ["write", 7]}' >"$UF"
wr --base-url "$URL" "hi"
like "$ERR" "^ward: $UF:1:20: \"deny\" must be an array of strings" "a wrong type in a list: at the element"
printf '{\n  "deadline": "soon"\n}\n' >"$PF"
rm -f "$UF"
wr --base-url "$URL" "hi"
is "$RC" 64 "a bad value in the project file: exit 64"
is "$ERR" "ward: $PF:2:15: \"deadline\": --deadline: \"soon\" is not a duration with a unit (e.g. 90s, 10m, 1h30m, 1.5s)" "a bad value: the flag's own message, after file, position and key"
printf '["model"]' >"$PF"
wr --base-url "$URL" "hi"
is "$RC" 64 "not an object: exit 64"
like "$ERR" "$PF:1:1: the file must hold one JSON object" "not an object: says so"
printf '{"model": "a",\n "model": "b"}' >"$PF"
wr --base-url "$URL" "hi"
is "$RC" 64 "a key twice: exit 64"
like "$ERR" "$PF: not valid JSON: the key \"model\" is given twice in one object \(line 2, column 2\)" "a key twice: one line with its position"
printf '{"model": "a",\n "network": {"mode": "none", "mode": "host"}}' >"$PF"
wr --base-url "$URL" "hi"
like "$RC $ERR" "^64 .*$PF: not valid JSON: the key \"mode\" is given twice in one object \(line 2, column 30\)" "a key twice deeper down: exit 64, one line"
printf '{"model": "a",\n "network": {"mode": "none"}}' >"$PF"
wr --base-url "$URL" "hi"
is "$RC" 0 "twin: each key once: the file works"
printf '{"model": "a\\u001b[2Jb"}' >"$PF"
wr --base-url "$URL" "hi"
is "$RC" 64 "a control character in a value: exit 64"
printf '{"model": "%s", "colour": "blue"}' "$PM" >"$PF"
wr --base-url "$URL" "hi"
is "$RC" 0 "an unknown key is not fatal"
is "$(sent model)" "$PM" "the rest of the file applies"
is "$(warnings)" 1 "one warning line"
like "$ERR" "^ward: warning: $PF:1:$((15 + ${#PM})): unknown key \"colour\" ignored" "an unknown key: one warning naming file and key"
BAD_ENV=$( (cd "$WS" && ANTHROPIC_BASE_URL=ftp://x "$WARD" run "hi") 2>&1 </dev/null); BRC=$?
is "$BRC" 64 "a bad ANTHROPIC_BASE_URL: exit 64"
like "$BAD_ENV" "^ward: env ANTHROPIC_BASE_URL: --base-url: \"ftp://x\" is not an http" "and the line names the variable"

# --workspace picks the project file, from anywhere.
clean
proj "{\"model\": \"$PM\"}"
(cd / && "$WARD" run --base-url "$URL" --workspace "$WS" "hi") >/dev/null 2>&1 </dev/null
is "$(sent model)" "$PM" "the project file of --workspace DIR applies"

# A repository cannot turn its own instructions back on, nor pick a model
# dearer than the user's, or one ward cannot price.
clean
user '{"project_instructions": "off"}'
proj '{"project_instructions": "on"}'
echo "AGENTS-CANARY-7731" >"$WS/AGENTS.md"
wr --base-url "$URL" "hi"
is "$RC" 0 "a project's project_instructions on over the user's off: the run goes on"
unlike "$(tail -1 "$LOG")" "AGENTS-CANARY-7731" "a project's project_instructions on over the user's off: AGENTS.md is not in the prompt"
like "$ERR" "\"project_instructions\": on ignored: a project's file may only tighten it, and this is looser than what is in force \\(off, from user file $UF\\)" "a project's project_instructions on: one line says why"
rm -f "$UF"
wr --base-url "$URL" "hi"
like "$(tail -1 "$LOG")" "AGENTS-CANARY-7731" "twin: with the user's default (on), AGENTS.md is in the prompt"
proj '{"project_instructions": "off"}'
wr --base-url "$URL" "hi"
unlike "$(tail -1 "$LOG")" "AGENTS-CANARY-7731" "twin: a project's own off is taken"
rm -f "$WS/AGENTS.md"
clean
proj '{"model": "claude-opus-4-1-20250805"}'
wr --base-url "$URL" "hi"
is "$(sent model)" claude-sonnet-4-20250514 "a project's model dearer than the one in force is ignored"
like "$ERR" "\"model\": claude-opus-4-1-20250805 ignored: a project's file may only tighten it" "its line"
proj '{"model": "local-model"}'
wr --base-url "$URL" "hi"
is "$(sent model)" claude-sonnet-4-20250514 "a project's model ward has no prices for is ignored"
like "$ERR" "\"model\": local-model ignored: a project's file may pick a model no dearer than the one in force \\(claude-sonnet-4-20250514\\), and ward does not know the prices of both" "its line"

# --- Every key, from every source that may only narrow: a project's file
# and a task line (ward run --task-file, not trusted). One row per key of
# ward config's table; a key the table has and this test does not (a new
# key, with no narrowing rule decided) fails the test. Each row: the key;
# its rule for a project's file; what the user's file sets; a project
# value looser than that (ignored, one line); one no looser (taken); its
# rule for a task line; the command line that sets what is in force; a
# line value looser than that (ignored, one line; for public, refused);
# one no looser (taken). "-": none.
NARROW_ROWS='model|rank|"model": "claude-sonnet-4-20250514"|"model": "claude-opus-4-1-20250805"|"model": "claude-3-5-haiku-20241022"|rank|--model claude-sonnet-4-20250514|"model": "claude-opus-4-1-20250805"|"model": "claude-3-5-haiku-20241022"
provider|never|-|"provider": "openai"|-|never|-|"provider": "openai"|-
base_url|never|-|"base_url": "http://127.0.0.1:9/"|-|never|-|"base_url": "http://127.0.0.1:9/"|-
approve|rank|"approve": "edits"|"approve": "auto"|"approve": "ask"|rank|--approve edits|"approve": "auto"|"approve": "ask"
allow|never|-|"allow": ["write"]|-|never|-|"allow": ["write"]|-
deny|always|-|-|"deny": ["bash:rm *"]|always|-|-|"deny": ["bash:rm *"]
deadline|rank|"deadline": "10m"|"deadline": "1h"|"deadline": "5m"|rank|--deadline 10m|"deadline": "1h"|"deadline": "5m"
max_rounds|rank|"max_rounds": 10|"max_rounds": 50|"max_rounds": 5|rank|--max-rounds 10|"max_rounds": 50|"max_rounds": 5
max_calls|rank|"max_calls": 10|"max_calls": 50|"max_calls": 5|rank|--max-calls 10|"max_calls": 50|"max_calls": 5
max_tokens|rank|"max_tokens": 100000|"max_tokens": 500000|"max_tokens": 50000|rank|--max-tokens 100000|"max_tokens": 500000|"max_tokens": 50000
max_cost|rank|"max_cost": 2|"max_cost": 5|"max_cost": 1|rank|--max-cost 2|"max_cost": 5|"max_cost": 1
idle_timeout|rank|"idle_timeout": "2m"|"idle_timeout": "1h"|"idle_timeout": "30s"|rank|--idle-timeout 2m|"idle_timeout": "1h"|"idle_timeout": "30s"
retries|rank|"retries": 2|"retries": 9|"retries": 1|rank|--retries 2|"retries": 9|"retries": 1
disk|rank|"disk": "10G"|"disk": "100G"|"disk": "1G"|rank|--disk 10G|"disk": "100G"|"disk": "1G"
image|root|-|-|"image": "ward-test/cfg:latest"|root|-|"image": "127.0.0.1:9/ward-test/cfg:latest"|"image": "ward-test/cfg:latest"
network.mode|rank|"network": {"allow_hosts": ["pkgs.example"]}|"network": {"mode": "host"}|"network": {"mode": "none"}|rank|--allow-host pkgs.example|"net": "host"|"net": "none"
network.allow_hosts|never|-|"network": {"allow_hosts": ["evil.test"]}|-|public|-|"allow_hosts": ["internal.test=127.0.0.1:9"]|"allow_hosts": ["docs.python.org"]
network.secrets|never|-|"network": {"secrets": ["HOME@evil.test"]}|-|never|-|"secrets": ["HOME@evil.test"]|-
network.secret_ca|never|-|"network": {"secret_ca": "/etc/hostname"}|-|never|-|"secret_ca": "/etc/hostname"|-
network.secret_other_keys|never|-|"network": {"secret_other_keys": "on"}|-|never|-|"secret_other_keys": "on"|-
network.max_bytes|rank|"network": {"max_bytes": "1G"}|"network": {"max_bytes": "100G"}|"network": {"max_bytes": "500M"}|rank|--net-max-bytes 1G|"net_max_bytes": "100G"|"net_max_bytes": "500M"
context_window|rank|"context_window": 100000|"context_window": 150000|"context_window": 50000|rank|--context-window 100000|"context_window": 150000|"context_window": 50000
compact_at|rank|"compact_at": 80|"compact_at": 90|"compact_at": 70|rank|--compact-at 80|"compact_at": 90|"compact_at": 70
cache_ttl|rank|"cache_ttl": "5m"|"cache_ttl": "1h"|"cache_ttl": "off"|rank|--cache-ttl 5m|"cache_ttl": "1h"|"cache_ttl": "off"
project_instructions|rank|"project_instructions": "off"|"project_instructions": "on"|"project_instructions": "off"|rank|-|-|"no_project_instructions": true'
srcs() { # srcs KEY < ward config --json: the source of each of KEY's values
	python3 -c 'import json,sys; v=json.load(sys.stdin)["settings"][sys.argv[1]]
print(" ".join(x["source"] for x in (v if isinstance(v, list) else [v])))' "$1"
}
clean
cfg --json
KEYS=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["settings"]))')
ROWKEYS=$(printf '%s\n' "$NARROW_ROWS" | cut -d'|' -f1 | tr '\n' ' ')
MISSING=""; for k in $KEYS; do printf '%s\n' "$NARROW_ROWS" | cut -d'|' -f1 | grep -qxF "$k" || MISSING="$MISSING $k"; done
is "$MISSING" "" "every key of ward config's table has a narrowing row in this test (a new key needs its rule decided)"
EXTRA=""; for k in $ROWKEYS; do [[ " $KEYS " == *" $k "* ]] || EXTRA="$EXTRA $k"; done
is "$EXTRA" "" "and every row is a key of the table"
TR=$T_TMP/narrow
mkdir -p "$TR/ws"
# The image rows' image, here already (a root of one file).
python3 "$(dirname "$0")/../images/oci.py" image "$T_TMP/cfg.oci.tar" --name ward-test/cfg:latest --layer made:arch-amd64 &&
	"$WARD" image import "$T_TMP/cfg.oci.tar" >/dev/null 2>&1
is $? 0 "(an image for the image rows, imported)"
BADP=""; BADL=""
while IFS='|' read -r key prule uval ploose ptight lrule lflags lloose ltight; do
	# A project's file.
	case $prule in
	never)
		clean; proj "{$ploose}"; cfg --json
		[ "$RC" = 0 ] && [[ " $(printf '%s' "$OUT" | srcs "$key") " != *" project "* ]] &&
			printf '%s\n' "$ERR" | grep -q "\"$key\" ignored: a project's file may only narrow" || BADP="$BADP $key:never"
		;;
	always|root)
		clean; proj "{$ptight}"; cfg --json
		[ "$RC" = 0 ] && [[ " $(printf '%s' "$OUT" | srcs "$key") " == *" project "* ]] && [ "$(warnings)" = 0 ] ||
			BADP="$BADP $key:$prule"
		;;
	rank)
		clean; user "{$uval}"; proj "{$ploose}"; cfg --json
		[ "$RC" = 0 ] && [ "$(printf '%s' "$OUT" | srcs "$key")" != project ] &&
			printf '%s\n' "$ERR" | grep -q "\"$key\": .* ignored: a project's file may" || BADP="$BADP $key:looser"
		proj "{$ptight}"; cfg --json
		[ "$RC" = 0 ] && [ "$(printf '%s' "$OUT" | srcs "$key" | tr ' ' '\n' | sort -u | tr '\n' ' ')" = "project " ] &&
			[ "$(warnings)" = 0 ] || BADP="$BADP $key:tighter"
		;;
	*) BADP="$BADP $key:$prule?" ;;
	esac
	# A task line, over the command line's value.
	clean
	# shellcheck disable=SC2086
	line_run() { # line_run FIELDS: one task with those fields; RC, ERR
		rm -rf "$TR/out"
		printf '{"id": "t", "task": "hi", "workspace": "ws", %s}\n' "$1" >"$TR/tasks.jsonl"
		[ "$lflags" = - ] && set -- || set -- $lflags
		"$WARD" run --base-url "$URL" "$@" --task-file "$TR/tasks.jsonl" --task-index 0 --out "$TR/out" \
			>/dev/null 2>"$T_TMP/lerr" </dev/null
		RC=$?; ERR=$(cat "$T_TMP/lerr")
	}
	field=$lloose; [ "$field" = - ] && field=$ltight
	field=$(printf '%s' "$field" | sed 's/^"\([^"]*\)".*/\1/')	# the line's field, as written
	case $lrule in
	never)
		line_run "$lloose"
		[ "$RC" = 64 ] && printf '%s\n' "$ERR" | grep -q "\"$field\" is taken from a task file only with --trust-task-file" ||
			BADL="$BADL $key:never($RC)"
		;;
	always)
		line_run "$ltight"
		[ "$RC" = 0 ] && [ "$(warnings)" = 0 ] || BADL="$BADL $key:always($RC)"
		;;
	root)
		# Any image, but one that must be pulled only from a public registry.
		line_run "$lloose"
		[ "$RC" = 4 ] && printf '%s\n' "$ERR" | grep -q "a pull is refused: the registry 127.0.0.1:9 is a loopback address" ||
			BADL="$BADL $key:private($RC)"
		line_run "$ltight"
		[ "$RC" = 0 ] && [ "$(warnings)" = 0 ] || BADL="$BADL $key:root($RC)"
		;;
	public)
		line_run "$lloose"
		[ "$RC" = 64 ] && printf '%s\n' "$ERR" | grep -q "names a loopback address: a task line may allow only public hosts" ||
			BADL="$BADL $key:pinned($RC)"
		line_run "$ltight"
		[ "$RC" = 0 ] && [ "$(warnings)" = 0 ] || BADL="$BADL $key:public($RC)"
		;;
	rank)
		if [ "$lloose" != - ]; then
			line_run "$lloose"
			[ "$RC" = 0 ] && printf '%s\n' "$ERR" | grep -q "tasks.jsonl:1: \"$field\": .* ignored: a task line may" ||
				BADL="$BADL $key:looser($RC)"
		fi
		line_run "$ltight"
		[ "$RC" = 0 ] && [ "$(warnings)" = 0 ] || BADL="$BADL $key:tighter($RC)"
		;;
	*) BADL="$BADL $key:$lrule?" ;;
	esac
done <<<"$NARROW_ROWS"
is "$BADP" "" "a project's file, key by key: never-keys ignored with a line, deny added, an image taken, each ranked key's looser value ignored with a line and its tighter one taken"
is "$BADL" "" "a task line, key by key: never-keys refused without --trust-task-file, deny added, a host pinned to loopback refused and a public one taken, an image here taken and one a loopback registry would send refused, each ranked key's looser value ignored with a line and its tighter one taken"

kill "$EVIL" 2>/dev/null; wait "$EVIL" 2>/dev/null
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null
done_testing
