#!/usr/bin/env bash
# The node pager and a raced pid: the attacker connects, forks, and its connecting process exits;
# a process of the victim's then takes that pid (the kernel's next pid set in a pid namespace of
# the test's own, as pidreuse.sh does), and the attacker's child sends a need on the inherited
# connection, whose peer the kernel still names by that pid. The pager sees that the pid is
# another process now (its start time) and refuses; the victim's idle program is not napped for
# a program that is gone, and the victim's process that took the pid gets no signal.
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root: a pid namespace whose next pid it sets"; exit 0; }
if [ -z "${CN_IN_PIDNS:-}" ]; then
	command -v unshare > /dev/null || { echo "1..0 # SKIP no unshare"; exit 0; }
	exec unshare --pid --fork --mount-proc env CN_IN_PIDNS=1 bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"
mkdir -m 1777 "$T/pub/fake"
mkdir -m 755 "$T/run"
mkdir -m 700 "$T/pub/vst" && chown cnvictim "$T/pub/vst"
printf '[nap]\nmake_room = node\npager_socket = %s\n[restore]\nmargin_mib = 0\n[status]\ndir = %s\n' \
	"$T/run/pager.sock" "$T/pub/vst" > "$T/pub/v.ini"
chmod 644 "$T/pub/v.ini"
gpu=(CUDANAP_LIBCUDA="$FAKECUDA" CUDANAP_LIBNVML="$FAKECUDA" CUDANAP_FAKE_DIR="$T/pub/fake"
	CUDANAP_FAKE_GPU_MIB=4000)
printf '[pager]\nsocket = %s\nstate = %s\nmin_idle_s = 2\nmargin_mib = 0\nwhen_full = wait\nwait_s = 20\n' \
	"$T/run/pager.sock" "$T/run/pager.state" > "$T/pager.ini"
env "${gpu[@]}" "$PAGER" -c "$T/pager.ini" 2> "$T/pager.log" &
check "the pager listens" eventually 20 test -S "$T/run/pager.sock"
RUN_AS=("${AS_V[@]}" "${gpu[@]}") JOB_INI=$T/pub/v.ini
start V1 "$TARGET"
unset RUN_AS JOB_INI
ask V1 "drv alloc export 1000"
is "$REPLY" "alloc 0" "the victim's program holds 2000 MiB"

# the attacker's connecting process, and its child that keeps the connection
"${AS_A[@]}" /usr/bin/python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
time.sleep(0.5)  # the pager has taken the connection, and the start time of this pid
if os.fork():
    os._exit(0)
os.setsid()
while not os.path.exists(sys.argv[2] + "/go"):
    time.sleep(0.02)
s.send(("need gpu=GPU-face0000-0000-0000-0000-000000000000 mib=2500 context=0 light=0 what=x").encode())
s.settimeout(30)
m = s.recv(2000)
open(sys.argv[2] + "/answer", "w").write((m.decode() if m else "closed") + "\n")' \
	"$T/run/pager.sock" "$T/pub" &
asker=$!
wait "$asker"
check "the attacker's connecting process exited, its child holds the connection" test ! -e "/proc/$asker"
# another process of the namespace (the pager's or the victim's threads) may take the pid between
# the write and the fork: tried until one gets it, 200 times at most
reuser=
for _ in $(seq 200); do
	echo $((asker - 1)) > /proc/sys/kernel/ns_last_pid
	"${AS_V[@]}" sleep 300 &
	[ $! = "$asker" ] && { reuser=$!; break; }
	kill $!
done
check "a process of the victim's has its pid now" test -n "$reuser"
ask V1 "drv launch export 5" # the victim's program worked just now: idle 2 s only in 2 s
touch "$T/pub/go"
check "the need on the raced connection answered" eventually 20 test -s "$T/pub/answer"
is "$(cat "$T/pub/answer")" "refused why=the asking process is gone" \
	"refused: the pid the kernel names is another process now"
sleep 3 # what does not happen: the victim's program napped once idle 2 s
is "$(STATUS_DIR=$T/pub/vst field "$V1_pid" state)" running "the victim's program was not napped for it"
[ "$(STATUS_DIR=$T/pub/vst field "$V1_pid" state)" = running ] ||
	diag "V1: $(ls -la "$T/pub/vst" 2>&1; cat "$T/V1.err"); the pager: $(cat "$T/pager.log")"
check "the victim's process that took the pid got no signal" kill -0 "$reuser"
log_like "$T/pager.log" "for $asker \(cnattacker, x, 2500 MiB on a GPU\): no room made: the asking process is gone" \
	"the pager's log says so"
kill "$reuser" 2> /dev/null
ask V1 quit 10
finish
