#!/bin/bash
# examples/fleet: every YAML file parses and has what its runner needs, and
# every flag the examples give `ward run` or `ward report` is one this ward
# accepts (a renamed flag breaks the test, not somebody's cluster).
. "$(dirname "$0")/lib.sh"
EX=$(cd "$(dirname "$0")/../../examples/fleet" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
python3 -c 'import yaml' 2>/dev/null || skip_all "python3 cannot import yaml (.ci/setup installs python3-yaml)"

# yaml_check FILE...: "ok FILE" or "bad FILE: why" per file.
yaml_check() {
	python3 - "$@" <<'PY'
import sys, yaml

def ward_cmd(s):
    return isinstance(s, str) and ("ward run" in s or "ward report" in s)

def k8s_job(d):
    s = d.get("spec", {})
    if s.get("completionMode") != "Indexed":
        return "completionMode is not Indexed"
    for k in ("completions", "parallelism", "backoffLimitPerIndex", "maxFailedIndexes"):
        if not isinstance(s.get(k), int):
            return "no spec." + k
    pod = s.get("template", {}).get("spec", {})
    if pod.get("restartPolicy") != "Never":
        return "restartPolicy is not Never (podFailurePolicy needs it)"
    if pod.get("terminationGracePeriodSeconds") != 30:
        return "terminationGracePeriodSeconds is not 30"
    failed = set()
    for r in s.get("podFailurePolicy", {}).get("rules", []):
        oc = r.get("onExitCodes") or {}
        if r.get("action") == "FailIndex" and oc.get("operator") == "In":
            failed |= set(oc.get("values", []))
    if not {2, 3, 4, 5, 6, 64} <= failed:
        return "podFailurePolicy does not FailIndex on 2, 3, 4, 5, 6, 64 (has %s)" % sorted(failed)
    if 1 in failed or 130 in failed:
        return "podFailurePolicy fails an index on 1 or 130, which are worth a retry"
    cmds = [" ".join(map(str, c.get("command", []) + c.get("args", []))) for c in pod.get("containers", [])]
    if not any(ward_cmd(c) and "--task-file" in c and "--out" in c for c in cmds):
        return "no container runs ward run --task-file ... --out ..."
    return None

def gh_workflow(d):
    steps = [st for j in d["jobs"].values() for st in j.get("steps", [])]
    if not any(ward_cmd(st.get("run")) for st in steps):
        return "no step runs ward"
    if not any("GITHUB_STEP_SUMMARY" in (st.get("run") or "") for st in steps):
        return "no step writes the report to GITHUB_STEP_SUMMARY"
    return None

def gitlab_ci(d):
    jobs = {k: v for k, v in d.items() if isinstance(v, dict) and "script" in v}
    if not any(isinstance(j.get("parallel"), int) and any("--task-index" in l and ward_cmd(l) for l in j["script"])
               for j in jobs.values()):
        return "no job with parallel: N runs ward run --task-index"
    if not any("junit" in j.get("artifacts", {}).get("reports", {}) for j in jobs.values()):
        return "no artifacts:reports:junit"
    return None

for f in sys.argv[1:]:
    try:
        docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
    except yaml.YAMLError as e:
        print("bad %s: %s" % (f, str(e).replace("\n", " ")))
        continue
    why = None
    for d in docs:
        if not isinstance(d, dict):
            why = "a document is not a mapping"
        elif d.get("kind") == "Job":
            why = k8s_job(d)
        elif "jobs" in d:
            why = gh_workflow(d)
        elif "stages" in d:
            why = gitlab_ci(d)
        if why:
            break
    print("bad %s: %s" % (f, why) if why else "ok " + f)
PY
}

# ward_flags FILE...: "run --flag" / "report --flag" for each flag given to
# `ward run` or `ward report` in the files, in shell, YAML or a JSON-style
# command array ("ward", "run", "--out", ...); a command ends at the end of
# its line (after backslash continuations) or at | ; & > #.
ward_flags() {
	python3 - "$@" <<'PY'
import re, sys
seen = set()
for f in sys.argv[1:]:
    text = open(f).read().replace("\\\n", " ")
    for line in text.splitlines():
        line = re.sub(r'["\',\[\]]', " ", line)
        for m in re.finditer(r"\bward\s+(run|report)\b([^|;&>#]*)", line):
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", m.group(2)):
                seen.add((m.group(1), flag))
for sub, flag in sorted(seen):
    print(sub, flag)
PY
}

# accepts SUB FLAG: the flag is listed in `ward SUB --help`.
RUN_HELP=$("$WARD" run --help 2>&1)
REPORT_HELP=$("$WARD" report --help 2>&1)
accepts() {
	local help=$RUN_HELP
	[ "$1" = report ] && help=$REPORT_HELP
	printf '%s\n' "$help" | grep -Eq -- "(^|[^[:alnum:]-])$2([^[:alnum:]-]|$)"
}

# --- YAML ---
YAMLS=$(ls "$EX"/*.yml "$EX"/*.yaml 2>/dev/null)
is "$(echo "$YAMLS" | grep -c .)" 3 "examples/fleet has three YAML files (Kubernetes, GitHub Actions, GitLab CI)"
for f in $YAMLS; do
	out=$(yaml_check "$f")
	is "$out" "ok $f" "$(basename "$f") parses and has the keys its runner needs"
done

# Positive twins: a policy that retries a bound, a workflow without ward,
# and a file that does not parse are caught.
sed 's/values: \[2, 3, 4, 5, 6, 64\]/values: [3, 4, 5, 6, 64]/' "$EX/k8s-indexed-job.yaml" >"$T_TMP/job.yaml"
like "$(yaml_check "$T_TMP/job.yaml")" "^bad .*FailIndex on 2, 3, 4, 5, 6, 64" "a Job that does not FailIndex on exit 2 is caught"
sed 's/ward run /echo /; s/ward report /echo /' "$EX/github-actions.yml" >"$T_TMP/wf.yml"
like "$(yaml_check "$T_TMP/wf.yml")" "^bad .*no step runs ward" "a workflow with no ward step is caught"
printf 'jobs:\n  a: [unclosed\n' >"$T_TMP/broken.yml"
like "$(yaml_check "$T_TMP/broken.yml")" "^bad " "YAML that does not parse is caught"

# --- flags ---
FLAGS=$(ward_flags "$EX"/*)
like "$FLAGS" "^run --task-file$" "the examples give ward run --task-file"
like "$FLAGS" "^report --junit$" "the examples give ward report --junit"
lt 5 "$(echo "$FLAGS" | grep -c .)" "the examples name more than 5 flags"
while read -r sub flag; do
	[ -n "$sub" ] || continue
	accepts "$sub" "$flag"
	ok $? "ward $sub accepts $flag (named in $(grep -l -- "$flag" "$EX"/* | xargs -n1 basename | paste -sd' '))"
done <<EOF
$FLAGS
EOF

# Positive twin: a made-up flag in a copy of an example is caught, and an
# existing flag is not mistaken for a longer or shorter one.
cp "$EX/slurm.sbatch" "$T_TMP/slurm.sbatch"
echo 'ward run --task-file tasks.jsonl --no-such-flag --out results' >>"$T_TMP/slurm.sbatch"
like "$(ward_flags "$T_TMP/slurm.sbatch")" "^run --no-such-flag$" "a made-up flag in a copy is extracted"
accepts run --no-such-flag
ok $((! $?)) "ward run does not accept --no-such-flag"
accepts run --max-cost
ok $? "ward run accepts --max-cost (the matcher's positive case)"
accepts run --max-cos
ok $((! $?)) "ward run does not accept --max-cos (a prefix of a flag is not the flag)"
like "$(ward_flags "$EX/gitlab-ci.yml")" "^run --task-index$" "a flag after \$((...)) on a GitLab line is still read"
unlike "$(ward_flags "$EX/parallel.sh")" "^run --joblog$" "parallel's own flags, before ward run, are not ward's"

# --- install steps: what the build needs, as .ci/setup installs it ---
# Each Debian package a meson.build dependency() comes from (by its
# pkg-config file), and the build's own tools.
NEED=$(cd "$ROOT" && grep -rhoE "dependency\('[a-z0-9_+-]+'\)" --include=meson.build . | sed "s/dependency('//; s/')//" | sort -u |
	while read -r d; do
		[ "$d" = threads ] && continue
		pc=$(pkg-config --variable=pcfiledir "$d" 2>/dev/null)/$d.pc
		dpkg -S "$pc" 2>/dev/null | head -1 | cut -d: -f1
	done | sort -u)
NEED="$NEED meson ninja-build gcc pkg-config e2fsprogs"
like "$NEED" "libzstd-dev" "the build's packages, from meson.build's dependencies, include libzstd-dev"
installs() { # installs FILE: the packages its apt-get install lines name
	python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
for m in re.finditer(r"apt-get install([^\n]*)", text):
    for w in m.group(1).split():
        if not w.startswith("-") and not w.startswith("$"):
            print(w)
PY
}
lacks() { # lacks FILE: the needed packages its install lines do not name
	local have; have=$(installs "$1")
	for p in $NEED; do printf '%s\n' "$have" | grep -qxF "$p" || printf '%s ' "$p"; done
}
for f in "$EX"/*; do
	case $f in *.md) continue ;; esac	# prose, not steps
	[ -n "$(installs "$f")" ] || continue
	is "$(lacks "$f")" "" "$(basename "$f")'s install steps name every package the build needs"
done
SETUP=$(sed -n 's/^PKGS="\(.*\)"$/\1/p' "$ROOT/.ci/setup")
missing=""; for p in $NEED; do printf '%s\n' $SETUP | grep -qxF "$p" || missing="$missing $p"; done
is "$missing" "" ".ci/setup's PKGS names every package the build needs"
sed 's/ libzstd-dev//' "$EX/github-actions.yml" >"$T_TMP/gh.yml"
like "$(lacks "$T_TMP/gh.yml")" "libzstd-dev" "twin: a workflow whose install line lacks libzstd-dev is caught"

# --- slurm.sbatch's CHUNK: each array task runs its CHUNK lines, stops at
# the file's end, and exits with the worst code; a stand-in ward records
# each --task-index and exits 2 for index 4. Twin: CHUNK unset runs one.
mkdir -p "$T_TMP/chunk/bin"
printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --task-index ] && i=$2; shift; done\necho "${i:-env}" >>"%s/chunk/ran"\n[ "${i:-}" = 4 ] && exit 2\nexit 0\n' "$T_TMP" >"$T_TMP/chunk/bin/ward"
chmod +x "$T_TMP/chunk/bin/ward"
printf '{"id": "t%d", "task": "x"}\n' 0 1 2 3 4 >"$T_TMP/chunk/tasks.jsonl"
(cd "$T_TMP/chunk" && PATH=$T_TMP/chunk/bin:$PATH SLURM_ARRAY_TASK_ID=1 CHUNK=3 bash "$EX/slurm.sbatch")
is "$?:$(tr '\n' ' ' <"$T_TMP/chunk/ran")" "2:3 4 " "slurm.sbatch CHUNK=3, array task 1: lines 3 and 4 (the file ends), exit 2 (the worst)"
rm -f "$T_TMP/chunk/ran"
(cd "$T_TMP/chunk" && PATH=$T_TMP/chunk/bin:$PATH SLURM_ARRAY_TASK_ID=1 bash "$EX/slurm.sbatch")
is "$?:$(tr '\n' ' ' <"$T_TMP/chunk/ran")" "0:env " "twin, no CHUNK: one ward, its index from SLURM_ARRAY_TASK_ID"

# --- images.jsonl: every line's image is a reference ward reads ---
BADIMG=""
for img in $(python3 -c 'import json,sys; [print(json.loads(l)["image"]) for l in open(sys.argv[1]) if l.strip()]' "$EX/images.jsonl"); do
	"$WARD" config --image "$img" >/dev/null 2>&1 || BADIMG="$BADIMG $img"
done
is "$BADIMG" "" "every image images.jsonl names is a reference ward reads"
"$WARD" config --image "Not/An:image:" >/dev/null 2>&1
is $? 64 "the twin: one that is not is refused (exit 64)"

# --- Slurm: a real slurmctld reads slurm.sbatch's #SBATCH lines ---
# (the command line's --cpus-per-task and --mem override the script's, so a
# small machine can place the job too).
. "$(dirname "$0")/../slurm-local.sh"
mkdir -p "$T_TMP/slurm"
if slurm_up "$T_TMP/slurm" 2>"$T_TMP/slurm-why"; then
	out=$(cd "$T_TMP" && sbatch --test-only --cpus-per-task=1 --mem=100M "$EX/slurm.sbatch" 2>&1)
	like "$out" "to start at" "sbatch --test-only accepts slurm.sbatch"
	printf '#!/bin/bash\n#SBATCH --no-such-option\n#SBATCH --array=0-2%%2\ntrue\n' >"$T_TMP/bad.sbatch"
	out=$(cd "$T_TMP" && sbatch --test-only "$T_TMP/bad.sbatch" 2>&1)
	unlike "$out" "to start at" "sbatch --test-only refuses an #SBATCH option it does not know"
	slurm_down "$T_TMP/slurm"
	ok $? "the local Slurm (munged, slurmctld, slurmd) is gone"
else
	echo "# skip slurm.sbatch under Slurm: $(tail -1 "$T_TMP/slurm-why")"
fi

done_testing
