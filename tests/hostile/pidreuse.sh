#!/usr/bin/env bash
# A reused pid gets no signal: [nap] make_room reads its candidates once and naps them one by one;
# a candidate that exits while an earlier one naps, and whose pid another process of the user then
# takes, is not signalled (a plain program dies of SIGUSR1) and no note is left for it. Run in a pid
# namespace of its own (as root), where the kernel's next pid can be set (ns_last_pid) so that the
# reuse happens for certain, with the fake driver's checkpoint made slow to hold the window open.
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root: a pid namespace whose next pid it sets"; exit 0; }
if [ -z "${CN_IN_PIDNS:-}" ]; then
	command -v unshare > /dev/null || { echo "1..0 # SKIP no unshare"; exit 0; }
	exec unshare --pid --fork --mount-proc env CN_IN_PIDNS=1 bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPU_MIB=4000
mkdir "$T/fake"
write_ini "[nap]" "make_room = true" "min_idle_s = 1" "[restore]" "margin_mib = 0" "[log]" "level = info"
idle_for() { # idle_for PID S: idle S seconds at least, as its status says
	local since
	since=$(field "$1" idle_since)
	[ -n "$since" ] && [ $(($(date +%s%3N) - $(date -d "$since" +%s%3N))) -ge $(($2 * 1000)) ]
}

start C1 "$TARGET"
ask C1 "drv launch export 5"
sleep 0.3 # C1 idle longer than C2: napped first
start C2 "$TARGET"
ask C2 "drv launch export 5"
is "$REPLY" "launch 0" "C2 works the GPU"
start W "$TARGET"
eventually 30 idle_for "$C2_pid" 1 ||
	diag "C1: $(cat "$T/status/$C1_pid.json"); C2: $(cat "$T/status/$C2_pid.json")"
check "C1 and C2 idle a second, C1 the longer" idle_for "$C2_pid" 1
echo 3000 > "$T/fake/delay_checkpoint"

# W wants 3000 MiB of the 1000 free: C1 napped first (slowly), then C2 would be
echo "drv alloc export 3000" >&"$W_in"
check "C1's nap under way (its checkpoint held 3 s)" eventually 20 grep -q "delay_checkpoint $C1_pid" "$T/fake/events"
kill -9 "$C2_pid"
wait "$C2_pid" 2> /dev/null
reuser=
for _ in 1 2 3 4 5; do
	echo $((C2_pid - 1)) > /proc/sys/kernel/ns_last_pid
	sleep 300 &
	[ $! = "$C2_pid" ] && { reuser=$!; break; }
	kill $!
done
check "C2 exited, and a plain program of the user has its pid now" test -n "$reuser"
read -r -t 120 -u "$W_out" REPLY || REPLY=
rm -f "$T/fake/delay_checkpoint"
like "$REPLY" "^alloc [1-9]" "W's allocation fails as it would have: C1's nap was not room enough"
check "the program that took C2's pid got no signal: it lives" kill -0 "$reuser"
check "and no nap note is left for its pid" test ! -e "$T/status/$C2_pid.nap-for"
like "$(cat "$T/W.err")" "$C2_pid did not nap" "W's log says C2 did not nap"
kill "$reuser" 2> /dev/null
finish
