#!/bin/bash
# ward acp, end to end, driven by the Agent Client Protocol's own client
# library (@agentclientprotocol/sdk from the npm registry, cached under the
# build directory) against a replayed model: initialize, a streamed answer,
# a write whose update carries a diff, a permission allowed and one
# rejected (the rejected edit is not made), a cancel of a sleep (in bounded
# time, its processes gone: a canary), malformed requests answered with
# errors, and stdout carrying protocol messages alone.
. "$(dirname "$0")/lib.sh"
ACP_SDK_VERSION=2.4.0
SDK=${ACP_SDK_DIR:?set ACP_SDK_DIR to a cache directory}
command -v node >/dev/null && command -v npm >/dev/null || skip_all "node and npm are needed (apt-get install nodejs npm)"
if [ ! -e "$SDK/node_modules/@agentclientprotocol/sdk/package.json" ] ||
	! grep -q "\"version\": \"$ACP_SDK_VERSION\"" "$SDK/node_modules/@agentclientprotocol/sdk/package.json"; then
	mkdir -p "$SDK"
	timeout 300 npm install --prefix "$SDK" --no-audit --no-fund --loglevel=error "@agentclientprotocol/sdk@$ACP_SDK_VERSION" >"$T_TMP/npm.log" 2>&1 ||
		skip_all "npm could not install @agentclientprotocol/sdk@$ACP_SDK_VERSION: $(tail -1 "$T_TMP/npm.log")"
fi
CLIENT=$(dirname "$0")/../acp-client.mjs
export WARD

WS=$T_TMP/ws; mkdir -p "$WS"; printf 'old\n' >"$WS/b.txt"
cat >"$T_TMP/script.json" <<'JSON'
{"turns": [
 {"expect": "hello", "text": "Hello from ward."},
 {"expect": "change", "tools": [{"name": "write", "input": {"path": "a.txt", "content": "one\n"}}, {"name": "write", "input": {"path": "/workspace/b.txt", "content": "new\n"}}]},
 {"tools": [{"name": "edit", "input": {"path": "a.txt", "old_string": "one", "new_string": "two"}}]},
 {"tools": [{"name": "read", "input": {"path": "a.txt"}}]},
 {"tools": [{"name": "read", "input": {"path": "/etc/hostname"}}, {"name": "read", "input": {"path": "../../etc/hostname"}}]},
 {"text": "done"},
 {"expect": "sleep", "tools": [{"name": "bash", "input": {"command": "(sleep 2; touch /workspace/canary-acp) & sleep 97.3"}}]},
 {"expect": "ask again", "tools": [{"name": "bash", "input": {"command": "touch /workspace/canary-perm"}}]}
]}
JSON

# ward's stdout through tee: every line it wrote is checked below. Junk
# written to ward's stderr paths never reaches it (a config line, a log).
node "$CLIENT" "$SDK" "$T_TMP/res.json" "$WS" -- sh -c \
	'exec "$WARD" acp --approve ask --model "replay:$1" 2>"$2" | tee "$3"' sh "$T_TMP/script.json" "$T_TMP/err" "$T_TMP/out" >/dev/null 2>"$T_TMP/client-err"
ok $? "the client ran to its end"
R=$(cat "$T_TMP/res.json" 2>/dev/null)
r() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else (v or {}).get(k)
print(v if isinstance(v,str) else json.dumps(v))' "$T_TMP/res.json" "$1" 2>/dev/null; }
is "$(r error)" null "no error in the client (its library accepted every message): $(r error | head -c 300)"
is "$(r fsReads)" "[]" "a client that offers no fs.readTextFile is never asked for a file"
is "$(r initialize.protocolVersion)" 1 "initialize: protocol version 1"
is "$(r initialize.agentCapabilities.promptCapabilities.embeddedContext)" true "initialize: capabilities"
is "$(r initialize.authMethods)" "[]" "initialize: no auth methods (the key is ward's config)"
like "$(r badSession)" "no session no-such" "a prompt for an unknown session: an error naming it"
is "$(r prompts.hello.stopReason)" end_turn "a prompt: end_turn"
like "$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
print([u["content"]["text"] for u in res["updates"] if u["sessionUpdate"]=="agent_message_chunk"])' "$T_TMP/res.json")" "'Hello from ward.'" "its answer streamed as agent_message_chunk"
U=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
for u in res["updates"]:
    if u["sessionUpdate"] in ("tool_call","tool_call_update"): print(json.dumps(u, sort_keys=True))' "$T_TMP/res.json")
like "$U" '"kind": "edit".*"sessionUpdate": "tool_call", "status": "pending"' "a write: tool_call, kind edit, pending"
like "$U" "\"content\": \[\{\"newText\": \"one\\\\n\", \"oldText\": null, \"path\": \"$WS/a.txt\", \"type\": \"diff\"\}" "its diff: the editor's file, the new text"
like "$U" '"status": "completed"' "a tool_call_update: completed"
P=$(r permissions)
is "$(r permissions.0.params.toolCall.kind)" edit "the write asked permission (approve ask)"
like "$(r permissions.0.params.options)" '"allow_once".*"allow_always".*"reject_once"' "options: allow once, always, reject"
like "$(r permissions.1.params.toolCall.content)" "\"path\": \"$WS/b.txt\", \"oldText\": \"old\\\\n\", \"newText\": \"new\\\\n\"" "a write over a file: its diff has the file's old text"
is "$(r permissions.2.params.toolCall.rawInput.new_string)" two "the edit asked permission next (and was rejected)"
like "$(r permissions.2.params.toolCall.content)" '"oldText": "one", "newText": "two"' "the permission request carries the edit's diff"
like "$U" '"rawOutput": \{"outcome": "refused".*"status": "failed"' "the rejected edit: failed, refused"
like "$U" 'one' "the read after it sees the file"
READ=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
print([u.get("rawOutput") for u in res["updates"] if u.get("sessionUpdate")=="tool_call_update" and u.get("rawOutput")][3])' "$T_TMP/res.json")
like "$READ" "one" "twin: the allowed write was made (the read after shows it)"
unlike "$READ" "two" "the rejected edit was not made"
LOC=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
for u in res["updates"]:
    if u["sessionUpdate"]=="tool_call": print(u["rawInput"]["path"], json.dumps(u["locations"]))' "$T_TMP/res.json")
like "$LOC" "^a.txt \[\{\"path\": \"$WS/a.txt\"\}\]" "a call's location: the editor's own file under the workspace"
like "$LOC" "/etc/hostname \[\]" "a box's own file (/etc/hostname) is given to the editor as no location of its"
like "$LOC" "\.\./\.\./etc/hostname \[\]" "nor is a path that climbs out with .."
is "$(r prompts.change.stopReason)" end_turn "the prompt with the calls: end_turn"
is "$(r modes.currentModeId)" ask "session/new: the mode is the approval mode (--approve ask)"
is "$(python3 -c 'import json,sys; print(" ".join(m["id"] for m in json.load(open(sys.argv[1]))["modes"]["availableModes"]))' "$T_TMP/res.json")" \
	"ask edits auto" "the modes: ask, edits, auto"
like "$(r badMode)" "modeId must be ask, edits or auto" "session/set_mode to no mode: an error"
is "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["permissions"]))' "$T_TMP/res.json")" 4 \
	"after session/set_mode auto the bash ran without asking (twin: in ask the write and the edit asked)"
is "$(r sleepSeen)" true "the sleep ran in the box"
is "$(r prompts.sleep.stopReason)" cancelled "session/cancel: stopReason cancelled"
lt "$(r prompts.sleep.ms)" 3000 "session/cancel answered within 3 s (a 97 s sleep)"
is "$(r sleepAfter)" gone "the call's sleep is gone"
is "$(r canary)" absent "its background child never made the canary"
is "$(r prompts.permCancel.stopReason)" cancelled "a cancel while the editor asks: stopReason cancelled"
is "$(r canaryPerm)" absent "and the call it asked about never ran (no canary)"
is "$(r written)" made "twin: the box is there, and the allowed write's file in it"
is "$(r exit)" 0 "ward acp exits 0 when the editor closes stdin"

# session/load in a new ward acp: the conversation replayed as updates.
SID=$(r sessionId)
ACP_LOAD=$SID node "$CLIENT" "$SDK" "$T_TMP/res2.json" "$WS" -- sh -c \
	'exec "$WARD" acp --approve ask --model "replay:$1" 2>>"$2" | tee -a "$3"' sh "$T_TMP/script.json" "$T_TMP/err" "$T_TMP/out" >/dev/null 2>>"$T_TMP/client-err"
ok $? "a second client ran to its end"
r2() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else (v or {}).get(k)
print(v if isinstance(v,str) else json.dumps(v))' "$T_TMP/res2.json" "$1" 2>/dev/null; }
is "$(r2 error)" null "no error in the second client"
is "$(r2 initialize.agentCapabilities.loadSession)" true "initialize: loadSession"
like "$(r2 badLoad)" "session/load: the session could not be loaded" "session/load of a bad ID: an error"
like "$(cat "$T_TMP/err")" "invalid session id \"\.\./$SID\"" "and ward's log says why"
like "$(r2 wrongCwd)" "works on $WS, not on /" "session/load in another directory: refused, saying which"
is "$(r2 load)" loaded "session/load of the session: answered"
H=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
for u in res["updates"]:
    c=u.get("content")
    print(u["sessionUpdate"], c["text"] if isinstance(c,dict) else u.get("title", u.get("status","")))' "$T_TMP/res2.json")
like "$H" "^user_message_chunk hello" "the replay: the person's first message"
like "$H" "^agent_message_chunk Hello from ward." "the model's answer"
like "$H" "^tool_call write a.txt" "the write's tool call"
like "$H" "^tool_call edit a.txt" "the edit's"
like "$H" "^user_message_chunk sleep" "the last prompt too"
is "$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
print(sum(1 for u in res["updates"] if u["sessionUpdate"]=="tool_call_update"))' "$T_TMP/res2.json")" 8 "a result for each of the eight calls (the cancelled ones too)"

# The editor's MCP servers (session/new's mcpServers) start in the box.
WS3=$T_TMP/ws3; mkdir -p "$WS3"; cp "$(dirname "$0")/../mcp-server.py" "$WS3/srv.py"
printf '%s\n' '{"turns": [{"expect": "mcp", "tools": [{"name": "mcp__t__echo", "input": {"text": "hi from the editor"}}]}, {"text": "ok"}]}' >"$T_TMP/script3.json"
ACP_MCP='[{"name": "t", "command": "python3", "args": ["/workspace/srv.py", "--log", "/workspace/mcp-log.jsonl"], "env": [{"name": "WARD_TEST_X", "value": "1"}]}]' \
	node "$CLIENT" "$SDK" "$T_TMP/res3.json" "$WS3" -- sh -c \
	'exec "$WARD" acp --approve auto --model "replay:$1" 2>>"$2" | tee -a "$3"' sh "$T_TMP/script3.json" "$T_TMP/err" "$T_TMP/out" >/dev/null 2>>"$T_TMP/client-err"
ok $? "a third client ran to its end"
r3() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else (v or {}).get(k)
print(v if isinstance(v,str) else json.dumps(v))' "$T_TMP/res3.json" "$1" 2>/dev/null; }
is "$(r3 error)" null "no error in the third client"
like "$(r3 badMcp)" 'mcpServers\[0\] \(bad\): each arg a string, with no \$\{' "an MCP server's value with \${ (ward would expand it): refused"
is "$(r3 prompts.mcp.stopReason)" end_turn "a prompt calling the editor's MCP server: end_turn"
like "$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
print([u.get("rawOutput") for u in res["updates"] if u.get("sessionUpdate")=="tool_call_update" and u.get("status")=="completed"])' "$T_TMP/res3.json")" \
	"hi from the editor" "the editor's MCP server ran in the box and answered (mcp__t__echo)"

# Two sessions of one ward acp over one directory, with the editor's
# buffers (fs.readTextFile offered): a read of a file the editor holds
# unsaved gets the buffer; one the box changed gets the box's copy; a
# symlink or a file outside the workspace is never read through the
# editor. The second session's prompt, sent while the first's runs, waits
# for it; a waiting one cancelled is answered at once. /diff and /apply.
WS4=$T_TMP/ws4; mkdir -p "$WS4"; printf 'saved\n' >"$WS4/unsaved.txt"; printf 'plain\n' >"$WS4/saved.txt"
ln -s /etc/hostname "$WS4/link.txt"
cat >"$T_TMP/script4.json" <<'JSON'
{"turns": [
 {"expect": "look", "tools": [{"name": "read", "input": {"path": "unsaved.txt"}}, {"name": "read", "input": {"path": "/workspace/saved.txt"}}, {"name": "read", "input": {"path": "link.txt"}}, {"name": "read", "input": {"path": "/etc/hostname"}}, {"name": "bash", "input": {"command": "sleep 1"}}]},
 {"tools": [{"name": "write", "input": {"path": "unsaved.txt", "content": "box version\n"}}]},
 {"tools": [{"name": "read", "input": {"path": "unsaved.txt"}}]},
 {"tools": [{"name": "todo", "input": {"plan": "- [x] read the files\n- [~] change unsaved.txt\n- [ ] show the diff"}}, {"name": "todo", "input": {"plan": "- [x] fine\nnot a step"}}]},
 {"text": "seen"},
 {"expect": "wait", "tools": [{"name": "bash", "input": {"command": "sleep 2"}}]},
 {"text": "waited"}
]}
JSON
ACP_MULTI=1 ACP_BUFFERS="{\"$WS4/unsaved.txt\": \"unsaved buffer\\n\", \"$WS4/link.txt\": \"LEAKED\\n\"}" \
	node "$CLIENT" "$SDK" "$T_TMP/res4.json" "$WS4" -- sh -c \
	'exec "$WARD" acp --approve auto --model "replay:$1" 2>>"$2" | tee -a "$3"' sh "$T_TMP/script4.json" "$T_TMP/err" "$T_TMP/out" >/dev/null 2>>"$T_TMP/client-err"
ok $? "a fourth client (two sessions) ran to its end"
r4() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else (v or {}).get(k)
print(v if isinstance(v,str) else json.dumps(v))' "$T_TMP/res4.json" "$1" 2>/dev/null; }
is "$(r4 error)" null "no error in the fourth client"
# Each read's result, per session, in order: "SESSION PATH SOURCE TEXT".
READS=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
names={s:"ab"[i] for i,s in enumerate(res["sessions"])}
calls={}
for u,s in zip(res["updates"],res["sids"]):
    if u["sessionUpdate"]=="tool_call" and u["title"].startswith("read"): calls[u["toolCallId"]]=u["rawInput"]["path"]
    if u["sessionUpdate"]=="tool_call_update" and u["toolCallId"] in calls and u.get("rawOutput"):
        o=u["rawOutput"]; print(names[s], calls[u["toolCallId"]], o.get("source","box"), o["text"].replace("\n"," | ")[:200])' "$T_TMP/res4.json")
like "$READS" "^a unsaved.txt editor .*unsaved buffer.*the editor's buffer of /workspace/unsaved.txt" "a read of a file the editor holds unsaved: the editor's buffer, said so"
unlike "$(grep '^a unsaved.txt editor' <<<"$READS")" "saved \|" "and not the saved file"
like "$(r4 fsReads.0.path)" "^$WS4/unsaved.txt$" "fs/read_text_file was asked for the editor's own path"
like "$READS" "^a /workspace/saved.txt box .*plain" "twin: a file the editor's buffer matches is the box's read"
like "$READS" "^a unsaved.txt box .*box version" "a file the box changed: the box's copy, not the editor's buffer"
like "$READS" "^b unsaved.txt editor .*unsaved buffer" "the second session's box had not changed it: the editor's buffer there (each session its own box)"
unlike "$(r4 fsReads)" "link.txt|hostname" "a symlink and a file outside the workspace are never read through the editor"
unlike "$READS" "LEAKED" "the symlink's read is the box's (no editor text)"
PLAN=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
for u,s in zip(res["updates"],res["sids"]):
    if s!=res["sessions"][0]: continue
    if u["sessionUpdate"]=="plan": print("plan", json.dumps(u["entries"]))
    if u["sessionUpdate"]=="tool_call" and u["title"].startswith("todo"): print("card", u["toolCallId"])
    if u["sessionUpdate"]=="tool_call_update" and (u.get("rawOutput") or {}).get("outcome")=="bad_input": print("bad", u["rawOutput"]["text"])' "$T_TMP/res4.json")
like "$PLAN" '^plan \[\{"content": "read the files", "priority": "medium", "status": "completed"\}, \{"content": "change unsaved.txt", "priority": "medium", "status": "in_progress"\}, \{"content": "show the diff", "priority": "medium", "status": "pending"\}\]$' \
	"the model's todo plan: a plan update, each step with its status"
is "$(grep -c '^card' <<<"$PLAN")" 1 "the plan is no tool card; a plan that does not read is one"
like "$PLAN" '^bad todo: line 2 is not a step' "and its error is the model's (bad_input, naming the line)"
is "$(r4 prompts.a.stopReason) $(r4 prompts.b.stopReason)" "end_turn end_turn" "both sessions' prompts: end_turn"
is "$(r4 order)" '["a", "b", "queuedCancel", "a2"]' "the second session's prompt, sent while the first ran, was answered after it; a waiting one cancelled at once"
is "$(r4 prompts.queuedCancel.stopReason)" cancelled "the waiting prompt cancelled: stopReason cancelled"
is "$(r4 prompts.a2.stopReason)" end_turn "twin: the running prompt went on to end_turn"
is "$(r4 boxA)|$(r4 boxB)|$(r4 treeBefore)" "box version|box version|saved" "each session's box has its own copy; the directory is untouched"
like "$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
print([c["name"] for u in res["updates"] if u["sessionUpdate"]=="available_commands_update" for c in u["availableCommands"]])' "$T_TMP/res4.json")" \
	"'diff', 'apply', 'rewind', 'jobs', 'diff', 'apply', 'rewind', 'jobs'" "each session offers /diff, /apply, /rewind and /jobs (available_commands_update)"
D=$(r4 diffText)
like "$D" '^```diff' "/diff: the session's changes as a diff"
like "$D" '^-saved$' "its old line"
like "$D" '^\+box version$' "and its new one"
is "$(r4 treeAfterDiff)" "saved" "/diff changes nothing"
like "$(r4 applyText)" "Applied 1 change to $WS4" "/apply: applied, saying so"
lt "$(r4 prompts.apply.ms)" 5000 "/apply answers promptly"
is "$(r4 prompts.fsCancel.stopReason)" cancelled "a cancel while ward waits for the editor's buffer: stopReason cancelled"
lt "$(r4 prompts.fsCancel.ms)" 2500 "answered without waiting for the editor (it answered 3 s later)"
is "$(r4 treeAfterApply)" "box version" "/apply: the directory has the session's change"

# The task tool's children over ACP: each child's calls are the prompt's
# tool calls, their ids and titles the child's, _meta naming the child and
# the task call; a background job is a card of its own from its start to
# its end; /jobs lists the box's jobs; /rewind lists the messages and goes
# back to before one (the workspace changes as they were then).
WS5=$T_TMP/ws5; mkdir -p "$WS5"
for c in c1 c2; do
	printf '{"turns": [{"tools": [{"name": "bash", "input": {"command": "echo %s >/workspace/%s.txt"}}]}, {"text": "%s finished"}]}\n' "$c" "$c" "$c" >"$T_TMP/$c.json"
done
cat >"$T_TMP/script5.json" <<'JSON'
{"turns": [
 {"expect": "agents", "tools": [{"name": "task", "input": {"prompt": "do c1", "description": "the first part", "model": "replay:c1.json"}},
   {"name": "task", "input": {"prompt": "do c2", "description": "the second part", "model": "replay:c2.json"}}]},
 {"text": "agents done"},
 {"expect": "job", "tools": [{"name": "bash", "input": {"command": "sleep 0.5; echo job-bye; echo j >/workspace/j.txt", "background": true}}]},
 {"tools": [{"name": "bash", "input": {"command": "sleep 2"}}]},
 {"text": "job seen"}
]}
JSON
ACP_EXTRA=1 node "$CLIENT" "$SDK" "$T_TMP/res5.json" "$WS5" -- sh -c \
	'exec "$WARD" acp --approve auto --model "replay:$1" 2>>"$2" | tee -a "$3"' sh "$T_TMP/script5.json" "$T_TMP/err" "$T_TMP/out" >/dev/null 2>>"$T_TMP/client-err"
ok $? "a fifth client (subagents, a job, /jobs, /rewind) ran to its end"
r5() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else (v or {}).get(k)
print(v if isinstance(v,str) else json.dumps(v))' "$T_TMP/res5.json" "$1" 2>/dev/null; }
is "$(r5 error)" null "no error in the fifth client"
is "$(r5 prompts.agents.stopReason)" end_turn "a prompt whose model starts two subagents: end_turn"
A=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
task={u["toolCallId"]:u["rawInput"]["description"] for u in res["updates"] if u["sessionUpdate"]=="tool_call" and u["title"].startswith("task")}
for u in res["updates"]:
    w=(u.get("_meta") or {}).get("ward") or {}
    if "agent" in w: print(u["sessionUpdate"], u["toolCallId"], u.get("status"), w["agent"], task.get(w.get("parentToolCallId"), "?"), u.get("title", ""))' "$T_TMP/res5.json")
like "$A" '^tool_call a1/[^ ]+ pending a1 the first part a1 · bash echo c1 >/workspace/c1\.txt$' "a child's call: a tool_call of its own (a1/ID), titled with the child, _meta naming it and its task call"
like "$A" '^tool_call a2/[^ ]+ pending a2 the second part a2 · bash echo c2' "the other child's too"
like "$A" '^tool_call_update a1/[^ ]+ in_progress a1' "its start"
like "$A" '^tool_call_update a1/[^ ]+ completed a1' "and its end: completed"
is "$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
ids=[u["toolCallId"] for u in res["updates"] if u["sessionUpdate"]=="tool_call"]
ids=ids[:[i.startswith("job-") for i in ids].index(True)]
print(min(len(ids), 5), len(ids)-len(set(ids)))' "$T_TMP/res5.json")" "5 0" \
	"the tool_call ids before the job's card (two task calls, their children's calls, the job's bash; a later call too where the card comes after it): none twice"
like "$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
print([u["rawOutput"]["text"][:300] for u in res["updates"] if u["sessionUpdate"]=="tool_call_update" and "a1" in json.dumps(u.get("rawOutput",{}).get("agent",{}))])' "$T_TMP/res5.json")" \
	"subagent a1 \(the first part\): done" "twin: the task call's own result, the child's answer"
J=$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
for u in res["updates"]:
    if u["toolCallId"].startswith("job-") if "toolCallId" in u else False: print(u["sessionUpdate"], u["toolCallId"], u["status"], u.get("title", ""), json.dumps(u.get("content", [])))' "$T_TMP/res5.json")
like "$J" '^tool_call job-1 in_progress job 1: sleep 0\.5; echo job-bye' "a background job's start: a card of its own, in progress"
like "$J" '^tool_call_update job-1 completed .*job 1 exited.*job-bye' "its end: completed, how it ended and its output's tail"
like "$(r5 jobsText)" "job 1: exited with status 0" "/jobs lists the box's job, how it ended"
like "$(r5 jobsText)" "sleep 0\.5; echo job-bye" "and its command"
like "$(r5 jobsBadText)" "/jobs kill takes a job's number" "/jobs kill x: says what it takes"
like "$(r5 rewindListText)" $'1\\. agents\n2\\. job' "/rewind lists the person's messages"
like "$(r5 rewindText)" "Back before message 2: the conversation has 4 messages; the workspace changes are as they were then" "/rewind 2 goes back, saying so"
D=$(r5 diffText)
like "$D" 'c1\.txt' "after it the children's changes are kept (/diff)"
unlike "$D" 'j\.txt' "and the job's file, made after message 2 began, is gone"
like "$(python3 -c 'import json,sys; res=json.load(open(sys.argv[1]))
print([(c["name"], (c.get("input") or {}).get("hint")) for u in res["updates"] if u["sessionUpdate"]=="available_commands_update" for c in u["availableCommands"]][:4])' "$T_TMP/res5.json")" \
	"'rewind', .N \(a message.s number; nothing: list them\).\), \('jobs', 'kill N \(nothing: list them\)'\)" "the commands offered: /rewind and /jobs, with their input hints"
is "$(r5 prompts.notCommand.stopReason)" end_turn "/diff with words after it is a prompt, not the command (twin: the model answered it)"
unlike "$(r5 notCommandText)" '```diff' "(and no diff was shown for it)"

# stdout: nothing but JSON-RPC messages, one a line.
V=$(python3 -c 'import json,sys
n=0
for l in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    m=json.loads(l); n+=1
    assert m["jsonrpc"]=="2.0", l
print("ok", n)' "$T_TMP/out" 2>&1)
like "$V" "^ok [0-9]+$" "every line ward wrote on stdout is one JSON-RPC message"

# Every message ward sent validates against the protocol's own schema.
V=$(python3 - "$SDK/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json" "$T_TMP/out" <<'PY' 2>&1
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
vs = {}
def check(name, v):
    # One validator a type (jsonschema.validate would check the whole
    # schema again for every message).
    if name not in vs:
        sch = {"$ref": "#/$defs/" + name, "$defs": s["$defs"]}
        vs[name] = jsonschema.validators.validator_for(s)(sch)
    vs[name].validate(v)
ids = {}
n = 0
for l in open(sys.argv[2]):
    m = json.loads(l)
    if m.get("method") == "session/update":
        check("SessionNotification", m["params"])
    elif m.get("method") == "session/request_permission":
        check("RequestPermissionRequest", m["params"])
    elif "result" in m:
        r = m["result"]
        check({"protocolVersion": "InitializeResponse", "stopReason": "PromptResponse", "sessionId": "NewSessionResponse"}.get(next(iter(r), ""), "LoadSessionResponse"), r)
    elif m.get("method") == "fs/read_text_file":
        check("ReadTextFileRequest", m["params"])
    elif "error" in m:
        check("Error", m["error"])
    else:
        raise SystemExit("unknown message: " + l)
    n += 1
print("valid", n)
PY
)
like "$V" "^valid [0-9]+$" "every message validates against the ACP v1 schema"

# Malformed requests: errors, never a crash or a hang; the next one works.
{
	printf '%s\n' 'junk' '[1]' '{"jsonrpc":"1.0","id":1,"method":"initialize"}' '{"jsonrpc":"2.0","id":{},"method":"x"}' \
		'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1"}}' \
		'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1,"protocolVersion":2}}' \
		'{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}' \
		'{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":1}}' \
		'{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}' \
		'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"x","prompt":[]}}' \
		'{"jsonrpc":"2.0","id":8,"method":"session/nope","params":{}}' \
		'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}' \
		'{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1}}'
	head -c 17000000 /dev/zero | tr '\0' 'x'; printf '\n'
	printf '%s\n' '{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":1}}'
} | timeout 20 "$WARD" acp --model "replay:$T_TMP/script.json" >"$T_TMP/bad" 2>"$T_TMP/bad-err"
is $? 0 "malformed requests: ward acp exits 0 at EOF (no crash, no hang)"
B=$(cat "$T_TMP/bad")
like "$B" '"id":null,"error":\{"code":-32700,"message":"not one JSON value' "junk: a parse error"
like "$B" '"id":null,"error":\{"code":-32600,"message":"a message is a JSON object"' "an array: invalid request"
like "$B" '"id":1,"error":\{"code":-32600,"message":"\\"jsonrpc\\" must be \\"2.0\\""' "jsonrpc 1.0: refused"
like "$B" '"id":null,"error":\{"code":-32600,"message":"id must be a string or a number"' "an object id: refused"
like "$B" '"id":2,"error":\{"code":-32602,"message":"initialize: protocolVersion must be an integer' "a string protocolVersion: invalid params"
like "$B" '"id":null,"error":\{"code":-32700,"message":"not one JSON value: the key.*given twice' "a key given twice: refused (jsonstrict)"
like "$B" '"id":4,"error":\{"code":-32600,"message":"session/new: call initialize first' "session/new before initialize: refused"
like "$B" '"id":6,"error":\{"code":-32602,"message":"session/new: cwd must be an absolute path' "a relative cwd: refused"
like "$B" '"id":7,"error":\{"code":-32600,"message":"session/prompt: no session' "a prompt without a session: refused"
like "$B" '"id":8,"error":\{"code":-32601' "an unknown method: method not found"
like "$B" '"code":-32600,"message":"a message longer than 16 MiB: skipped' "a line past 16 MiB: refused and skipped"
like "$B" '"id":10,"result":\{"protocolVersion":1' "twin: the request after all of them is answered"
is "$(grep -c . "$T_TMP/bad")" 14 "one line per request, none for the notification"
done_testing
