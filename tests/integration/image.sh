#!/bin/bash
# Images (ward image): imported from both kinds of archive and pulled from a
# registry on loopback (Debian's docker-registry, after skopeo pushed the
# fixture to it), unpacked once per digest into a 0700 store that every box
# of the image shares, listed, removed and pruned; every hostile image
# refused or made harmless, each beside its legitimate twin; a task line's
# pull from a loopback registry refused (twins: trusted, or already here);
# a task file whose lines name images runs each, unpacking each image once.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
image_fixtures busybox
IMG=$XDG_DATA_HOME/ward/images

imp() { # imp FILE [FLAGS]: ward image import; OUT, ERR, RC
	OUT=$("$WARD" image import "$@" 2>"$T_TMP/err" </dev/null); RC=$?; ERR=$(cat "$T_TMP/err")
}
nunpacked() { printf '%s\n' "$1" | grep -c "unpacked sha256:"; }	# "unpacked" lines in a text
ntrees() { find "$IMG/trees" -mindepth 1 -maxdepth 1 | wc -l; }
leftovers() { echo $(($(ls -A "$IMG/tmp" | wc -l) + $(ls -A "$IMG/trees" | grep -c '^\.part-'))); }	# unpacks and downloads left behind
images_clear() { # every image here removed
	"$WARD" image ls --json | python3 -c 'import json,sys; [print(n) for i in json.load(sys.stdin) for n in i["names"]]' |
		while read -r n; do "$WARD" image rm "$n" >/dev/null 2>&1; done
	"$WARD" image prune >/dev/null 2>&1
}

# ---- an OCI archive: three layers (gzip, zstd, none)
imp "$FIX/busybox.oci.tar"
is "$RC" 0 "import busybox's OCI archive: exit 0"
like "$OUT" '^sha256:[0-9a-f]{64}$' "it prints the image's digest"
BB=$OUT
is "$(nunpacked "$ERR")" 1 "and says it unpacked it"
T=$(image_tree "$BB")
is "$(grep '^ID=' "$T/etc/os-release")" "ID=ward-busybox" "the second layer's /etc/os-release (zstd) replaced the first's (gzip)"
[ -e "$T/usr/share/ward/gone" ]; is $? 1 "a whiteout (.wh.gone) removed what the layer below made"
is "$(ls "$T/usr/share/ward/old" | tr '\n' ' ')" "c " "an opaque directory (.wh..wh..opq) keeps only its own layer's files"
is "$(stat -c %i "$T/usr/share/ward/link")" "$(stat -c %i "$T/etc/os-release")" "a hard link (uncompressed layer) to a lower layer's file is that file"
is "$(readlink "$T/bin/sh")" /bin/busybox "busybox's applet links are kept as the layer writes them"
cmp -s "$T/bin/busybox" /bin/busybox; is $? 0 "and /bin/busybox is busybox-static's, byte for byte"
is "$(stat -c %a "$IMG" "$IMG/trees" "$IMG/trees/${BB#sha256:}" | tr '\n' ' ')" "700 700 700 " "the store's directories are 0700: no other user of the host reaches a tree"
LS=$("$WARD" image ls)
like "$LS" "^docker.io/ward-test/busybox:latest +sha256:${BB:7:12} +[0-9.]+ MB +never" "ward image ls: name, digest, size, never used"
LSJ=$("$WARD" image ls --json)
is "$(printf '%s' "$LSJ" | python3 -c 'import json,sys; i=json.load(sys.stdin)[0]; print(i["names"], i["size"] > 1000000, i["files"] > 200, i["used"], i["in_use"])')" \
	"['docker.io/ward-test/busybox:latest'] True True None False" "ward image ls --json: names, size, files, last use, in use"

if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$T_TMP/other/ward/images"
	chown 65534:65534 "$T_TMP/other/ward/images"
	XDG_DATA_HOME=$T_TMP/other "$WARD" image ls >/dev/null 2>"$T_TMP/err"; RC=$?
	is "$RC" 1 "a store another user owns: refused"
	like "$(cat "$T_TMP/err")" "the image store .* is not yours; remove it or set XDG_DATA_HOME" "with one line saying what to do"
else
	skip "a store another user owns is made only as root"
fi
"$WARD" image import "$FIX/busybox.oci.tar" --name 'Not A Name' >/dev/null 2>"$T_TMP/err"; RC=$?
is "$RC" 64 "import --name that is no reference: exit 64"

# ---- the same again: found, not unpacked twice
imp "$FIX/busybox.oci.tar"
is "$OUT" "$BB" "imported again: the same digest"
is "$(nunpacked "$ERR")" 0 "and not unpacked again"
like "$ERR" "is here already" "it says the image is here already"
is "$(ntrees)" 1 "one tree in the store"

# ---- two imports at once: one unpacks, the other waits and finds it
"$WARD" image import "$FIX/hostile-bigfile.oci.tar" >"$T_TMP/c1" 2>"$T_TMP/c1.err" &
P1=$!
"$WARD" image import "$FIX/hostile-bigfile.oci.tar" >"$T_TMP/c2" 2>"$T_TMP/c2.err" &
P2=$!
wait $P1; R1=$?; wait $P2; R2=$?
is "$R1 $R2" "0 0" "two imports of one image at once: both succeed"
is "$(cat "$T_TMP/c1")" "$(cat "$T_TMP/c2")" "with one digest"
is "$(cat "$T_TMP/c1.err" "$T_TMP/c2.err" | grep -c 'unpacked sha256:')" 1 "and it is unpacked once"
is "$(stat -c %s "$(image_tree "$(cat "$T_TMP/c1")")/random")" 1048576 "a MiB of random bytes (the bomb's twin: no ratio) is unpacked whole"

# ---- a docker save archive (skopeo reads it), named as it says and as --name says
imp "$FIX/busybox.docker.tar" --name ward-test/busybox-docker:1
is "$RC" 0 "import busybox's docker archive: exit 0"
DK=$OUT
is "$(nunpacked "$ERR")" 1 "it is unpacked"
diff -r --no-dereference "$T" "$(image_tree "$DK")" >"$T_TMP/diff" 2>&1
is $? 0 "its tree is the OCI archive's, file for file"
LS=$("$WARD" image ls)
like "$LS" "docker.io/ward-test/busybox:latest +sha256:${DK:7:12}" "the archive's RepoTags name it (the name moved to it)"
like "$LS" "docker.io/ward-test/busybox-docker:1 +sha256:${DK:7:12}" "and --name names it too"
like "$LS" "\\(no name\\) +sha256:${BB:7:12}" "the OCI one has no name left"

# ---- prune and rm
PR=$("$WARD" image prune 2>&1)
like "$PR" "removed sha256:${BB#sha256:}" "ward image prune removes the image no name points to"
[ -d "$IMG/trees/${BB#sha256:}" ]; is $? 1 "its tree is gone"
[ -d "$IMG/trees/${DK#sha256:}" ]; is $? 0 "a named image stays"
"$WARD" image rm ward-test/busybox-docker:1 >/dev/null 2>"$T_TMP/err"; RC=$?
is "$RC" 0 "ward image rm NAME: exit 0"
like "$(cat "$T_TMP/err")" "the image stays while a box uses it or another name points to it" "another name still points to it: it stays, and ward says so"
"$WARD" image rm ward-test/busybox >/dev/null 2>"$T_TMP/err"
[ -d "$IMG/trees/${DK#sha256:}" ]; is $? 1 "removing its last name removes the image"
"$WARD" image rm ward-test/nothing >/dev/null 2>"$T_TMP/err"; RC=$?
is "$RC" 66 "removing a name that is not here: exit 66"
like "$(cat "$T_TMP/err")" "no image named docker.io/ward-test/nothing:latest here" "with one line saying so"

# ---- two boxes of one image: its disk once, held while they live
imp "$FIX/busybox.oci.tar"
BB=$OUT
DU0=$(du -sk "$IMG" | cut -f1)
NT0=$(ntrees)
B1=$(box_new --image ward-test/busybox)
B2=$(box_new --image ward-test/busybox)
is "$("$WARD" box info "$B1" | json image)" "$BB" "a box made with --image NAME is tied to the image's digest"
is "$("$WARD" box info "$B2" | json image)" "$BB" "and so is the second"
DU1=$(du -sk "$IMG" | cut -f1)
lt $((DU1 - DU0)) 64 "two boxes of the image cost the store nothing more (du: $DU0 KiB, then $DU1 KiB)"
is "$(ntrees)" "$NT0" "no tree more for them"
OS=$("$WARD" box exec "$B1" -- cat /etc/os-release 2>&1)
like "$OS" "^PRETTY_NAME=\"ward busybox\"" "a box of the image sees the image's /etc/os-release"
like "$("$WARD" image ls)" "busybox:latest .*\\(in use\\)" "ward image ls says the image is in use"
"$WARD" image rm ward-test/busybox 2>"$T_TMP/err"
like "$(cat "$T_TMP/err")" "the image stays while a box uses it" "ward image rm of an image a box uses: the name goes, the image stays"
"$WARD" image prune >/dev/null
[ -d "$IMG/trees/${BB#sha256:}" ]; is $? 0 "ward image prune keeps an image a box uses"
"$WARD" box destroy "$B1" >/dev/null 2>&1
"$WARD" box destroy "$B2" >/dev/null 2>&1
PR=$("$WARD" image prune 2>&1)
like "$PR" "removed sha256:${BB#sha256:}" "once its boxes are gone, prune removes it"
"$WARD" box create --image 127.0.0.1:9/ward-test/busybox >/dev/null 2>"$T_TMP/err"; RC=$?
is "$RC" 4 "a box of an image that is not here, from a registry that does not answer: no box, exit 4"
like "$(cat "$T_TMP/err")" "--image 127.0.0.1:9/ward-test/busybox: skopeo could not copy docker://127.0.0.1:9/ward-test/busybox:latest" "with the pull's own words"

# ---- the Debian minimal image (mmdebstrap), both archive kinds
if image_have debian; then
	imp "$FIX/debian.oci.tar"
	is "$RC" 0 "import the Debian minimal image's OCI archive: exit 0"
	T=$(image_tree "$OUT")
	like "$(cat "$T/etc/os-release")" 'PRETTY_NAME="Debian GNU/Linux 12 \(bookworm\)"' "its /etc/os-release is Debian 12's"
	like "$ERR" "device nodes and 0 FIFOs not made \(a box has its own /dev\): dev/console" "its /dev's nodes are not made, and one line says so"
	is "$(stat -c %a "$T/usr/bin/su")" 755 "su's setuid bit is cleared in the store"
	if [ "$(id -u)" -eq 0 ]; then
		is "$(stat -c '%u:%g %a' "$T/etc/shadow")" "0:42 640" "run as root, the layers' owners are kept (/etc/shadow root:shadow 0640)"
	else
		skip "owners are kept only where ward runs as root (nonroot.sh tests the ordinary user's)"
	fi
	imp "$FIX/debian.docker.tar"
	is "$RC" 0 "import its docker archive: exit 0"
	diff -r --no-dereference "$T" "$(image_tree "$OUT")" >"$T_TMP/diff" 2>&1
	is $? 0 "its tree is the OCI archive's, file for file"
	[ -s "$FIX/hello.deb" ]; is $? 0 "hello.deb lies beside it, for dpkg -i in a box"
	images_clear
else
	skip "$(grep '^debian:' "$FIX/missing")"
fi

# ---- hostile images, each beside its twin; nothing half-unpacked is ever left
refused() { # refused FILE WHAT REGEX [FLAGS]: an import refused with one line
	local f=$1 what=$2 re=$3; shift 3
	imp "$FIX/$f" "$@"
	is "$RC" 1 "$what: refused (exit 1)"
	like "$ERR" "$re" "$what: one line naming the layer and the entry"
	is "$(printf '%s\n' "$ERR" | grep -c '^ward: cannot import')" 1 "$what: one line, once"
	is "$(leftovers) $(ntrees)" "0 $NT" "$what: nothing half-unpacked is left, and no image"
}
NT=$(ntrees)
refused hostile-dotdot.oci.tar "a layer with ../../etc/ward-dotdot" \
	'layer 1 of 1 \(sha256:[0-9a-f]{12}\.\.\.\): entry "\.\./\.\./etc/ward-dotdot": a "\.\." component'
[ -e /etc/ward-dotdot ]; is $? 1 "and nothing was written outside the tree"
imp "$FIX/hostile-abs.oci.tar"
is "$RC" 0 "its twin, an absolute name (/etc/ward-abs): taken as the tree's own path"
[ -e "$(image_tree "$OUT")/etc/ward-abs" ] && [ ! -e /etc/ward-abs ]; is $? 0 "it is in the tree's /etc, not the host's"
NT=$(ntrees)
imp "$FIX/hostile-links.oci.tar"
is "$RC" 0 "symbolic links to /etc (absolute, and by ..) and then files through them: unpacked"
T=$(image_tree "$OUT")
[ -f "$T/etc/ward-escape" ] && [ -f "$T/etc/ward-escape2" ]; is $? 0 "the files went to the tree's own /etc (every path resolved beneath its root)"
[ -e /etc/ward-escape ] || [ -e /etc/ward-escape2 ]; is $? 1 "and the host's /etc has neither"
imp "$FIX/twin-usrmerge.oci.tar"
is "$(cat "$(image_tree "$OUT")/usr/bin/ward-through" 2>&1)" "through usr-merge" "the twin: a file through bin -> usr/bin (a merged /usr) lands in usr/bin"
NT=$(ntrees)
refused hostile-hardlink.oci.tar "a hard link to ../../../../etc/passwd" \
	'entry "etc/hl": a hard link to "\.\./\.\./\.\./\.\./etc/passwd", which is outside the tree'
imp "$FIX/hostile-suid.oci.tar"
is "$RC" 0 "a setuid-root and a setgid shell: unpacked"
T=$(image_tree "$OUT")
is "$(stat -c '%a %u' "$T/bin/suidsh" "$T/bin/sgidsh" | tr '\n' ' ')" "755 0 755 0 " "with their setuid and setgid bits cleared in the store"
is "$(stat -c %a "$T/bin/plainsh")" 755 "the twin, a plain 0755 shell, keeps its mode"
like "$ERR" "setuid and setgid bits cleared" "and the import says so"
imp "$FIX/hostile-dev.oci.tar"
is "$RC" 0 "a device node (/dev/mem, a disk) and a FIFO: the image is unpacked"
T=$(image_tree "$OUT")
[ -e "$T/dev/mem" ] || [ -e "$T/dev/sda" ] || [ -e "$T/run/fifo" ]; is $? 1 "none of them is made"
like "$ERR" "2 device nodes and 1 FIFOs not made \\(a box has its own /dev\\): dev/mem, dev/sda, run/fifo" "one line says so, naming them"
is "$(cat "$T/etc/dev-twin")" made "the twin, a file beside them, is made"
NT=$(ntrees)
T0=$(now_ms)
refused hostile-bomb.oci.tar "a decompression bomb (a GiB of zeros, zstd)" \
	'entry "bomb": it expands more than 1000 times its compressed size \(a decompression bomb\)'
lt $(($(now_ms) - T0)) 20000 "the bomb is refused within 20 s"
refused hostile-files3000.oci.tar "3000 entries over --max-files 2000" "entry \"many/f002000\": more than 2000 entries" --max-files 2000
imp "$FIX/hostile-files3000.oci.tar"
is "$RC" 0 "the twin: the same 3000 entries within the default limit"
NT=$(ntrees)
refused hostile-size.oci.tar "an entry that claims a petabyte" 'entry "huge": 1125899906842624 bytes: the image.s files would be more than'
refused hostile-longpath.oci.tar "a path of 5000 bytes" 'entry "d+\.\.\.": a path of 5026 bytes \(at most 4096\)'
refused foreign.oci.tar "an arm64 image" "the image is for linux/arm64; this machine runs linux/amd64"
imp "$FIX/multiarch.oci.tar"
is "$RC" 0 "an image index of two platforms: imported"
like "$ERR" "took linux/amd64 \\(of linux/arm64, linux/amd64\\)" "saying which it took, of which"
is "$(cat "$(image_tree "$OUT")/etc/arch")" amd64 "and the tree is the amd64 image's"
# An archive altered after it was made: a layer's bytes another layer's.
python3 - "$FIX/busybox.oci.tar" "$T_TMP/altered.tar" <<'PY'
import io, json, sys, tarfile
src = tarfile.open(sys.argv[1])
files = {m.name: src.extractfile(m).read() for m in src.getmembers() if m.isfile()}
man = json.loads(files["blobs/sha256/" + json.loads(files["index.json"])["manifests"][0]["digest"][7:]])
first, second = man["layers"][0]["digest"][7:], man["layers"][1]["digest"][7:]
files["blobs/sha256/" + first] = files["blobs/sha256/" + second]
with tarfile.open(sys.argv[2], "w") as out:
    for n, d in files.items():
        t = tarfile.TarInfo(n); t.size = len(d); out.addfile(t, io.BytesIO(d))
PY
NT=$(ntrees)
imp "$T_TMP/altered.tar"
is "$RC" 1 "an archive whose layer was swapped for another: refused"
like "$ERR" "layer 1 of 3 \\(sha256:[0-9a-f]{12}\\.\\.\\.\\): its bytes do not match its digest or size" "saying which layer does not match its digest"
is "$(leftovers) $(ntrees)" "0 $NT" "and leaving nothing"
imp /etc/hostname
is "$RC" 1 "a file that is no archive: refused"
like "$ERR" "not a tar archive" "saying so"

# ---- a registry on loopback: skopeo pushes the fixture, ward pulls it
if ! command -v docker-registry >/dev/null 2>&1 || ! command -v skopeo >/dev/null 2>&1; then
	skip "no docker-registry or skopeo here (.ci/setup installs them)"
	done_testing
	exit
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$T_TMP/registry.yml" <<EOF
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $T_TMP/registry}}
http: {addr: 127.0.0.1:$PORT}
EOF
docker-registry serve "$T_TMP/registry.yml" >"$T_TMP/registry.log" 2>&1 &
REG=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/v2/" >/dev/null 2>&1 && break; sleep 0.1; done
R=127.0.0.1:$PORT/ward-test
push() { skopeo copy --quiet --dest-tls-verify=false "oci-archive:$FIX/$1" "docker://$R/$2" >>"$T_TMP/push.log" 2>&1; }
push busybox.oci.tar busybox:reg && push hostile-abs.oci.tar abs:fleet && push busybox.oci.tar busybox:fleet
is $? 0 "skopeo pushed the fixtures to the registry on loopback"
OUT=$("$WARD" image pull --tls-verify=false "$R/busybox:reg" 2>"$T_TMP/err"); RC=$?
is "$RC" 0 "ward image pull from the registry: exit 0"
REGD=sha256:$(skopeo inspect --raw --tls-verify=false "docker://$R/busybox:reg" | sha256sum | cut -d' ' -f1)
is "$OUT" "$REGD" "the digest is the registry's manifest's, as it keeps it (skopeo inspect --raw)"
BB=$OUT
like "$(cat "$T_TMP/err")" "pulling $R/busybox:reg \\(linux/amd64\\)" "it says what it pulls"
like "$("$WARD" image ls)" "^$R/busybox:reg +sha256:${BB:7:12}" "ward image ls names it by the registry's name"
"$WARD" image pull "$R/busybox:reg" >/dev/null 2>"$T_TMP/err"; RC=$?
is "$RC" 1 "without --tls-verify=false, a plain-HTTP registry is refused (skopeo's default)"
like "$(cat "$T_TMP/err")" "skopeo could not copy docker://$R/busybox:reg: .*(http|HTTP)" "with skopeo's own words"
printf '{"auths": {}}' >"$T_TMP/auth.json"
OUT=$("$WARD" image pull --authfile "$T_TMP/auth.json" --tls-verify=false "$R/busybox:reg" 2>/dev/null); RC=$?
is "$RC $OUT" "0 $BB" "--authfile FILE: skopeo is given the auth file"
"$WARD" image pull --authfile "$T_TMP/none.json" "$R/busybox:reg" >/dev/null 2>"$T_TMP/err"; RC=$?
is "$RC" 64 "--authfile of a file that is not there: refused before any pull"
"$WARD" image pull --tls-verify=false "$R/busybox:none" >/dev/null 2>"$T_TMP/err"; RC=$?
is "$RC" 1 "a tag the registry does not have: exit 1"
like "$(cat "$T_TMP/err")" "cannot pull $R/busybox:none: skopeo could not copy" "with one line"

# ---- a task line names an image: found, pulled, or refused
# An --image has no --tls-verify: a plain-HTTP registry is named insecure
# where skopeo and podman read it, the user's registries.conf.
mkdir -p "$T_TMP/home/.config/containers"
printf '[[registry]]\nlocation = "127.0.0.1:%s"\ninsecure = true\n' "$PORT" >"$T_TMP/home/.config/containers/registries.conf"
export HOME=$T_TMP/home
TR=$T_TMP/tasks
mkdir -p "$TR/ws"
cat >"$TR/os.json" <<'J'
{"turns": [{"text": "Which system is this?", "tools": [{"name": "bash", "input": {"command": "cat /etc/os-release | head -1; echo WARD_IMAGE=$WARD_IMAGE"}}]},
           {"text": "Done."}]}
J
task() { # task INDEX [FLAGS]: ward run of $TR/tasks.jsonl's line INDEX; RC, ERR
	local i=$1; shift
	"$WARD" run "$@" --task-file "$TR/tasks.jsonl" --task-index "$i" --out "$TR/out" >/dev/null 2>"$T_TMP/task$i.err" </dev/null
	RC=$?; ERR=$(cat "$T_TMP/task$i.err")
}
tline() { echo "{\"id\": \"$1\", \"task\": \"look\", \"workspace\": \"ws\", \"model\": \"replay:$TR/os.json\", \"image\": \"$2\"}"; }
{ tline here "$R/busybox:reg"; tline far "$R/busybox:fleet"; tline bad "no such image!"; } >"$TR/tasks.jsonl"
task 0
is "$RC" 0 "a task line naming an image already here (from a loopback registry): it runs"
is "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stop"])' "$TR/out/here/result.json")" done "and finishes"
task 1
is "$RC" 4 "a task line naming an image a loopback registry would have to send: no box (exit 4)"
like "$ERR" "--image $R/busybox:fleet: $R/busybox:fleet is not here, and a pull is refused: the registry 127.0.0.1:$PORT is a loopback address" \
	"one line: the registry is not public, and a task line's pull reaches only public ones"
unlike "$ERR" "pulling" "and nothing was pulled"
SJ=$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl 2>/dev/null | head -1)
is "$(head -1 "$SJ" | json image) $(head -1 "$SJ" | json image_untrusted)" "$R/busybox:fleet true" \
	"the session's journal keeps the image a line named, and that a line named it (a resume's new box has the same root)"
rm -rf "$TR/out/far"
task 1 --trust-task-file
is "$RC" 0 "the twin: with --trust-task-file the line is the user's, and the image is pulled"
like "$ERR" "pulling $R/busybox:fleet" "saying so"
task 2
is "$RC" 64 "a task line whose image is no reference: refused"
like "$ERR" "tasks.jsonl:3: \"image\": --image: " "naming the line and the field"

# ---- a fleet: four tasks over two images, run at once, each image pulled and unpacked once
images_clear
is "$(ntrees)" 0 "(the store is empty again)"
is "$(ls "$IMG/locks" | tr '\n' ' ')" "names " "and a prune leaves no lock that nothing needs (pulls' and removed images')"
cat >"$TR/fleet.jsonl" <<EOF
$(tline a1 "$R/abs:fleet")
$(tline b1 "$R/busybox:fleet")
$(tline a2 "$R/abs:fleet")
$(tline b2 "$R/busybox:fleet")
EOF
PIDS=""
for i in 0 1 2 3; do
	"$WARD" run --trust-task-file --task-file "$TR/fleet.jsonl" --task-index $i --out "$TR/fout" >/dev/null 2>"$T_TMP/f$i.err" </dev/null &
	PIDS="$PIDS $!"
done
CODES=""
for p in $PIDS; do wait "$p"; CODES="$CODES $?"; done
is "$CODES" " 0 0 0 0" "four tasks over two images, at once: each runs"
ALL=$(cat "$T_TMP"/f[0-3].err)
is "$(printf '%s\n' "$ALL" | grep -c "pulling $R/abs:fleet") $(printf '%s\n' "$ALL" | grep -c "pulling $R/busybox:fleet")" "1 1" "each image is pulled once"
is "$(nunpacked "$ALL")" 2 "and unpacked once"
DONE=$(for id in a1 b1 a2 b2; do python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stop"])' "$TR/fout/$id/result.json"; done | tr '\n' ' ')
is "$DONE" "done done done done " "every task's result says done"
grep -q 'WARD_IMAGE=busybox' "$TR/fout/b1/events.jsonl"; is $? 0 "a task's commands run in its image, with its Env"

kill "$REG" 2>/dev/null; wait "$REG" 2>/dev/null
done_testing
