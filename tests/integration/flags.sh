#!/bin/bash
# The flag tables (cmd/flagtab.c) are the one owner of what a flag is
# called, takes and defaults to: every flag of every table is in its
# command's --help and in its man page, with the same default; the man
# pages install with `meson install` and `man ward-run` reads them; ward
# config shows the table's defaults, and a box made with none of its flags
# has them (the constant in force, found by running it); the README's flag
# lists are the ones the table makes; the bash completion completes them.
. "$(dirname "$0")/lib.sh"
: "${WARD_BUILD_ROOT:?}" "${WARD_SOURCE_ROOT:?}" "${MESON:?}"
export LC_ALL=C MANWIDTH=200
norm() { tr -s ' \n\t' '   '; }	# whitespace as one space: wrapped text compares as one line

# --- meson install into a temporary prefix: the pages and the completion.
DEST=$T_TMP/inst
"$MESON" install -C "$WARD_BUILD_ROOT" --no-rebuild --quiet --destdir "$DEST" >"$T_TMP/install.log" 2>&1
ok $? "meson install --destdir puts the build in a temporary prefix"
MAN1=$(dirname "$(find "$DEST" -name ward-run.1 | head -1)")
[ -d "$MAN1" ] || MAN1=$T_TMP/none
PAGES=$("$WARD" --flagdoc pages)
missing=""
for p in $PAGES; do [ -s "$MAN1/$p.1" ] || missing="$missing $p"; done
is "$missing" "" "every page of the tables ($(echo $PAGES)) is installed into man1"
is "$(ls "$MAN1" | sed 's/\.1$//' | sort | paste -sd' ')" "$(echo "$PAGES" | sort | paste -sd' ')" \
	"and no page the tables do not make"
COMP=$(find "$DEST" -path '*bash-completion/completions/ward' | head -1)
check "the bash completion is installed" test -s "$COMP"
export MANPATH=$(dirname "$MAN1")
RUNMAN=$(man ward-run 2>&1); rc=$?
is "$rc" 0 "MANPATH=... man ward-run renders"
like "$RUNMAN" "^WARD-RUN\(1\)" "man ward-run: the page's header"
like "$RUNMAN" "--max-rounds N" "man ward-run: shows the flags"
like "$(man ward 2>&1)" "ward box" "man ward: lists the commands"

# --- The tables: no name or value twice in a command, help on each row.
out=$("$WARD" --flagdoc check 2>&1)
is "$?/$out" "0/" "ward --flagdoc check: every table is consistent"

# --- Every flag of every table: in --help and in the man page, default and all.
BAD=""
nflags=0
while IFS=$'\t' read -r page name; do
	# shellcheck disable=SC2086
	help=$("$WARD" $name --help 2>&1 | norm)
	manp=$(man "$page" 2>&1 | norm)
	while IFS=$'\t' read -r flag short arg dval dtext key envs want; do
		nflags=$((nflags + 1))
		case "$help" in *" $want "*) ;; *) BAD="$BAD|help of '$name' lacks '$want'" ;; esac
		case "$manp" in *" $want "*) ;; *) BAD="$BAD|man $page lacks '$want'" ;; esac
		if [ "$dtext" != - ]; then
			case "$help" in *"($dtext)"*) ;; *) BAD="$BAD|help of '$name' lacks '--$flag ... ($dtext)'" ;; esac
			case "$manp" in *"($dtext)"*) ;; *) BAD="$BAD|man $page lacks '--$flag ... ($dtext)'" ;; esac
		fi
		if [ "$key" != - ]; then
			case "$manp" in *"Config key: $key."*) ;; *) BAD="$BAD|man $page lacks --$flag's key $key" ;; esac
		fi
	done < <("$WARD" --flagdoc list "$name")
done < <("$WARD" --flagdoc cmds)
is "${BAD#|}" "" "every flag of every table is in its --help and its man page, with its default and key"
lt 100 "$nflags" "the tables hold ward's flags"

# The check can fail: a flag --help does not show is caught.
help=$("$WARD" run --help | grep -v -- '--max-calls' | norm)
case "$help" in *" --max-calls N "*) r=0 ;; *) r=1 ;; esac
is "$r" 1 "twin: a help without --max-calls is seen to lack it"

# --- ward config's defaults are the table's.
OUT=$(cd "$T_TMP" && ANTHROPIC_API_KEY=x "$WARD" config)
BAD=""
while IFS=$'\t' read -r flag short arg dval dtext key envs want; do
	# (one a note comes first in, the model's window, is the model's)
	[ "$key" = - ] || [ "$dval" = - ] || [ "${dtext#default:}" != "$dtext" ] && continue
	line=$(printf '%s\n' "$OUT" | awk -v k="$key" '$1 == k { print $2; exit }')
	[ "$line" = "$dval" ] || BAD="$BAD|$key: config says '$line', the table '$dval'"
done < <("$WARD" --flagdoc list config)
is "${BAD#|}" "" "ward config's defaults are the table's constants"
like "$("$WARD" config --help)" "max_rounds +--max-rounds +none" "ward config --help: each key with its flag and default"

# --- A box made with no flags (but --persistent: it outlives ward box
# create) has the defaults --help says (the constants in force).
dv() { "$WARD" --flagdoc list "box create" | awk -F'\t' -v f="$1" '$1 == f { print $4 }'; }
ms() { # 30m, 8h, 2s -> milliseconds
	local v=${1%[hms]} u=${1##*[0-9]}
	case $u in h) echo $((v * 3600000)) ;; m) echo $((v * 60000)) ;; s) echo $((v * 1000)) ;; esac
}
B=$("$WARD" box create --persistent 2>"$T_TMP/err")
ok $? "a box with no flags but --persistent is made"
T_BOXES="$T_BOXES $B"
INFO=$("$WARD" box info "$B")
is "$(printf '%s' "$INFO" | json limits.memory_bytes)" "$(numfmt --from=iec "$(dv memory)")" \
	"its memory ceiling is --memory's default ($(dv memory))"
is "$(printf '%s' "$INFO" | json limits.pids)" "$(dv pids)" "its process ceiling is --pids' default ($(dv pids))"
is "$(printf '%s' "$INFO" | json backend)" "$(dv backend)" "its backend is --backend's default ($(dv backend))"
is "$(printf '%s' "$INFO" | json network)" "$(dv net)" "its network is --net's default ($(dv net))"
is "$(printf '%s' "$INFO" | json idle_ms)" "$(ms "$(dv idle)")" "its idle limit is --idle's default ($(dv idle))"
ttl=$(printf '%s' "$INFO" | json ttl_left_ms)
want=$(ms "$(dv ttl)")
[ "${ttl%.*}" -le "$want" ] && [ "${ttl%.*}" -gt $((want - 600000)) ]
ok $? "its TTL is --ttl's default ($(dv ttl)): $ttl ms left"
"$WARD" box destroy "$B" >/dev/null 2>&1
T_BOXES=""

# --- The README's flag lists are the tables'.
"$WARD" --flagdoc readme "$WARD_SOURCE_ROOT/README.md" >"$T_TMP/README.md"
ok $? "ward --flagdoc readme reads the README"
diff -u "$WARD_SOURCE_ROOT/README.md" "$T_TMP/README.md" >"$T_TMP/readme.diff"
ok $? "the README's flag lists are what the tables make (build/cmd/ward --flagdoc readme README.md)"
sed 's/^#*/#   /' "$T_TMP/readme.diff" | head -20
like "$(grep -c '^<!-- ward-flags ' "$WARD_SOURCE_ROOT/README.md")" "^[1-9]" "the README has flag lists"
sed 's/^- `--max-rounds N`: at most N model rounds/- `--max-rounds N`: at most N rounds/' "$WARD_SOURCE_ROOT/README.md" >"$T_TMP/README.old"
"$WARD" --flagdoc readme "$T_TMP/README.old" | cmp -s - "$T_TMP/README.old"
is "$?" 1 "twin: a README whose list says otherwise is made again"

# --- The completion: from the same table.
if [ -s "$COMP" ]; then
	got=$(bash -c '. "$1"; COMP_WORDS=(ward run --max-r); COMP_CWORD=2; _ward; echo "${COMPREPLY[*]}"' - "$COMP")
	is "$got" "--max-rounds" "bash completion: ward run --max-r completes --max-rounds"
	got=$(bash -c '. "$1"; COMP_WORDS=(ward box create --mem); COMP_CWORD=3; _ward; echo "${COMPREPLY[*]}"' - "$COMP")
	is "$got" "--memory" "bash completion: ward box create --mem completes --memory"
fi
done_testing
