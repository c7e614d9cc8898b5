#!/bin/bash
# The interactive session, driven through tmux: send-keys types, capture-pane
# reads, against the fake LLM server (real HTTP and SSE on loopback) and real
# boxes. Each session runs in its own pane of a private tmux server; the pane
# records the terminal's settings before ward starts and after it ends.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || skip_all "tmux is not installed (apt-get install tmux)"
export XDG_STATE_HOME=$T_TMP/state ANTHROPIC_API_KEY=sk-ant-fake-key
SESS=$XDG_STATE_HOME/ward/sessions
TM="tmux -u -L ward-test-$$ -f /dev/null"
serve chat

start() { # start NAME [ward flags]: ward in a new pane, at its first prompt
	local name=$1; shift
	WS=$T_TMP/ws-$name
	mkdir -p "$WS"
	printf 'alpha\n' >"$WS/a.txt"
	$TM new-session -d -x 150 -y 50 -s "$name" \
		"stty -g >$T_TMP/$name.before; env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST \
TERM=screen '$WARD' --base-url $URL --model fake-model --workspace $WS $*; echo EXIT=\$?; \
stty -g >$T_TMP/$name.after; stty -a >$T_TMP/$name.after-a; sleep 600"
	wait_for "$name" 'Esc interrupts' 10000
}
screen() { $TM capture-pane -p -J -S -300 -t "$1" 2>/dev/null; }
wait_for() { # wait_for NAME REGEX MS: 0 once it is on the screen
	local until=$(($(now_ms) + $3))
	while [ "$(now_ms)" -lt $until ]; do
		screen "$1" | grep -Eq -- "$2" && return 0
		sleep 0.05
	done
	show "$1"
	return 1
}
say() { $TM send-keys -t "$1" -l "$2"; $TM send-keys -t "$1" Enter; }
key() { $TM send-keys -t "$1" "$2"; }
show() { screen "$1" | grep -v '^$' | tail -15 | sed 's/^/#   screen| /'; }
count() { screen "$1" | grep -Ec -- "$2"; }
wait_count() { # wait_count NAME REGEX N MS: 0 once REGEX is on N lines
	local until=$(($(now_ms) + $4))
	while [ "$(now_ms)" -lt $until ]; do
		[ "$(count "$1" "$2")" -ge "$3" ] && return 0
		sleep 0.05
	done
	show "$1"
	return 1
}
ward_pid() { pgrep -f "^$WARD --base-url .* --workspace $T_TMP/ws-$1( |\$)" | head -1; }
session_of() { screen "$1" | sed -n 's/.*· session \([0-9a-f-]*\) ·.*/\1/p' | head -1; }
journal() { cat "$SESS/$(session_of "$1").jsonl"; }
sleeper() { pgrep -f '^sleep 107$' >/dev/null; }

# Without a terminal there is no session, and ward says what to use.
"$WARD" chat </dev/null >/dev/null 2>"$T_TMP/err"
is $? 64 "ward chat without a terminal: exit 64"
like "$(cat "$T_TMP/err")" "needs a terminal.*ward run TASK" "and it says to use ward run"

# No box, no session: one line saying why, and ward run's exit codes.
$TM new-session -d -x 150 -y 20 -s nobox "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k \
'$WARD' --base-url $URL --model fake-model --workspace /etc/hostname; echo EXIT=\$?; sleep 600"
wait_for nobox 'EXIT=4' 5000
ok $? "a workspace that is not a directory: exit 4"
like "$(screen nobox)" "cannot make a box: workspace /etc/hostname is not a directory" "and it says why"
$TM new-session -d -x 150 -y 20 -s nosuchbox "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k \
'$WARD' --base-url $URL --model fake-model --box no-such-box; echo EXIT=\$?; sleep 600"
wait_for nosuchbox 'EXIT=69' 5000
ok $? "--box that does not exist: exit 69"

# --- A two-turn conversation, a tool call in each turn.
start conv --approve auto
ok $? "the session starts at a prompt"
say conv "run one"
wait_for conv 'Tool said: ran-one' 10000
ok $? "turn 1: the answer after the tool's result"
S=$(screen conv)
like "$S" "Running one\." "turn 1: the model's text"
like "$S" "● bash echo ran-one > one.txt" "turn 1: the call's card: tool and command"
like "$S" "│ ran-one" "turn 1: the card streams the call's output"
like "$S" "⎿ ok \(exit 0\)" "turn 1: the card's result"
like "$S" "fake-model · box s-[0-9a-f-]+ · [0-9]+ in / [0-9]+ out tokens" "turn 1: the status line: model, box, tokens"
say conv "count"
wait_for conv 'Tool said: line-1 line-2' 10000
ok $? "turn 2: the answer after the tool's result"
S=$(screen conv)
like "$S" "│ line-12" "turn 2: output shown up to the cap"
unlike "$S" "│ line-13" "turn 2: and not past it"
like "$S" "… 28 more lines" "turn 2: the rest counted"
J=$(journal conv)
is "$(printf '%s\n' "$J" | grep -c '"type":"result",.*"outcome":"ok"')" 2 "the journal has both calls' results"
is "$(printf '%s\n' "$J" | grep -c '"role":"user","content":\[{"type":"text"')" 2 "and both of the person's messages"
like "$(tail -1 "$LOG")" '"text": "run one"' "the second turn's request carries the first turn"

say conv "readboth"
wait_for conv 'Tool said: .*alpha' 10000
ok $? "two read calls run side by side"
S=$(screen conv)
like "$S" "● read a\.txt" "a card for the first"
like "$S" "● read missing\.txt" "and for the second"
like "$S" "  read a\.txt
  ⎿ ok" "the result that is not the last card's says whose it is"
say conv "fail"
wait_for conv '⎿ failed \(exit 3\)' 10000
ok $? "a failed call's card says so, with the exit code"
say conv "overrun"
wait_for conv 'Tool said: timed out after 1 s' 10000
ok $? "a call past its limit times out"
S=$(screen conv)
like "$S" "⎿ timed out in 1\.[0-9] s" "its card says timed out"
like "$S" "    before-the-limit" "with the output's tail"
like "$S" "    hint: process [0-9]+ \(sleep 30\) was sleeping" "and the hint"
say conv "ponder"
wait_for conv 'Pondered and answered' 10000
ok $? "a turn with thinking"
like "$($TM capture-pane -e -p -J -S -300 -t conv)" $'\e\\[2m✻ Let me weigh this first' "the thinking is shown dimmed"

# --- Model output with escape sequences does not change the terminal's state.
say conv "escape"
wait_for conv 'bell \^G done' 10000
ok $? "escape sequences are shown in caret notation"
like "$(screen conv)" 'colour \^\[\[31mRED\^\[\[0m title \^\[\]0;pwned' "colour and title sequences are shown, not obeyed"
is "$($TM display -p -t conv '#{alternate_on} #{cursor_flag}')" "0 1" "no alternate screen, cursor still shown"
unlike "$($TM display -p -t conv '#{pane_title}')" "pwned" "the title is not set"
like "$(screen conv)" "Esc interrupts" "the screen was not cleared"

# --- The end of a session offers the changes; apply them.
key conv C-d
wait_for conv 'd show the diff' 5000
ok $? "Ctrl-D: the changes are offered"
like "$(screen conv)" "added +one.txt" "and listed"
key conv d
wait_for conv '\+ran-one' 5000
ok $? "d shows the diff"
# A key typed before the question is asked again is thrown away: wait for it.
wait_count conv 'a apply them' 2 5000
key conv a
wait_for conv 'EXIT=0' 5000
ok $? "a applies them and ward exits 0"
is "$(cat "$T_TMP/ws-conv/one.txt" 2>/dev/null)" "ran-one" "the change reached the workspace"
is "$(cat "$T_TMP/conv.after")" "$(cat "$T_TMP/conv.before")" "the terminal is as it was"

# --- The question at the end flags what the user's tools would run: a new
# repository's .git (not applied by a) and an .envrc (applied).
start plant --approve auto
say plant "plant"
wait_for plant 'Tool said' 10000
key plant C-d
wait_for plant 'a apply them' 5000
like "$(screen plant)" "added +sub/\.git/ and the [0-9]+ entries below it +⚑ under \.git: not applied" \
	"the apply question marks the new .git: not applied"
like "$(screen plant)" "added +\.envrc +⚑ direnv runs it" "and flags the .envrc"
key plant a
wait_for plant 'EXIT=0' 5000
like "$(screen plant)" "Not applied: [0-9]+ changes under \.git" "a: says what it left out"
[ ! -e "$T_TMP/ws-plant/sub/.git" ] && [ -e "$T_TMP/ws-plant/sub/s.txt" ] && [ -e "$T_TMP/ws-plant/.envrc" ]
ok $? "a applies the rest (.envrc, sub/s.txt), not sub/.git"

# --- Approvals: y, n (with a reason), a; the gate records each decision.
start gate --approve ask
say gate "run alpha"
wait_for gate 'needs your approval' 10000
ok $? "a bash call asks for approval"
like "$(screen gate)" "echo ran-alpha > alpha.txt; echo ran-alpha" "the call is shown in full"
key gate y
wait_for gate 'Tool said: ran-alpha' 10000
ok $? "y: it ran"
say gate "run beta"
wait_count gate 'needs your approval' 2 10000
key gate n
wait_for gate 'why \(Enter to skip\)' 5000
ok $? "n: a reason is asked for"
say gate "not now"
wait_for gate 'Tool said: refused by the user: not now' 10000
ok $? "n: the model is told it was refused, and why"
say gate "run gamma"
wait_count gate 'needs your approval' 3 10000
key gate a
wait_for gate 'Tool said: ran-gamma' 10000
ok $? "a: it ran"
say gate "run delta"
wait_for gate 'Tool said: ran-delta' 10000
ok $? "after a, the same command prefix runs without asking"
is "$(count gate 'needs your approval')" 3 "three questions in all"
J=$(journal gate)
like "$J" '"decision":"allow","why":"approved once by the user"' "journal: y"
like "$J" '"decision":"deny","why":"refused by the user: not now"' "journal: n, with the reason"
like "$J" "\"decision\":\"allow\",\"why\":\"approved by the user, and from now on 'bash:echo' and 'bash:echo \*'\"" "journal: a, with the rules"
like "$J" "\"decision\":\"allow\",\"why\":\"allowed by the rule --allow 'bash:echo \*'\"" "journal: the rule allowed the next call"

# Typeahead is thrown away before a question: a y typed early answers nothing.
say gate "slowrun"
sleep 0.2
key gate y
wait_for gate 'printf slow > slow.txt$' 10000
ok $? "the slow call's question is shown"
sleep 1
unlike "$(screen gate | tail -3)" "→ yes" "the y typed before the question did not answer it"
key gate n
wait_count gate 'why \(Enter to skip\)' 2 5000
key gate Enter
wait_count gate 'Tool said: refused by the user' 2 10000
ok $? "the question's own answer did"
say gate "bignote"
wait_count gate 'needs your approval' 5 10000
ok $? "a big write asks"
like "$(screen gate)" "… cut here: [0-9]+ more bytes not shown" "its long value is cut in the question, and the cut marked"
key gate Escape
wait_for gate '■ refused: the user stopped the turn' 5000
ok $? "esc at a question stops the turn"
like "$(journal gate)" '"tool":"write","decision":"abort"' "journal: the abort"
say gate "/approve auto"
wait_for gate 'Approvals: auto' 5000
ok $? "/approve changes the mode"
say gate "/diff"
wait_for gate '\+ran-delta' 5000
ok $? "/diff shows the changes so far"
unlike "$(screen gate)" '\+ran-beta' "and not the refused call's"
GID=$(session_of gate)
key gate C-d
wait_for gate 'd show the diff' 5000
key gate k
wait_for gate 'EXIT=0' 5000
ok $? "k keeps the changes and ward exits"
like "$("$WARD" diff "$GID")" '\+ran-delta' "ward diff shows them afterwards"
[ ! -e "$T_TMP/ws-gate/delta.txt" ]
ok $? "the workspace is untouched"

# --- A question left unanswered: the message's deadline still holds.
start late --approve ask --deadline 2s
say late "run late"
wait_for late 'needs your approval' 10000
T0=$(now_ms)
wait_for late 'no answer before the deadline' 4000
ok $? "no answer before the deadline: the call is refused"
lt $(($(now_ms) - T0)) 3000 "at the deadline (2 s), not later"
wait_for late '■ deadline' 3000
ok $? "and the turn stops at the deadline"
key late C-d
wait_for late 'EXIT=0' 5000

# --- Esc during `sleep 107`: cancelled in the box within a second.
start esc --approve auto
say esc "sleep"
for _ in $(seq 100); do sleeper && break; sleep 0.05; done
sleeper
ok $? "the call's sleep runs in the box"
wait_for esc 'bash [0-9.]+s · esc to interrupt' 3000
ok $? "the live line shows the call and its time"
T0=$(now_ms)
key esc Escape
wait_for esc '⎿ cancelled' 3000
T1=$(now_ms)
ok $? "the card shows cancelled"
lt $((T1 - T0)) 1000 "within 1 s of Esc"
echo "# Esc to the cancelled card: $((T1 - T0)) ms"
for _ in $(seq 20); do sleeper || break; sleep 0.05; done
sleeper
ok $((!$?)) "the call's process is gone within 1 s"
sleep 0.5
like "$(journal esc)" '"outcome":"cancelled"' "the journal records the cancelled result"
like "$(screen esc)" "■ cancelled: interrupted by the user \(Esc\)" "the turn stopped and says why"
say esc "hello after"
wait_for esc 'You said: hello after' 10000
ok $? "the next message works"
is "$("$WARD" box exec "s-$(session_of esc)" -- sh -c 'test -e /workspace/canary-tui && echo made || echo absent' 2>&1)" \
	absent "the canary was never made"

# A second Ctrl-C does not wait for the cancelled call: its result is
# "unknown", and the conversation goes on.
say esc "sleep"
for _ in $(seq 100); do sleeper && break; sleep 0.05; done
wait_count esc 'bash [0-9.]+s · esc to interrupt' 1 3000
$TM send-keys -t esc C-c C-c
wait_for esc '⎿ unknown' 3000
ok $? "Ctrl-C twice during a call: the card says unknown"
for _ in $(seq 20); do sleeper || break; sleep 0.05; done
sleeper
ok $((!$?)) "the call's process is gone within 1 s all the same"
say esc "hello twice"
wait_for esc 'You said: hello twice' 10000
ok $? "the next message works"
like "$(tail -1 "$LOG")" 'outcome unknown: ward stopped waiting for this call' "the model was told the call's outcome is unknown"

# --- Esc while the model streams: stopped at once, partial text kept and marked.
say esc "stream"
wait_for esc 'word3' 10000
key esc Escape
wait_for esc '\[interrupted: the partial answer is kept\]' 2000
ok $? "the stream stops and the partial text is marked"
N1=$(screen esc | grep -o 'word[0-9]*' | wc -l)
sleep 1
N2=$(screen esc | grep -o 'word[0-9]*' | wc -l)
is "$N2" "$N1" "no more text arrives"
like "$(journal esc)" '"text":"Streaming slowly: word0 [^"]*"}\],"partial":true' "the journal keeps the partial text, marked partial"

# --- Ctrl-C twice at the prompt exits, the terminal restored; resume works.
ID=$(session_of esc)
key esc C-c
wait_for esc 'Ctrl-C again to exit' 3000
ok $? "a first Ctrl-C says how to exit"
key esc C-c
wait_for esc 'EXIT=0' 5000
ok $? "a second Ctrl-C exits"
is "$(cat "$T_TMP/esc.after")" "$(cat "$T_TMP/esc.before")" "the terminal's settings are as they were"
like "$(cat "$T_TMP/esc.after-a")" " icanon .* echo " "canonical mode and echo are on"
start again --approve auto --resume "$ID"
like "$(screen again)" "Resumed session $ID" "the session resumes"
key again Up
wait_for again '› stream$' 3000
ok $? "Up brings back the last message of an earlier session (history)"
key again C-u
$TM set-buffer -b p "$(printf 'line one\nline two\nline three')"
$TM paste-buffer -p -b p -t again
wait_for again '\[pasted text #1, 3 lines\]' 3000
ok $? "a paste of several lines is one piece"
key again Enter
wait_for again 'You said: line one line two line three' 10000
ok $? "and is sent whole"
like "$(tail -1 "$LOG")" '"text": "line one\\nline two\\nline three"' "with its newlines"
say again 'first part\'
say again "second part"
wait_for again 'You said: first part second part' 10000
ok $? "a line ending in \\ goes on to the next"
like "$(tail -1 "$LOG")" '"text": "first part\\nsecond part"' "as one message"
say again "hello again"
wait_for again 'You said: hello again' 10000
ok $? "and answers"
like "$(tail -1 "$LOG")" '"text": "hello after"' "with the earlier conversation in the request"
key again C-d
wait_for again 'EXIT=0' 5000
ok $? "Ctrl-D exits"

# --- The slash commands.
mkdir -p "$T_TMP/ws-slash"; printf 'SLASH-RULE: be brief.\n' >"$T_TMP/ws-slash/AGENTS.md"
start slash --approve auto
say slash "/help"
wait_for slash '/resume \[N\|ID\]' 3000
ok $? "/help lists the commands"
say slash "note"
wait_for slash 'Tool said: created' 10000
say slash "/box"
wait_for slash 'memory 1024 MiB \(cgroup\), processes 512 \(cgroup\)' 3000
ok $? "/box shows the box's state and limits"
say slash "/box recreate"
wait_for slash 'New box s-' 10000
ok $? "/box recreate makes a new box"
say slash "/diff"
wait_for slash '\+a note' 3000
ok $? "the changes survive it"
say slash "/cost"
wait_for slash '^[0-9]+ tokens in, [0-9]+ out' 3000
ok $? "/cost gives the tokens"
say slash "/status"
wait_for slash 'project instructions: AGENTS.md \(22 bytes, sha256 [0-9a-f]{12}…, from the workspace\)' 3000
ok $? "/status names the project instruction files loaded, with their size and hash"
like "$(grep -c 'SLASH-RULE' "$LOG")" '^[1-9]' "and the session's requests carry them"
say slash "/clear"
wait_for slash 'The conversation starts again' 3000
say slash "hi"
wait_for slash 'You said: hi' 10000
is "$(tail -1 "$LOG" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["body"]["messages"]))')" 1 "/clear: the next request has only the new message"
say slash "/apply"
wait_for slash 'Applied 1 change' 5000
ok $? "/apply applies the changes"
is "$(cat "$T_TMP/ws-slash/note.txt" 2>/dev/null)" "a note" "and they are in the workspace"
say slash "/resume"
wait_for slash 'Continue one with /resume N' 3000
ok $? "/resume lists the sessions"
like "$(screen slash)" " $ID +done +sleep" "with how each ended and what it was asked"
say slash "/resume $ID"
wait_for slash "Resumed session $ID" 10000
ok $? "/resume ID continues one"
say slash "and more"
wait_for slash 'You said: and more' 10000
like "$(tail -1 "$LOG")" '"text": "hello after"' "with its conversation"
say slash "/quit"
wait_for slash 'EXIT=0' 5000
ok $? "/quit ends the session"

# --- /compact: by hand; with too few rounds it says so and changes nothing.
start compact --approve auto
say compact "/compact"
wait_for compact 'too few rounds to compact: the conversation has 0 rounds' 5000
ok $? "/compact with nothing to compact says so"
for w in c1 c2 c3; do say compact "run $w"; wait_for compact "Tool said: ran-$w" 10000 >/dev/null; done
N0=$(wc -l <"$LOG")
say compact "/compact"
wait_for compact 'compacted: [0-9]+ messages replaced by a summary \(asked for by hand\)' 10000
ok $? "/compact replaces the middle with a summary, and says so in one line"
is "$(( $(wc -l <"$LOG") - N0 ))" 1 "with one request"
is "$(tail -1 "$LOG" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["body"].get("tools") or []))')" 0 "which has no tools"
like "$(journal compact)" '"type":"compaction","reason":"manual"' "the journal has the compaction"
unlike "$(journal compact | tail -1)" '"type":"stop"' "and no stop record for it"
say compact "hi"
wait_for compact 'You said: hi' 10000
like "$(tail -1 "$LOG")" 'summary of the earlier conversation' "the next request carries the summary"
unlike "$(tail -1 "$LOG")" 'c1.txt' "not the replaced round"
like "$(tail -1 "$LOG")" '"text": "run c1"' "the first message is kept"
say compact "/quit"
wait_for compact 'k keep them for later' 5000
key compact k
wait_for compact 'EXIT=0' 5000
ok $? "the session ends"

# --- SIGTERM at the prompt: a clean exit, the terminal restored.
start term
kill -TERM "$(ward_pid term)"
wait_for term 'EXIT=143' 5000
ok $? "SIGTERM ends the session (exit 143)"
is "$(cat "$T_TMP/term.after")" "$(cat "$T_TMP/term.before")" "and the terminal's settings are as they were"

# --- SIGTERM during a call: the same, and the call's process is gone.
start term2 --approve auto
say term2 "sleep"
for _ in $(seq 100); do sleeper && break; sleep 0.05; done
kill -TERM "$(ward_pid term2)"
wait_for term2 'EXIT=143' 5000
ok $? "SIGTERM during a call ends the session (exit 143)"
for _ in $(seq 20); do sleeper || break; sleep 0.05; done
sleeper
ok $((!$?)) "the call's process is gone"
like "$(journal term2)" '"outcome":"unknown","text":"outcome unknown: ward stopped waiting for this call \(cancelled \(SIGTERM\)\)' "the journal has the call's result: unknown"
is "$(cat "$T_TMP/term2.after")" "$(cat "$T_TMP/term2.before")" "the terminal's settings are as they were"

# --- A hangup during a call: the session ends cleanly, the journal intact.
start hup --approve auto
HID=$(session_of hup)
say hup "sleep"
for _ in $(seq 100); do sleeper && break; sleep 0.05; done
HP=$(ward_pid hup)
$TM kill-session -t hup
for _ in $(seq 60); do [ -e /proc/$HP ] || break; sleep 0.05; done
[ -n "$HP" ] && [ ! -e /proc/$HP ]
ok $? "ward exits when its terminal hangs up"
for _ in $(seq 40); do sleeper || break; sleep 0.05; done
sleeper
ok $((!$?)) "the running call's process is gone"
like "$(tail -1 "$SESS/$HID.jsonl")" '"type":"stop","reason":"cancelled"' "the journal ends with the stop"
"$WARD" box ls 2>/dev/null | grep -q "s-$HID"
ok $((!$?)) "the box is gone"
like "$("$WARD" sessions)" "$HID +[0-9-]+ [0-9:]+ +cancelled" "ward sessions reads the journal"

# --- A crash restores the terminal too.
start crash
kill -SEGV "$(ward_pid crash)"
wait_for crash 'EXIT=' 5000
ok $? "ward died of SIGSEGV"
is "$(cat "$T_TMP/crash.after")" "$(cat "$T_TMP/crash.before")" "and the terminal's settings are as they were"

# The status line fits the terminal: cut and marked, never wrapped (80
# columns, a long model name).
$TM new-session -d -x 80 -y 30 -s narrow "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST \
TERM=screen '$WARD' --base-url $URL --model fake-model-with-a-long-name-to-fill-the-status-line \
--workspace $T_TMP/ws-narrow; sleep 600"
mkdir -p "$T_TMP/ws-narrow"
wait_for narrow 'Esc interrupts' 10000
say narrow "hello"
wait_for narrow ' · box ' 10000
SL=$($TM capture-pane -p -t narrow | grep ' · box ' | tail -1)
lt "${#SL}" 81 "the status line fits an 80-column terminal"
like "$SL" "…$" "and marks its cut"
is "$($TM capture-pane -p -t narrow | grep -Ec '(^|^.{0,30} )[0-9]+ in / [0-9]+ out tokens')" 0 "nothing of it wrapped to the next line"

# A key typed the moment the prompt appears belongs to the prompt: Ctrl-D
# sent as soon as "› " is drawn ends the session, every time (libedit draws
# the prompt before it takes the terminal raw; the terminal must not be
# canonical then). Each wait is bounded.
mkdir -p "$T_TMP/keys"
LOST=$(python3 - "$WARD" "$T_TMP/keys" 30 "$FAKE" <<'PY'
import os, pty, select, subprocess, sys, time
ward=sys.argv[1]; work=sys.argv[2]; n=int(sys.argv[3])
ws=os.path.join(work,"ws"); os.makedirs(ws, exist_ok=True)
port=os.path.join(work,"port")
if os.path.exists(port): os.remove(port)
srv=subprocess.Popen(["python3",sys.argv[4],"--scenario","chat","--port-file",port,"--log",os.path.join(work,"log")])
for _ in range(100):
    if os.path.exists(port): break
    time.sleep(0.05)
url="http://127.0.0.1:"+open(port).read()
env=dict(os.environ, XDG_STATE_HOME=os.path.join(work,"st"), ANTHROPIC_API_KEY="x", TERM="xterm")
lost=0
for i in range(n):
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(ward,[ward,"--base-url",url,"--model","fake","--approve","auto","--workspace",ws],env)
    out=b""
    while b"\xe2\x80\xba " not in out:
        r,_,_=select.select([fd],[],[],10)
        if not r: break
        try: out+=os.read(fd,65536)
        except OSError: break
    os.write(fd,b"\x04")
    t1=time.time(); ended=False
    while time.time()-t1<3:
        p,st=os.waitpid(pid, os.WNOHANG)
        if p: ended=True; break
        r,_,_=select.select([fd],[],[],0.05)
        if r:
            try: os.read(fd,65536)
            except OSError: pass
    if not ended:
        lost+=1; os.kill(pid,9); os.waitpid(pid,0)
    os.close(fd)
srv.kill()
print("lost %d of %d" % (lost, n))
PY
)
is "$LOST" "lost 0 of 30" "Ctrl-D sent the moment the prompt is drawn ends the session, every time"

# Config: with --rw the session asks by default, and a project's file may not
# loosen that to edits; the user's own file may.
mkdir -p "$T_TMP/ws-cfgrw/.ward"
printf '{"approve": "edits"}\n' >"$T_TMP/ws-cfgrw/.ward/config.json"
start cfgrw --rw
like "$(screen cfgrw)" "approvals: ask" "--rw: a project file's approve edits does not loosen the session's ask"
like "$(screen cfgrw)" "\"approve\": edits ignored" "and one line says why"
$TM kill-session -t cfgrw
mkdir -p "$XDG_CONFIG_HOME/ward"
printf '{"approve": "edits"}\n' >"$XDG_CONFIG_HOME/ward/config.json"
rm -f "$T_TMP/ws-cfgrw/.ward/config.json"
start cfgrw2 --rw
like "$(screen cfgrw2)" "approvals: edits" "twin: approve edits in the user's file is taken with --rw"
$TM kill-session -t cfgrw2
rm -f "$XDG_CONFIG_HOME/ward/config.json"
# The user's hooks run in the session as in ward run.
cat >"$XDG_CONFIG_HOME/ward/config.json" <<EOF
{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "cat >$T_TMP/tui-hook-start.json"}]}],
           "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat >$T_TMP/tui-hook-prompt.json"}]}],
           "PreToolUse": [{"matcher": "bash|write", "hooks": [{"type": "command",
             "command": "echo 'no tools here' >&2; exit 2"}]}]}}
EOF
start hooked --approve auto
say hooked "hello hooks"
wait_for hooked 'You said: hello hooks' 10000
ok $? "a session with hooks answers"
like "$(cat "$T_TMP/tui-hook-start.json" 2>/dev/null)" '"hook_event_name": *"SessionStart"' "the session ran the SessionStart hook"
like "$(cat "$T_TMP/tui-hook-prompt.json" 2>/dev/null)" '"prompt": *"hello hooks"' "and UserPromptSubmit, with the prompt"
say hooked "note"
wait_for hooked 'no tools here' 10000
ok $? "a PreToolUse hook's exit 2 refuses a call in the session, with its reason"
[ ! -e "$T_TMP/ws-hooked/note.txt" ]; ok $? "and the call did not run"
$TM kill-session -t hooked
rm -f "$XDG_CONFIG_HOME/ward/config.json"

# A project's .mcp.json: asked about once at a terminal, remembered by its
# content's hash; a changed file is asked about again; "no" starts nothing.
WS=$T_TMP/ws-mcp; mkdir -p "$WS"; cp "$(dirname "$0")/../mcp-server.py" "$WS/srv.py"
printf '{"mcpServers": {"p": {"command": "python3", "args": ["/workspace/srv.py"]}}}' >"$WS/.mcp.json"
tstart() { # tstart NAME: ward in the MCP workspace, no waiting
	$TM new-session -d -x 150 -y 50 -s "$1" "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k \
WARD_GUEST=$WARD_GUEST TERM=screen '$WARD' --base-url $URL --model fake-model --workspace $WS; echo EXIT=\$?; sleep 600"
}
tstart mcp1
wait_for mcp1 'starts 1 MCP server in the box' 20000; ok $? "a project's .mcp.json is asked about at a terminal"
like "$(screen mcp1)" 'p +python3 /workspace/srv.py' "its servers' commands are shown"
key mcp1 y
wait_for mcp1 'Esc interrupts' 15000; ok $? "trusted: the session starts"
say mcp1 /mcp
wait_for mcp1 'mcp__p__echo' 5000; ok $? "/mcp lists the server's tools"
like "$(screen mcp1)" 'p \(stdio, .*\): ready' "and its state"
say mcp1 /quit
wait_for mcp1 'EXIT=' 10000; ok $? "the session ends"
tstart mcp2
wait_for mcp2 'Esc interrupts' 15000; ok $? "the approval is remembered: the second session starts"
unlike "$(screen mcp2)" 'starts 1 MCP server' "without asking"
say mcp2 /quit
wait_for mcp2 'EXIT=' 10000
printf '{"mcpServers": {"p": {"command": "python3", "args": ["/workspace/srv.py", "--mode", "stderr-noise"]}}}' >"$WS/.mcp.json"
tstart mcp3
wait_for mcp3 'starts 1 MCP server in the box' 20000; ok $? "a changed .mcp.json is asked about again"
key mcp3 n
wait_for mcp3 'Esc interrupts' 15000; ok $? "declined: the session starts"
say mcp3 /mcp
wait_for mcp3 'No MCP servers' 5000; ok $? "and no server was started"
say mcp3 /quit
wait_for mcp3 'EXIT=' 10000

$TM kill-server 2>/dev/null
kill "$SRV" 2>/dev/null
done_testing
