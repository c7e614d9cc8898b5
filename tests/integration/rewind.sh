#!/bin/bash
# Checkpoints and rewind, end to end, in real boxes: three messages through
# the replay provider change the workspace (a new file, one changed in
# place with >>, a deletion, new directories, symlinks, a lower directory
# replaced by an opaque one); `ward rewind` puts back the layer (what a
# new box sees) and the conversation (what the fake LLM server is sent
# after --resume); bad requests change nothing; /rewind in the terminal.
. "$(dirname "$0")/lib.sh"
export XDG_STATE_HOME=$T_TMP/state ANTHROPIC_API_KEY=sk-ant-fake-key
SESS=$XDG_STATE_HOME/ward/sessions

# What the box sees of /workspace: a line an entry (path, type, mode, size,
# content hash, a symlink's target), between two markers.
LIST='echo "=== before"; find . -mindepth 1 | LC_ALL=C sort | while IFS= read -r p; do if [ -L "$p" ]; then echo "$p link $(readlink "$p")"; elif [ -d "$p" ]; then echo "$p dir $(stat -c %a "$p")"; else echo "$p file $(stat -c "%a %s" "$p") $(md5sum <"$p" | cut -c1-32)"; fi; done; echo "=== end"'
WS=$T_TMP/ws
mkdir -p "$WS/sub/deep"
echo alpha >"$WS/a.txt"; echo beta >"$WS/b.txt"; echo s >"$WS/sub/s.txt"; echo t >"$WS/sub/deep/t.txt"
python3 - "$LIST" >"$T_TMP/replay.json" <<'PY'
import json, sys
L = sys.argv[1]
steps = [
    ("first", "echo one > new.txt; echo keep > keep.txt; echo more >> a.txt; mkdir d1; echo f > d1/f.txt; ln -s a.txt ln1"),
    ("second", "rm b.txt; echo two >> new.txt; rm -rf d1; mkdir d2; ln -s new.txt ln2; chmod 600 a.txt"),
    ("third", "echo three >> new.txt; rm -rf sub; mkdir sub; echo x > sub/x; rm ln1"),
]
turns = []
for word, change in steps:
    turns.append({"expect": word, "tools": [{"name": "bash", "input": {"command": L + "; " + change}}]})
    turns.append({"text": "did the " + word})
print(json.dumps({"turns": turns}))
PY
wr() { # wr [flags] TASK: ward run with the replay script -> RC, ERR
	"$WARD" run --model "replay:$T_TMP/replay.json" --workspace "$WS" "$@" >/dev/null 2>"$T_TMP/err" </dev/null
	RC=$?; ERR=$(cat "$T_TMP/err")
}
# The box's view that message N's call printed before it changed anything.
seen_before() {
	python3 - "$SESS/$ID.jsonl" "$1" <<'PY'
import json, sys
res = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") == "result"]
t = res[int(sys.argv[2]) - 1]["text"]
print(t[t.index("=== before"):t.index("=== end")])
PY
}
# From the fake server's log: request N's user texts (|-joined), or the
# listing its last tool result carries.
sent() {
	python3 - "$LOG" "$1" "$2" <<'PY'
import json, sys
body = json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2]) - 1])["body"]
if sys.argv[3] == "asked":
    print("|".join(b["text"].split(";")[0] for m in body["messages"] if m["role"] == "user"
                   for b in m["content"] if b.get("type") == "text"))
else:   # the last one
    seen = ""
    for m in body["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_result":
                c = b["content"]
                t = c if isinstance(c, str) else "".join(x.get("text", "") for x in c)
                if "=== before" in t:
                    seen = t[t.index("=== before"):t.index("=== end")]
    print(seen)
PY
}
state() { # what a refused rewind must leave as it was
	{ md5sum <"$SESS/$ID.jsonl"; "$WARD" diff "$ID" 2>&1; ls "$CK"; } | md5sum
}

wr "first message"
is "$RC" 0 "message 1: done"
ID=$(ls "$SESS" | sed -n 's/\.jsonl$//p' | head -1)
CK=$XDG_STATE_HOME/ward/workspaces/s-$ID.ckpt
wr --resume "$ID" "second message"
is "$RC" 0 "message 2 (--resume): done"
wr --resume "$ID" "third message"
is "$RC" 0 "message 3 (--resume): done"
J=$(cat "$SESS/$ID.jsonl")
is "$(printf '%s\n' "$J" | grep -o '"type":"checkpoint","message":[0-9]*' | tr -d '"a-z:,' | tr '\n' ' ')" "1 2 3 " \
	"a checkpoint record before each message, numbered from 1"
like "$(printf '%s\n' "$J" | grep '"message":1,')" '"files":0,"copied":0,"bytes_copied":0,"ms":[0-9]+' \
	"checkpoint 1: the empty layer"
like "$(printf '%s\n' "$J" | grep '"message":3,')" '"files":3,"copied":2,' \
	"checkpoint 3: three files, only the two changed since checkpoint 2 copied"
is "$(stat -c %a "$CK")" 700 "the checkpoints are 0700"
objs() { python3 -c 'import json,sys
print(" ".join(sorted(r["o"] for r in map(json.loads, open(sys.argv[1])) if r["t"] == "f")))' "$1"; }
O2=$(objs "$CK/2/manifest") O3=$(objs "$CK/3/manifest")
is "$(comm -12 <(tr ' ' '\n' <<<"$O2") <(tr ' ' '\n' <<<"$O3") | wc -l)" 1 \
	"checkpoint 3 names checkpoint 2's object for the one unchanged file (nothing copied or linked for it)"
CP2=$(python3 -c 'import json,sys
for r in map(json.loads, open(sys.argv[1])):
    if r["p"] == "new.txt": print(r["o"])' "$CK/2/manifest")
is "$(cat "$CK/objects/$CP2")" "one" "checkpoint 2's copy of new.txt is as it was, after two >> in place since"
BEFORE1=$(seen_before 1)
BEFORE2=$(seen_before 2)
like "$BEFORE2" "./ln1 link a.txt" "(the box's view before message 2 has message 1's symlink)"
like "$(seen_before 3)" "./ln2 link new.txt" "(and the view before message 3 has message 2's)"
"$WARD" rewind "$ID" >"$T_TMP/out" 2>&1
is "$(awk 'NR > 1 { print $1 }' "$T_TMP/out" | tr '\n' ' ')" "1 2 3 " "ward rewind ID lists messages 1 to 3"
like "$(cat "$T_TMP/out")" "^MESSAGE +SENT +TEXT.*
2 +[0-9T:-]+Z +second message" "with when each was sent and its first words"

# Refused: one line each, exit code, and nothing changed.
S0=$(state)
"$WARD" rewind "$ID" 4 >/dev/null 2>"$T_TMP/err"
is "$?" 64 "N past the last message: exit 64"
like "$(cat "$T_TMP/err")" "^ward: there is no message 4: session $ID has messages 1 to 3 .*nothing changed$" \
	"it says which messages there are"
is "$(wc -l <"$T_TMP/err")" 1 "in one line"
"$WARD" rewind "$ID" 0 >/dev/null 2>"$T_TMP/err"
is "$?" 64 "N 0: exit 64"
like "$(cat "$T_TMP/err")" "^ward: rewind: \"0\" is not a message number: give one of 1 to 3" "it says what N can be"
is "$(wc -l <"$T_TMP/err")" 1 "in one line"
"$WARD" rewind no-such-session 1 >/dev/null 2>"$T_TMP/err"
is "$?" 64 "an unknown session: exit 64"
like "$(cat "$T_TMP/err")" "^ward: no session no-such-session \(see .ward sessions.\)$" "it says so"
is "$(wc -l <"$T_TMP/err")" 1 "in one line"
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], "w").close(); time.sleep(20)' "$SESS/$ID.jsonl" "$T_TMP/held" &
HOLDER=$!
for _ in $(seq 100); do [ -e "$T_TMP/held" ] && break; sleep 0.05; done
"$WARD" rewind "$ID" 2 >/dev/null 2>"$T_TMP/err"
is "$?" 75 "a session another ward holds: exit 75"
like "$(cat "$T_TMP/err")" "^ward: session $ID is open in another ward now.*nothing changed$" "it says so"
is "$(wc -l <"$T_TMP/err")" 1 "in one line"
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null
is "$(state)" "$S0" "after each refusal the journal, the workspace changes and the checkpoints are as they were"

# The twin: the same rewind once nobody holds the session.
"$WARD" rewind "$ID" 2 >/dev/null 2>"$T_TMP/err"
is "$?" 0 "ward rewind ID 2, the session free: exit 0"
like "$(cat "$T_TMP/err")" "back before message 2 \(\"second message\"\): 4 messages in its conversation; its workspace changes are as they were then" \
	"it says what it did"
[ -d "$CK/2" ] && [ ! -e "$CK/3" ]; ok $? "checkpoint 3 is dropped, 2 kept"
like "$("$WARD" diff "$ID")" "^--- a/a.txt" "ward diff shows the rewound changes"
unlike "$("$WARD" diff "$ID")" "b.txt|ln2|two" "and none of message 2's"
serve bash-said
"$WARD" run --resume "$ID" --base-url "$URL" --model fake-model --workspace "$WS" "$LIST" >/dev/null 2>"$T_TMP/err"
is "$?" 0 "--resume after the rewind, a listing call: exit 0"
is "$(sent 1 asked)" "first message|echo \"=== before\"" "the model is sent message 1 and the new one, not 2 or 3"
unlike "$(req 1)" "did the second|did the third|rm b.txt" "nothing of messages 2 and 3 is sent"
is "$(sent 2 tree)" "$BEFORE2" "the new box sees exactly what the box saw before message 2"
like "$(grep '"type":"checkpoint"' "$SESS/$ID.jsonl" | tail -1)" '"message":2,' \
	"the new message is message 2 again"

"$WARD" rewind "$ID" 1 >/dev/null 2>"$T_TMP/err"
is "$?" 0 "ward rewind ID 1: exit 0"
is "$("$WARD" diff "$ID" 2>&1)" "" "back before message 1: no changes at all (the empty layer)"
serve bash-said
"$WARD" run --resume "$ID" --base-url "$URL" --model fake-model --workspace "$WS" "$LIST" >/dev/null 2>"$T_TMP/err"
is "$(sent 1 asked)" "echo \"=== before\"" "the conversation starts again from nothing"
is "$(sent 2 tree)" "$BEFORE1" "and the box sees the tree as it was before message 1"
[ "$(cat "$WS/a.txt")" = alpha ] && [ -e "$WS/b.txt" ] && [ ! -e "$WS/new.txt" ]; ok $? "the user's tree was never touched"

# A box running over the session's layers: refused, nothing changed; the
# twin once it is gone.
"$WARD" box create --persistent --name "s-$ID" --workspace "$WS" >>"$T_TMP/boxes" 2>/dev/null
S0=$( { md5sum <"$SESS/$ID.jsonl"; ls "$CK"; } | md5sum)
"$WARD" rewind "$ID" 1 >/dev/null 2>"$T_TMP/err"
is "$?" 75 "a box running over the session's layers: exit 75"
like "$(cat "$T_TMP/err")" "^ward: box s-$ID is running over session $ID's workspace.*nothing changed$" "it says which box"
is "$(wc -l <"$T_TMP/err")" 1 "in one line"
is "$( { md5sum <"$SESS/$ID.jsonl"; ls "$CK"; } | md5sum)" "$S0" "the journal and the checkpoints are as they were"
"$WARD" box destroy "s-$ID" >/dev/null 2>&1
"$WARD" rewind "$ID" 1 >/dev/null 2>"$T_TMP/err"
is "$?" 0 "twin: the box gone, the same rewind works"

# Applying a session's changes drops its checkpoints.
WS2=$T_TMP/ws2
mkdir -p "$WS2/sub/deep"
echo alpha >"$WS2/a.txt"; echo beta >"$WS2/b.txt"; echo s >"$WS2/sub/s.txt"; echo t >"$WS2/sub/deep/t.txt"
"$WARD" run --model "replay:$T_TMP/replay.json" --workspace "$WS2" "first message" >/dev/null 2>&1
ID2=$(ls "$SESS" | sed -n 's/\.jsonl$//p' | grep -vx "$ID" | head -1)
"$WARD" run --model "replay:$T_TMP/replay.json" --workspace "$WS2" --resume "$ID2" "second message" >/dev/null 2>&1
CK2=$XDG_STATE_HOME/ward/workspaces/s-$ID2.ckpt
"$WARD" rewind "$ID2" 2 >/dev/null 2>&1
is "$?" 0 "a second session, rewound to 2"
"$WARD" apply "$ID2" >/dev/null 2>&1
is "$(tr '\n' ' ' <"$WS2/a.txt")" "alpha more " "ward apply applies message 1's changes"
[ ! -e "$CK2" ]; ok $? "and drops the checkpoints: their copies would lie over the new tree"
"$WARD" rewind "$ID2" 1 >/dev/null 2>"$T_TMP/err"
is "$?" 1 "a rewind after the changes were applied: exit 1"
like "$(cat "$T_TMP/err")" "^ward: the checkpoint before message 1 of session $ID2 is gone \(applying a session's changes to its workspace drops its checkpoints\); nothing changed$" \
	"it says why"

# The terminal session: /rewind lists, /rewind 2 goes back, the box is made again.
if ! command -v tmux >/dev/null; then
	echo "# tmux is not installed: /rewind in the terminal is not tested"
	done_testing
	exit
fi
TM="tmux -u -L ward-test-$$ -f /dev/null"
serve chat
TWS=$T_TMP/tws
mkdir -p "$TWS"; echo alpha >"$TWS/a.txt"
$TM new-session -d -x 150 -y 50 -s rw "env XDG_STATE_HOME=$XDG_STATE_HOME ANTHROPIC_API_KEY=k WARD_GUEST=$WARD_GUEST \
TERM=screen '$WARD' --base-url $URL --model fake-model --workspace $TWS --approve auto; echo EXIT=\$?; sleep 600"
screen() { $TM capture-pane -p -J -S -300 -t rw 2>/dev/null; }
wait_for() { # wait_for REGEX MS
	local until=$(($(now_ms) + $2))
	while [ "$(now_ms)" -lt $until ]; do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.05
	done
	screen | grep -v '^$' | tail -15 | sed 's/^/#   screen| /'
	return 1
}
say() { $TM send-keys -t rw -l "$1"; $TM send-keys -t rw Enter; }
wait_for 'Esc interrupts' 10000; ok $? "the terminal session starts"
for w in one two three; do
	say "run $w"
	wait_for "Tool said: ran-$w" 10000; ok $? "message: run $w"
done
say "/rewind"
wait_for 'Go back to before one with /rewind N' 5000; ok $? "/rewind lists the messages"
like "$(screen)" "   2  [0-9:]{8}  run two" "with their numbers, times and words"
say "/rewind 9"
wait_for 'there is no message 9: session [0-9a-f-]+ has messages 1 to 3 .*nothing changed' 5000; ok $? "/rewind 9: there is none, it says so"
say "/rewind two"
wait_for '"two" is not a message number; /rewind lists them' 5000; ok $? "/rewind two: not a number, it says so"
say "/rewind 2"
wait_for 'Back before message 2' 15000; ok $? "/rewind 2 goes back"
like "$(screen)" "The box was destroyed and a new one made \(s-[0-9a-f-]+\): processes that ran in it are gone" \
	"and says the box was made again"
say "/diff"
wait_for 'b/one.txt' 5000; ok $? "/diff: message 1's file is there"
unlike "$(screen | sed -n '/\/diff/,$p')" "two.txt|three.txt" "and nothing of messages 2 and 3"
say "run four"
wait_for 'Tool said: ran-four' 10000; ok $? "the session goes on"
unlike "$(tail -1 "$LOG")" "run two|run three|ran-two" "the model is not sent messages 2 and 3"
like "$(tail -1 "$LOG")" "run one" "but is sent message 1"
say "/quit"
wait_for 'k keep them for later' 5000
$TM send-keys -t rw k
wait_for 'EXIT=0' 10000; ok $? "the session ends"
# With its changes kept, the session's box hibernates and waits for
# --resume: a rewind goes under it, and the next run wakes it.
TID=$(screen | sed -n 's/.*ward --resume \([0-9a-f-]*\).*/\1/p' | tail -1)
like "$(screen)" "Its box s-$TID is hibernated: files and /tmp as they were; \`ward --resume $TID\` wakes it" \
	"ending with the changes kept hibernates the session's box"
is "$("$WARD" box info "s-$TID" | json state)" hibernated "the box is hibernated (and outlived the session's ward)"
"$WARD" box exec "s-$TID" -- sh -c 'echo installed >/tmp/dep' >/dev/null
"$WARD" box hibernate "s-$TID" >/dev/null
"$WARD" rewind "$TID" 2 >"$T_TMP/out" 2>"$T_TMP/err"
RC=$?
sed 's/^/# /' "$T_TMP/err"
is "$RC" 0 "ward rewind of a session whose box is hibernated"
is "$("$WARD" box info "s-$TID" | json state)" hibernated "the box stays hibernated"
"$WARD" run --resume "$TID" --json --base-url "$URL" --model fake-model --workspace "$TWS" "run five" \
	>"$T_TMP/ev.jsonl" 2>"$T_TMP/err"
is "$?" 0 "ward run --resume: exit 0"
like "$(grep '"type":"box"' "$T_TMP/ev.jsonl" | tr '\n' ' ')" "\"event\":\"woken\".*\"ms\":[0-9]+" "it woke the session's box"
is "$("$WARD" box info "s-$TID" | json state)" hibernated "and kept it again, hibernated, at its end"
is "$("$WARD" box exec "s-$TID" -- cat /tmp/dep)" installed "/tmp survived the session's end, the rewind and the run"
GOT=$("$WARD" box exec "s-$TID" -- sh -c 'ls /workspace | tr "\n" " "')
like "$GOT" "one.txt" "the woken box sees message 1's file"
unlike "$GOT" "two.txt|three.txt|four.txt" "and not those the rewind undid"
"$WARD" box destroy "s-$TID"
$TM kill-server 2>/dev/null
done_testing
