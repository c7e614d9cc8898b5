#!/usr/bin/env python3
"""Lists every `sleep` a test script runs as synchronisation.

A test waits on the event it is about, with a bound (lib.sh's wait_until),
never on a guess of how long the event takes. This reads shell scripts and
prints FILE:LINE for each `sleep` run as a command at the script's own level
(not inside a quoted string, such as a command given to `ward box exec`, and
not inside a heredoc's body), except:
  - a sleep in a bounded poll loop: a `for` loop whose body breaks or
    returns, or a `while`/`until` loop whose condition is the event (the
    loop's bound is its list, or a clock compared in its condition or body);
  - a sleep started in the background (`sleep N &`): a process, not a wait;
  - a sleep whose purpose is to let time pass (to show that something did
    NOT happen within it), marked on its line with a comment `# time: WHY`.

usage: sleep-check.py FILE|DIR... exit 1 and the list when any is found
       sleep-check.py --self-test  TAP: the checker finds what it must
"""
import glob
import os
import re
import sys

META = set(';&|()<> \t\n')
# After these words the next word is a command.
LEADERS = {'then', 'do', 'else', 'elif', 'if', 'while', 'until', '!', 'time', '{'}
OPERATORS = {';', '&', '&&', '||', '|', '(', ')', '$(', ';;', '\n', '{', '}', '`'}


def skip_dq(text, i):
    """The index past the '"' that closes a string whose body starts at i."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == '\\':
            i += 2
        elif c == '"':
            return i + 1
        elif text.startswith('$(', i):
            i = skip_group(text, i + 2, '(', ')')
        elif text.startswith('${', i):
            i = skip_group(text, i + 2, '{', '}')
        elif c == '`':
            j = text.find('`', i + 1)
            i = n if j < 0 else j + 1
        else:
            i += 1
    return n


def skip_group(text, i, open_, close):
    """The index past the CLOSE that ends a group whose body starts at i
    (a command substitution's code: its quotes and nested groups skipped)."""
    n, depth = len(text), 1
    while i < n:
        c = text[i]
        if c == '\\':
            i += 2
            continue
        if c == "'" and open_ == '(':
            j = text.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            i = skip_dq(text, i + 1)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def tokens(text):
    """Yields (kind, value, line): kind 'w' a word, 'op' an operator.
    Comments are collected per line in the returned dict."""
    comments = {}
    out = []
    i, n, line = 0, len(text), 1
    heredocs = []           # delimiters whose bodies start after this line
    word, wline = None, 0

    def flush():
        nonlocal word
        if word is not None:
            out.append(('w', word, wline))
            word = None

    while i < n:
        c = text[i]
        if c == '\n':
            flush()
            out.append(('op', '\n', line))
            line += 1
            i += 1
            # Heredoc bodies: skipped to their delimiter lines.
            for strip_tabs, delim in heredocs:
                while i < n:
                    j = text.find('\n', i)
                    if j < 0:
                        j = n
                    body = text[i:j]
                    i = j + 1
                    line += 1
                    if (body.lstrip('\t') if strip_tabs else body) == delim:
                        break
            heredocs = []
            continue
        if c in ' \t':
            flush()
            i += 1
            continue
        if c == '#' and word is None:
            j = text.find('\n', i)
            j = n if j < 0 else j
            comments[line] = text[i:j]
            i = j
            continue
        if c == '\\':
            if i + 1 < n and text[i + 1] == '\n':   # a continued line
                line += 1
                i += 2
                continue
            word = (word or '') + text[i:i + 2]
            wline = wline if word != text[i:i + 2] else line
            i += 2
            continue
        if c == "'" or c == '"' or text.startswith('$((', i) or text.startswith('${', i):
            # A quoted string, an arithmetic or a parameter expansion: part of
            # the word, whatever it holds (a command in "$(...)" included).
            start = line
            if c == "'":
                j = text.find("'", i + 1) + 1 or n
            elif c == '"':
                j = skip_dq(text, i + 1)
            elif text[i + 1] == '{':
                j = skip_group(text, i + 2, '{', '}')
            else:
                j = skip_group(text, i + 2, '(', ')')
            s = text[i:j]
            line += s.count('\n')
            if word is None:
                word, wline = '', start
            word += s
            i = j
            continue
        if c == '$' and text.startswith('$(', i):
            flush()
            out.append(('op', '$(', line))
            i += 2
            continue
        if c == '`':
            flush()
            out.append(('op', '`', line))
            i += 1
            continue
        if c == '<' and text.startswith('<<', i) and not text.startswith('<<<', i):
            flush()
            m = re.match(r'<<(-?)\s*(["\']?)([^\s;&|()<>"\']+)\2', text[i:])
            if m:
                heredocs.append((m.group(1) == '-', m.group(3)))
                i += len(m.group(0))
                continue
        if c in META:
            flush()
            two = text[i:i + 2]
            if two in ('&&', '||', ';;'):
                out.append(('op', two, line))
                i += 2
                continue
            if c in '<>':
                # A redirection: its target word follows; not a command.
                j = i
                while j < n and text[j] in '<>&|':
                    j += 1
                out.append(('redir', text[i:j], line))
                i = j
                continue
            out.append(('op', c, line))
            i += 1
            continue
        if word is None:
            word, wline = '', line
        word += c
        i += 1
    flush()
    return out, comments


class Loop:
    def __init__(self, kind, line):
        self.kind = kind            # for, while, until
        self.line = line
        self.cond = []              # words of a while/until condition
        self.in_cond = kind != 'for'
        self.exits = False          # its body breaks or returns
        self.clock = False          # a clock is compared (now_ms, date)
        self.sleeps = []


def scan(text):
    """Returns [(line, reason)] for each synchronising sleep."""
    toks, comments = tokens(text)
    found = []
    stack = []                  # frames: Loop, or a str for other compounds
    at_cmd = True
    in_case = 0
    case_pat = False
    redir = False
    i = 0
    cmd_sleep = None            # (line, frame) of a sleep in the current simple command
    in_case_head = [False]      # between `case` and its `in`

    def loops():
        return [f for f in stack if isinstance(f, Loop)]

    def end_cmd(term):
        nonlocal cmd_sleep
        if cmd_sleep is not None:
            ln, loop = cmd_sleep
            cmd_sleep = None
            if term == '&':
                return          # a process in the background, not a wait
            if re.search(r'#\s*time:\s*\S', comments.get(ln, '')):
                return
            if loop is not None:
                loop.sleeps.append(ln)
            else:
                found.append(ln)

    while i < len(toks):
        kind, v, ln = toks[i]
        i += 1
        if kind == 'redir':
            redir = True
            continue
        if kind == 'op':
            redir = False
            if v in (';', '&', '&&', '||', '|', '\n', ';;'):
                end_cmd(v)
                at_cmd = True
                if v == ';;' and in_case:
                    case_pat = True
                continue
            if v in ('(', '$(', '`'):
                if v == '(' and i < len(toks) and toks[i][1] == ')':
                    i += 1      # NAME() : a function's definition
                    at_cmd = True
                    continue
                if v == '`' and stack and stack[-1] == '`':
                    end_cmd(v)
                    stack.pop()
                    at_cmd = False
                    continue
                end_cmd(v)
                stack.append(v)
                at_cmd = True
                continue
            if v == ')':
                if case_pat:
                    case_pat = False
                    at_cmd = True
                    continue
                # What follows the group decides whether it ran in the background.
                nxt = toks[i][1] if i < len(toks) else '\n'
                end_cmd(nxt if nxt == '&' else ')')
                while stack and stack[-1] not in ('(', '$('):
                    stack.pop()
                if stack:
                    stack.pop()
                at_cmd = False
                continue
            continue
        # A word.
        if redir:
            redir = False
            continue
        if case_pat and v != 'esac':
            continue
        lp = loops()
        inner = lp[-1] if lp else None
        if inner is not None:
            if inner.in_cond and v != 'do':
                inner.cond.append(v)
            if 'now_ms' in v or re.match(r'^-(lt|le|gt|ge)$', v) or 'date +%s' in v:
                inner.clock = True
            if at_cmd and v in ('break', 'return') and not inner.in_cond:
                inner.exits = True
        if not at_cmd:
            if v == 'in' and stack and stack[-1] == 'case' and not case_pat and in_case_head[0]:
                in_case_head[0] = False
                case_pat = True
                at_cmd = True
            continue
        if v in ('for', 'while', 'until'):
            stack.append(Loop(v, ln))
            at_cmd = v != 'for'
            continue
        if v == 'do':
            if inner is not None:
                inner.in_cond = False
            at_cmd = True
            continue
        if v == 'done':
            end_cmd('done')
            while stack and not isinstance(stack[-1], Loop):
                stack.pop()
            if stack:
                loop = stack.pop()
                bounded = (loop.kind == 'for' and loop.exits) or \
                          (loop.kind != 'for' and (loop.clock or loop.exits))
                if not bounded:
                    found.extend(loop.sleeps)
            at_cmd = False
            continue
        if v in ('if', '{'):
            stack.append(v)
            at_cmd = True
            continue
        if v in ('fi', '}'):
            end_cmd(v)
            want = 'if' if v == 'fi' else '{'
            while stack and stack[-1] != want and not isinstance(stack[-1], Loop):
                stack.pop()
            if stack and stack[-1] == want:
                stack.pop()
            at_cmd = False
            continue
        if v == 'case':
            stack.append('case')
            in_case_head[0] = True
            in_case += 1
            at_cmd = False
            continue
        if v == 'esac' and (at_cmd or case_pat):
            end_cmd(v)
            while stack and stack[-1] != 'case':
                stack.pop()
            if stack:
                stack.pop()
            in_case -= 1
            case_pat = False
            at_cmd = False
            continue
        if v in LEADERS:
            at_cmd = True
            continue
        if re.match(r'^[A-Za-z_][A-Za-z0-9_]*=', v):
            continue            # an assignment before the command
        if v in ('local', 'export', 'exec', 'command'):
            at_cmd = v in ('exec', 'command')
            continue
        if v == 'sleep':
            cmd_sleep = (ln, inner if (inner is not None) else None)
        at_cmd = False
    end_cmd('\n')
    return sorted(set(found))



def main(paths):
    bad = 0
    files = []
    for p in paths:     # a directory: its *.sh
        files += sorted(glob.glob(os.path.join(p, '*.sh'))) if os.path.isdir(p) else [p]
    for p in files:
        text = open(p, encoding='utf-8').read()
        lines = text.split('\n')
        for ln in scan(text):
            print(f"{p}:{ln}: {lines[ln - 1].strip()}")
            bad += 1
    if bad:
        print(f"# {bad} sleep(s) used as synchronisation: wait on the event with a bound "
              "(lib.sh's wait_until SECONDS CMD...), or mark a sleep that lets time pass "
              "with '# time: WHY' on its line", file=sys.stderr)
    return 1 if bad else 0


SAMPLE = r'''# a sample: each line ending "# BAD" must be listed, no other
sleep 1 # BAD
x=$(sleep 2; echo) # BAD
( sleep 0.3; kill -STOP "$P" ) & # BAD
if true; then sleep 1; fi # BAD
while true; do sleep 1; done # BAD
for i in 1 2 3; do touch f; sleep 0.1; done # BAD
f() { sleep 0.5; } # BAD
a && sleep 1 || b # BAD
"$WARD" box exec "$B" -- 'sleep 1; echo' >/dev/null
"$WARD" box exec "$B" -- "sleep 1"
sleep 1000 &
echo sleep 1
cat <<EOF
sleep 1
EOF
cat <<-'EOF'
	sleep 1
	EOF
sleep 3.5	# time: the idle timeout passes and nothing may happen
for _ in $(seq 100); do [ -e f ] && break; sleep 0.05; done
for _ in $(seq 100); do
	[ -e f ] && break
	sleep 0.05
done
until=$(( $(now_ms) + 3000 ))
while [ "$(now_ms)" -lt $until ]; do [ -e f ] && return 0; sleep 0.05; done
while kill -0 "$P" && [ $(( $(now_ms) - t0 )) -lt 3000 ]; do sleep 0.02; done
case $x in
a) sleep 1 ;; # BAD
b) echo ok ;;
esac
sleep 1 # BAD
# sleep 1 in a comment
wait_until 5 test -e f
'''


def self_test():
    want = [i for i, l in enumerate(SAMPLE.split('\n'), 1) if l.rstrip().endswith('# BAD')]
    got = scan(SAMPLE)
    print("1..3")
    print(("ok" if got == want else "not ok") + " 1 - the sample's synchronising sleeps are listed, and no other")
    if got != want:
        print(f"#   got lines {got}, want {want}")
    print(("ok" if scan("sleep 1\n") == [1] else "not ok") + " 2 - a bare sleep is found")
    print(("ok" if scan("wait_until 3 test -e x\n") == [] else "not ok") + " 3 - a bounded wait is not")
    return 0 if got == want and scan("sleep 1\n") == [1] else 1


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1:]))
