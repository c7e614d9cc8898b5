#!/bin/bash
# Every tool's semantics through `ward box tool`, in a real box.
. "$(dirname "$0")/lib.sh"
WS=$T_TMP/ws
mkdir -p "$WS/src" "$WS/build" "$WS/.git"
printf 'one\ntwo\nthree\n' >"$WS/a.txt"
printf 'alpha\r\nbeta\r\ngamma\r\n' >"$WS/crlf.txt"
printf 'héllo wörld ✓\n' >"$WS/uni.txt"
: >"$WS/empty.txt"
printf 'x\0y' >"$WS/bin.dat"
python3 -c 'print("L" * 5000)' >"$WS/long.txt"
seq 1 3000 >"$WS/many.txt"
printf '*.o\nbuild/\n' >"$WS/.gitignore"
echo "needle in c" >"$WS/src/main.c"
echo "needle in o" >"$WS/src/main.o"
echo "needle in build" >"$WS/build/out.c"
echo "needle in git" >"$WS/.git/config"
printf 'needle\0binary' >"$WS/src/blob.bin"
echo "secret" >"$WS/noperm.txt"; chmod 000 "$WS/noperm.txt"
ln -s a.txt "$WS/alias"
LONG=$(printf 'a%.0s' $(seq 200))
: >"$WS/$LONG"
touch -d '2020-01-01' "$WS/src/main.c"
B=$(box_new --workspace "$WS")
T() { "$WARD" box tool "$B" "$@" 2>&1; }
txt() { printf '%s' "$1" | json text 2>/dev/null; }

R=$(T read '{"path":"a.txt"}')
like "$(txt "$R")" "^ +1	one" "read: numbered lines"
like "$(txt "$R")" "3	three" "read: all lines"
R=$(T read '{"path":"many.txt","offset":10,"limit":5}')
like "$(txt "$R")" "^ +10	10" "read: offset"
like "$(txt "$R")" "lines 10-14" "read: says where it stopped and how to go on"
like "$(txt "$(T read '{"path":"many.txt"}')")" "2000	2000" "read: 2,000 lines by default"
unlike "$(txt "$(T read '{"path":"many.txt"}')")" "2001	2001" "read: not more"
like "$(txt "$(T read '{"path":"long.txt"}')")" "line cut: 5000 characters" "read: long lines cut and marked"
like "$(T read '{"path":"bin.dat"}')" "looks binary" "read: binary refused"
like "$(T read '{"path":"empty.txt"}')" "is empty" "read: empty file"
R=$(T read '{"path":"crlf.txt"}')
like "$(txt "$R")" "1	alpha$" "read: CRLF shown without the CR"
like "$(txt "$(T read '{"path":"uni.txt"}')")" "héllo wörld ✓" "read: unicode intact"
like "$(T read '{"path":"missing.txt"}')" "does not exist" "read: missing path"
like "$(T read '{"path":"noperm.txt"}')" "permission denied" "read: permission error"
like "$(T read '{"path":"src"}')" "is a directory" "read: a directory"
like "$(T read '{}')" 'missing required field \\"path\\"' "read: missing field is bad input"

R=$(T write '{"path":"new/dir/f.txt","content":"héllo\n"}')
like "$R" '"outcome":.*"ok"' "write: creates with parents"
like "$R" "7 bytes" "write: reports bytes"
like "$(T write '{"path":"a.txt","content":"replaced\n"}')" "replaced" "write: replaces"
like "$(txt "$(T read '{"path":"a.txt"}')")" "1	replaced" "write: content is there"
check "write: the host's tree is untouched (copy-on-write)" grep -q one "$WS/a.txt"
like "$(T write '{"path":"/usr/ward-tools-x","content":"x"}')" "created" "write: /usr is the box's own root layer"
check "write: and the host's /usr is untouched" test ! -e /usr/ward-tools-x
like "$(T write '{"path":"src","content":"x"}')" "is a directory" "write: onto a directory refused"
T write '{"path":"e.txt","content":"a\nfoo\nb\nfoo\nc\n"}' >/dev/null
like "$(T edit '{"path":"e.txt","old_string":"nope","new_string":"x"}')" "was not found" "edit: zero matches says so"
like "$(T edit '{"path":"e.txt","old_string":"foo","new_string":"x"}')" "occurs 2 times" "edit: two matches without replace_all says so"
R=$(T edit '{"path":"e.txt","old_string":"a\nfoo","new_string":"a\nFOO"}')
like "$R" "1 replacement" "edit: unique match replaced"
like "$(txt "$R")" "2	FOO" "edit: shows the changed line with its number"
like "$(T edit '{"path":"e.txt","old_string":"foo","new_string":"bar","replace_all":true}')" "1 replacement" "edit: replace_all"
like "$(T edit '{"path":"crlf.txt","old_string":"alpha\nbeta","new_string":"ALPHA\nBETA"}')" '"ok"' "edit: LF strings match a CRLF file"
like "$(T bash '{"command":"tr -cd \"\\r\" < crlf.txt | wc -c"}')" '"text":.*"3' "edit: CRLF line ends kept"
like "$(T edit '{"path":"e.txt","old_string":"x","new_string":"x"}')" "are the same" "edit: no-op refused"

R=$(T grep '{"pattern":"needle"}')
like "$R" "src/main.c" "grep: finds in tracked files"
unlike "$R" "main.o|build/|\\.git" "grep: skips .gitignore'd files, build/ and .git"
like "$R" "[0-9]+ binary file" "grep: binary files skipped and counted"
like "$(T grep '{"pattern":"NEEDLE","ignore_case":true,"mode":"content"}')" "src/main.c:1:needle in c" "grep: content mode, ignore_case"
like "$(T grep '{"pattern":"needle","mode":"count","glob":"*.c"}')" "src/main.c:1" "grep: count mode with glob"
like "$(T grep '{"pattern":"[unclosed"}')" "invalid pattern" "grep: invalid pattern is bad input"
# Two different stops, each named: the result limit and the 64 KiB text cap.
R=$(T grep '{"pattern":"^[0-9]+$","path":"many.txt","mode":"content","limit":5}')
like "$(txt "$R")" "stopped at 5 results" "grep: the result limit stops it and says so"
R=$(T grep '{"pattern":"L","path":"long.txt","mode":"content","context":0}')
like "$(txt "$R")" "long.txt:1:L+ \\[line cut\\]" "grep: a huge line is cut and marked"
seq 1 20000 | sed 's/^/a fairly long line of text number /' >"$WS/huge.txt"
R=$(T grep '{"pattern":"line","path":"huge.txt","mode":"content","limit":10000}')
like "$(txt "$R")" "output cut at 64 KiB after [0-9]+ lines, before the limit of 10000" "grep: the text cap stops it and says so"
unlike "$(txt "$R")" "stopped at 10000 results" "grep: and does not claim the result limit"
T write '{"path":"evil.txt","content":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\n"}' >/dev/null
t0=$(now_ms)
R=$(T grep '{"pattern":"^(a+)+$","path":"evil.txt"}')
MS=$(( $(now_ms) - t0 ))
like "$R" "pattern too expensive" "grep: catastrophic backtracking is reported"
lt "$MS" 3000 "grep: and comes back quickly"
like "$(T grep '{"pattern":"^a+b$","path":"evil.txt","mode":"content"}')" "evil.txt:1:" "twin: a sane pattern on the same line matches"

R=$(T find '{"pattern":"*.c"}')
like "$R" "src/main.c" "find: by name at any depth"
unlike "$R" "build/out.c" "find: .gitignore honoured"
T write '{"path":"src/newer.c","content":"x"}' >/dev/null
like "$(txt "$(T find '{"pattern":"src/**/*.c"}')" | head -1)" "src/newer.c" "find: newest first"
like "$(T find '{"pattern":"*.zzz"}')" "no files match" "find: nothing found says so"
# Ten stars over a 200-character name: the old recursive matcher tried
# every placing of them (hours), and nothing polled the cancel in between.
t0=$(now_ms)
R=$(T find '{"pattern":"*a*a*a*a*a*a*a*a*a*ab"}')
MS=$(( $(now_ms) - t0 ))
like "$R" "no files match" "find: ten stars over a 200-character name match nothing"
lt "$MS" 1000 "find: and say so at once"
t0=$(now_ms)
R=$(T find '{"pattern":"*a*a*a*a*a*a*a*a*a*a"}')
MS=$(( $(now_ms) - t0 ))
like "$R" "$LONG" "twin: a pattern that fits finds that name"
lt "$MS" 1000 "twin: as quickly"
like "$(T find "{\"pattern\":\"$(printf '*%.0s' $(seq 4097))\"}")" "longer than 4096 bytes" \
	"find: a pattern longer than a path is bad input"

R=$(T ls '{}')
like "$R" "dir .* src/" "ls: directories marked"
like "$R" "file +14  a.txt|file +9  a.txt" "ls: files with size"
like "$R" "link .* alias -> a.txt" "ls: links with their target"
like "$(T ls '{"path":"nope"}')" "does not exist" "ls: missing path"

R=$(T bash '{"command":"echo $CI $GIT_TERMINAL_PROMPT $DEBIAN_FRONTEND $PAGER; tty; test -t 0 || echo no-tty; cat; echo WARD_CALL_ID=${WARD_CALL_ID:+set}"}')
like "$R" "1 0 noninteractive cat" "bash: environment turns prompts off"
like "$R" "no-tty" "bash: no terminal"
like "$R" "WARD_CALL_ID=set" "bash: WARD_CALL_ID is passed"
R=$(T bash '{"command":"echo out; echo err >&2; exit 3"}')
like "$R" '"exit_code":.*3' "bash: exit code"
like "$(txt "$R")" "exit code 3" "bash: the model is told the exit code"
like "$(txt "$R")" "err" "bash: stderr captured"
like "$(T bash '{"command":"kill -9 $$"}')" '"signal":.*9' "bash: death by signal"
like "$(T bash '{"command":"true","timeout":0}')" "between 1 and 600" "bash: timeout out of range is bad input"
like "$(T bash '{"command":"sleep 5; echo late","idle_timeout":1}')" "no output for 1 s" "bash: idle limit"
like "$(T nosuch '{}' )" "unknown tool" "unknown tool refused"
done_testing
