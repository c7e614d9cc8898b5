#!/bin/bash
# MCP servers inside the box: a real one nobody here wrote
# (@modelcontextprotocol/server-everything, installed by .ci/setup), and the
# tests' own that misbehaves on demand (tests/mcp-server.py). Their tools
# reach the model as mcp__SERVER__TOOL, go through the gate, are bounded and
# cancelled like any call, and their processes die with the box.
. "$(dirname "$0")/lib.sh"
export ANTHROPIC_API_KEY=sk-ant-fake-key
export OPENAI_API_KEY=sk-fake-key
SRVPY=$(cd "$(dirname "$0")/.." && pwd)/mcp-server.py
EVERYTHING=$(command -v mcp-server-everything || true)

ws() { WS=$T_TMP/ws-$1; rm -rf "$WS"; mkdir -p "$WS"; cp "$SRVPY" "$WS/srv.py"; }
conf() { # conf FILE NAME MODES [EXTRA JSON MEMBERS]: a config with the tests' server
	python3 - "$@" <<'PY'
import json, sys
path, name, modes = sys.argv[1:4]
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
s = {"command": "python3", "args": ["/workspace/srv.py", "--mode", modes, "--log", "/workspace/mcp-log.jsonl"]}
s.update(extra)
json.dump({"mcpServers": {name: s}}, open(path, "w"))
PY
}
run() { # run [flags] TASK -> OUT, ERR, RC, MS
	local t0; t0=$(now_ms)
	"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" "$@" \
		>"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?
	MS=$(( $(now_ms) - t0 ))
	OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}
journal() { cat "$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)"; }
tools_of() { # the tool names of request N
	req "$1" | python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)["body"].get("tools", [])))'
}
mlog() { cat "$WS/mcp-log.jsonl" 2>/dev/null; }

# ---- the tests' own server: the protocol ----
ws own; conf "$T_TMP/own.json" t ""
export FAKE_TOOL=mcp__t__echo FAKE_INPUT='{"text":"hi there"}'
serve mcp-call
run --rw --mcp-config "$T_TMP/own.json" "echo"
is "$RC" 0 "a run with an MCP server: exit 0"
TOOLS=$(tools_of 1)
like "$TOOLS" '(^| )mcp__t__echo( |$)' "its tools are in the request as mcp__SERVER__TOOL"
like "$TOOLS" '(^| )bash( |$)' "beside the built-in tools"
like "$(req 2)" 'echo: hi there' "the call's result reaches the model"
like "$ERR" 'MCP server "t" is ready: [0-9]+ tools' "one line says the server is ready"
M=$(mlog)
like "$M" '"method": ?"initialize".*"protocolVersion": ?"2025-06-18"' "initialize offers a current protocol version"
like "$M" '"notifications/initialized"' "then notifications/initialized"
like "$M" '"method": ?"tools/call".*"name": ?"echo".*"text": ?"hi there"' "tools/call carries the server's tool name and the input"
like "$(journal)" '"type":"mcp".*"state":"ready"' "the journal records the servers' state"
like "$(journal)" '"type":"intent".*"tool":"mcp__t__echo"' "and the call's intent, as any call's"

# An older server: ward speaks its version.
ws old; conf "$T_TMP/old.json" t old-protocol
OUTJ=$("$WARD" mcp list --json --workspace "$WS" --mcp-config "$T_TMP/old.json" 2>"$T_TMP/err")
first() { python3 -c 'import json,sys; print(json.load(sys.stdin)[0].get(sys.argv[1], ""))' "$1"; }
is "$(first protocol <<<"$OUTJ")" 2024-11-05 "a server answering 2024-11-05 is spoken to in it"
is "$(first state <<<"$OUTJ")" ready "and is ready"

# Pagination: every page's tools; list_changed: the next request has the new tool.
ws pages; conf "$T_TMP/pages.json" t paginate
"$WARD" mcp list --json --rw --workspace "$WS" --mcp-config "$T_TMP/pages.json" >"$T_TMP/pages.out" 2>/dev/null
NT=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))[0]["tools"]))' "$T_TMP/pages.out" 2>/dev/null)
lt 6 "${NT:-0}" "tools/list with pages: the tools of every page are listed (got $NT)"
PAGES=$(grep -c '"tools/list"' "$WS/mcp-log.jsonl" 2>/dev/null)
lt 2 "${PAGES:-0}" "and each page was asked for ($PAGES requests)"
ws changed; conf "$T_TMP/changed.json" t list-changed
export FAKE_TOOL=mcp__t__echo FAKE_INPUT='{"text":"one"}' FAKE_TOOL2=mcp__t__late_tool FAKE_INPUT2='{}'
serve mcp-call
run --rw --mcp-config "$T_TMP/changed.json" "echo"
unlike "$(tools_of 1)" 'mcp__t__late_tool' "before list_changed: no late_tool"
like "$(tools_of 2)" 'mcp__t__late_tool' "after notifications/tools/list_changed: the next request offers it"
unset FAKE_TOOL2 FAKE_INPUT2

# Results: isError, an image, structured content, a server's request ward does not serve.
ws results; conf "$T_TMP/res.json" t ""
export FAKE_TOOL=mcp__t__fail FAKE_INPUT='{}'
serve mcp-call
run --rw --mcp-config "$T_TMP/res.json" "fail"
like "$(req 2)" 'reports that the tool failed.*it failed on purpose' "isError: the model is told the tool failed"
like "$(req 2)" '"is_error": ?true' "as a failed result"
export FAKE_TOOL=mcp__t__image
serve mcp-call
run --rw --mcp-config "$T_TMP/res.json" "image"
like "$(req 2)" '"type": ?"image".*"media_type": ?"image/png"' "an image goes to Anthropic as an image block"
like "$(req 2)" 'image 1: image/png' "and is described in the text"
serve mcp-call
"$WARD" run --provider openai --base-url "$URL/v1" --model fake-model --workspace "$WS" --rw \
	--mcp-config "$T_TMP/res.json" "image" >/dev/null 2>&1 </dev/null
like "$(req 2)" 'image 1: image/png' "OpenAI takes no images in tool results: the model gets the description"
unlike "$(req 2)" '"media_type"' "and no image block"
export FAKE_TOOL=mcp__t__structured
serve mcp-call
run --rw --mcp-config "$T_TMP/res.json" "structured"
like "$(req 2)" '\{\\"n\\": ?42,\\"ok\\": ?true\}' "structuredContent without text reaches the model as JSON"
export FAKE_TOOL=mcp__t__ask_sampling
serve mcp-call
run --rw --mcp-config "$T_TMP/res.json" "sampling"
like "$(req 2)" 'sampling answered: error -32601' "sampling/createMessage gets a JSON-RPC error, not silence"

# ---- the gate ----
ws gate; conf "$T_TMP/gate.json" t ""
export FAKE_TOOL=mcp__t__delete_all FAKE_INPUT='{}'
serve mcp-call
run --rw --mcp-config "$T_TMP/gate.json" --approve auto --allow 'mcp__t__*' --deny 'mcp__*__delete*' "delete"
like "$(req 2)" "denied by the rule --deny 'mcp__\*__delete\*'" "a deny rule over MCP names wins over an allow rule"
unlike "$(mlog)" '"name": ?"delete_all"' "and the server never got the call"
export FAKE_TOOL=mcp__t__echo FAKE_INPUT='{"text":"allowed"}'
serve mcp-call
run --rw --mcp-config "$T_TMP/gate.json" --approve ask --allow 'mcp__t__*' --deny 'mcp__*__delete*' "echo"
like "$(req 2)" 'echo: allowed' "positive twin: the allow rule lets another tool of the server run"
export FAKE_TOOL=mcp__t__delete_all FAKE_INPUT='{}'
serve mcp-repeat
run --rw --mcp-config "$T_TMP/gate.json" --approve ask "delete"
is "$RC" 3 "headless ask: an MCP call that needs a person is refused, and the run ends with exit 3"
like "$(req 2)" "needs a person's approval and no one is at a terminal.*--allow 'mcp__t__delete_all'" "the model is told how it could be allowed"
export FAKE_TOOL=mcp__t__readonly_peek
serve mcp-call
run --rw --mcp-config "$T_TMP/gate.json" --approve edits "peek"
like "$(req 2)" 'peeked' "edits mode: a tool annotated readOnlyHint runs"
like "$(journal)" '"type":"gate".*"decision":"allow".*MCP server marks the tool read-only' "and the gate says why"
export FAKE_TOOL=mcp__t__delete_all
serve mcp-call
run --rw --mcp-config "$T_TMP/gate.json" --approve edits "delete"
like "$(req 2)" "needs a person's approval" "edits mode: its twin without the annotation is refused"

# ---- misbehaving servers ----
# Never answers initialize: bounded by startup_timeout_sec, said, the run goes on.
ws noinit; conf "$T_TMP/noinit.json" hang no-init '{"startup_timeout_sec": 2}'
serve text
run --rw --mcp-config "$T_TMP/noinit.json" "hello"
is "$RC" 0 "a server that never answers initialize: the run goes on"
like "$ERR" 'MCP server "hang" is unavailable: no answer to initialize within 2 s' "one line says why"
lt "$MS" 12000 "bounded by its start-up time (${MS} ms)"
unlike "$(tools_of 1)" 'mcp__hang' "its tools are not offered"

# A server that tries to reach the network from a box that has none (npx
# fetching its package): said at once, with the --allow-host it needs, not
# after its start-up time. Twin: a server that says something else on
# stderr is waited for as before.
ws nonet
printf '%s\n' '{"mcpServers": {"pkg": {"command": "sh", "args": ["-c", "echo npm error request to https://registry.npmjs.org/some-mcp failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org >&2; sleep 60"], "startup_timeout_sec": 20}}}' >"$T_TMP/nonet.json"
serve text
run --rw --mcp-config "$T_TMP/nonet.json" "hello"
is "$RC" 0 "a server that cannot reach its registry: the run goes on"
like "$ERR" 'MCP server "pkg" is unavailable: it tried to reach registry\.npmjs\.org, .*to allow it, --allow-host registry\.npmjs\.org' "one line names the host and the --allow-host it needs"
lt "$MS" 10000 "at once, not after its 20 s start-up time (${MS} ms)"
printf '%s\n' '{"mcpServers": {"pkg": {"command": "sh", "args": ["-c", "echo starting up slowly >&2; sleep 60"], "startup_timeout_sec": 2}}}' >"$T_TMP/slow.json"
serve text
run --rw --mcp-config "$T_TMP/slow.json" "hello"
like "$ERR" 'MCP server "pkg" is unavailable: no answer to initialize within 2 s' "twin: other stderr: waited for, up to its start-up time"
unlike "$ERR" 'allow-host' "and no --allow-host is suggested"
if command -v npx >/dev/null; then
	# The real thing: npx in a box with no network fails in about a second
	# (its fetch retries turned off there), where it took 73 s.
	printf '%s\n' '{"mcpServers": {"npx": {"command": "npx", "args": ["-y", "ward-test-no-such-mcp-server"]}}}' >"$T_TMP/npx.json"
	serve text
	run --rw --mcp-config "$T_TMP/npx.json" "hello"
	like "$ERR" 'MCP server "npx" is unavailable: it tried to reach registry\.npmjs\.org.*--allow-host registry\.npmjs\.org' "npx with no network: the registry is named, with its --allow-host"
	lt "$MS" 20000 "within seconds, not its 30 s start-up time (${MS} ms)"
fi

# Garbage on stdout: ignored, said once; the protocol still works.
ws garbage; conf "$T_TMP/garbage.json" g garbage
export FAKE_TOOL=mcp__g__echo FAKE_INPUT='{"text":"through the noise"}'
serve mcp-call
run --rw --mcp-config "$T_TMP/garbage.json" "echo"
like "$ERR" 'MCP server "g" wrote a line that is not JSON-RPC' "garbage on stdout is said"
like "$(req 2)" 'echo: through the noise' "and the calls still work"

# Exits mid-call: the call fails with why, the server is started again.
ws crash; conf "$T_TMP/crash.json" c ""
export FAKE_TOOL=mcp__c__crash FAKE_INPUT='{}' FAKE_TOOL2=mcp__c__echo FAKE_INPUT2='{"text":"after the crash"}'
serve mcp-call
run --rw --mcp-config "$T_TMP/crash.json" "crash"
like "$(req 2)" 'stopped during the call: it exited with code 3' "a server that exits mid-call: the call fails, saying so"
like "$ERR" 'MCP server "c": it exited with code 3.*starting it again \(1 of 2\)' "the server is started again"
like "$(req 3)" 'echo: after the crash' "and the next call works"
unset FAKE_TOOL2 FAKE_INPUT2
# Exits at once, always: started twice more, then unavailable.
ws dead; printf '{"mcpServers": {"dead": {"command": "sh", "args": ["-c", "echo dying >&2; exit 7"]}}}' >"$T_TMP/dead.json"
export FAKE_TOOL=mcp__dead__anything FAKE_INPUT='{}'
serve mcp-call
run --rw --mcp-config "$T_TMP/dead.json" "call"
like "$ERR" 'starting it again \(2 of 2\)' "a server that keeps exiting is started twice more"
like "$ERR" 'MCP server "dead" is unavailable: it exited with code 7, and it was started 3 times; its stderr ends: "dying"' "then given up, with its stderr's last line"
like "$(req 2)" 'the MCP server \\"dead\\" is unavailable' "a call to it tells the model it is unavailable"

# 20 MB in one result: capped like bash's output, the cap named.
ws big; conf "$T_TMP/big.json" t ""
export FAKE_TOOL=mcp__t__big FAKE_INPUT='{"mb":20}'
serve mcp-call
run --rw --mcp-config "$T_TMP/big.json" "big"
like "$(req 2)" 'the result was 20971520 bytes; output is capped at 30000' "a 20 MB result is capped, the cap named"
lt "$(req 2 | wc -c)" 200000 "the request stays small"

# Over 32 MiB in one message: not read; the server is started again.
export FAKE_TOOL=mcp__t__big FAKE_INPUT='{"mb":40}' FAKE_TOOL2=mcp__t__echo FAKE_INPUT2='{"text":"after the flood"}'
serve mcp-call
run --rw --mcp-config "$T_TMP/big.json" "bigger"
like "$(req 2)" 'sent a message over 32 MiB, which ward does not read' "a message over 32 MiB fails the call, saying so"
like "$ERR" 'MCP server "t" is restarted' "and the server is started again"
like "$(req 3)" 'echo: after the flood' "and serves the next call"
unset FAKE_TOOL2 FAKE_INPUT2

# A call past its limit: notifications/cancelled, reported timed out, the server lives on.
ws slow; conf "$T_TMP/slow.json" t "" '{"tool_timeout_sec": 2}'
export FAKE_TOOL=mcp__t__sleep FAKE_INPUT='{"seconds":30}' FAKE_TOOL2=mcp__t__received FAKE_INPUT2='{}'
serve mcp-call
run --rw --mcp-config "$T_TMP/slow.json" "sleep"
like "$(req 2)" 'timed out after 2 s; the MCP server \\"t\\" was told to stop it' "a call past tool_timeout_sec is reported timed out"
lt "$MS" 15000 "bounded (${MS} ms for the run)"
like "$(mlog)" '"method": ?"notifications/cancelled".*"requestId"' "the server got notifications/cancelled"
like "$(req 3)" 'notifications/cancelled' "and kept serving: the next call says what it received"
unset FAKE_TOOL2 FAKE_INPUT2

# ---- configuration ----
ws proj; conf "$WS/.mcp.json" p ""
export FAKE_TOOL=mcp__p__echo FAKE_INPUT='{"text":"from the project"}'
serve mcp-call
run --rw "echo"
like "$ERR" '\.mcp\.json: its 1 MCP server is not started: .*--trust-project-mcp' "an untrusted project .mcp.json: not started, one line says how"
unlike "$(tools_of 1)" 'mcp__p__' "its tools are not offered"
serve mcp-call
run --rw --trust-project-mcp "echo"
like "$(req 2)" 'echo: from the project' "positive twin: --trust-project-mcp starts it"
mv "$WS/.mcp.json" "$T_TMP/elsewhere.json"; ln -s "$T_TMP/elsewhere.json" "$WS/.mcp.json"
serve mcp-call
run --rw --trust-project-mcp "echo"
like "$ERR" '\.mcp\.json is a symbolic link: not used' "a .mcp.json that is a symbolic link is not used, even trusted"
unlike "$(tools_of 1)" 'mcp__p__' "its servers are not started"
rm -f "$WS/.mcp.json"
mkdir -p "$XDG_CONFIG_HOME/ward"
conf "$XDG_CONFIG_HOME/ward/config.json" u ""
export FAKE_TOOL=mcp__u__echo FAKE_INPUT='{"text":"from my config"}'
serve mcp-call
run --rw "echo"
like "$(req 2)" 'echo: from my config' "the user's config file's mcpServers are started"
rm -f "$XDG_CONFIG_HOME/ward/config.json"
mkdir -p "$WS/.ward"; conf "$WS/.ward/config.json" w ""
serve text
run --rw "hello"
like "$ERR" '"mcpServers" ignored: a project.s MCP servers belong in its \.mcp\.json' "a project's config file may not add servers"
rm -rf "$WS/.ward" "$WS/.mcp.json"
printf '{"mcpServers": {"bad name": {"command": "x"}}}' >"$T_TMP/badname.json"
run --mcp-config "$T_TMP/badname.json" "hello"
is "$RC" 64 "a malformed --mcp-config is a usage error"
like "$ERR" 'a server.s name is 1 to 40 letters' "one line says what is wrong"
printf '{"mcpServers": {"s": {"type": "sse", "url": "http://x"}}}' >"$T_TMP/sse.json"
run --mcp-config "$T_TMP/sse.json" "hello"
like "$ERR" 'SSE transport is deprecated' "the old SSE transport is refused with a reason"
printf '{"mcpServers": {"s": {"command": "${WARD_TEST_NO_SUCH_VAR}"}}}' >"$T_TMP/var.json"
run --mcp-config "$T_TMP/var.json" "hello"
like "$ERR" 'WARD_TEST_NO_SUCH_VAR\} is not set' "an unset \${VAR} is named"

# ---- streamable HTTP servers: from the host, through the box's egress proxy ----
# The tests' server on loopback; ward reaches it only through the proxy of
# the run's box, so the box's --allow-host decides, as for the box's own
# connections. The server's header (a token) is ward's, never the box's.
hsrv() { # hsrv NAME [server flags]: start the tests' server over HTTP -> HPORT, HLOG
	local name=$1; shift
	HLOG=$T_TMP/http-$name.jsonl; rm -f "$HLOG" "$T_TMP/http-$name.port"
	python3 "$SRVPY" --http 0 --port-file "$T_TMP/http-$name.port" --log "$HLOG" "$@" >/dev/null 2>&1 &
	HPIDS="$HPIDS $!"
	for _ in $(seq 50); do [ -s "$T_TMP/http-$name.port" ] && break; sleep 0.1; done
	HPORT=$(cat "$T_TMP/http-$name.port")
}
hconf() { # hconf FILE NAME PORT [EXTRA JSON MEMBERS]
	python3 - "$@" <<'PY'
import json, sys
path, name, port = sys.argv[1:4]
s = {"type": "http", "url": "http://127.0.0.1:%s/mcp" % port}
s.update(json.loads(sys.argv[4]) if len(sys.argv) > 4 else {})
json.dump({"mcpServers": {name: s}}, open(path, "w"))
PY
}
hlog() { cat "$HLOG" 2>/dev/null; }
# The servers are the test's: they go however it ends (T_TMP is removed
# by then, so their pids are kept here).
HPIDS=""
trap 'kill $HPIDS 2>/dev/null' EXIT
trap 'exit 143' TERM INT

hsrv auth --require-header 'Authorization: Bearer s3cret-token'
export WARD_TEST_MCP_TOKEN=s3cret-token
hconf "$T_TMP/h.json" h "$HPORT" '{"headers": {"Authorization": "Bearer ${WARD_TEST_MCP_TOKEN}"}}'
ws http
export FAKE_TOOL=mcp__h__echo FAKE_INPUT='{"text":"over http"}'
serve mcp-call
run --rw --allow-host "127.0.0.1:$HPORT" --mcp-config "$T_TMP/h.json" "echo"
is "$RC" 0 "an MCP server over streamable HTTP: the run ends done"
like "$(tools_of 1)" '(^| )mcp__h__echo( |$)' "its tools are in the request as mcp__SERVER__TOOL"
like "$(req 2)" 'echo: over http' "the call's result reaches the model"
like "$ERR" 'MCP server "h" is ready' "one line says the server is ready"
H=$(hlog)
like "$H" '"method": ?"initialize"' "initialize went by POST"
like "$H" '"http": ?"POST", ?"session": ?"[0-9a-f]{32}", ?"protocol_version": ?"2025-06-18"' "later POSTs carry the session id and MCP-Protocol-Version"
like "$H" '"accept": ?"application/json, text/event-stream"' "and accept JSON or an event stream"
unlike "$H" '"authorization": ?false' "every request carried the configured Authorization header"
like "$H" '"http": ?"GET"' "a GET stream is opened for what the server says unasked"
like "$H" '"http": ?"DELETE"' "and the session is ended with DELETE at the end"
like "$(journal)" '"type":"net".*"host":"127.0.0.1","port":'"$HPORT"'.*"allowed":true' "the connections went through the box's egress proxy (its records)"
like "$(journal)" '"type":"mcp".*"transport":"http".*"state":"ready"' "the journal records the server's state"
ws http-box
cat >"$T_TMP/peek.json" <<'J'
{"command": "grep -rl s3cret-tok[e]n /proc/[0-9]*/environ /proc/[0-9]*/cmdline /workspace /tmp 2>/dev/null | wc -l"}
J
export FAKE_TOOL2=bash FAKE_INPUT2="$(cat "$T_TMP/peek.json")"
serve mcp-call
run --rw --allow-host "127.0.0.1:$HPORT" --mcp-config "$T_TMP/h.json" --allow bash "echo, then look"
like "$(req 3)" '(^|[^0-9])0\\n' "the server's token is nowhere in the box (no process, no file holds it)"
unset FAKE_TOOL2 FAKE_INPUT2

# Refused by the box's rules: not on the allow-list; no egress at all.
hsrv refused
hconf "$T_TMP/hr.json" h "$HPORT"
ws http-refused
serve mcp-call
run --rw --allow-host "example.test" --mcp-config "$T_TMP/hr.json" "echo"
is "$RC" 0 "an HTTP server the box may not reach: the run goes on"
like "$ERR" "MCP server \"h\" is unavailable: http://127.0.0.1:$HPORT/mcp answered HTTP 403 Forbidden by ward: 127.0.0.1:$HPORT is not on this box's allow-list \\(to allow it: --allow-host 127.0.0.1:$HPORT\\)\$" "one line says the box's egress proxy refused it, why, and how to allow it"
is "$(hlog | wc -l)" 0 "and the server never heard from ward"
NO_PROXY='*' no_proxy='*' run --rw --allow-host "example.test" --mcp-config "$T_TMP/hr.json" "echo"
like "$ERR" "MCP server \"h\" is unavailable: .*not on this box's allow-list" "NO_PROXY=* in ward's environment: still refused by the box's proxy"
is "$(hlog | wc -l)" 0 "and still the server never heard from ward (no way around the proxy)"
run --rw --mcp-config "$T_TMP/hr.json" "echo"
like "$ERR" 'MCP server "h" is unavailable: .*has no egress proxy: it reaches hosts only with --allow-host HOST' "a box without egress: unavailable, and how to allow it"
serve mcp-call
run --rw --allow-host "127.0.0.1:$HPORT" --mcp-config "$T_TMP/hr.json" "echo"
like "$(req 2)" 'echo: over http' "positive twin: allowed, the same server answers"
hconf "$T_TMP/hnone.json" h 9
run --rw --allow-host "127.0.0.1:9" --mcp-config "$T_TMP/hnone.json" "echo"
like "$ERR" 'MCP server "h" is unavailable: http://127.0.0.1:9/mcp answered HTTP 502 Bad Gateway by ward: could not connect to 127.0.0.1:9' "nothing listening: unavailable, the proxy's answer said"

# application/json answers, the session forgotten by the server (404: a new
# session, the call after works), list_changed on the GET stream, a
# server's request over the call's stream.
hsrv json --http-json --expire-after 4 --mode list-changed
hconf "$T_TMP/hj.json" h "$HPORT"
ws http-json
export FAKE_ROUNDS=4 FAKE_INPUT='{"text":"again"}'
serve mcp-repeat
run --rw --allow-host "127.0.0.1:$HPORT" --mcp-config "$T_TMP/hj.json" "echo"
is "$RC" 0 "application/json answers: the run ends done"
like "$(req 2)" 'echo: again' "the answer was read"
like "$ERR" 'MCP server "h": it ended the session \(HTTP 404\); starting it again \(1 of 2\)' "a session the server forgot (404): a new one is made"
like "$(req 5)" 'echo: again' "and the calls after work"
lt 1 "$(hlog | grep -c '"method": "initialize"')" "initialize was sent again"
like "$(tools_of 3)" 'mcp__h__late_tool' "list_changed over the GET stream: a later request offers the new tool"
unset FAKE_ROUNDS
hsrv samp
hconf "$T_TMP/hs.json" h "$HPORT"
ws http-samp
export FAKE_TOOL=mcp__h__ask_sampling FAKE_INPUT='{}'
serve mcp-call
run --rw --allow-host "127.0.0.1:$HPORT" --mcp-config "$T_TMP/hs.json" "sample"
like "$(req 2)" 'sampling answered: error -32601' "a server's request on the call's stream gets a JSON-RPC error, by POST"

# A vm box: the same way out, through its proxy on the host.
if command -v qemu-system-x86_64 >/dev/null && ls /boot/vmlinuz-* >/dev/null 2>&1; then
	export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
	hsrv vm
	hconf "$T_TMP/hv.json" h "$HPORT"
	ws http-vm
	VB=$("$WARD" box create --backend vm --workspace "$WS" --allow-host "127.0.0.1:$HPORT")
	echo "$VB" >>"$T_TMP/boxes"
	export FAKE_TOOL=mcp__h__echo FAKE_INPUT='{"text":"from a vm box"}'
	serve mcp-call
	run --box "$VB" --mcp-config "$T_TMP/hv.json" "echo"
	like "$(req 2)" 'echo: from a vm box' "vm box: an HTTP server reached through the box's egress proxy"
	"$WARD" box destroy "$VB" >/dev/null 2>&1
else
	ok 0 "vm box: an HTTP server reached through the box's egress proxy # SKIP no QEMU or kernel for a vm box"
fi

# A call past its limit: notifications/cancelled by POST, the call's stream
# closed, reported timed out; the server answers the next call.
hsrv slow
hconf "$T_TMP/hl.json" h "$HPORT" '{"tool_timeout_sec": 2}'
ws http-slow
export FAKE_TOOL=mcp__h__sleep FAKE_INPUT='{"seconds":30}' FAKE_TOOL2=mcp__h__echo FAKE_INPUT2='{"text":"after"}'
serve mcp-call
run --rw --allow-host "127.0.0.1:$HPORT" --mcp-config "$T_TMP/hl.json" "sleep"
like "$(req 2)" 'timed out after 2 s; the MCP server \\"h\\" was told to stop it' "an HTTP call past tool_timeout_sec is reported timed out"
lt "$MS" 8000 "at its limit (${MS} ms)"
like "$(hlog)" '"method": ?"notifications/cancelled".*"requestId"' "the server got notifications/cancelled"
like "$(req 3)" 'echo: after' "and serves the next call"
unset FAKE_TOOL2 FAKE_INPUT2

# ---- the real server ----
if [ -z "$EVERYTHING" ]; then
	echo "# skip: mcp-server-everything is not installed (.ci/setup installs it with npm)"
	ok 1 "@modelcontextprotocol/server-everything is installed"
else
	printf '{"mcpServers": {"everything": {"command": "mcp-server-everything", "args": ["stdio"]}}}' >"$T_TMP/ev.json"
	ws ev
	OUTT=$("$WARD" mcp list --workspace "$WS" --mcp-config "$T_TMP/ev.json" 2>&1)
	like "$OUTT" 'everything \(stdio, .*\): ready' "ward mcp list: server-everything is ready in an ns box"
	like "$OUTT" 'mcp__everything__echo' "and its tools are listed"
	serve mcp-echo
	run --mcp-config "$T_TMP/ev.json" "echo and add"
	is "$RC" 0 "server-everything: the run ends done"
	TOOLS=$(tools_of 1)
	like "$TOOLS" 'mcp__everything__echo' "its echo tool is offered"
	like "$TOOLS" 'mcp__everything__add' "its add tool is offered"
	like "$(req 1)" '"name": ?"mcp__everything__add".*"input_schema".*"a"' "with the server's schema"
	like "$(req 2)" 'Echo: hello from the model' "echo's result comes back"
	like "$(req 3)" 'The sum of 2 and 40 is 42' "add's result comes back"

	# A long call cut by the run's deadline (its limit is clamped to what
	# the run has left): timed out, the server told; the run ends at once.
	serve mcp-long
	run --mcp-config "$T_TMP/ev.json" --deadline 6s "long"
	is "$RC" 2 "the run's deadline cuts a long MCP call (exit 2, a bound)"
	lt "$MS" 9000 "at the deadline (${MS} ms for a 6 s deadline)"
	like "$(journal)" '"type":"result","outcome":"timed_out","text":"timed out after 6 s; the MCP server \\"everything\\" was told to stop it \(notifications/cancelled\)' "the call is recorded timed out, the server told"
	# Cancelled: SIGTERM to ward while the call runs.
	serve mcp-long
	"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" \
		--mcp-config "$T_TMP/ev.json" "long" >/dev/null 2>"$T_TMP/err" </dev/null &
	WP=$!
	for _ in $(seq 100); do [ "$(nreq)" -ge 1 ] && break; sleep 0.1; done
	# The call is under way.
	wait_until 10 eval 'journal 2>/dev/null | grep -q "\"intent\""'
	t0=$(now_ms); kill -TERM $WP; wait $WP; RC=$?; MS=$(( $(now_ms) - t0 ))
	is "$RC" 130 "SIGTERM during an MCP call: the run ends cancelled (exit 130)"
	lt "$MS" 3000 "at once (${MS} ms)"
	like "$(journal)" '"type":"result","outcome":"cancelled","text":"cancelled after [0-9.]+ s; the MCP server \\"everything\\" was told to stop it \(notifications/cancelled\)' "the call is recorded cancelled, the server told"

	# Its processes die with the box; and when ward is SIGKILLed.
	serve mcp-long
	"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" \
		--mcp-config "$T_TMP/ev.json" "long" >/dev/null 2>&1 </dev/null &
	WP=$!
	for _ in $(seq 100); do [ "$(nreq)" -ge 1 ] && break; sleep 0.1; done
	wait_until 10 eval 'journal 2>/dev/null | grep -q "\"intent\"" && pgrep -f "mcp-server-everything stdio" >/dev/null'
	PIDS=$(pgrep -f 'mcp-server-everything stdio' | tr '\n' ' ')
	[ -n "$PIDS" ]; ok $? "the server runs while the call does (pids $PIDS)"
	kill -9 $WP; wait $WP 2>/dev/null
	ALIVE=1
	for _ in $(seq 100); do
		ALIVE=0
		for p in $PIDS; do gone "$p" || ALIVE=1; done
		[ "$ALIVE" -eq 0 ] && break
		sleep 0.1
	done
	is "$ALIVE" 0 "after ward is SIGKILLed, the server's processes are gone (the box died with its owner)"
	serve mcp-echo
	run --mcp-config "$T_TMP/ev.json" "echo and add"
	LEFT=$(pgrep -f 'mcp-server-everything stdio' | wc -l)
	is "$LEFT" 0 "after a run ends and its box is destroyed, no server process is left"
	# The same server over streamable HTTP, through the box's egress proxy.
	EVPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	PORT=$EVPORT "$EVERYTHING" streamableHttp >"$T_TMP/ev-http.log" 2>&1 &
	HPIDS="$HPIDS $!"
	for _ in $(seq 100); do grep -q listening "$T_TMP/ev-http.log" && break; sleep 0.1; done
	hconf "$T_TMP/evh.json" everything "$EVPORT"
	ws evh
	serve mcp-echo
	run --allow-host "127.0.0.1:$EVPORT" --mcp-config "$T_TMP/evh.json" "echo and add"
	is "$RC" 0 "server-everything over streamable HTTP: the run ends done"
	like "$(tools_of 1)" 'mcp__everything__add' "its tools are offered"
	like "$(req 2)" 'Echo: hello from the model' "echo's result comes back over HTTP"
	like "$(req 3)" 'The sum of 2 and 40 is 42' "add's result comes back over HTTP"
fi

done_testing
