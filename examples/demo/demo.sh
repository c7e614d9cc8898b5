#!/bin/sh
# Runs inside a ward box: shows what the box is and what it stops.
echo "== inside the box: $(id -un) (uid $(id -u)) on $(hostname)"
echo "== /workspace (copy-on-write over examples/demo):"; ls -l
echo "hello from the box" > written-in-box.txt
echo "== a file written in the box: $(cat written-in-box.txt) (the host's tree is untouched)"
echo "== the network:"; python3 -c 'import socket; socket.create_connection(("1.1.1.1", 53), 1)' 2>&1 | tail -1
echo "== a process that ignores SIGTERM and escapes with setsid, given 1 s:"
timeout 1 setsid sh -c 'trap "" TERM; sleep 5' ; echo "   ended with $?"
echo "== done"
