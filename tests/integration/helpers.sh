#!/bin/bash
# What ward's helper processes hold of ward's (SECURITY.md, "Helper
# processes"). While a run is in flight, with canary API keys in ward's
# environment and a canary in the task's text, none of the processes ward
# started has any of them in its environment or command line: the keeper,
# the egress proxy, the guest (ns) or the VMM (vm), a bash call, an MCP
# server, the hook guard, the watchdog; nor the keeper and the proxy
# anywhere in their memory. An MCP server given the key in .mcp.json has
# it; a hook (the user's program) has the user's environment. A box made
# after another holds none of the other's mounts, so destroying the first
# frees its loop device. ward run with closed standard descriptors works.
# Argument: the backend, ns (default) or vm.
. "$(dirname "$0")/lib.sh"
BACKEND=${1:-ns}
[ "$(id -u)" = 0 ] || skip_all "needs root (reads every process's memory; loop-mounted layers)"
if [ "$BACKEND" = vm ]; then
	command -v qemu-system-x86_64 >/dev/null && ls /boot/vmlinuz-* >/dev/null 2>&1 ||
		skip_all "QEMU or a kernel in /boot is missing (see tests/integration/vm.sh)"
fi
SCAN=$(cd "$(dirname "$0")" && pwd)/secret-scan.py
SRVPY=$(cd "$(dirname "$0")/.." && pwd)/mcp-server.py
KEY=sk-ant-canary-$$-$RANDOM$RANDOM
OKEY=sk-oa-canary-$$-$RANDOM$RANDOM
TASKC=task-canary-$$-$RANDOM$RANDOM
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
NEEDLES="$(hex "$KEY") $(hex "$OKEY") $(hex "$TASKC")"
# Secret 0 is the Anthropic key, 1 the OpenAI key, 2 the task's canary.

# A hook, so that ward's hook guard runs (it starts at the first hook); it
# writes the environment it was given.
mkdir -p "$XDG_CONFIG_HOME/ward"
printf '{"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "cat >/dev/null; env >%s/hook.env"}]}]}}\n' \
	"$T_TMP" >"$XDG_CONFIG_HOME/ward/config.json"

# The model's one call: the bash call scans what it can see of itself,
# then waits until the test has looked (the file go), bounded.
export FAKE_TOOL=bash
FAKE_INPUT=$(python3 -c 'import json,sys; print(json.dumps({"timeout": 300, "command":
  "python3 /workspace/scan.py %s >/workspace/bash-scan.txt; touch /workspace/started; "
  "for i in $(seq 1500); do [ -e /workspace/go ] && break; sleep 0.1; done; echo waited" % sys.argv[1]}))' "$NEEDLES")
export FAKE_INPUT

boxpid() { # boxpid BOX KEY: a field of the box's info
	"$WARD" box info "$1" 2>/dev/null | json "$2"
}
inflight() { # inflight NAME MCP-ENV-JSON: a run whose bash call waits; sets WS, WP, BOX, K, PX, HELPER
	WS=$T_TMP/ws-$1
	rm -rf "$WS"; mkdir -p "$WS"; cp "$SRVPY" "$WS/srv.py"; cp "$SCAN" "$WS/scan.py"
	serve mcp-call
	# The MCP server scans its own environment (its shell's, which it
	# then becomes) before it starts.
	python3 - "$T_TMP/$1.mcp.json" "$2" "$NEEDLES" <<'PY'
import json, sys
cmd = "python3 /workspace/scan.py %s >/workspace/mcp-scan.txt; exec python3 /workspace/srv.py" % sys.argv[3]
json.dump({"mcpServers": {"t": {"command": "sh", "args": ["-c", cmd], "env": json.loads(sys.argv[2])}}},
          open(sys.argv[1], "w"))
PY
	local where=(--workspace "$WS" --rw --allow-host example.test)
	if [ "$BACKEND" = vm ]; then
		BOX=$(env ANTHROPIC_API_KEY="$KEY" OPENAI_API_KEY="$OKEY" "$WARD" box create --backend vm --persistent \
			--workspace "$WS" --rw --allow-host example.test)
		echo "$BOX" >>"$T_TMP/boxes"
		where=(--box "$BOX")
	fi
	env ANTHROPIC_API_KEY="$KEY" OPENAI_API_KEY="$OKEY" "$WARD" run --provider anthropic --base-url "$URL" \
		--model fake-model "${where[@]}" --deadline 10m --mcp-config "$T_TMP/$1.mcp.json" \
		"$TASKC: run the command" >"$T_TMP/$1.out" 2>"$T_TMP/$1.err" </dev/null &
	WP=$!
	for _ in $(seq 1200); do [ -e "$WS/started" ] && break; sleep 0.1; done
	[ "$BACKEND" = vm ] || BOX=$(sed -n 's/^ward: session [^ ]*, box \([^ ]*\)$/\1/p' "$T_TMP/$1.err")
	K=$(boxpid "$BOX" keeper_pid)
	PX=$(pgrep -P "$K" -x ward-proxy)
	HELPER=$(pgrep -P "$K" -x "$([ "$BACKEND" = vm ] && echo qemu-system-x86 || echo ward-guest)")
}
finish() { # let the call end; RC is the run's exit status
	touch "$WS/go"
	wait "$WP"; RC=$?
}
others() { # the hits of the scan in $1 that are not ward's own (pid $WP)
	grep '^HIT' <<<"$1" | grep -v "^HIT $WP "
}
has_proc() { # has_proc SCAN AWK-CONDITION: a process of the table matches
	awk '$1 == "P" && ('"$2"') { f = 1 } END { exit !f }' <<<"$1"
}

# ---- a run in flight: no helper holds a secret ----
inflight plain '{"MODE": "plain"}'
[ -e "$WS/started" ]; ok $? "$BACKEND: the run's bash call is running"
[ -n "$K" ] && [ -n "$PX" ] && [ -n "$HELPER" ]
ok $? "$BACKEND: the box's keeper ($K), its egress proxy ($PX) and its $([ "$BACKEND" = vm ] && echo VMM || echo guest) ($HELPER) are there"
S=$(python3 "$SCAN" --mem "$K,$PX,$WP" $NEEDLES)
has_proc "$S" "\$2 == $K && \$4 == \"ward-keeper\""; ok $? "the keeper runs the ward-keeper program"
has_proc "$S" "\$3 == $WP && \$4 == \"ward-hookguard\""; ok $? "ward's hook guard is running"
has_proc "$S" "\$3 == $WP && \$4 == \"ward-watchdog\""; ok $? "and its watchdog"
if [ "$BACKEND" = ns ]; then
	has_proc "$S" '/srv\.py/'; ok $? "ns: the MCP server is in the table"
	has_proc "$S" '/workspace\/go/'; ok $? "ns: and the bash call"
fi
is "$(others "$S")" "" "$BACKEND: no process ward started holds a key or the task's text in its environment or command line, nor the keeper or the proxy in its memory"
like "$S" "HIT $WP [^ ]+ environ 0" "twin: ward's own environment holds the key (the scan finds it)"
like "$S" "HIT $WP [^ ]+ cmdline 2" "twin: ward's own command line holds the task"
like "$S" "HIT $WP [^ ]+ mem 0" "twin: the scan finds the key in ward's memory"
M=$(awk -v k="$K" -v p="$PX" '$1 == "MEM" && ($2 == k || $2 == p) && $3 > 1000000 { n++ } END { print n + 0 }' <<<"$S")
is "$M" 2 "the keeper's and the proxy's memory were read (over 1 MB each)"
B=$(cat "$WS/bash-scan.txt" 2>/dev/null)
has_proc "$B" '/workspace\/go/'; ok $? "$BACKEND: the bash call scanned itself from inside the box"
is "$(grep '^HIT' <<<"$B")" "" "$BACKEND: the bash call's environment and command line hold no secret"
MS=$(cat "$WS/mcp-scan.txt" 2>/dev/null)
has_proc "$MS" '/srv\.py/'; ok $? "$BACKEND: the MCP server scanned itself from inside the box"
is "$(grep '^HIT' <<<"$MS")" "" "$BACKEND: the MCP server's environment holds no secret"
like "$(tr '\0' '\n' </proc/$K/cmdline)" "^ward-keeper" "the keeper's command line is ward-keeper and its box"
like "$(tr '\0' ' ' </proc/$PX/cmdline)" "^ward-proxy $BOX" "the proxy's is ward-proxy and its box"
is "$(tr '\0' '\n' </proc/$PX/environ | grep -vc '^[A-Z]*SAN_OPTIONS=')" 0 "the proxy's environment is empty (but a sanitizer's settings)"
like "$(cat "$T_TMP/hook.env" 2>/dev/null)" "ANTHROPIC_API_KEY=$KEY" "a hook is the user's program: it has ward's environment, the key too"
finish
is "$RC" 0 "$BACKEND: the run ends well once the call is let go"

# ---- twin: an MCP server given the key by .mcp.json has it ----
inflight given '{"GIVEN_KEY": "${ANTHROPIC_API_KEY}"}'
MS=$(cat "$WS/mcp-scan.txt" 2>/dev/null)
like "$MS" "HIT [0-9]+ [^ ]+ environ 0" "$BACKEND: an MCP server whose .mcp.json names the key has it in its environment"
[ -e "$WS/started" ]; ok $? "$BACKEND: again, the run's bash call is running"
B=$(cat "$WS/bash-scan.txt" 2>/dev/null)
has_proc "$B" '/workspace\/go/' && ! grep -q '^HIT' <<<"$B"
ok $? "and a bash call of the same box still has not"
S=$(python3 "$SCAN" $NEEDLES)
if [ "$BACKEND" = ns ]; then
	MCP=$(awk '$1 == "P" && /srv\.py/ { print $2; exit }' <<<"$S")
	is "$(others "$S" | grep -v "^HIT $MCP [^ ]* environ 0$")" "" "ns: no other process ward started has it"
else
	is "$(others "$S")" "" "vm: no process on the host but ward has it"
fi
finish
is "$RC" 0 "the run ends well"

# ---- one box's VMM or guest does not hold another box's mounts ----
WSA=$T_TMP/ws-a; mkdir -p "$WSA"; echo a >"$WSA/f"
A=$("$WARD" box create --persistent --workspace "$WSA")
echo "$A" >>"$T_TMP/boxes"
AIMG=$XDG_STATE_HOME/ward/workspaces/$A.img
AMNT=$XDG_STATE_HOME/ward/workspaces/$A
if [ -e "$AIMG" ]; then
	ALOOP=$(losetup -j "$AIMG" | cut -d: -f1)
	[ -n "$ALOOP" ] && grep -q " $AMNT " /proc/self/mountinfo
	ok $? "box A's workspace layer is an image on a loop device ($ALOOP), mounted"
	WSB=$T_TMP/ws-b; mkdir -p "$WSB"; echo b >"$WSB/f"
	B=$("$WARD" box create --backend "$BACKEND" --persistent --workspace "$WSB" --allow-host example.test)
	echo "$B" >>"$T_TMP/boxes"
	BK=$(boxpid "$B" keeper_pid)
	BQ=$(pgrep -P "$BK" -x "$([ "$BACKEND" = vm ] && echo qemu-system-x86 || echo ward-guest)")
	BPX=$(pgrep -P "$BK" -x ward-proxy)
	ADEV=$(awk -v m="$AMNT" '$5 == m { print $3 }' /proc/self/mountinfo)
	[ -n "$BQ" ] && ! grep -q "$A" "/proc/$BQ/mountinfo" && ! awk -v d="$ADEV" '$3 == d { f = 1 } END { exit !f }' "/proc/$BQ/mountinfo"
	ok $? "$BACKEND: box B's $([ "$BACKEND" = vm ] && echo VMM || echo guest), made after, holds none of A's mounts (device $ADEV)"
	is "$(readlink "/proc/$BPX/ns/mnt")" "$(readlink /proc/self/ns/mnt)" "B's proxy is in the host's mount namespace (an unmount there frees a mount)"
	is "$(readlink "/proc/$BPX/cwd"):$(readlink "/proc/$BK/cwd")" "/:/" "and it and B's keeper work in /, holding no directory busy"
	# Hibernated, A's keeper lets go of its layer (kept on disk): the
	# unmount on the host must free the loop device, whoever was made since.
	"$WARD" box hibernate "$A" >/dev/null
	for _ in $(seq 50); do [ -z "$(losetup -j "$AIMG")" ] && ! grep -q " $AMNT " /proc/self/mountinfo && break; sleep 0.1; done
	is "$(losetup -j "$AIMG"; [ -e "$AIMG" ] && echo kept)" "kept" "A hibernated: its layer's loop device is let go (the image is kept)"
	! grep -q "$A" /proc/self/mountinfo && ! grep -q "$A" "/proc/$BQ/mountinfo"
	ok $? "and its mount is gone, on the host and in B's $([ "$BACKEND" = vm ] && echo VMM || echo guest)"
	"$WARD" box destroy "$A" >/dev/null
	is "$(ls "$AIMG" 2>/dev/null; grep -c "$A" "/proc/$BQ/mountinfo")" 0 "A destroyed: nothing of its layer is left"
	is "$("$WARD" box exec "$B" -- 'cat /workspace/f; echo two >/workspace/g; cat /workspace/g')" "$(printf 'b\ntwo')" \
		"twin: box B still works (its workspace read and written)"
else
	ok 0 "# SKIP the layers are not loop-mounted images here"
fi

# ---- closed standard descriptors (ward's own: the backend does not matter) ----
[ "$BACKEND" = ns ] || { done_testing; exit; }
export FAKE_INPUT='{"command": "echo made >/workspace/out.txt; echo done"}'
closed() { # closed NAME REDIRECTIONS: ward run with those descriptors closed; RC, and GOT: the exit
	# status, the file the call made, and whether the session's journal is whole JSON lines
	WS=$T_TMP/ws-fd-$1; rm -rf "$WS"; mkdir -p "$WS"
	serve mcp-call
	eval "env ANTHROPIC_API_KEY=k \"\$WARD\" run --provider anthropic --base-url \"\$URL\" --model fake-model \
		--workspace \"\$WS\" --rw 'make the file' $2"
	RC=$?
	local j; j=$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)
	GOT="$RC:$(cat "$WS/out.txt" 2>/dev/null):$(python3 -c 'import json,sys
[json.loads(l) for l in open(sys.argv[1])]; print("journal")' "$j" 2>/dev/null)"
}
closed open "</dev/null >$T_TMP/fd.out 2>$T_TMP/fd.err"
is "$GOT" "0:made:journal" "twin: all descriptors open: exit 0, the call ran, the journal is whole"
closed stdout ">&- </dev/null 2>$T_TMP/fd.err"
is "$GOT" "0:made:journal" "stdout closed: exit 0, the call ran (the box unharmed), the journal is whole (the answer did not go into it)"
closed stderr "2>&- </dev/null >$T_TMP/fd.out"
is "$GOT" "0:made:journal" "stderr closed: exit 0, the call ran, the journal is whole"
like "$(cat "$T_TMP/fd.out")" "done" "and the answer is on stdout"
closed stdin "<&- >$T_TMP/fd.out 2>$T_TMP/fd.err"
is "$GOT" "0:made:journal" "stdin closed: exit 0, the call ran, the journal is whole"
closed all "<&- >&- 2>&-"
is "$GOT" "0:made:journal" "all three closed: exit 0, the call ran, the journal is whole"

done_testing
