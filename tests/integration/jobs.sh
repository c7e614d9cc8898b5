#!/bin/bash
# Background jobs (bash with "background": true; job_output, job_kill,
# job_list): a job outlives the call that started it and nothing else; it
# ends with its own limit, a kill, or its box, whichever way the box goes.
# Backend: ns (vm.sh runs a job through the guest on vm).
. "$(dirname "$0")/lib.sh"
export ANTHROPIC_API_KEY=sk-ant-fake-key
# Where the boxes' keepers' sockets are (hold, below).
export XDG_RUNTIME_DIR=$T_TMP/run
mkdir -p "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"

# A tag no other test's processes carry: a job's canary is `sleep 1000.TAGN`
# (digits: sleep takes it), found on the host by its command line.
TAG=$$$(date +%N | cut -c1-4)
canary_alive() { pgrep -f "^sleep $1\$" >/dev/null; }	# canary_alive VALUE
wait_alive() { # wait_alive VALUE: until the canary runs (10 s at most)
	for _ in $(seq 200); do canary_alive "$1" && return 0; sleep 0.05; done
	return 1
}
wait_gone() { # wait_gone VALUE [SECONDS]: until the canary is gone; sets GONE_MS
	local t0; t0=$(now_ms)
	for _ in $(seq $(( ${2:-10} * 20 ))); do
		canary_alive "$1" || { GONE_MS=$(( $(now_ms) - t0 )); return 0; }
		sleep 0.05
	done
	GONE_MS=-1
	return 1
}
field() { python3 -c 'import json,sys
v=json.load(sys.stdin)
for p in sys.argv[1].split("."):
    v = v[int(p)] if isinstance(v, list) else v.get(p) if isinstance(v, dict) else None
print("" if v is None else v if isinstance(v, str) else json.dumps(v))' "$1"; }
ports_of() { tool "$1" job_list '{}' | python3 -c 'import json,sys
for j in json.load(sys.stdin)["jobs"]:
    if j["id"] == int(sys.argv[1]): print(" ".join(str(p["port"]) for p in j["ports"]))' "$2"; }

B=$(box_new) || { echo "Bail out! no box"; exit 1; }

# --- A job serves HTTP across later calls ---------------------------------
R=$(tool "$B" bash '{"command":"mkdir -p /tmp/site && echo served-by-a-job > /tmp/site/page.txt && cd /tmp/site && exec python3 -m http.server 8765 --bind 127.0.0.1","background":true}')
is "$(printf '%s' "$R" | field outcome)" ok "a background bash call returns at once, ok"
is "$(printf '%s' "$R" | field job.id)" 1 "with the job's id"
like "$(printf '%s' "$R" | field text)" "started job 1 in the background" "and says it started"
lt "$(printf '%s' "$R" | field elapsed_ms)" 2000 "the call does not wait for the server"
for _ in $(seq 100); do [ "$(ports_of "$B" 1)" = 8765 ] && break; sleep 0.1; done
is "$(ports_of "$B" 1)" 8765 "job_list lists the port the job listens on"
GET='python3 -c "import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:8765/page.txt\", timeout=5).read().decode().strip())"'
for i in 1 2 3; do
	R=$(tool "$B" bash "{\"command\":$(printf '%s' "$GET" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}")
	like "$(printf '%s' "$R" | field text)" "^served-by-a-job" "a later call ($i of 3) reaches the job's server"
done
R=$(tool "$B" job_output '{"id":1}')
like "$(printf '%s' "$R" | field text)" 'GET /page.txt HTTP/1.1" 200' "job_output has the server's log of those requests"
like "$(printf '%s' "$R" | field text)" "listening on 127.0.0.1:8765" "and the port"
OFF=$(printf '%s' "$R" | field job.next_offset)
R=$(tool "$B" job_output '{"id":1}')
like "$(printf '%s' "$R" | field text)" "no output past offset $OFF" "a second read goes on from where the first stopped"
R=$(tool "$B" job_output '{"id":1,"offset":0}')
like "$(printf '%s' "$R" | field text)" "output bytes 0 to $OFF" "and an offset reads again from there"
# The twin: a call's own background process ends with the call, as ever.
tool "$B" bash '{"command":"cd /tmp/site && (python3 -m http.server 8766 --bind 127.0.0.1 >/dev/null 2>&1 &) ; sleep 1"}' >/dev/null
R=$(tool "$B" bash '{"command":"python3 -c \"import urllib.request; urllib.request.urlopen(\\\"http://127.0.0.1:8766/\\\", timeout=2)\" 2>&1 | tail -1"}')
like "$(printf '%s' "$R" | field text)" "Connection refused" "a server a call puts in the background with & ends with its call (not a job)"
R=$(tool "$B" job_kill '{"id":1}')
like "$(printf '%s' "$R" | field text)" "job 1 was killed by signal 15 \(TERM\).*killed by job_kill" "job_kill ends the server and says how"
is "$(printf '%s' "$R" | field job.state)" ended "its state is ended"
R=$(tool "$B" bash "{\"command\":$(printf '%s 2>&1 | tail -1' "$GET" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}")
like "$(printf '%s' "$R" | field text)" "Connection refused" "and the port no longer answers"

# --- Bad input is refused; each twin works ---------------------------------
R=$(tool "$B" bash '{"command":"true","timeout":3600}')
is "$(printf '%s' "$R" | field outcome)" bad_input "a command's timeout over 600 s is refused"
like "$(printf '%s' "$R" | field text)" 'a job.s may be up to 86400' "saying a job's may be longer"
R=$(tool "$B" bash '{"command":"true","timeout":3600,"background":true}')
is "$(printf '%s' "$R" | field outcome)" ok "twin: a job may have a 3600 s limit"
R=$(tool "$B" bash '{"command":"true","idle_timeout":5,"background":true}')
is "$(printf '%s' "$R" | field outcome)" bad_input "idle_timeout on a job is refused"
R=$(tool "$B" bash '{"command":"true","idle_timeout":5}')
is "$(printf '%s' "$R" | field outcome)" ok "twin: idle_timeout on a command works"
R=$(tool "$B" job_output '{"id":99}')
is "$(printf '%s' "$R" | field outcome)" bad_input "job_output of a job that never was is bad input"
like "$(printf '%s' "$R" | field text)" "there is no job 99 in this box; its jobs are 1 to 2" "and names the jobs there are"
R=$(tool "$B" job_output '{"id":2,"wait":10}')
like "$(printf '%s' "$R" | field text)" "job 2: exited with status 0" "twin: job_output of a job that is there (ended: its status)"
R=$(tool "$B" job_kill '{"id":2}')
like "$(printf '%s' "$R" | field text)" "had ended already" "job_kill of an ended job says it had ended"
# The most jobs at once, and a refusal past it.
for i in $(seq 16); do tool "$B" bash "{\"command\":\"exec sleep 1000.$TAG$i\",\"background\":true}" >/dev/null; done
R=$(tool "$B" bash '{"command":"sleep 1","background":true}')
is "$(printf '%s' "$R" | field outcome)" refused "a 17th running job is refused"
like "$(printf '%s' "$R" | field text)" "runs 16 jobs already" "saying why"
R=$(tool "$B" job_list '{}')
N=$(printf '%s' "$R" | python3 -c 'import json,sys; print(sum(j["state"] == "running" for j in json.load(sys.stdin)["jobs"]))')
is "$N" 16 "job_list shows the 16 running"
LAST=$(printf '%s' "$R" | python3 -c 'import json,sys; print(max(j["id"] for j in json.load(sys.stdin)["jobs"]))')
tool "$B" job_kill "{\"id\":$LAST}" >/dev/null
R=$(tool "$B" bash '{"command":"true","background":true}')
is "$(printf '%s' "$R" | field outcome)" ok "twin: with one killed, a job starts again"
wait_alive "1000.${TAG}1"; ok $? "the jobs run on the host as the box's processes"
"$WARD" box destroy "$B" >/dev/null
wait_gone "1000.${TAG}1" 10; ok $? "destroying the box ends its jobs (canary gone in ${GONE_MS} ms)"
canary_alive "1000.${TAG}9"; is $? 1 "every one of them"

# --- Output stays bounded ---------------------------------------------------
B=$(box_new) || { echo "Bail out! no box"; exit 1; }
T0=$(now_ms)
tool "$B" bash '{"command":"yes abcdefghi | head -c 1073741824; echo; echo LAST-LINE","background":true}' >/dev/null
R=$(tool "$B" job_output '{"id":1,"wait":300,"offset":0}')
MS=$(( $(now_ms) - T0 ))
echo "# 1 GiB through a job in $MS ms"
is "$(printf '%s' "$R" | field job.state)" ended "a job that writes 1 GiB ends"
is "$(printf '%s' "$R" | field job.output_bytes)" 1073741835 "every byte is counted"
is "$(printf '%s' "$R" | field job.dropped_bytes)" $(( 1073741835 - 65536 - 1048576 )) "all but the first 64 KiB and the last 1 MiB are dropped, and counted"
is "$(printf '%s' "$R" | field job.next_offset)" 30000 "a read from 0 gives 30,000 bytes of the head"
R=$(tool "$B" job_output '{"id":1,"offset":70000}')
like "$(printf '%s' "$R" | field text)" "bytes of output between offsets 70000 and $(( 1073741835 - 1048576 )) were dropped" "a read in what was dropped says how much, and reads on from the tail"
R=$(tool "$B" job_output "{\"id\":1,\"offset\":$(( 1073741835 - 20 ))}")
like "$(printf '%s' "$R" | field text)" "LAST-LINE" "the tail holds the last line"
GPID=$("$WARD" box info "$B" 2>/dev/null | field guest_pid)
if [ -n "$GPID" ] && [ -r "/proc/$GPID/status" ]; then
	HWM=$(awk '/VmHWM/ { print $2 }' "/proc/$GPID/status")
	lt "$HWM" 262144 "ward-guest's peak memory stays under 256 MiB (${HWM} kB)"
else
	skip "ward box info names no guest pid"
fi

# --- A job's own time limit ---------------------------------------------------
T0=$(now_ms)
tool "$B" bash "{\"command\":\"exec sleep 1000.${TAG}91\",\"background\":true,\"timeout\":1}" >/dev/null
R=$(tool "$B" job_output '{"id":2,"wait":30}')
MS=$(( $(now_ms) - T0 ))
like "$(printf '%s' "$R" | field text)" "killed by signal 15 \(TERM\) after 1\.[0-9] s: its time limit \(1 s\) ran out" "a job's time limit kills it and says so"
lt "$MS" 5000 "within moments of its 1 s limit (${MS} ms), not its 1000 s sleep"
canary_alive "1000.${TAG}91"; is $? 1 "its process is gone"
# job_output's own wait: bounded, and the job goes on (the twin).
tool "$B" bash "{\"command\":\"exec sleep 1000.${TAG}92\",\"background\":true}" >/dev/null
T0=$(now_ms)
R=$(tool "$B" job_output '{"id":3,"wait":1}')
MS=$(( $(now_ms) - T0 ))
is "$(printf '%s' "$R" | field job.state)" running "a wait that passes before the job ends answers: still running"
lt "$MS" 3000 "after the 1 s wait (${MS} ms)"
canary_alive "1000.${TAG}92"; ok $? "and a job without a limit of its own goes on"
"$WARD" box destroy "$B" >/dev/null
wait_gone "1000.${TAG}92" 10; ok $? "and ends with its box"

# --- Through a run: the model is told, the result lists, nothing is left -------
WS=$T_TMP/ws; mkdir -p "$WS"; echo hi >"$WS/a.txt"
cat >"$T_TMP/told.json" <<EOF
{"turns":[
 {"text":"start","tools":[{"name":"bash","input":{"command":"sleep 0.3; echo the-job-said-goodbye; exit 3","background":true}}]},
 {"expect":"started job 1","text":"wait","tools":[{"name":"bash","input":{"command":"sleep 2"}}]},
 {"expect":"background job 1 (sleep 0.3; echo the-job-said-goodbye; exit 3) exited with status 3","text":"told","tools":[{"name":"bash","input":{"command":"true"}}]},
 {"text":"done"}]}
EOF
"$WARD" run --json --model "replay:$T_TMP/told.json" --workspace "$WS" "jobs" >"$T_TMP/told.jsonl" 2>"$T_TMP/told.err"
is "$?" 0 "a run whose job ends while another call runs"
grep -v '^ward: session' "$T_TMP/told.err" | head -5 | sed 's/^/# /' 
like "$(grep -c '"type":"round"' "$T_TMP/told.jsonl")" "^4$" "the replay's expectations held: round 3's message told the model of the job's end"
J=$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)
like "$(grep '"role":"user"' "$J" | sed -n 3p)" "the-job-said-goodbye" "the message tells the job's last lines (journalled)"
like "$(grep '"type":"job"' "$T_TMP/told.jsonl" | tail -1)" '"event":"ended".*"exit_code":3' "--json has the job's end event"
is "$(validate_events "$T_TMP/told.jsonl")" "valid $(wc -l <"$T_TMP/told.jsonl")" "every line matches the events schema"
unlike "$(grep -c '"role":"user".*background job 1' "$J")" "^[2-9]" "the model is told once"

# ward run ends: the job is listed, and gone with the run's box.
cat >"$T_TMP/left.json" <<EOF
{"turns":[
 {"text":"start","tools":[{"name":"bash","input":{"command":"exec sleep 1000.${TAG}93","background":true}}]},
 {"text":"done"}]}
EOF
"$WARD" run --json --model "replay:$T_TMP/left.json" --workspace "$WS" "leave a job" >"$T_TMP/left.jsonl" 2>"$T_TMP/left.err"
is "$?" 0 "a run that leaves a job running ends as ever"
RES=$(tail -1 "$T_TMP/left.jsonl")
is "$(printf '%s' "$RES" | field jobs.0.command)" "exec sleep 1000.${TAG}93" "its result lists the job"
is "$(printf '%s' "$RES" | field jobs.0.running_at_end)" true "as running when the run ended"
is "$(printf '%s' "$RES" | field jobs.0.ended_with_box)" true "and ended with the run's box"
is "$(validate_events "$T_TMP/left.jsonl")" "valid $(wc -l <"$T_TMP/left.jsonl")" "the result matches the events schema"
wait_gone "1000.${TAG}93" 5; ok $? "the job's process is gone once ward run has returned (${GONE_MS} ms)"
"$WARD" run --model "replay:$T_TMP/left.json" --workspace "$WS" "leave a job" >/dev/null 2>"$T_TMP/left.err"
like "$(cat "$T_TMP/left.err")" "ward: job 1 was running when the run ended: it ended with the run's box: exec sleep" "plain, stderr says so"
# Twin: a box given with --box keeps its job, and says so.
B=$(box_new --workspace "$WS") || { echo "Bail out! no box"; exit 1; }
sed "s/1000.${TAG}93/1000.${TAG}94/" "$T_TMP/left.json" >"$T_TMP/given.json"
"$WARD" run --box "$B" --json --model "replay:$T_TMP/given.json" "leave a job" >"$T_TMP/given.jsonl" 2>/dev/null
RES=$(tail -1 "$T_TMP/given.jsonl")
is "$(printf '%s' "$RES" | field jobs.0.ended_with_box)" false "twin: with --box the job is listed as going on"
sleep 0.5	# time: a kill at the run's end would have landed
canary_alive "1000.${TAG}94"; ok $? "and it does go on in that box"
"$WARD" box destroy "$B" >/dev/null
wait_gone "1000.${TAG}94" 10; ok $? "until the box is destroyed"

# Every way a run ends leaves no job behind: a canary job each, proven
# running first.
runjob() { # runjob VALUE [run flags]: ward run in the background with a job sleeping as VALUE then a long call; RPID
	cat >"$T_TMP/$1.json" <<EOF
{"turns":[
 {"text":"start","tools":[{"name":"bash","input":{"command":"exec sleep $1","background":true}}]},
 {"text":"hold","tools":[{"name":"bash","input":{"command":"sleep 60","timeout":120}}]},
 {"text":"done"}]}
EOF
	local v=$1; shift
	"$WARD" run --json --model "replay:$T_TMP/$v.json" --workspace "$WS" "$@" "hold" >"$T_TMP/$v.jsonl" 2>"$T_TMP/$v.err" &
	RPID=$!
}
for how in KILL TERM; do
	V=1000.${TAG}9$([ $how = KILL ] && echo 5 || echo 6)
	runjob "$V"
	wait_alive "$V"; ok $? "SIG$how: the run's job is running"
	kill -$how "$RPID"
	wait "$RPID" 2>/dev/null
	wait_gone "$V" 10; ok $? "SIG$how of ward: the job is gone (${GONE_MS} ms)"
done
RES=$(tail -1 "$T_TMP/1000.${TAG}96.jsonl")
is "$(printf '%s' "$RES" | field jobs.0.running_at_end)" true "SIGTERM: the result lists the job as running at the end"
V=1000.${TAG}97
T0=$(now_ms)
runjob "$V" --deadline 4s
wait_alive "$V"; ok $? "deadline: the run's job is running"
wait "$RPID"; RC=$?
MS=$(( $(now_ms) - T0 ))
is "$RC" 2 "the run stops at its deadline (exit 2)"
lt "$MS" 7000 "within moments of its 4 s deadline (${MS} ms)"
wait_gone "$V" 5; ok $? "deadline: the job is gone (${GONE_MS} ms)"
# The keeper's TTL: no ward there at all.
V=1000.${TAG}98
B=$(box_new --ttl 3s) || { echo "Bail out! no box"; exit 1; }
tool "$B" bash "{\"command\":\"exec sleep $V\",\"background\":true}" >/dev/null
wait_alive "$V"; ok $? "TTL: a persistent box's job is running with no ward attached"
wait_gone "$V" 10; ok $? "the box's TTL ends it (${GONE_MS} ms)"

# --- An ns hibernate ends the jobs: the model and the person are told ------
# (CRIU fails its own check on this kernel: an ns box keeps its files, not
# its processes.) A hook before the run's second call hibernates the box
# the run is attached to, as a person or the idle policy might between
# calls.
B=$(box_new --workspace "$WS") || { echo "Bail out! no box"; exit 1; }
V=1000.${TAG}81
mkdir -p "$XDG_CONFIG_HOME/ward"
printf '{"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "grep -q hibernate-now || exit 0; %s box hibernate %s >%s 2>&1"}]}]}}\n' \
	"$WARD" "$B" "$T_TMP/hib.out" >"$XDG_CONFIG_HOME/ward/config.json"
cat >"$T_TMP/hib.json" <<EOF
{"turns":[
 {"text":"start","tools":[{"name":"bash","input":{"command":"exec sleep $V","background":true}}]},
 {"expect":"started job 1","text":"on","tools":[{"name":"bash","input":{"command":"echo hibernate-now"}}]},
 {"expect":"when the box hibernated","text":"told","tools":[{"name":"bash","input":{"command":"true"}}]},
 {"text":"done"}]}
EOF
"$WARD" run --box "$B" --json --model "replay:$T_TMP/hib.json" "jobs and a hibernate" >"$T_TMP/hib.jsonl" 2>"$T_TMP/hib.err"
is "$?" 0 "a run whose box hibernates between two calls, a job running"
rm -f "$XDG_CONFIG_HOME/ward/config.json"
grep -v '^ward: session' "$T_TMP/hib.err" | head -5 | sed 's/^/# /'
like "$(cat "$T_TMP/hib.out")" "^$B: hibernated in" "the hook hibernated the box"
like "$(cat "$T_TMP/hib.out")" "$B: job 1 ended after [0-9.]+ s when the box hibernated: an ns box's processes cannot be saved: they end at a hibernate \(its files are kept\): exec sleep $V" \
	"ward box hibernate says which job ended, and why"
canary_alive "$V"; is $? 1 "the job's process is gone"
like "$(grep -c '"type":"round"' "$T_TMP/hib.jsonl")" "^4$" "the replay's expectations held: the next round's message told the model the job ended with the hibernate"
J=$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)
like "$(grep '"role":"user"' "$J" | sed -n 3p)" "background job 1 \(exec sleep $V\) ended after [0-9.]+ s when the box hibernated.*Its output went with it" \
	"the message says which job, how, and that its output is gone (journalled)"
like "$(grep '"type":"job"' "$T_TMP/hib.jsonl" | tail -1)" '"event":"ended".*"output_lost":true' "--json has the job's end event"
is "$(validate_events "$T_TMP/hib.jsonl")" "valid $(wc -l <"$T_TMP/hib.jsonl")" "every line matches the events schema"
I=$("$WARD" box info "$B")
is "$(printf '%s' "$I" | field jobs_ended_by_hibernate.0.id) $(printf '%s' "$I" | field jobs_ended_by_hibernate.0.command)" "1 exec sleep $V" \
	"ward box info lists the job the hibernate ended"
# Twin: woken (the run's next call woke it), a job runs again; the next
# hibernate names it, and only it.
tool "$B" bash "{\"command\":\"exec sleep ${V}2\",\"background\":true}" >/dev/null
wait_alive "${V}2"; ok $? "twin: in the woken box a new job runs"
R=$("$WARD" box hibernate "$B")
like "$R" "$B: job 1 ended after [0-9.]+ s when the box hibernated.*: exec sleep ${V}2" "a second hibernate names the job that ran then"
unlike "$R" "exec sleep $V\$" "and not the one before"
wait_gone "${V}2" 5; ok $? "that job is gone too (${GONE_MS} ms)"
# Twin: no job running, the hibernate names none.
"$WARD" box wake "$B" >/dev/null
R=$("$WARD" box hibernate "$B")
unlike "$R" "job" "a hibernate with no job running names none"
"$WARD" box destroy "$B" >/dev/null

# --- Idle: a running job keeps a box awake only while someone is attached -----
hold() { # hold BOX SECONDS: a client attached to the box's keeper, doing nothing
	python3 - "$XDG_RUNTIME_DIR/ward/boxes/$1/sock" "$2" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
time.sleep(float(sys.argv[2]))
PY
	HPID=$!
}
state_of() { "$WARD" box ls --json 2>/dev/null | python3 -c 'import json,sys
for b in json.load(sys.stdin):
    if b["name"] == sys.argv[1]: print(b.get("state", ""))' "$1"; }
B=$(box_new --idle 2s --on-idle hibernate) || { echo "Bail out! no box"; exit 1; }
if [ -S "$XDG_RUNTIME_DIR/ward/boxes/$B/sock" ]; then
	V=1000.${TAG}99
	tool "$B" bash "{\"command\":\"exec sleep $V\",\"background\":true}" >/dev/null
	hold "$B" 5
	sleep 4	# time: past the 2 s idle
	canary_alive "$V"; ok $? "attached, a box with a running job does not idle out (4 s past a 2 s idle)"
	kill "$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null
	wait_gone "$V" 10; ok $? "alone, it idles out as ever (hibernated: its job ended)"
	# Twin: attached and no job, it hibernates as before.
	"$WARD" box wake "$B" >/dev/null 2>&1
	hold "$B" 6
	for _ in $(seq 100); do [ "$(state_of "$B")" = hibernated ] && break; sleep 0.1; done
	is "$(state_of "$B")" hibernated "twin: attached with no job running, it idles out to hibernation"
	kill "$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null
else
	skip "no keeper socket at the expected path"
fi

# --- The terminal session: Esc cancels the call, not the job; /jobs ends it ---
if command -v tmux >/dev/null; then
	TM="tmux -u -L ward-jobs-$$ -f /dev/null"
	scr() { $TM capture-pane -p -J -S -300 -t tj 2>/dev/null; }
	wait_scr() { # wait_scr REGEX MS
		local until=$(($(now_ms) + $2))
		while [ "$(now_ms)" -lt $until ]; do scr | grep -Eq -- "$1" && return 0; sleep 0.05; done
		scr | grep -v '^$' | tail -12 | sed 's/^/#   screen| /'
		return 1
	}
	session_go() { # session_go REPLAY WHAT: ward in pane tj on $T_TMP/REPLAY.json and $WS, at its
		# prompt; "go" sent; until the model's job (sleep $V) runs
		$TM new-session -d -x 150 -y 50 -s tj "env XDG_STATE_HOME=$XDG_STATE_HOME XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR \
WARD_GUEST=$WARD_GUEST TERM=screen '$WARD' --model replay:$T_TMP/$1.json --workspace $WS --approve auto; echo EXIT=\$?; sleep 600"
		wait_scr '^› ?$' 15000; ok $? "$2: the session is at its prompt"
		$TM send-keys -t tj -l "go"; $TM send-keys -t tj Enter
		wait_alive "$V"; ok $? "$2: the model's job runs"
	}
	V=1000.${TAG}90
	cat >"$T_TMP/tui.json" <<EOF
{"turns":[
 {"text":"starting","tools":[{"name":"bash","input":{"command":"exec sleep $V","background":true}}]},
 {"text":"holding","tools":[{"name":"bash","input":{"command":"exec sleep 107.${TAG}","timeout":300}}]},
 {"text":"done"}]}
EOF
	session_go tui session
	wait_alive "107.${TAG}"; ok $? "session: and its second call runs"
	$TM send-keys -t tj Escape
	wait_scr '⎿ cancelled' 5000; ok $? "session: Esc cancels the call"
	wait_gone "107.${TAG}" 5; ok $? "session: the call's process is gone"
	canary_alive "$V"; ok $? "session: the job is not a call: it goes on"
	$TM send-keys -t tj -l "/jobs"; $TM send-keys -t tj Enter
	wait_scr "job 1: running for" 5000; ok $? "session: /jobs lists it"
	$TM send-keys -t tj -l "/jobs kill 1"; $TM send-keys -t tj Enter
	wait_scr "job 1 was killed by signal 15 \(TERM\)" 8000; ok $? "session: /jobs kill 1 ends it"
	wait_gone "$V" 5; ok $? "session: its process is gone"
	$TM send-keys -t tj -l "/jobs kill x"; $TM send-keys -t tj Enter
	wait_scr "/jobs kill takes a job's number" 5000; ok $? "session: /jobs kill without a number says what it takes"
	$TM send-keys -t tj C-d
	wait_scr 'EXIT=0' 10000; ok $? "session: ends"
	$TM kill-session -t tj 2>/dev/null

	# A session's box is kept (hibernated) when the session ends with
	# changes in its workspace (k.txt): an ns
	# box's jobs end then. Its --resume is told which, once; while the
	# resumed ward runs it owns the box again, so its kill -9 leaves
	# neither the box nor a job for the TTL.
	V=1000.${TAG}71
	WS=$T_TMP/ws-kept; mkdir -p "$WS"
	cat >"$T_TMP/kept.json" <<EOF
{"turns":[
 {"text":"starting","tools":[{"name":"bash","input":{"command":"exec sleep $V","background":true}},{"name":"write","input":{"path":"k.txt","content":"k\\n"}}]},
 {"text":"it runs"}]}
EOF
	session_go kept kept
	wait_scr 'it runs' 10000; ok $? "kept: the round is over"
	$TM send-keys -t tj C-d
	wait_scr 'k keep them for later' 30000; ok $? "kept: asked what to do with its changes"
	$TM send-keys -t tj k
	wait_scr 'EXIT=0' 30000; ok $? "kept: the session ends, its changes kept for later"
	$TM kill-session -t tj 2>/dev/null
	wait_gone "$V" 5; ok $? "kept: its box's hibernate ended the job (${GONE_MS} ms)"
	ID=$(grep -l "\"workspace\":\"$WS\"" "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1 | sed 's|.*/||; s|\.jsonl$||')
	KB=s-$ID
	JF=$XDG_STATE_HOME/ward/sessions/$ID.jsonl
	is "$(state_of "$KB")" hibernated "kept: the session's box $KB is kept, hibernated"
	# Resumed: its first message says the job ended (the replay expects it).
	cat >"$T_TMP/kept2.json" <<EOF
{"turns":[
 {"text":"starting"}, {"text":"it runs"},
 {"expect":"background job 1 (exec sleep $V) ended after","text":"told"}]}
EOF
	"$WARD" run --json --resume "$ID" --model "replay:$T_TMP/kept2.json" "go on" >"$T_TMP/kept2.jsonl" 2>"$T_TMP/kept2.err"
	is "$?" 0 "resumed: the run ends done"
	grep -v '^ward: session' "$T_TMP/kept2.err" | head -3 | sed 's/^/# /'
	like "$(grep '"role":"user"' "$JF" | tail -1)" \
		"go on.*background job 1 \\(exec sleep $V\\) ended after [0-9.]+ s when the box hibernated.*Its output went with it" \
		"resumed: its first message told the model which job the hibernate ended, and that its output is gone"
	is "$(grep -c '"type":"job_told"' "$JF")" 1 "resumed: the journal records that it was told"
	is "$(state_of "$KB")" hibernated "resumed: the box is kept again at the run's end"
	# Told once: the box's info still lists the job; the next resume is
	# not told of it again.
	like "$("$WARD" box info "$KB")" "exec sleep $V" "twin: the box's info still lists the ended job"
	cat >"$T_TMP/kept3.json" <<EOF
{"turns":[
 {"text":"starting"}, {"text":"it runs"}, {"text":"told"},
 {"text":"starting","tools":[{"name":"bash","input":{"command":"exec sleep ${V}2","background":true}}]},
 {"text":"holding","tools":[{"name":"bash","input":{"command":"exec sleep 117.${TAG}","timeout":300}}]},
 {"text":"done"}]}
EOF
	"$WARD" run --json --resume "$ID" --model "replay:$T_TMP/kept3.json" "once more" >"$T_TMP/kept3.jsonl" 2>"$T_TMP/kept3.err" &
	RPID=$!
	wait_alive "${V}2"; ok $? "resumed again: a job runs in the woken box"
	wait_alive "117.${TAG}"; ok $? "resumed again: and a call"
	unlike "$(grep '"role":"user"' "$JF" | tail -1)" "background job" \
		"resumed again: the job told of before is not told again"
	is "$("$WARD" box info "$KB" | field persistent)" false "resumed: while the ward runs the box is its own (not persistent)"
	K=$(cat "$XDG_RUNTIME_DIR/ward/boxes/$KB/keeper.pid" 2>/dev/null)
	kill -9 "$RPID"; wait "$RPID" 2>/dev/null
	T0=$(now_ms)
	wait_gone "${V}2" 5; ok $? "kill -9 of the resumed ward: the job is gone (${GONE_MS} ms)"
	wait_gone "117.${TAG}" 5; ok $? "and the call"
	for _ in $(seq 100); do [ -n "$K" ] && kill -0 "$K" 2>/dev/null || break; sleep 0.05; done
	MS=$(( $(now_ms) - T0 ))
	ok "$([ -n "$K" ] && ! kill -0 "$K" 2>/dev/null; echo $?)" "and the box's keeper $K ($MS ms)"
	is "$(state_of "$KB")" "" "the box is gone, not left for its TTL"
	$TM kill-server 2>/dev/null
else
	skip "tmux is not installed: no terminal session test"
fi

done_testing
