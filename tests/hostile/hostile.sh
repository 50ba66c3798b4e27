#!/usr/bin/env bash
# A local user against another's processes, outside Slurm: two users of this machine (made here,
# as root), a victim and an attacker, and root's code in between. The attacker makes the victim's
# default status directory first: the victim's program runs without cudanap (or refuses, as its
# INI says), saying who made it and what to do, and the victim's own command line believes no
# status file the attacker puts there (one naming SIGKILL). The victim swaps the INI and the
# status file that root's CLI reads for FIFOs, and its status directory for a link to a file it
# did not write: root's CLI answers at once and believes none of it; a FIFO at the temporary name
# of a note root writes does not hang root; root does not open the node an INI named by the
# victim's environment links to; a status file forging fields gives root valid JSON of that
# process and no escape sequence. The victim's status dir removed and made again by the attacker
# with FIFOs in it: its agent suspends and resumes without them. Slurm's side: hostile-slurm.sh.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"

# -- the victim's default status directory, made first by the attacker
squat=/tmp/cudanap-$V
squat_gone() { rm -rf "$squat"; }
at_exit squat_gone # whatever the end: the victim's uid may be gone with the user after it
squat_gone
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

# -- 1. in the squatted dir, a status file for a process of the victim's that names SIGKILL: the
# victim's own suspend, status and pick believe none of it (they used to send it SIGKILL)
"${AS_V[@]}" LD_PRELOAD="$lib" /bin/sleep 300 2> /dev/null &
vk=$!
eventually 20 test -e "/proc/$vk"
"${AS_A[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":%s,\"state\":\"running\",\"suspend_signal\":9,\"resume_signal\":9}" "$1" "$2" > "$3/$1.json"' \
	_ "$vk" "$(awk '{ print $22 }' "/proc/$vk/stat")" "$squat"
out=$("${AS_V[@]}" "$CUDANAP" suspend --timeout 3 "$vk" 2>&1)
like "$out" "^$vk: its status is not believed: $squat: owned by uid $A, not uid $V; not used; nothing sent" \
	"the victim's cudanap suspend: the attacker's directory is not believed, in one line"
"${AS_V[@]}" "$CUDANAP" status "$vk" > /dev/null 2>&1
"${AS_V[@]}" "$CUDANAP" pick --free 1G > /dev/null 2>&1
"${AS_V[@]}" "$CUDANAP" resume "$vk" > /dev/null 2>&1
check "and after its suspend, status, pick and resume the victim's process lives (no SIGKILL)" kill -0 "$vk"
kill "$vk"
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

# -- 2. a FIFO at the temporary name of a note root writes (suspend --to-disk's): root's suspend
# does not hang on it
mkdir -m 700 "$T/pub/v2" && chown $V "$T/pub/v2"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/v2" /bin/sleep 60 &
vp=$!
eventually 20 test -e "$T/pub/v2/$vp.json"
"${AS_V[@]}" mkfifo "$T/pub/v2/.$vp.hibernate.tmp"
out=$(timeout 20 "$CUDANAP" suspend --to-disk="$T/pub" --timeout 3 "$vp" 2>&1); rc=$?
check "root's suspend --to-disk with a FIFO at its note's temporary name: done at once (rc $rc): ${out//$'\n'/ | }" \
	test "$rc" != 124
kill "$vp"

# -- 3. an INI the victim's environment names, swapped for a link to a node only root may open
# (a FIFO here, which shows whether it was opened; a device the same way): root does not open it
mkdir -m 700 "$T/pub/v3" && chown $V "$T/pub/v3"
printf '[status]\ndir = %s\n' "$T/pub/v3" > "$T/pub/v3/v.ini" && chown $V "$T/pub/v3/v.ini"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_CONFIG="$T/pub/v3/v.ini" /bin/sleep 60 &
vp=$!
eventually 20 test -e "$T/pub/v3/$vp.json"
mkfifo -m 600 "$T/pub/trap"
( exec 3> "$T/pub/trap" && touch "$T/opened" ) &
trap_writer=$!
"${AS_V[@]}" sh -c "rm '$T/pub/v3/v.ini' && ln -s '$T/pub/trap' '$T/pub/v3/v.ini'"
timeout 10 "$CUDANAP" status "$vp" > /dev/null 2>&1
sleep 0.5
check "root's cudanap status did not open what the victim's CUDANAP_CONFIG links to" test ! -e "$T/opened"
kill "$trap_writer" "$vp" 2> /dev/null

# -- 4. the victim's own status file, forging fields: root's status --json stays one valid object
# of that process, and its table passes no escape sequence to root's terminal
mkdir -m 700 "$T/pub/v4" && chown $V "$T/pub/v4"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_STATUS_DIR="$T/pub/v4" /bin/sleep 60 &
vp=$!
eventually 20 test -e "$T/pub/v4/$vp.json"
"${AS_V[@]}" sh -c 'printf "{\"pid\":%d,\"starttime\":%s,\"command\":\"sleep\\u001b]0;owned\\u0007\",\"state\":\"running\",\"timestamp\":\"t\\\",\\\"pid\\\":1,\\\"state\\\":\\\"checkpointed\",\"gpus\":\"\\u001b[31m0\"}" "$1" "$2" > "$3/.x" && mv "$3/.x" "$3/$1.json"' \
	_ "$vp" "$(awk '{ print $22 }' "/proc/$vp/stat")" "$T/pub/v4"
json=$("$CUDANAP" status --no-query --json "$vp" 2>&1)
is "$(python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); p = d["processes"] if isinstance(d, dict) and "processes" in d else d; p = p if isinstance(p, list) else [p]; print(len(p), p[0]["pid"], p[0]["state"])' <<< "$json" 2>&1)" "1 $vp running" \
	"root's status --json: valid JSON, one process, its own pid and state, whatever its timestamp says"
table=$("$CUDANAP" status --no-query "$vp" 2>&1)
check "root's status table: no escape character reaches the terminal" test -z "$(printf %s "$table" | tr -d -c '\033\007')"
kill "$vp"

# -- 6. the victim's status dir removed after its start (a tmp cleaner) and made again by the
# attacker, with FIFOs where the status file's temporary and the restore's turn would be: the
# victim's agent never waits on them, and suspends and resumes (the fake driver)
rm -rf "$squat"
mkdir -m 777 "$T/pub/fake6"
mkfifo -m 666 "$T/pub/t6.in" "$T/pub/t6.out"
"${AS_V[@]}" LD_PRELOAD="$lib" CUDANAP_LIBCUDA="$FAKECUDA" CUDANAP_LIBNVML="$FAKECUDA" \
	CUDANAP_FAKE_DIR="$T/pub/fake6" "$TARGET" < "$T/pub/t6.in" > "$T/pub/t6.out" 2> "$T/pub/t6.err" &
vp=$!
exec {t6in}> "$T/pub/t6.in" {t6out}< "$T/pub/t6.out"
read -r -t 20 -u "$t6out" line
eventually 20 test -e "$squat/$vp.json"
rm -rf "$squat"
"${AS_A[@]}" sh -c 'mkdir -m 777 "$1" && cd "$1" && mkfifo -m 666 ".$2.json.tmp" .restore-turn \
	.restore-turn-GPU-face0000-0000-0000-0000-000000000000' _ "$squat" "$vp"
fstate() { [ "$(CUDANAP_FAKE_DIR="$T/pub/fake6" "$FAKECTL" "$FAKECUDA" state "$vp")" = "CUDA_SUCCESS $1" ]; }
kill -USR1 "$vp"
eventually 20 fstate 2
r=$?
check "the victim's suspend, its dir now the attacker's: done all the same" test "$r" = 0
[ "$r" = 0 ] || diag "its log: $(cat "$T/pub/t6.err")"
kill -USR2 "$vp"
check "and its resume" eventually 20 fstate 0
echo verify >&$t6in
read -r -t 20 -u "$t6out" line
is "$line" "verify ok" "its memory intact"
like "$(cat "$T/pub/t6.err")" "owned by uid $A" "its log says the dir is not its own"
check "nothing of the victim's written in the attacker's dir" test ! -e "$squat/$vp.json"
kill "$vp"
rm -rf "$squat"

finish
