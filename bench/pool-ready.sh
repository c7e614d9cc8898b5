#!/bin/sh
# pool-ready.sh WARD [N]: wait (at most 30 s) until N boxes (1) wait in a
# warm pool; the pooled create rows' prepare step, outside their timing.
W=$1 N=${2:-1}
i=0
while [ $i -lt 300 ]; do
	n=$($W box ls --json | python3 -c 'import json,sys; print(sum(b.get("state") == "pooled" for b in json.load(sys.stdin)))')
	[ "$n" -ge "$N" ] && exit 0
	sleep 0.1
	i=$((i + 1))
done
echo "pool-ready: no box waits in the pool after 30 s" >&2
exit 1
