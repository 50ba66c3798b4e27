#!/usr/bin/env bash
# A local user against another's processes, outside Slurm: two users of this machine (made here,
# as root), a victim and an attacker, and root's code in between. The attacker makes the victim's
# default status directory first: the victim's program runs without cudanap (or refuses, as its
# INI says), saying who made it and what to do. The victim swaps the INI and the status file that
# root's CLI reads for FIFOs, and its status directory for a link to a file it did not write:
# root's CLI answers at once and believes none of it. Slurm's side: hostile-slurm.sh.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"

# -- the victim's default status directory, made first by the attacker
squat=/tmp/cudanap-$V
rm -rf "$squat"
"${AS_A[@]}" mkdir -m 777 "$squat"
out=$("${AS_V[@]}" LD_PRELOAD="$lib" /bin/echo hello 2>&1); rc=$?
is "$rc:$(head -n 1 <<< "$out")" "0:cudanap: status dir $squat: owned by uid $A, not by you (uid $V): another user made it; name another ([status] dir, CUDANAP_STATUS_DIR or XDG_RUNTIME_DIR) or have it removed; running without cudanap ([status] if_unusable = run)" \
	"a squatted default dir: the victim's program runs, without cudanap, after one line naming the owner and the way out"
is "$(tail -n 1 <<< "$out")" hello "and does its work"
printf '[status]\nif_unusable = refuse\n' > "$T/pub/refuse.ini"
chmod 644 "$T/pub/refuse.ini"
out=$("${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_CONFIG="$T/pub/refuse.ini" /bin/echo hello 2>&1); rc=$?
like "$rc:$out" "^78:cudanap: status dir $squat: owned by uid $A.*; not starting \(\[status\] if_unusable = refuse\)$" \
	"with [status] if_unusable = refuse it does not start, and says why"
mkdir -m 700 "$T/pub/xdg" && chown $V "$T/pub/xdg"
out=$("${AS_V[@]}" LD_PRELOAD="$lib" XDG_RUNTIME_DIR="$T/pub/xdg" /bin/echo hello 2>&1); rc=$?
is "$rc:$out" "0:hello" "with XDG_RUNTIME_DIR set (made by the system, per user) the squat does not matter"
rm -rf "$squat"

# -- root's CLI and what the victim's own environment names
mkdir -m 700 "$T/pub/vst" && chown $V "$T/pub/vst"
printf '[status]\ndir = %s\n' "$T/pub/vst" > "$T/pub/v.ini" && chown $V "$T/pub/v.ini"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_CONFIG="$T/pub/v.ini" /bin/sleep 60 &
vp=$!
eventually 20 test -e "$T/pub/vst/$vp.json"
"${AS_V[@]}" sh -c "rm '$T/pub/v.ini' && mkfifo '$T/pub/v.ini' && rm '$T/pub/vst/$vp.json' && mkfifo '$T/pub/vst/$vp.json'"
check "the victim swapped its INI and its status file for FIFOs" test -p "$T/pub/v.ini" -a -p "$T/pub/vst/$vp.json"
out=$(timeout 10 "$CUDANAP" status "$vp" 2>&1); rc=$?
check "root's cudanap status answers at once (rc $rc): ${out//$'\n'/ | }" test "$rc" != 124
out=$(timeout 10 "$CUDANAP" suspend "$vp" 2>&1); rc=$?
check "root's cudanap suspend too (rc $rc): ${out//$'\n'/ | }" test "$rc" != 124
"${AS_V[@]}" sh -c "rm '$T/pub/vst/$vp.json'"
mkdir -m 755 "$T/pub/fake" && printf '{"pid":%d,"starttime":1,"state":"checkpointed"}' "$vp" > "$T/pub/fake/$vp.json"
"${AS_V[@]}" sh -c "rmdir '$T/pub/vst' 2> /dev/null; mv '$T/pub/vst' '$T/pub/vst.old' 2> /dev/null; ln -s '$T/pub/fake' '$T/pub/vst'"
out=$(timeout 10 "$CUDANAP" status "$vp" 2>&1); rc=$?
not_believed() { [ "$1" != 124 ] && ! grep -q checkpointed <<< "$2"; }
check "a status directory swapped for a link to a file root owns: not believed (${out//$'\n'/ | })" \
	not_believed "$rc" "$out"
kill "$vp"
wait "$vp" 2> /dev/null

finish
