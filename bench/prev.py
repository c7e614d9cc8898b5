#!/usr/bin/env python3
"""Beside each row of a new RESULTS.md, the previous run's figure for the
same row, so that a regression shows: a row is the same row when its
first column is, in whichever table (the main one, the scale section's),
numbers aside (a label carries its p90s and counts); of rows whose first
columns are the same ("the same through the tunnel ..."), the nth is the
nth.

usage: prev.py OLD NEW > OUT  (OLD may be missing: the column is empty)"""
import re
import sys

HEAD = "| what | ward | previous run | beside it | ratio | goal |"


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def key(label):
    return re.sub(r"[0-9][0-9.,]*", "#", label)


def table_rows(lines):
    """(index of the first header line, {key: ward figure}) of every table."""
    rows, head, prev_col, seen, in_table = {}, None, False, {}, False
    for i, l in enumerate(lines):
        if not l.startswith("|"):
            in_table = False
            continue
        c = cells(l)
        if not in_table:
            in_table = True
            if head is None:
                head, prev_col = i, "previous run" in c
            continue
        if set(l.strip()) <= set("|-: "):
            continue
        if len(c) >= 2:
            k = key(c[0])
            seen[k] = seen.get(k, 0) + 1
            rows[(k, seen[k])] = c[1]
    return head, rows, prev_col


def main():
    old = []
    try:
        old = open(sys.argv[1]).read().splitlines()
    except OSError:
        pass
    _, before, _ = table_rows(old)
    new = open(sys.argv[2]).read().splitlines()
    out, in_table, seen = [], False, {}
    for l in new:
        if l.startswith("|") and not in_table:
            in_table = True
            out.append(HEAD)
            continue
        if in_table and l.startswith("|"):
            c = cells(l)
            if set(l.strip()) <= set("|-: "):
                out.append("|---" * 6 + "|")
                continue
            k = key(c[0])
            seen[k] = seen.get(k, 0) + 1
            c.insert(2, before.get((k, seen[k]), ""))
            out.append("| " + " | ".join(c) + " |")
            continue
        if in_table and not l.startswith("|"):
            in_table = False
        out.append(l)
    print("\n".join(out))


if __name__ == "__main__":
    main()
