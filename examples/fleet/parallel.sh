#!/bin/sh
# Every task of tasks.jsonl on this machine, 4 at a time, with GNU parallel.
# --joblog keeps each index's exit code; `parallel --resume-failed` with the
# same joblog runs the failed ones again (a finished task is skipped anyway).
set -u
cd "$(dirname "$0")"
N=$(grep -c . tasks.jsonl)
seq 0 $((N - 1)) | parallel -j 4 --joblog results.joblog ward run --task-file tasks.jsonl --task-index {} --out results --deadline 30m
ward report results
