#!/usr/bin/env bash
# The node pager between two users of this machine (made here, as root, tests/users.sh): a victim
# and an attacker on one fake GPU of 4000 MiB, the pager run by root, each user's share 50 %. The
# attacker lies about its need: over its share, it naps nobody under theirs, and hears why in one
# line; a need over the GPU's memory, a need naming another pid or user, garbage: refused, the
# pager unharmed. It floods the socket: its connections beyond a few are refused, those that say
# nothing or too much are closed, and the victim's need is served all the same. It forges its own
# status files: what its process claims to give back is what NVML says it holds, and a process
# whose status never answers holds nobody's room for long; it plants a link and a FIFO where
# root's note to its process goes: root writes through neither; it forges root's note to its own
# process, naming the victim's: nothing of the victim's moves. Root's cudanap pager status and
# metrics believe no state file the attacker wrote. The pager restarted: the victim's napped
# process wakes, its memory intact; the pager stopped: the attacker's need reaches no one of the
# victim's. The pids raced: hostile/pagerpids.sh.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"
mkdir -m 755 "$T/run"
for u in v a; do
	mkdir -m 700 "$T/pub/${u}st"
	chown "$([ $u = v ] && echo cnvictim || echo cnattacker)" "$T/pub/${u}st"
	printf '[nap]\nmake_room = node\npager_socket = %s\n[restore]\nmargin_mib = 0\n[status]\ndir = %s\n[log]\nlevel = info\n' \
		"$T/run/pager.sock" "$T/pub/${u}st" > "$T/pub/$u.ini"
	chmod 644 "$T/pub/$u.ini"
done
pager_pid=
pager_start() {
	env "${gpu[@]}" "$PAGER" -c "$T/pager.ini" 2>> "$T/pager.log" &
	pager_pid=$!
	eventually 20 test -S "$T/run/pager.sock"
}
pager_stop() {
	[ -n "$pager_pid" ] && kill "$pager_pid" 2> /dev/null && wait "$pager_pid" 2> /dev/null
	pager_pid=
}
# fresh MIB SHARE: a GPU of MIB of its own (the fake counts processes gone), the pager started
# anew on it with each user's share SHARE
n_gpu=0
fresh() {
	n_gpu=$((n_gpu + 1))
	mkdir -m 1777 "$T/pub/fake$n_gpu"
	gpu=(CUDANAP_LIBCUDA="$FAKECUDA" CUDANAP_LIBNVML="$FAKECUDA" CUDANAP_FAKE_DIR="$T/pub/fake$n_gpu"
		CUDANAP_FAKE_GPU_MIB="$1")
	printf '[pager]\nsocket = %s\nstate = %s\nmin_idle_s = 1\nmargin_mib = 0\nshare = %s\n' \
		"$T/run/pager.sock" "$T/run/pager.state" "$2" > "$T/pager.ini"
	pager_stop
	pager_start
}
# as_v NAME CMD...: start NAME as the victim (as_a: the attacker), on the GPU of the moment
as_user_start() {
	local r
	eval "RUN_AS=(\"\${AS_$1[@]}\" \"\${gpu[@]}\")"
	JOB_INI=$2
	shift 2
	start "$@"
	r=$?
	unset RUN_AS JOB_INI
	return $r
}
as_v() { as_user_start V "$T/pub/v.ini" "$@"; }
as_a() { as_user_start A "$T/pub/a.ini" "$@"; }
fv() { STATUS_DIR=$T/pub/vst field "$1" "$2"; }
since_ms() { # since_ms DIR PID: ms its status says it has been idle, or -1
	local s
	s=$(STATUS_DIR=$1 field "$2" idle_since)
	[ -n "$s" ] && echo $(($(date +%s%3N) - $(date -d "$s" +%s%3N))) || echo -1
}
idle_v() { [ "$(since_ms "$T/pub/vst" "$1")" -ge $(($2 * 1000)) ]; }
idle_a() { [ "$(since_ms "$T/pub/ast" "$1")" -ge $(($2 * 1000)) ]; }
# holder WHO NAME MIB: WHO's (v or a) program NAME holding 1000 + MIB MiB
holder() {
	"as_$1" "$2" "$TARGET" || return 1
	[ "$3" = 0 ] && return 0
	ask "$2" "drv alloc export $3"
	[ "$REPLY" = "alloc 0" ]
}
quit_all() { local p; for p in "$@"; do ask "$p" quit 10; rm -f "$T/$p.err"; done; }
# ask_pager USER NEED...: the user's own raw client: each NEED (a message as it is) sent on a
# connection of its own, each answer (or what happened) on a line
ask_pager() {
	local -n as=AS_$1
	shift
	"${as[@]}" /usr/bin/python3 -c '
import socket, sys
for need in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(sys.argv[1]); s.settimeout(20)
        try:
            s.send(need.encode())
        except BrokenPipeError:  # refused at once: its word is there to read
            pass
        m = s.recv(2000)
        print(m.decode() if m else "closed")
    except Exception as e:
        print(type(e).__name__)
    s.close()' "$T/run/pager.sock" "$@"
}
G=GPU-face0000-0000-0000-0000-000000000000

# -- a lie about its need: over its share, the attacker naps no one under theirs
fresh 4000 50%
check "the victim's program holds 1500 MiB" holder v V1 500
check "the attacker's 2000 MiB, its whole share of 50 %" holder a A1 1000
ask A1 "drv launch export 30000"
ask A1 "drv bgsync export"
is "$REPLY" "bgsync ok" "the attacker's program busy (a thread inside cuStreamSynchronize): not its own to nap"
check "the victim's idle a second" eventually 20 idle_v "$V1_pid" 1
out=$(ask_pager A "need gpu=$G mib=1000 context=0 light=0 what=cuMemAlloc_v2")
is "$out" "refused why=GPU 0 has 500 MiB free, 1000 MiB wanted ([pager] margin_mib included); 2000 MiB that worked less than [pager] min_idle_s (1 s) ago (cnattacker); 1500 MiB of users under their share (cnvictim), cnattacker holding 2000 MiB and asking 1000 over its share of 50 % (2000 MiB)" \
	"the attacker asking beyond its share: refused, in one line that says why"
ask A1 "drv alloc export 1000" 30
is "$REPLY" "alloc 2" "its program's allocation beyond its share fails as it would have"
out=$(ask_pager A "need gpu=$G mib=99999999 context=0 light=0 what=x" \
	"need gpu=GPU-0000dead-0000-0000-0000-000000000000 mib=10 context=0 light=0 what=x")
is "$out" "refused why=99999999 MiB is more than GPU 0 has (4000 MiB)"$'\n'"refused why=no GPU GPU-0000dead-0000-0000-0000-000000000000 on this machine" \
	"a need over the GPU's memory, or of a GPU that is not there: refused"
out=$(ask_pager A "need gpu=$G mib=10 pid=$V1_pid context=0 what=x" "need gpu=$G mib=10 uid=0 what=x" \
	"garbage" "made s=0")
is "$out" "closed"$'\n'"closed"$'\n'"closed"$'\n'"closed" \
	"a need naming another pid or user, garbage, an answer: the connection closed"
is "$(fv "$V1_pid" state):$(fv "$V1_pid" naps)" "running:0" "the victim's program, under its share, never napped"
check "the pager lives" kill -0 "$pager_pid"
quit_all V1 A1

# -- a flood: 40 connections held, garbage and oversized messages; the victim's need served
fresh 4000 50%
check "the victim's programs hold 1500 MiB, then 1000" holder v V1 500
check "the attacker's 1000" holder a A1 0
check "the victim's first idle a second" eventually 20 idle_v "$V1_pid" 1
"${AS_A[@]}" /usr/bin/python3 -c '
import socket, sys, time
held = []
for i in range(40):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(sys.argv[1])
        if i % 3 == 1: s.send(b"x" * 60000)
        if i % 3 == 2: s.send(bytes(range(256)))
    except OSError:
        pass
    held.append(s)
open(sys.argv[2], "w").write("held\n")
time.sleep(60)' "$T/run/pager.sock" "$T/pub/flooding" &
flood=$!
check "the attacker floods the pager's socket" eventually 20 test -s "$T/pub/flooding"
like "$(ask_pager A "need gpu=$G mib=10 context=0 light=0 what=x")" \
	"^refused why=the node pager holds as many connections of this user as it takes" \
	"the attacker's connections beyond a few refused"
check "the victim's second program" holder v V2 0
ask V2 "drv alloc export 1500" 60
is "$REPLY" "alloc 0" "the victim's allocation is made room for all the same"
like "$(fv "$V1_pid" state):$(fv "$V1_pid" nap_for_pid)" "^napping:$V2_pid$" \
	"its own idle program napped for it"
check "the pager lives" kill -0 "$pager_pid"
kill "$flood"
wait "$flood" 2> /dev/null
quit_all V1 V2 A1

# -- its status forged: what its program claims to give back is what NVML says it holds
fresh 4000 100%
check "the attacker's program holds 2000 MiB" holder a A1 1000
check "and idles" eventually 20 idle_a "$A1_pid" 1
f=$T/pub/ast/$A1_pid.json
"${AS_A[@]}" sh -c 'sed "s/\"light_able_mib\":[^,]*/\"light_able_mib\":3900/; s/\"idle_since\":\"[^\"]*\"/\"idle_since\":\"2020-01-01T00:00:00.000Z\"/" "$1" > "$1.x" && mv "$1.x" "$1"' _ "$f"
like "$(cat "$f")" '"light_able_mib":3900.*"idle_since":"2020-01-01|"idle_since":"2020-01-01.*"light_able_mib":3900' \
	"its status file claims it idles since 2020 and would give back 3900 MiB"
# and the names root's note to it will take planted: a link to a file of root's, a FIFO at the
# temporary name
echo untouched > "$T/root-file"
"${AS_A[@]}" sh -c 'ln -s "$1" "$2/$3.nap-for" && mkfifo "$2/.$3.nap-for.tmp"' _ "$T/root-file" "$T/pub/ast" "$A1_pid"
check "the attacker planted a link where root's note goes, and a FIFO at its temporary name" \
	test -L "$T/pub/ast/$A1_pid.nap-for" -a -p "$T/pub/ast/.$A1_pid.nap-for.tmp"
check "the victim's program" holder v V1 0
ask V1 "drv alloc export 1500" 60
is "$REPLY" "alloc 0" "the victim's allocation made room for"
is "$(cat "$T/root-file")" untouched "root's note went through no link: the file it named is untouched"
check "and the pager did not hang on the FIFO" kill -0 "$pager_pid"
log_like "$T/pager.log" "for $V1_pid \(cnvictim, cuMemAlloc_v2, 1500 MiB on GPU 0\): napped $A1_pid \(cnattacker, 2000 MiB, idle [0-9]+ s" \
	"the attacker's program napped for what NVML says it holds, not what it claims"
[[ $(cat "$T/pager.log") =~ napped\ $A1_pid ]] || diag "V1: $(cat "$T/V1.err"); A1: $(cat "$T/A1.err")"
quit_all V1 A1

# -- a process whose status never answers holds nobody's room for long
fresh 6000 100%
check "the attacker's program holds 2000 MiB" holder a A1 1000
check "the victim's 2000 and 1000" holder v V2 1000
check "both idle, the attacker's the longer" eventually 20 idle_v "$V2_pid" 1
holder v V1 0
chmod 500 "$T/pub/ast" # its agent cannot write its status any more: it never answers
t0=$(date +%s%3N)
ask V1 "drv alloc export 2500" 60
t=$(($(date +%s%3N) - t0))
chmod 700 "$T/pub/ast"
is "$REPLY" "alloc 0" "the victim's need is served though the attacker's program, asked first, never answers"
check "in less than 20 s ($t ms)" test "$t" -lt 20000
quit_all V1 V2 A1

# -- root's commands believe no state file the attacker wrote
printf 'cudanap-pager 1 pid=1 started=x policy=/etc/shadow\nuser uid=0 name=root asks=999\n' > "$T/pub/fake.state"
chown cnattacker "$T/pub/fake.state"
out=$("$CUDANAP" pager status --state "$T/pub/fake.state" 2>&1)
like "$?:$out" "^1:cudanap pager: no node pager's state to believe \($T/pub/fake.state: owned by uid $A, not uid 0; not used\)" \
	"root's cudanap pager status: the attacker's state file not believed, in one line"
unlike "$("$CUDANAP" metrics --pager-state "$T/pub/fake.state" 2>&1)" "asks_total\{user=\"root\"\} 999" \
	"nor by root's metrics"

# -- root's note forged: the attacker tells its own process it naps for the victim's, by the node
# pager; it naps (the attacker may nap its own anyway), and nothing of the victim's moves
fresh 3000 100%
check "the victim's program holds 1500 MiB" holder v V1 500
check "the attacker's 1200" holder a A1 200
check "the attacker's idle" eventually 20 idle_a "$A1_pid" 1
"${AS_A[@]}" sh -c 'printf "%s 1500 0 1 cnvictim\n" "$1" > "$2"' _ "$V1_pid" "$T/pub/ast/$A1_pid.nap-for"
"${AS_A[@]}" "$CUDANAP" nap -c "$T/pub/a.ini" "$A1_pid" > /dev/null 2>&1
fa() { STATUS_DIR=$T/pub/ast field "$1" "$2"; }
a_napped() { [ "$(fa "$A1_pid" state)" = napping ]; }
check "the attacker's process naps, told by its forged note" eventually 20 a_napped
is "$(fa "$A1_pid" nap_for_user)" cnvictim "its own status says what its own note said"
is "$(fv "$V1_pid" state):$(fv "$V1_pid" naps):$(fv "$V1_pid" room_last)" "running:0:" \
	"the victim's program: not napped, and no room said made for it"
unlike "$(cat "$T/pager.log")" "for $V1_pid " "the pager did nothing for the victim, nor in its name"
ask A1 "drv launch export 5" 60
is "$REPLY" "launch 0" "the attacker's process wakes at its next call"
quit_all V1 A1

# -- the pager restarted: nothing lost; stopped: nobody of the victim's napped for the attacker
fresh 3000 100%
check "the victim's program holds 1500 MiB" holder v V1 500
check "the attacker's 1000" holder a A1 0
check "the victim's idle" eventually 20 idle_v "$V1_pid" 1
ask A1 "drv alloc export 900" 60
is "$REPLY" "alloc 0" "the attacker's allocation, in its share, made room for"
like "$(fv "$V1_pid" state):$(fv "$V1_pid" nap_for_user)" "^napping:cnattacker$" \
	"by napping the victim's idle program, for the attacker's"
pager_stop
pager_start
check "the attacker's idle" eventually 20 idle_a "$A1_pid" 1
ask V1 "drv launch export 5" 60
is "$REPLY" "launch 0" "the pager restarted: the victim's program wakes at its next call"
ask V1 verify
is "$REPLY" "verify ok" "its memory intact"
like "$(fv "$V1_pid" room_last)" "through the node pager: napped $A1_pid \(cnattacker" "the new pager napped the attacker's for it"
pager_stop
check "the victim's idle" eventually 20 idle_v "$V1_pid" 1
echo "drv launch export 5" >&"$A1_in" # its wake needs room: no pager, nothing of its own to nap
sleep 3 # what does not happen: the victim's program napped for it
is "$(fv "$V1_pid" state):$(fv "$V1_pid" naps)" "running:1" \
	"the pager stopped: the attacker's wake naps nothing of the victim's"
log_like "$T/A1.err" "the node pager cannot be asked" "and its log says the pager is gone"
quit_all V1 A1
finish
