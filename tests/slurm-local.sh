#!/bin/bash
# A one-machine Slurm for localhost, owned by a test: every file it writes
# (slurm.conf, munge key and socket, state, spool, logs, pid files) is under
# DIR, and SLURM_CONF points at DIR/slurm.conf, so the system's Slurm and
# munge are never read or touched.
#
#   . tests/slurm-local.sh; slurm_up DIR || skip_all "$SLURM_WHY"; ...; slurm_down DIR
#   bash tests/slurm-local.sh up|down|selftest DIR
#
# slurm_up returns non-zero with one line on stderr (also in SLURM_WHY) when
# a cluster cannot be had here; slurm_down stops munged, slurmctld, slurmd and
# any slurmstepd of this cluster and fails if one of them is left.
#
# Exit codes are read back from slurmctld's job records: MinJobAge keeps a
# finished job's record for a day (there is no accounting, so no sacct), and
# `scontrol -o show job` prints one line per array task with its ExitCode.
# slurm_exit_codes prints "TASK CODE" per line from those records.

SLURM_WHY=""

slurm_fail() { SLURM_WHY="slurm: $*"; echo "$SLURM_WHY" >&2; return 1; }

slurm_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# slurm_pids DIR: the pids of this cluster's daemons and job steps. Daemons
# name DIR on their command line (or in their pid file); slurmstepd is found
# through the SLURM_CONF it inherits from slurmd.
slurm_pids() {
	local d=$1 p f
	for f in munged slurmctld slurmd; do
		[ -s "$d/run/$f.pid" ] && p=$(cat "$d/run/$f.pid") && [ -e "/proc/$p" ] && echo "$p"
	done
	for p in $(pgrep -x munged; pgrep -x slurmctld; pgrep -x slurmd; pgrep -f '^slurmstepd'); do
		# A process may end between pgrep and these reads.
		if { tr '\0' '\n' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF "$d/" ||
			{ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$d/slurm.conf"; then
			echo "$p"
		fi
	done | sort -u | while read -r p; do
		# A zombie is done; only its reaping (by init, here) is left.
		[ "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)" = Z ] || echo "$p"
	done
}

slurm_up() { # slurm_up DIR
	local d=$1 host conf node cport dport i
	for b in munged mungekey slurmctld slurmd sinfo sbatch scontrol; do
		command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$b" >/dev/null 2>&1 ||
			{ slurm_fail "$b is not installed (.ci/setup installs slurm-wlm and munge)"; return 1; }
	done
	export PATH=$PATH:/usr/sbin
	[ "$(id -u)" -eq 0 ] || { slurm_fail "slurmd runs jobs as their owner and needs root; running as $(id -un)"; return 1; }
	d=$(cd "$d" && pwd) || { slurm_fail "no directory $1"; return 1; }
	mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log" "$d/run" "$d/jobs"
	# munged refuses a key or socket directory others can write to.
	chmod 700 "$d/munge" "$d/run"
	chmod 755 "$d" "$d/jobs"
	host=$(hostname -s)
	mungekey -c -k "$d/munge/munge.key" 2>"$d/log/mungekey.log" ||
		{ slurm_fail "mungekey: $(head -1 "$d/log/mungekey.log")"; return 1; }
	# --force: munged otherwise refuses to run as root.
	munged --force --socket="$d/run/munge.socket" --key-file="$d/munge/munge.key" \
		--pid-file="$d/run/munged.pid" --log-file="$d/log/munged.log" \
		--seed-file="$d/munge/munged.seed" 2>"$d/log/munged.err" ||
		{ slurm_fail "munged: $(tail -1 "$d/log/munged.err")"; return 1; }

	# "CPUs=2 Boards=1 ... RealMemory=N": the node as slurmd sees it.
	node=$(slurmd -C 2>/dev/null | sed -n 's/^NodeName=[^ ]* //p' | head -1)
	[ -n "$node" ] || { slurm_fail "slurmd -C printed no node line"; return 1; }
	# Ports of our own: another test's cluster, or a real one, may hold 6817.
	cport=$(slurm_free_port); dport=$(slurm_free_port)
	conf=$d/slurm.conf
	cat >"$conf" <<EOF
ClusterName=wardtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued job may not start again until its credential
# expires, 120 s by default.
AuthInfo=socket=$d/run/munge.socket,cred_expire=10
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/slurmd-%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# Keep finished jobs' records for a day: without accounting they are the
# only place a job's exit code can be read back (scontrol show job).
MinJobAge=86400
# Slurm's defaults, written out: SIGTERM, then SIGKILL 30 s later.
KillWait=30
PlugStackConfig=$d/plugstack.conf
NodeName=$host NodeAddr=127.0.0.1 $node State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
	: >"$d/plugstack.conf"
	export SLURM_CONF=$conf
	slurmctld -f "$conf" 2>"$d/log/slurmctld.err" ||
		{ slurm_fail "slurmctld: $(tail -1 "$d/log/slurmctld.err") (log: slurmctld.log)"; return 1; }
	slurmd -f "$conf" 2>"$d/log/slurmd.err" ||
		{ slurm_fail "slurmd: $(tail -1 "$d/log/slurmd.err")"; return 1; }
	for i in $(seq 60); do
		case $(sinfo -h -n "$host" -o %t 2>/dev/null) in
		idle) return 0 ;;
		esac
		sleep 0.5
	done
	slurm_fail "node $host not idle after 30 s: $(sinfo -h -o '%t %E' 2>&1 | head -1); $(grep -i error "$d/log/slurmd.log" 2>/dev/null | tail -1)"
}

slurm_wait() { # slurm_wait JOBID [SECONDS]: until no task of JOBID is pending or running
	local i
	for i in $(seq $((${2:-60} * 2))); do
		[ -z "$(squeue -h -j "$1" -t PENDING,RUNNING,CONFIGURING,COMPLETING,REQUEUED 2>/dev/null)" ] && return 0
		sleep 0.5
	done
	return 1
}

slurm_exit_codes() { # slurm_exit_codes JOBID: "TASK CODE" per array task, from slurmctld's records
	scontrol -o show job "$1" | sed -n 's/.*ArrayTaskId=\([0-9]*\) .*ExitCode=\([0-9]*\):.*/\1 \2/p' | sort -n
}

slurm_down() { # slurm_down DIR
	local d=$1 p i left
	d=$(cd "$d" && pwd) || return 1
	if [ -s "$d/slurm.conf" ]; then
		SLURM_CONF=$d/slurm.conf scancel --full --quiet --partition=debug 2>/dev/null
		SLURM_CONF=$d/slurm.conf scontrol shutdown 2>/dev/null
	fi
	for i in $(seq 20); do
		left=$(slurm_pids "$d" | grep -vxF "$(cat "$d/run/munged.pid" 2>/dev/null)")
		[ -z "$left" ] && break
		sleep 0.25
	done
	for p in $(slurm_pids "$d"); do kill "$p" 2>/dev/null; done
	for i in $(seq 20); do
		[ -z "$(slurm_pids "$d")" ] && break
		sleep 0.25
	done
	for p in $(slurm_pids "$d"); do kill -9 "$p" 2>/dev/null; done
	sleep 0.2
	left=$(slurm_pids "$d")
	[ -z "$left" ] || { echo "slurm: still running: $left" >&2; return 1; }
}

slurm_selftest() { # slurm_selftest DIR: an array job's exit codes, a requeue, teardown
	local d=$1 id codes rc=0 want
	slurm_up "$d" || return 1
	id=$(sbatch --parsable --array=0-3%2 --requeue --open-mode=append -o "$d/jobs/out-%A_%a.txt" \
		--wrap 'echo task $SLURM_ARRAY_TASK_ID; exit $((SLURM_ARRAY_TASK_ID % 3))') ||
		{ echo "sbatch failed"; slurm_down "$d"; return 1; }
	echo "submitted array job $id"
	slurm_wait "$id" 60 || { echo "array job $id did not finish in 60 s"; rc=1; }
	codes=$(slurm_exit_codes "$id" | tr '\n' ' ')
	want="0 0 1 1 2 2 3 0 "
	echo "exit codes (task code): $codes"
	[ "$codes" = "$want" ] || { echo "want: $want"; rc=1; }
	# A finished task submitted with --requeue goes back to pending and runs
	# again (after cred_expire); its output is appended to.
	if scontrol requeue "${id}_1"; then
		slurm_wait "$id" 60 || { echo "requeued ${id}_1 did not finish in 60 s"; rc=1; }
		echo "after requeue of ${id}_1: $(scontrol -o show job "${id}_1" | grep -oE '(JobState|Restarts|ExitCode)=[^ ]*' | tr '\n' ' ')"
		echo "runs of task 1: $(grep -c 'task 1' "$d/jobs/out-${id}_1.txt")"
		[ "$(grep -c 'task 1' "$d/jobs/out-${id}_1.txt")" -eq 2 ] || rc=1
	else
		echo "scontrol requeue ${id}_1 refused"; rc=1
	fi
	slurm_down "$d" || rc=1
	[ -z "$(slurm_pids "$d")" ] && echo "nothing left running" || rc=1
	return $rc
}

if [ "${0##*/}" = slurm-local.sh ] && [ $# -ge 2 ]; then
	case $1 in
	up) slurm_up "$2" && echo "SLURM_CONF=$2/slurm.conf" ;;
	down) slurm_down "$2" ;;
	selftest) slurm_selftest "$2" ;;
	*) echo "usage: $0 up|down|selftest DIR" >&2; exit 64 ;;
	esac
fi
