#!/bin/bash
# The terminal rule (base/utf8.h, cmd/term.h): hostile bytes through every
# field that reaches a person's screen -- the model's text, thinking and
# tool calls, tool output, file names and contents in diffs, hook output,
# a provider's error messages, an MCP server's serverInfo, tool names and
# stderr -- on stdout and stderr, in ward run, ward diff at a terminal,
# ward mcp list and the terminal session. Nothing of them reaches the
# terminal as a control; what is data (--json, --patch, ward diff to a
# pipe) keeps the exact bytes.
. "$(dirname "$0")/lib.sh"
export ANTHROPIC_API_KEY=sk-ant-fake-key
SRVPY=$(cd "$(dirname "$0")/.." && pwd)/mcp-server.py
mkdir -p "$XDG_CONFIG_HOME/ward"

# Each hostile sequence follows a marker; the checker knows how the rule
# shows each one. HX: cursor up, erase line. HO: OSC 52 (a clipboard
# write). HL: OSC 8 (a link). HC: CSI as a UTF-8 C1. HD: DEL. HR: CR.
# HB: right-to-left override. HI: left-to-right isolate. HW: a raw 0x9b.
CHECK=$T_TMP/check.py
cat >"$CHECK" <<'PY'
import sys
# check.py MODE FILE [MARKER...]
#   clean: nothing in FILE is a control (but newline and tab), DEL, a C1,
#          a bidirectional control or a byte that is not UTF-8;
#   tty:   the same, after the terminal's own CR LF line ends;
#   raw:   FILE is what a terminal was sent, ward's own sequences among it:
#          no marker is followed by its hostile byte.
# and each MARKER's visible form is in FILE. Prints "ok" or what is wrong.
SHOWN = {"HX": "HX^[[1A^[[2K", "HO": "HO^[]52;c;cHduZWQ=^G", "HL": "HL^[]8;;http://evil.test/^[\\link^[]8;;^[\\",
         "HC": "HC<U+009B>31m", "HD": "HD^?", "HR": "HR^Mover", "HB": "HB<U+202E>", "HI": "HI<U+2066>",
         "HW": "HW\ufffd", "HY": "HY^[[2K"}
BIDI = {0x061c, 0x200e, 0x200f} | set(range(0x202a, 0x202f)) | set(range(0x2066, 0x206a))
def bad(ch):
    o = ord(ch)
    return (o < 0x20 and ch not in "\n\t") or 0x7f <= o <= 0x9f or o in BIDI or 0xdc80 <= o <= 0xdcff
mode, path, markers = sys.argv[1], sys.argv[2], sys.argv[3:]
data = open(path, "rb").read()
if mode == "tty":
    data = data.replace(b"\r\n", b"\n")
text = data.decode("utf-8", "surrogateescape")
problems = []
if mode in ("clean", "tty"):
    for i, ch in enumerate(text):
        if bad(ch):
            problems.append("%r at %d in %r" % (ch, i, text[max(0, i - 30):i + 10]))
            break
else:
    for m in SHOWN:
        at = text.find(m)
        while at >= 0 and not problems:
            nxt = text[at + len(m):at + len(m) + 1]
            if nxt and bad(nxt):
                problems.append("%s followed by %r" % (m, nxt))
            at = text.find(m, at + 1)
for m in markers:
    if SHOWN[m] not in text:
        problems.append("no %r" % SHOWN[m])
print("; ".join(problems)[:600] if problems else "ok")
PY
check() { python3 "$CHECK" "$@"; }

# The payload: the model's, in a replay script (JSON cannot carry a raw
# 0x9b: a command writes that one).
python3 - "$T_TMP" <<'PY'
import json, sys
H = ("HX\x1b[1A\x1b[2K HO\x1b]52;c;cHduZWQ=\x07 HL\x1b]8;;http://evil.test/\x1b\\link\x1b]8;;\x1b\\"
     " HC\u009b31m HD\x7f HR\rover HB\u202e HI\u2066 end")
name = "f-HX\x1b[1A\x1b[2K-HB\u202e-HC\u009b31m-HD\x7f.txt"
raw = "printf 'raw HW\\233 x\\n' > raw-HW$(printf '\\233').txt; printf 'out HY\\033[2K HW\\233\\n'"
turns = [{"thinking": "TH " + H, "text": "T " + H,
          "tools": [{"name": "NX" + H, "input": {"command": "CX " + H}},
                    {"name": "write", "input": {"path": name, "content": "c " + H + "\n"}},
                    {"name": "write", "input": {"path": "a.txt", "content": "alpha " + H + "\n"}},
                    {"name": "bash", "input": {"command": raw}},
                    {"name": "ls", "input": {"path": "."}},
                    {"name": "bash", "input": {"command": "true\nward: applied 9 changes SPOOF"}}]},
         {"text": "done " + H}]
json.dump({"turns": turns}, open(sys.argv[1] + "/replay.json", "w"))
PY
# A PreToolUse hook that refuses ls, its reason hostile.
printf '#!/bin/sh\ncat >/dev/null\nprintf "hook HX\\033[1A\\033[2K HB\\342\\200\\256 HW\\233 no\\n" >&2\nexit 2\n' >"$T_TMP/hook"
chmod +x "$T_TMP/hook"
printf '{"hooks": {"PreToolUse": [{"matcher": "ls", "hooks": [{"type": "command", "command": "%s"}]}]}}\n' \
	"$T_TMP/hook" >"$XDG_CONFIG_HOME/ward/config.json"

WS=$T_TMP/ws; mkdir -p "$WS"; printf 'alpha\n' >"$WS/a.txt"
cp -r "$WS" "$T_TMP/ws-copy"

# --- ward run, plain: the answer on stdout, the rest on stderr.
"$WARD" run --model replay:"$T_TMP/replay.json" --workspace "$WS" --approve auto --patch "$T_TMP/patch.diff" \
	"go" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
is $? 0 "ward run with a hostile model: exit 0"
SID=$(sed -n 's/^ward: session \([0-9a-f-]*\), box.*/\1/p' "$T_TMP/err" | head -1)
is "$(check clean "$T_TMP/out" HX HO HL HC HD HR HB HI)" ok \
	"stdout: the model's text, every hostile sequence shown (^[, <U+009B>, ^?, ^M, <U+202E>), none raw"
is "$(check clean "$T_TMP/err" HX HO HL HC HD HR HB HI HW)" ok \
	"stderr: the call cards, an unknown tool's name, the hook's reason, the diff: all shown, none raw"
ERR=$(cat "$T_TMP/err")
like "$ERR" '● NXHX\^\[\[1A\^\[\[2K HO\^\[\]52;c' "an unknown tool's name in its card, shown"
like "$ERR" 'bad_input: no tool named "NXHX\^\[\[1A' "and in the refusal"
like "$ERR" '⚑ PreToolUse hook: block: hook HX\^\[\[1A\^\[\[2K HB<U\+202E> HW' "a hook's reason, shown"
like "$ERR" '\+\+\+ b/f-HX\^\[\[1A\^\[\[2K-HB<U\+202E>-HC<U\+009B>31m-HD\^\?\.txt' "a file's name in the diff on stderr, shown"
like "$ERR" '\+c HX\^\[\[1A\^\[\[2K HO' "its content, shown"
like "$ERR" '\+raw HW� x' "a raw 0x9b in a file's content: U+FFFD"
like "$ERR" '● bash true⏎ward: applied 9 changes SPOOF' "a card is one line: a newline in the command is shown as ⏎"
unlike "$ERR" '^ward: applied 9 changes SPOOF' "so it cannot print a line that looks like ward's"
like "$ERR" '\+\+\+ b/raw-HW�\.txt' "and in its name"
PLAIN='plain: café naïve 日本語 한국어 😀👍🏽 → ✓'
cat >"$T_TMP/plain.json" <<EOF
{"turns": [{"text": "$PLAIN", "tools": [{"name": "write", "input": {"path": "日本-😀.txt", "content": "$PLAIN\n"}}]},
 {"text": "ok"}]}
EOF
mkdir -p "$T_TMP/ws-plain"
"$WARD" run --model replay:"$T_TMP/plain.json" --workspace "$T_TMP/ws-plain" --approve auto "go" \
	>"$T_TMP/pout" 2>"$T_TMP/perr" </dev/null
grep -qxF "$PLAIN" "$T_TMP/perr"; ok $? "positive twin: plain UTF-8 (accents, CJK, emoji) in the streamed text unchanged"
is "$(cat "$T_TMP/pout")" "ok" "and stdout is the final answer alone"
like "$(cat "$T_TMP/perr")" "\+\+\+ b/日本-😀\.txt" "and a CJK and emoji file name in the diff"
like "$(cat "$T_TMP/perr")" "^\+$PLAIN\$" "and its content"

# --- Data keeps the exact bytes: --json, --patch, ward diff to a pipe.
"$WARD" run --json --model replay:"$T_TMP/replay.json" --workspace "$T_TMP/ws-copy" --approve auto "go" \
	>"$T_TMP/json" 2>/dev/null </dev/null
is "$(python3 - "$T_TMP/json" "$T_TMP/replay.json" <<'PY'
import json, sys
want = json.load(open(sys.argv[2]))["turns"][0]
texts = ["".join(e["text"] for e in map(json.loads, open(sys.argv[1])) if e["type"] == "text")]
calls = [e["call"]["name"] for e in map(json.loads, open(sys.argv[1])) if e["type"] == "tool_call"]
print("ok" if texts[0].startswith(want["text"]) and want["tools"][0]["name"] in calls else "differs: %r" % texts[:1])
PY
)" ok "--json: the text and the tool's name are the model's exact characters"
grep -q $'+c HX\x1b\[1A\x1b\[2K HO\x1b\]52' "$T_TMP/patch.diff"
ok $? "--patch FILE: the patch holds the exact bytes"
"$WARD" diff "$SID" >"$T_TMP/pipe.diff" 2>"$T_TMP/derr"
is $? 0 "ward diff to a pipe: exit 0"
grep -q $'+c HX\x1b\[1A\x1b\[2K HO\x1b\]52' "$T_TMP/pipe.diff"
ok $? "to a pipe it is data: the exact bytes"
rm -rf "$T_TMP/applied"; cp -r "$T_TMP/ws-copy" "$T_TMP/applied"; printf 'alpha\n' >"$T_TMP/applied/a.txt"
(cd "$T_TMP/applied" && git apply "$T_TMP/pipe.diff") 2>"$T_TMP/aerr"
ok $? "and git apply takes it"
is "$(python3 - "$T_TMP/applied" "$T_TMP/replay.json" <<'PY'
import json, os, sys
t = json.load(open(sys.argv[2]))["turns"][0]["tools"][1]["input"]
d = sys.argv[1]
name = os.fsencode(t["path"])
raw = b"raw-HW\x9b.txt"
ok = open(os.path.join(os.fsencode(d), name), "rb").read() == t["content"].encode() and \
     open(os.path.join(os.fsencode(d), raw), "rb").read() == b"raw HW\x9b x\n"
print("ok" if ok else "differs")
PY
)" ok "the files it makes have the exact names and bytes (the model's, a raw 0x9b)"
if command -v script >/dev/null; then
	script -qc "'$WARD' diff $SID" /dev/null >"$T_TMP/tty.diff" 2>&1 </dev/null
	is "$(check tty "$T_TMP/tty.diff" HX HO HL HC HD HR HB HI HW)" ok \
		"ward diff at a terminal (script): for a person, every hostile sequence shown, none raw"
	like "$(cat "$T_TMP/tty.diff")" '\+\+\+ b/f-HX\^\[\[1A\^\[\[2K-HB<U\+202E>' "the file's name too"
	PS=$(sed -n 's/^ward: session \([0-9a-f-]*\), box.*/\1/p' "$T_TMP/perr" | head -1)
	script -qc "'$WARD' diff $PS" /dev/null >"$T_TMP/tty-plain.diff" 2>&1 </dev/null
	like "$(tr -d '\r' <"$T_TMP/tty-plain.diff")" "^\+$PLAIN\$" "positive twin: plain UTF-8 at a terminal unchanged"
else
	ok 0 "# SKIP script(1) is not installed"
fi

# --- A workspace's name in ward's lines, ward sessions and ward box ls.
HWS=$(printf '%s/ws-HX\033[1A\033[2K-HB\342\200\256' "$T_TMP"); mkdir -p "$HWS"
"$WARD" run --model replay:"$T_TMP/plain.json" --workspace "$HWS" --approve auto "go" >/dev/null 2>"$T_TMP/err" </dev/null
is "$(check clean "$T_TMP/err" HX HB)" ok "a workspace's name in ward run's lines: shown, none raw"
"$WARD" sessions >"$T_TMP/out" 2>&1
is "$(check clean "$T_TMP/out" HX HB)" ok "ward sessions: the workspace shown, none raw"
B=$(box_new --workspace "$HWS" --label term-test=$$)
"$WARD" box ls --label term-test=$$ >"$T_TMP/out" 2>&1
is "$(check clean "$T_TMP/out" HX HB)" ok "ward box ls: the workspace shown, none raw"
like "$(cat "$T_TMP/out")" "^$B " "and the box listed"

# --- A provider's error messages: a retry, then the stop.
serve hostile-error
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$T_TMP/ws-plain" "go" \
	>"$T_TMP/out" 2>"$T_TMP/err" </dev/null
like "$(cat "$T_TMP/err")" 'retrying' "a provider error that is retried is said"
is "$(check clean "$T_TMP/err" HX HO HB)" ok "the provider's messages (the retry, the stop) shown, none raw"

# --- An MCP server: serverInfo, tool names, its stderr.
MWS=$T_TMP/ws-mcp; mkdir -p "$MWS"; cp "$SRVPY" "$MWS/srv.py"
printf '{"mcpServers": {"t": {"command": "python3", "args": ["/workspace/srv.py", "--mode", "hostile"]}}}' >"$T_TMP/mcp.json"
"$WARD" mcp list --workspace "$MWS" --mcp-config "$T_TMP/mcp.json" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
is $? 0 "ward mcp list with a hostile server: exit 0"
is "$(check clean "$T_TMP/out" HX HO HC)" ok "stdout: its serverInfo name and version shown, none raw"
like "$(cat "$T_TMP/out")" 'ready, srv HX\^\[\[1A\^\[\[2K HO.* 9 HX\^\[\[1A' "both of them"
is "$(check clean "$T_TMP/err" HX HO HL HC)" ok "stderr: an over-long tool name's note shown, none raw"
like "$(cat "$T_TMP/err")" 'tool "longHX\^\[\[1A\^\[\[2K.*is longer than' "that note"
"$WARD" mcp list --json --workspace "$MWS" --mcp-config "$T_TMP/mcp.json" >"$T_TMP/json" 2>/dev/null </dev/null
like "$(python3 -c 'import json,sys; print(repr(json.load(sys.stdin)[0]["server"]))' <"$T_TMP/json")" \
	"srv HX.x1b\[1A" "--json: its serverInfo as it sent it (JSON is data)"
export FAKE_TOOL=mcp__t__crash
serve mcp-call
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$MWS" --rw \
	--mcp-config "$T_TMP/mcp.json" "crash" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
like "$(cat "$T_TMP/err")" 'its stderr ends: "dying HX' "a server that dies: its stderr's tail quoted"
is "$(check clean "$T_TMP/err" HX HO)" ok "and shown, none raw"
printf '{"mcpServers": {"bad\\u001b[2Kname\342\200\256": {"command": "true"}}}' >"$T_TMP/bad.json"
"$WARD" mcp list --workspace "$MWS" --mcp-config "$T_TMP/bad.json" >/dev/null 2>"$T_TMP/err" </dev/null
like "$(cat "$T_TMP/err")" 'MCP server "bad\^\[\[2Kname<U\+202E>": a server.s name is' "a server name refused: the error quotes it, shown"
is "$(check clean "$T_TMP/err")" ok "and nothing raw in the error line"

# --- The terminal session, through tmux: what the terminal was sent.
if command -v tmux >/dev/null; then
	TM="tmux -u -L ward-term-$$ -f /dev/null"
	screen() { $TM capture-pane -p -J -S -300 -t "$1" 2>/dev/null; }
	wait_for() { # wait_for NAME REGEX MS
		local until=$(($(now_ms) + $3))
		while [ "$(now_ms)" -lt $until ]; do
			screen "$1" | grep -Eq -- "$2" && return 0
			sleep 0.05
		done
		screen "$1" | grep -v '^$' | tail -15 | sed 's/^/#   screen| /'
		return 1
	}
	TWS=$T_TMP/ws-tui; mkdir -p "$TWS"; printf 'alpha\n' >"$TWS/a.txt"; cp "$SRVPY" "$TWS/srv.py"
	$TM new-session -d -x 200 -y 50 -s t "sleep 0.5; env XDG_STATE_HOME=$XDG_STATE_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME \
WARD_GUEST=$WARD_GUEST TERM=screen '$WARD' --model replay:$T_TMP/replay.json --approve auto --workspace $TWS \
--mcp-config $T_TMP/mcp.json; echo EXIT=\$?; sleep 600"
	# Every byte the pane is sent, ward's own sequences among them.
	$TM pipe-pane -o -t t "cat >>$T_TMP/pane.raw"
	wait_for t 'Esc interrupts' 20000
	ok $? "the session starts"
	$TM send-keys -t t -l "go"; $TM send-keys -t t Enter
	wait_for t 'done HX' 20000
	ok $? "the hostile turn ran"
	$TM send-keys -t t -l "/diff"; $TM send-keys -t t Enter
	wait_for t '\+alpha HX' 10000
	ok $? "/diff shows the changes"
	$TM send-keys -t t -l "/mcp"; $TM send-keys -t t Enter
	wait_for t 'ready, srv HX' 10000
	ok $? "/mcp shows the server"
	screen t >"$T_TMP/pane.txt"
	is "$(check raw "$T_TMP/pane.raw")" ok \
		"the terminal was sent none of them raw: text, thinking, cards, tool output, the diff, /mcp, notes"
	is "$(check raw "$T_TMP/pane.txt" HX HO HL HC HD HR HB HI HW HY)" ok "and the screen shows each one"
	S=$(cat "$T_TMP/pane.txt")
	like "$S" '✻ TH HX\^\[\[1A' "the thinking, shown"
	like "$S" '● NXHX\^\[\[1A\^\[\[2K' "an unknown tool's name in its card, shown"
	like "$S" '│ out HY\^\[\[2K HW�' "a tool's output, shown (a raw 0x9b as U+FFFD)"
	like "$S" '\+\+\+ b/f-HX\^\[\[1A\^\[\[2K-HB<U\+202E>' "a file's name in /diff, shown"
	is "$($TM display -p -t t '#{alternate_on} #{cursor_flag}')" "0 1" "no alternate screen, cursor still shown"
	unlike "$($TM display -p -t t '#{pane_title}')" "cHduZWQ|evil" "the title is not set"
	$TM send-keys -t t -l "/quit"; $TM send-keys -t t Enter
	wait_for t 'k keep them for later' 10000
	$TM send-keys -t t k
	wait_for t 'EXIT=' 10000
	$TM kill-server 2>/dev/null
fi

rm -f "$XDG_CONFIG_HOME/ward/config.json"
done_testing
