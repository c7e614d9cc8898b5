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

start() { # start NAME [ward flags]: ward in a new pane (COLS wide, 150 by
	# default), at its first prompt
	local name=$1; shift
	WS=$T_TMP/ws-$name
	mkdir -p "$WS"
	printf 'alpha\n' >"$WS/a.txt"
	printf 'def add(a, b):\n    return a - b\n' >"$WS/calc.py"
	$TM new-session -d -x "${COLS:-150}" -y 50 -s "$name" \
		"stty -g >$T_TMP/$name.before; env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST \
TERM=screen '$WARD' --base-url $URL --model fake-model --workspace $WS $*; echo EXIT=\$?; \
stty -g >$T_TMP/$name.after; stty -a >$T_TMP/$name.after-a; sleep 600"
	wait_for "$name" '^› ?$' 10000
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
session_of() { # the session whose journal's header names NAME's workspace
	grep -l "\"workspace\":\"$T_TMP/ws-$1\"" "$SESS"/*.jsonl 2>/dev/null | head -1 | sed 's|.*/||; s|\.jsonl$||'
}
widest() { # the widest row of NAME's screen, in characters (a row the
	# terminal wrapped is one row here: capture-pane -J joins it)
	screen "$1" | python3 -c 'import sys; print(max([len(l.rstrip("\n")) for l in sys.stdin] or [0]))'
}
escreen() { $TM capture-pane -e -p -J -S -300 -t "$1" 2>/dev/null; }
mlike() { # mlike TEXT REGEX DESCRIPTION: REGEX (Python's, over several lines) in TEXT
	# (grep takes each line of a pattern as a pattern of its own)
	if python3 -c 'import re,sys; sys.exit(0 if re.search(sys.argv[2], sys.argv[1], re.M) else 1)' "$1" "$2"; then
		ok 0 "$3"
	else
		ok 1 "$3"; printf '%s\n' "$1" | tail -c 900 | sed 's/^/#   | /'; echo "#   (no /$2/ in the above)"
	fi
}
journal() { cat "$SESS/$(session_of "$1").jsonl"; }
released() { # released ID MS: 0 once no ward holds session ID's journal
	local until=$(($(now_ms) + $2))
	while [ "$(now_ms)" -lt $until ]; do
		flock -n -x "$SESS/$1.jsonl" true && return 0
		sleep 0.05
	done
	return 1
}
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
# The footer is drawn once the turn has ended: wait for it, not the answer.
wait_for conv 'context left · [0-9]+ tokens' 5000
S=$(screen conv)
like "$S" "Running one\." "turn 1: the model's text"
like "$S" "● bash echo ran-one > one.txt" "turn 1: the call's card: tool and command"
like "$S" "│ ran-one" "turn 1: the card streams the call's output"
like "$S" "⎿ ok \(exit 0\)" "turn 1: the card's result"
like "$S" "fake-model · [0-9]+% context left · [0-9]+ tokens · box ready · auto · session [0-9]" "turn 1: the footer: model, context left, tokens, box, mode"
say conv "count"
wait_for conv 'Tool said: line-1 line-2' 10000
ok $? "turn 2: the answer after the tool's result"
S=$(screen conv)
mlike "$S" "│ line-6
  │ … 29 lines · ctrl-t shows all
  │ line-36" "turn 2: the first rows, the lines between counted, the last rows"
unlike "$S" "│ line-7$" "turn 2: and not those between"
mlike "$S" "│ line-40
  ⎿ ok" "turn 2: the output's end is shown"
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
like "$S" "  ⎿ read a\.txt ok in [0-9.]+ s · read 1 line" "a result of calls side by side says whose it is, and what came back"
like "$S" "  ⎿ read missing\.txt failed" "each of them"
say conv "fail"
wait_for conv '⎿ failed \(exit 3\)' 10000
ok $? "a failed call's card says so, with the exit code"
say conv "overrun"
wait_for conv 'Tool said: timed out after 1 s' 10000
ok $? "a call past its limit times out"
S=$(screen conv)
like "$S" "⎿ timed out in 1\.[0-9] s" "its card says timed out"
like "$S" "│ before-the-limit" "with the output's tail"
is "$(screen conv | grep -c 'before-the-limit$')" 1 "shown once, not again under the result"
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
say gate "run gamma"
wait_count gate 'Tool said: ran-gamma' 2 10000
ok $? "after a, the same command and subcommand run without asking"
is "$(count gate 'needs your approval')" 3 "three questions so far"
# "Always" is the command prefix shown, not every command of its first word.
like "$(screen gate)" 'from now on commands starting with "echo ran-gamma"' "the question named the prefix: the command and its subcommand"
say gate "run delta"
wait_count gate 'needs your approval' 4 10000
ok $? "a command with another subcommand is asked"
key gate 1
wait_for gate 'Tool said: ran-delta' 10000
ok $? "1 at the question: yes"
J=$(journal gate)
like "$J" '"decision":"allow","why":"approved once by the user"' "journal: y"
like "$J" '"decision":"deny","why":"refused by the user: not now"' "journal: n, with the reason"
like "$J" "\"decision\":\"allow\",\"why\":\"approved by the user, and from now on 'bash:echo ran-gamma', 'bash:echo ran-gamma \*' and 'bash:echo ran-gamma > gamma.txt; echo ran-gamma'\"" "journal: a, with the rules (the prefix, and this whole command: it writes a file)"
like "$J" "\"decision\":\"allow\",\"why\":\"allowed by the rule --allow 'bash:echo ran-gamma > gamma.txt; echo ran-gamma'\"" "journal: the rule allowed the next call"

# Typeahead answers no question: a y typed early is kept as the draft.
N0=$(nreq)
say gate "slowrun"
# The message has reached the model (whose answer, the call, comes slowly).
wait_until 5 eval '[ "$(nreq)" -gt "$N0" ]'
key gate y
wait_for gate 'printf slow > slow.txt$' 10000
ok $? "the slow call's question is shown"
sleep 1	# time: a y that would answer the question has had a second to
unlike "$(screen gate | tail -3)" "→ yes" "the y typed before the question did not answer it"
# Arrows and Enter: down twice is "no".
key gate Down; key gate Down
wait_for gate '❯ 3\. No' 3000
ok $? "the arrows move the choice"
key gate Enter
wait_count gate 'why \(Enter to skip\)' 2 5000
ok $? "Enter takes it: no, and why"
key gate Enter
wait_count gate 'Tool said: refused by the user' 2 10000
ok $? "the question's own answer did"
wait_for gate '^› y$' 5000
ok $? "the y typed before the question is the next prompt's draft, intact"
key gate C-u
say gate "bignote"
wait_count gate 'needs your approval' 6 10000
ok $? "a big write asks"
like "$(screen gate)" "\+400 −0" "the question shows the write as a diff: +400 −0"
like "$(screen gate)" "     1 \+ row 0000 of a long file" "with line numbers"
like "$(screen gate)" "… [0-9]+ more changed lines" "cut, with a count, so the question stays on the screen"
unlike "$(screen gate)" "  content:" "not the raw content field"
key gate 3
wait_count gate 'why \(Enter to skip\)' 3 5000
key gate Enter
wait_count gate 'Tool said: refused by the user' 3 10000
say gate "longcmd"
wait_count gate 'needs your approval' 7 10000
like "$(screen gate)" "… cut here: [0-9]+ more bytes not shown" "a long command is cut in the question, and the cut marked"
key gate Escape
wait_for gate '■ refused: the user stopped the turn' 5000
ok $? "esc at a question stops the turn"
like "$(journal gate)" '"tool":"bash","decision":"abort"' "journal: the abort"
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
# 7. A resumed session keeps the approval mode last chosen (auto, above).
start gate2 --resume "$GID"
like "$(screen gate2)" "approvals: auto" "--resume keeps the approval mode chosen with /approve"
$TM kill-session -t gate2
# The killed ward lets go of the session (its journal's lock) as it ends; a
# ward resuming it before then is told it is open in another.
released "$GID" 20000
ok $? "the killed ward lets go of the session"
start gate3 --approve ask --resume "$GID"
like "$(screen gate3)" "approvals: ask" "twin: --approve on the command line is over it"
$TM kill-session -t gate3
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
wait_until 5 eval 'journal esc | grep -q "\"outcome\":\"cancelled\""'
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
sleep 1	# time: more words would have come within it
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
# 7. It shows the last exchanges, collapsed, and keeps the running totals.
mlike "$(screen again)" "› hello twice
You said: hello twice" "--resume shows the last exchanges"
like "$(screen again)" "── resumed here ──" "and where the session resumed"
like "$(screen again | grep '^fake-model · ' | tail -1)" " · [1-9][0-9]* tokens · " "the footer's totals go on from the session's"
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
key again Up
wait_for again '› line one' 3000
ok $? "history keeps a paste as its text, not its tag"
key again C-u
$TM set-buffer -b p "two
lines
"
$TM paste-buffer -p -b p -t again
wait_for again '\[pasted text #1, 2 lines\]' 3000
ok $? "a paste that ends with a newline counts its lines right"
key again C-u
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

# --- Issue 26: the session at the level of the peers, item by item, at
# 120 and 40 columns where the width matters.
for W in 120 40; do
	COLS=$W start "md$W" --approve auto
	# 1. Markdown is rendered, not shown as source.
	say "md$W" "markdown"
	wait_for "md$W" 'All tests pass now' 10000
	ok $? "$W: a markdown answer arrives"
	S=$(screen "md$W"); E=$(escreen "md$W")
	unlike "$S" '# Plan|\*\*what I found\*\*|```|\|------' "$W: no markdown source on the screen (#, **, fences, table rules)"
	like "$E" $'\e\\[1;4mPlan' "$W: the heading is bold and underlined"
	like "$E" $'\e\\[1mwhat' "$W: strong text is bold"
	like "$S" "• the bug is in add" "$W: a list has bullets"
	like "$S" "  ◦ and mul too" "$W: a nested item is indented"
	mlike "$S" "╭─ python
│ def add\\(a, b\\):  # fixed" "$W: a code block is set apart, its language named"
	like "$E" $'\e\\[35mdef' "$W: and lightly coloured"
	mlike "$S" "link\\s\\(https://example\\.com/docs\\)" "$W: a link shows its URL, after its text"
	like "$S" "│ All tests pass now\\." "$W: a block quote is barred"
	like "$S" "┌─+┬" "$W: a table is drawn"
	lt "$(widest "md$W")" "$((W + 1))" "$W: nothing is wider than the terminal (the table fits, cells wrap)"
	# Streamed in small pieces, nothing is printed twice.
	say "md$W" "markdown slow"
	wait_count "md$W" 'All tests pass now' 2 20000
	is "$(count "md$W" 'the bug is in add')" 2 "$W: streamed slowly, each line once per answer"
	is "$(count "md$W" '^Plan$')" 2 "$W: the heading once per answer"
	# 2. An edit's card is its diff; a write's too.
	say "md$W" "editcalc"
	wait_for "md$W" 'Tool said: edited' 10000
	S=$(screen "md$W")
	like "$S" "  \\+1 −1" "$W: the edit's card counts what it changed"
	mlike "$S" "      2 -     return a - b
      2 \\+     return a \\+ b" "$W: and shows it as a diff with line numbers"
	say "md$W" "writecalc"
	wait_for "md$W" 'Tool said: replaced' 10000
	like "$(screen "md$W")" "  \\+4 −0" "$W: a write's card is its diff against the file before"
	# 4. Long output: cut by rows, head and tail; Ctrl-T shows it all.
	say "md$W" "longout"
	wait_for "md$W" 'Tool said: 1 2 3' 10000
	S=$(screen "md$W")
	mlike "$S" "│ 6
  │ … 4,989 lines · ctrl-t shows all
  │ 4996" "$W: seq 1 5000 shows its head and its tail, the rest counted"
	mlike "$S" "│ 5000
  ⎿ ok" "$W: its end is on the card"
	unlike "$S" "│ 7$" "$W: not what is between"
	key "md$W" C-t
	wait_for "md$W" '⎿ the whole output of bash seq 1 5000' 5000
	ok $? "$W: Ctrl-T at the prompt shows the last call's whole output"
	wait_for "md$W" '│ 4900$' 5000
	ok $? "$W: what the card left out included"
	say "md$W" "longline"
	wait_for "md$W" 'Tool said: x' 10000
	S=$(screen "md$W")
	like "$S" "… [0-9,]+ rows of this line · ctrl-t" "$W: a 50,000-character line is cut by rows"
	like "$S" "│ after-the-line" "$W: and what came after it is shown"
	lt "$(widest "md$W")" "$((W + 1))" "$W: no row is wider than the terminal (the gutter holds)"
	is "$(screen "md$W" | sed -n '/● bash head -c 50000/,/⎿/p' | wc -l)" 14 "$W: the card takes 14 rows, not 417"
	# 5. Cards say what came back.
	say "md$W" "grepit"
	wait_for "md$W" 'Tool said: a.txt' 10000
	like "$(screen "md$W")" "⎿ ok in [0-9.]+ s · 1 match in 1 file" "$W: a grep's card counts its matches"
	# 12. A failed command's output once; colours from a command as colours.
	say "md$W" "fail"
	wait_for "md$W" '⎿ failed \(exit 3\)' 10000
	is "$(screen "md$W" | grep -Ec '^ +(│ )?oops$')" 1 "$W: a failed command's output is shown once"
	say "md$W" "colours"
	wait_for "md$W" 'Tool said: \^\[\[31mred-word' 10000
	E=$(escreen "md$W")
	like "$E" $'\e\\[31m(\e\\[49m)?red-word' "$W: a command's colour is shown as a colour"
	like "$E" 'plain \^\[\[2Jcleared' "$W: its other escapes are neutralised"
	unlike "$E" $'\e\\[41m' "$W: and no background colour is set (text cannot hide in it)"
	# 10. The footer: live, laid out to the width.
	F=$(screen "md$W" | grep '^fake-model · ' | tail -1)
	like "$F" "^fake-model · [0-9]+% context left" "$W: the footer gives the model and the context left"
	[ -n "$F" ] && [ "${#F}" -lt "$W" ]
	ok $? "$W: and fits the width (${#F} columns)"
	key "md$W" C-d
	wait_for "md$W" 'EXIT=|d show the diff' 5000
	key "md$W" k
	$TM kill-session -t "md$W"
done

# 3. Esc at the prompt is harmless: the next key is not eaten.
start esc2 --approve auto --retries 1	# one retry: a stream cut every time stops the turn soon
key esc2 Escape
say esc2 "Hello"
wait_for esc2 'You said: Hello' 10000
ok $? "Esc at an empty prompt, then Hello: Hello arrives whole"
say esc2 "stream"
wait_for esc2 'word3' 10000
key esc2 Escape
wait_for esc2 '\[interrupted' 3000
say esc2 "World"
wait_for esc2 'You said: World' 10000
ok $? "after Esc stopped a turn: World arrives whole"
# Esc and a key typed right after it, while the model works: the turn
# stops, and the key is the next prompt's, not Meta with the Esc.
say esc2 "stream"
wait_count esc2 'word2' 2 10000
$TM send-keys -t esc2 Escape L a t e r
wait_count esc2 '\[interrupted' 2 3000
ok $? "Esc with a key right after it stops the turn"
wait_for esc2 '^› Later$' 3000
ok $? "and the key after it is kept whole"
key esc2 C-u
$TM send-keys -t esc2 -l "junk"
key esc2 Escape; key esc2 Escape
say esc2 "clean"
wait_for esc2 'You said: clean' 10000
ok $? "Esc twice clears the line"
like "$(tail -1 "$LOG")" '"text": "clean"' "and what was on it is gone"
# 6. Typeahead: shown while the model works, kept for the prompt.
say esc2 "stream"
wait_count esc2 'word2' 3 10000
$TM send-keys -t esc2 -l "next idea"
wait_for esc2 '^› next idea$' 3000
ok $? "what is typed during a turn is shown as a draft"
key esc2 Escape
wait_count esc2 '\[interrupted' 3 3000
wait_for esc2 '^› next idea$' 3000
ok $? "and it is the next prompt's, intact"
key esc2 C-u
# 12. A Ctrl-D typed during a turn does not end the session.
say esc2 "sleep"
wait_for esc2 'esc to interrupt' 5000
key esc2 C-d
key esc2 Escape
wait_for esc2 '⎿ cancelled' 5000
wait_for esc2 "■ cancelled" 3000
key esc2 C-u
say esc2 "still here"
wait_for esc2 'You said: still here' 10000
ok $? "a Ctrl-D typed during a turn did not end the session"
# Ctrl-C on a line with text clears it; it takes two on an empty line to exit.
$TM send-keys -t esc2 -l "half typed"
key esc2 C-c
wait_for esc2 '\(cleared' 3000
ok $? "Ctrl-C on a line with text clears it"
say esc2 "after clear"
wait_for esc2 'You said: after clear' 10000
ok $? "and the session goes on"
# 8. Keys and commands.
$TM send-keys -t esc2 -l "first"; key esc2 C-j; $TM send-keys -t esc2 -l "second"; key esc2 Enter
wait_for esc2 'You said: first second' 10000
like "$(tail -1 "$LOG")" '"text": "first\\nsecond"' "Ctrl-J: a newline in the message"
$TM send-keys -t esc2 -l "alpha"; key esc2 M-Enter; $TM send-keys -t esc2 -l "beta"; key esc2 Enter
wait_for esc2 'You said: alpha beta' 10000
like "$(tail -1 "$LOG")" '"text": "alpha\\nbeta"' "Alt-Enter: a newline too"
$TM send-keys -t esc2 -l "one"; key esc2 C-j; key esc2 BSpace
$TM send-keys -t esc2 -l "X"; key esc2 Enter
wait_for esc2 'You said: oneX' 10000
ok $? "Backspace on an empty second line goes back to edit the first"
$TM send-keys -t esc2 -l "/hel"; key esc2 Tab
wait_for esc2 '^› /help $' 3000
ok $? "Tab completes a command"
key esc2 Enter
wait_for esc2 '/retry +send the conversation again' 3000
$TM send-keys -t esc2 -l "look at @a."; key esc2 Tab
wait_for esc2 '^› look at @a\.txt $' 3000
ok $? "Tab completes an @path from the workspace"
key esc2 Enter
wait_for esc2 'You said: look at @a.txt' 10000
like "$(screen esc2)" "⎘ attached a\\.txt \\(1 line\\)" "@path attaches the file, and says so"
like "$(tail -1 "$LOG")" 'The file a.txt \(attached with @a.txt\):\\n```\\nalpha' "the request carries its contents"
say esc2 "look at @no-such.txt"
wait_for esc2 '@no-such.txt: no such file in the workspace; sent as written' 10000
ok $? "twin: an @path that is no file is sent as written, and said"
say esc2 "!ls /workspace/a.txt && echo from-the-box"
wait_for esc2 '│ from-the-box' 10000
ok $? "!cmd runs a command in the box, shown as a card"
like "$(journal esc2)" '"type":"intent",.*"input":\{"command":"ls /workspace/a.txt && echo from-the-box"\},"by":"user"' "journaled as the person's call"
say esc2 "what now"
wait_for esc2 'You said: what now' 10000
like "$(tail -1 "$LOG")" 'I ran this command in the box myself' "and the model is told what it printed"
say esc2 "/model other-model"
wait_for esc2 'Model: other-model from the next message' 3000
say esc2 "hi model"
wait_for esc2 'You said: hi model' 10000
like "$(tail -1 "$LOG")" '"model": "other-model"' "/model switches the model of the next request"
say esc2 "/config"
wait_for esc2 'ward config. shows every setting' 3000
ok $? "/config shows the settings in force"
say esc2 "/init"
wait_for esc2 'You said: Look at this project' 10000
like "$(tail -1 "$LOG")" 'write AGENTS.md' "/init asks the model to write AGENTS.md"
# 11. Errors: the key, the URL, /retry.
say esc2 "flaky"
wait_for esc2 'Check ANTHROPIC_API_KEY: the key for anthropic at http' 10000
ok $? "a 401 points at ANTHROPIC_API_KEY"
say esc2 "/retry"
wait_for esc2 'Flaky worked the second time' 10000
ok $? "/retry resends the message that failed"
is "$(tail -1 "$LOG" | python3 -c 'import json,sys; m=json.load(sys.stdin)["body"]["messages"]; print(sum(1 for x in m if x["role"]=="user" and any(b.get("text")=="flaky" for b in x["content"] if isinstance(b, dict))))')" 1 "once in the conversation"
say esc2 "overload"
wait_for esc2 'Answered after the overload' 15000
like "$(screen esc2)" "↻ .*retry 1 in" "a retry says which it is"
say esc2 "cutmid"
wait_for esc2 'The beginning of an answer' 15000
wait_for esc2 '/retry sends your message again' 15000
ok $? "a stream cut mid-answer stops the turn, and says /retry"
# Whether what it showed is in the conversation is said as the journal has it.
if journal esc2 | tail -4 | grep -q '"text":"The beginning of an answer[^"]*"}\],"partial":true'; then
	unlike "$(screen esc2)" 'not in the conversation' "the cut answer is kept, and nothing says otherwise"
else
	like "$(screen esc2)" 'The partial answer above is not in the conversation' "the cut answer is not kept, and that is said"
fi
key esc2 C-d
wait_for esc2 'EXIT=0|d show the diff' 5000
key esc2 k
wait_for esc2 'EXIT=0' 5000

# Ctrl-Z suspends ward in a shell with job control; fg brings it back.
mkdir -p "$T_TMP/ws-jobs"
$TM new-session -d -x 120 -y 30 -s jobs "env -i PATH=$PATH HOME=$HOME XDG_STATE_HOME=$XDG_STATE_HOME \
XDG_CONFIG_HOME=$XDG_CONFIG_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST TERM=screen PS1='sh\$ ' bash --norc --noprofile -i"
wait_for jobs 'sh\$ $' 5000
$TM send-keys -t jobs -l "'$WARD' --base-url $URL --model fake-model --approve auto --workspace $T_TMP/ws-jobs"
key jobs Enter
wait_for jobs '^› ?$' 10000
key jobs C-z
wait_for jobs 'Stopped' 5000
ok $? "Ctrl-Z suspends ward: the shell has it as a stopped job"
$TM send-keys -t jobs -l "fg"; key jobs Enter
wait_count jobs '^› ?$' 2 5000
say jobs "back again"
wait_for jobs 'You said: back again' 10000
ok $? "fg brings it back, and the session goes on"
key jobs C-d
wait_for jobs 'Continue it with' 5000
$TM kill-session -t jobs

# 9. Narrow terminals: the spinner does not leave a line each tick.
COLS=40 start sp40 --approve auto
say sp40 "sleep"
wait_for sp40 'esc to interr' 5000
sleep 3	# time: the spinner ticks for 3 s
is "$(count sp40 'esc to')" 1 "40 columns, 3 s of a running call: one live line"
lt "$(widest sp40)" 41 "and nothing wrapped"
key sp40 Escape
wait_for sp40 '⎿ cancelled' 5000
say sp40 "/help"
wait_for sp40 'Ctrl-Z suspends' 5000
lt "$(widest sp40)" 41 "/help at 40 columns: wrapped at words, nothing wider"
like "$(screen sp40)" "^  /retry$" "each command on a line of its own there"
$TM kill-session -t sp40

# 12. A refused call says why once.
start refuse --approve auto --deny 'bash:echo*'
say refuse "run x"
wait_for refuse 'Tool said: denied' 10000
is "$(count refuse "denied by the rule --deny 'bash:echo\*'")" 2 "the refusal is said once on the card (and once by the model)"
$TM kill-session -t refuse

# 11. A refused connection names the URL.
$TM new-session -d -x 120 -y 30 -s nourl "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST \
TERM=screen '$WARD' --base-url http://127.0.0.1:9 --model fake-model --retries 0 --workspace $T_TMP/ws-nourl; sleep 600"
mkdir -p "$T_TMP/ws-nourl"
wait_for nourl '^› ?$' 10000
say nourl "hello"
wait_for nourl 'Could not reach http://127.0.0.1:9' 15000
ok $? "a refused connection names the URL"
$TM kill-session -t nourl

# 6. Keys typed before the first prompt wait for it, and leave the banner whole.
mkdir -p "$T_TMP/ws-early"
$TM new-session -d -x 120 -y 30 -s early "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST \
TERM=screen '$WARD' --base-url $URL --model fake-model --workspace $T_TMP/ws-early; echo EXIT=\$?; sleep 600"
$TM send-keys -t early -l "typed early"
wait_for early '^› typed early$' 10000
ok $? "keys typed while ward starts are the first prompt's"
like "$(screen early)" "^ward · fake-model · workspace" "and the banner is whole"
$TM kill-session -t early

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

# The footer fits the terminal: fields left out, never wrapped (80
# columns, a long model name); the banner wraps at words.
$TM new-session -d -x 80 -y 30 -s narrow "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST \
TERM=screen '$WARD' --base-url $URL --model fake-model-with-a-long-name-to-fill-the-status-line \
--workspace $T_TMP/ws-narrow; sleep 600"
mkdir -p "$T_TMP/ws-narrow"
wait_for narrow '^› ?$' 10000
say narrow "hello"
wait_for narrow 'You said: hello' 10000
SL=$($TM capture-pane -p -t narrow | grep 'fake-model-with-a-long-name-to-fill-the-status-line ·' | tail -1)
lt "${#SL}" 80 "the footer fits an 80-column terminal"
like "$SL" "context left" "and keeps what fits"
lt "$(widest narrow)" 80 "nothing on the screen wrapped (the banner and notes wrap at words)"
like "$(screen narrow)" "^  (/[^ ]*|\(copy-on-write\))" "the banner went on at a word, indented"

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

# Subagents: each child of the task tool is a card. A replayed parent
# starts two children in its first message (their cards closed: one row
# each while they run, then how each ended), one in its second (Ctrl-O
# opens the cards: its calls listed), and one in its third, interrupted.
AR=$T_TMP/agent-scripts; mkdir -p "$AR"
achild() { # achild NAME COMMAND: one bash call, then its answer
	python3 -c 'import json,sys; print(json.dumps({"turns": [{"tools": [{"name": "bash", "input": {"command": sys.argv[2]}}]}, {"text": sys.argv[1] + " finished"}]}))' "$1" "$2" >"$AR/$1.json"
}
atask() { printf '{"name": "task", "input": {"prompt": "do %s", "description": "%s", "model": "replay:%s.json"}}' "$1" "$2" "$1"; }
achild c1 "sleep 2.5; echo one >/workspace/f1.txt"
achild c2 "sleep 2.5; echo two >/workspace/f2.txt"
achild c3 "echo first; sleep 2.5; echo three >/workspace/f3.txt # "$'\e]0;pwned\a'
achild c4 "sleep 101.$$; touch /workspace/canary"
cat >"$AR/parent.json" <<J
{"turns": [{"tools": [$(atask c1 "the first part"), $(atask c2 "the second part")]}, {"text": "both parts done"},
 {"tools": [$(atask c3 "the third part")]}, {"text": "third part done"},
 {"tools": [$(atask c4 "a long part")]}, {"text": "not reached"}]}
J
start agents --model "replay:$AR/parent.json" --approve auto
say agents "go"
wait_count agents '▸ a[12] the (first|second) part · bash sleep 2\.5' 2 10000
ok $? "two children at once: each its own card while it runs (its id, description and current call)"
like "$(screen agents)" 'ctrl-o opens or closes the subagents' "the cards say which key opens them"
wait_for agents 'both parts done' 20000; ok $? "the parent goes on when its children end"
S=$(screen agents)
like "$S" '✓ a1 the first part · done · 1 call · (\$[0-9.]+|[0-9]+ tokens) · [0-9.]+s' "a1's card: how it ended, its calls, its spend and time"
like "$S" '✓ a2 the second part · done · 1 call' "a2's card too"
unlike "$S" '│ ✓ bash sleep 2\.5; echo one' "closed (the default): a card is one row, its calls not listed"
unlike "$S" '▸ a[12] ' "no running card is left once they ended"
say agents /diff
wait_for agents 'f2\.txt' 5000; ok $? "both children's files are in the session's workspace changes"
say agents "again"
wait_for agents '▸ a1 the third part · bash echo first' 10000; ok $? "the second message's child runs (a1 again: a turn's own)"
key agents C-o
wait_for agents '▾ a1 the third part' 5000; ok $? "Ctrl-O while it runs opens its card"
wait_for agents '    │ ● bash echo first; sleep 2\.5' 5000; ok $? "an open card shows the call it is making"
wait_for agents 'third part done' 20000; ok $? "its turn ends"
S=$(screen agents)
like "$S" '✓ a1 the third part · done · 1 call' "its card is committed with how it ended"
like "$S" '    │ ✓ bash echo first; sleep 2\.5; echo three' "open: its calls listed, each with its outcome"
like "$S" '    ⎿ c3 finished' "and the first line of its answer"
like "$S" 'f3\.txt # \^\[\]0;pwned\^G' "a child's words on its card: a title sequence shown, not obeyed"
unlike "$($TM display -p -t agents '#{pane_title}')" "pwned" "(the title is not set)"
say agents /agents
wait_count agents '✓ a1 the third part · done' 2 5000; ok $? "/agents shows the last turn's child again"
say agents /help
wait_for agents 'Ctrl-O opens or closes the subagents' 5000; ok $? "/help names the key"
say agents "long"
wait_for agents '▾ a1 a long part · bash sleep 101' 10000; ok $? "a third child runs (its card open: Ctrl-O holds)"
key agents Escape
wait_for agents '✗ a1 a long part · (cancelled|cut off)' 15000; ok $? "Esc: its card says it was cut off"
wait_for agents '^› ?$' 10000
[ -z "$(pgrep -f "^sleep 101\.$$\$")" ]; ok $? "and its command is gone"
say agents /quit
wait_for agents 'k keep them for later' 10000
key agents k
wait_for agents 'EXIT=0' 10000; ok $? "the session ends"

# Screenshots of a session, as a test's artifacts (PNG, drawn from what
# tmux captured with its colours): a markdown answer; an edit's diff and a
# long output cut at its head and tail; an approval with its diff.
ART=${WARD_ARTIFACTS:-$T_TMP/artifacts}
mkdir -p "$ART"
# Debian's python3 has python3-pil; another python3 on the PATH may not.
PIL_PY=$(for p in python3 /usr/bin/python3; do $p -c 'import PIL' 2>/dev/null && { echo "$p"; break; }; done)
if [ -n "$PIL_PY" ]; then
	shot() { # shot NAME FILE: the pane as it is now, to ART/FILE.png
		$TM capture-pane -e -p -t "$1" >"$T_TMP/$2.ansi"
		"$PIL_PY" "$(dirname "$0")/../screenshot.py" "$T_TMP/$2.ansi" "$ART/$2.png" 100
	}
	COLS=100 start shots --approve auto
	$TM resize-window -t shots -x 100 -y 38 2>/dev/null
	key shots C-l
	say shots "markdown"
	wait_for shots 'All tests pass now' 10000
	shot shots tui-markdown
	$TM clear-history -t shots
	key shots C-l
	say shots "editcalc"
	wait_for shots 'Tool said: edited' 10000
	say shots "longout"
	wait_for shots 'Tool said: 1 2 3' 10000
	shot shots tui-edit-long
	$TM kill-session -t shots
	COLS=100 start shotask --approve ask
	$TM resize-window -t shotask -x 100 -y 24 2>/dev/null
	key shotask C-l
	say shotask "editcalc"
	wait_for shotask 'esc stops the turn' 10000
	shot shotask tui-approval
	key shotask Escape
	$TM kill-session -t shotask
	for f in tui-markdown tui-edit-long tui-approval; do
		[ "$(head -c 8 "$ART/$f.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
		ok $? "screenshot $f.png is made (in $ART)"
	done
else
	echo "# skip: python3-pil is not installed; no screenshots"
fi

$TM kill-server 2>/dev/null
kill "$SRV" 2>/dev/null
done_testing
