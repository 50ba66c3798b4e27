#!/usr/bin/env bash
# A local user against another's agent (a fourth round), with the fake driver: where the victim's
# estimates are kept ($XDG_STATE_HOME/cudanap, in a directory both may write) the attacker made the
# directory first and holds its lock: the victim's suspends and resumes go on, nothing of theirs
# written there; a FIFO nobody reads at the victim's [log] target does not hang its agent, and a
# file the attacker made there gets none of its lines (stderr does, after one line saying why); an
# NCCL rank whose only sign is its own fd-passing socket is refused a suspend however many such
# sockets other users bind on the host.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"

export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA
mkdir -m 777 "$T/pub/fake"
fake=(CUDANAP_LIBCUDA="$FAKECUDA" CUDANAP_LIBNVML="$FAKECUDA" CUDANAP_FAKE_DIR="$T/pub/fake")
# vstart NAME ENV...: the victim's fake_target (or the command in vcmd), preloaded, with its own
# status directory $T/pub/NAME and ENV, its stdin and stdout on FIFOs; NAME_pid, NAME_in and
# NAME_out as lib.sh's start sets them
vcmd=("$TARGET")
vstart() {
	local name=$1 fin fout line
	shift
	mkdir -m 700 "$T/pub/$name" && chown "$V" "$T/pub/$name"
	mkfifo -m 666 "$T/pub/$name.in" "$T/pub/$name.out"
	"${AS_V[@]}" LD_PRELOAD="$lib" "${fake[@]}" CUDANAP_STATUS_DIR="$T/pub/$name" "$@" "${vcmd[@]}" \
		< "$T/pub/$name.in" > "$T/pub/$name.out" 2> "$T/pub/$name.err" &
	printf -v "${name}_pid" '%s' $!
	exec {fin}> "$T/pub/$name.in" {fout}< "$T/pub/$name.out"
	printf -v "${name}_in" '%s' "$fin"
	printf -v "${name}_out" '%s' "$fout"
	read -r -t 60 -u "$fout" line || line=
	[ "${line%% *}" = ready ]
}
# vstate NAME STATE: NAME's status says STATE, no action under way
vstate() { STATUS_DIR=$T/pub/$1 state_is "$(eval echo "\$${1}_pid")" "$2"; }
# cycle NAME: NAME suspended and resumed by its user's signals, each awaited 20 s at most; 0 when
# both came
cycle() {
	local pid
	pid=$(eval echo "\$${1}_pid")
	kill -USR1 "$pid"
	eventually 20 vstate "$1" checkpointed || return 1
	kill -USR2 "$pid"
	eventually 20 vstate "$1" running
}

# -- 1. the estimates' directory, made first by the attacker where XDG_STATE_HOME points to a
# shared directory, its lock held by the attacker: the victim's agent, which records the times of
# its second suspend on, goes on (it used to wait on the lock after its second suspend for ever:
# checkpointed, and its resume never came)
mkdir -m 1777 "$T/pub/state"
"${AS_A[@]}" sh -c 'mkdir -m 777 "$1/cudanap" && touch "$1/cudanap/rates.lock" && chmod 666 "$1/cudanap/rates.lock"' \
	_ "$T/pub/state"
"${AS_A[@]}" python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(600)' "$T/pub/state/cudanap/rates.lock" &
holder=$!
eventually 20 grep -q " FLOCK .*$(stat -c %i "$T/pub/state/cudanap/rates.lock")" /proc/locks
check "the attacker holds the lock of the directory it made" test $? = 0
vstart R XDG_STATE_HOME="$T/pub/state"
check "the victim's first suspend and resume (not recorded)" cycle R
cycle R
r=$?
check "its second, whose times it records: done, not waiting on the attacker's lock" test "$r" = 0
[ "$r" = 0 ] || diag "its status: $(cat "$T/pub/R/$R_pid.json"); its log: $(cat "$T/pub/R.err")"
check "and a third" cycle R
check "nothing of the victim's written in the attacker's directory" \
	test -z "$(find "$T/pub/state/cudanap" -user "$V")"
ask R verify
is "$REPLY" "verify ok" "its memory intact"
kill "$holder" "$R_pid"

# -- 2. the victim's [log] target in a directory anyone may write: a FIFO the attacker made there,
# which nobody reads, does not hang its agent (it used to wait at its first line, "suspended", for
# ever); a file of the attacker's gets none of its lines
mkdir -m 1777 "$T/pub/logs"
"${AS_A[@]}" mkfifo -m 666 "$T/pub/logs/v.log"
printf '[log]\nlevel = info\ntarget = %s\n' "$T/pub/logs/v.log" > "$T/pub/log.ini"
chmod 644 "$T/pub/log.ini"
vstart L CUDANAP_CONFIG="$T/pub/log.ini"
check "a FIFO at the victim's log target: its suspend and resume done" cycle L
like "$(cat "$T/pub/L.err")" "cudanap\[$L_pid\]: \[log\] target $T/pub/logs/v.log: a FIFO nobody reads; logging to stderr instead" \
	"and its stderr says once why its lines come there"
ask L verify
is "$REPLY" "verify ok" "its memory intact"
kill "$L_pid"
rm -f "$T/pub/logs/v.log"
"${AS_A[@]}" sh -c 'touch "$1" && chmod 666 "$1"' _ "$T/pub/logs/v.log"
vstart L2 CUDANAP_CONFIG="$T/pub/log.ini"
check "a file the attacker made at the target: the victim's suspend and resume done" cycle L2
is "$(wc -c < "$T/pub/logs/v.log")" 0 "and none of its lines went into the attacker's file"
like "$(cat "$T/pub/L2.err")" "\[log\] target $T/pub/logs/v.log: a file owned by uid $A, not yours; logging to stderr instead" \
	"its stderr says why, in one line"
log_like "$T/pub/L2.err" "cudanap\[$L2_pid\]: resumed" "and has its lines"
kill "$L2_pid"

# -- 3. an NCCL rank whose only sign is its own fd-passing socket (abstract
# "@/tmp/nccl-socket-..."), its transports not made restorable: a suspend would be refused, however
# many such sockets other users bind (the agent kept the first 64 of the host's table: after 3000
# of the attacker's it said "would suspend", and a suspend would lose the rank)
# six processes of 500 each: within any limit of open files
flood=()
for k in 0 1 2 3 4 5; do
	"${AS_A[@]}" python3 -c 'import socket, sys, time
keep = []
for i in range(500):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0/tmp/nccl-socket-attacker-%s-%d" % (sys.argv[1], i))
    keep.append(s)
time.sleep(600)' "$k" > /dev/null 2>&1 &
	flood+=($!)
done
bound() { [ "$(grep -c '@/tmp/nccl-socket-attacker-' /proc/net/unix)" -ge 3000 ]; }
eventually 60 bound
is "$(grep -c '@/tmp/nccl-socket-attacker-' /proc/net/unix)" 3000 "the attacker binds 3000 abstract sockets named as NCCL names its own"
# the victim's target with its socket bound before it starts (the socket passed on through exec)
vcmd=(python3 -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0/tmp/nccl-socket-victim-%d" % os.getpid())
os.set_inheritable(s.fileno(), True)
os.execv(sys.argv[1], sys.argv[1:])' "$TARGET")
vstart N
vcmd=("$TARGET")
check "the victim's rank has its socket" grep -q "@/tmp/nccl-socket-victim-$N_pid" /proc/net/unix
out=$("$CUDANAP" suspend --dry-run "$N_pid" 2>&1)
like "$out" "^$N_pid: would refuse: refusing to suspend a process with NCCL communicators whose transports the driver cannot restore" \
	"with 3000 of the attacker's beside it: root's suspend --dry-run would refuse it"
out=$("${AS_V[@]}" "$CUDANAP" suspend --timeout 10 "$N_pid" 2>&1)
like "$out" "^$N_pid: .*refusing to suspend a process with NCCL communicators" "and the victim's own suspend is refused"
ask N verify
is "$REPLY" "verify ok" "the rank runs on, its memory intact"
kill "${flood[@]}" "$N_pid"
finish
