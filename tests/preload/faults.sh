#!/usr/bin/env bash
# Faults around the job: the controller killed (idle, mid-checkpoint, mid-restore), a driver call
# that outlasts the watchdog, the target dying mid-suspend, a stopped target, a storm of signals,
# and a suspend whose host copy would not fit.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
write_ini

# -- killed while idle: noticed at once, replaced at the next request
start A "$TARGET"
"$CUDANAP" suspend "$A_pid" > /dev/null && "$CUDANAP" resume "$A_pid" > /dev/null
ctl=$(ctl_of "$A_pid")
kill -9 "$ctl"
eventually 20 has "$T/A.err" "controller died; another starts"
like "$(cat "$T/A.err")" "controller died; another starts at the next request" "an idle controller's death is logged"
cli suspend "$A_pid"
like "$out:$rc" "suspended in .*:0" "the next suspend works through a new controller"
check "a new controller serves it" test -n "$(ctl_of "$A_pid")" -a "$(ctl_of "$A_pid")" != "$ctl"
cli resume "$A_pid"
like "$out:$rc" "resumed in .*:0" "and the resume"

# in_delay CALL PID: the fake driver's slow CALL for PID has begun.
in_delay() { grep -q "^delay_$1 $2\$" "$T/fake/events" 2> /dev/null; }
# kill_mid CALL SIGNAL SEQ: send SIGNAL to A, kill its controller once inside the fake driver's
# 1.5 s CALL (checkpoint or restore), and wait for A's SEQth outcome.
kill_mid() {
	rm -f "$T/fake/events"
	echo 1500 > "$T/fake/delay_$1"
	kill -"$2" "$A_pid"
	eventually 20 in_delay "$1" "$A_pid"
	kill -9 "$(ctl_of "$A_pid")"
	settle "$A_pid" "$3"
	rm "$T/fake/delay_$1"
}

# -- killed mid-checkpoint: the job runs on and says so
kill_mid checkpoint USR1 3
is "$(field "$A_pid" result):$(field "$A_pid" state)" "CONTROLLER_GONE:running" \
	"killed mid-checkpoint: reported, and the process unlocked and running"
like "$(field "$A_pid" message)" "died during the checkpoint" "the status says what happened"
ask A verify
is "$REPLY" "verify ok" "the job's data is intact and its CUDA works"
cli suspend "$A_pid"
like "$out:$rc" "suspended in .*:0" "the next suspend works"

# -- killed mid-restore: still suspended, and the next resume works
kill_mid restore USR2 5
is "$(field "$A_pid" result):$(field "$A_pid" state)" "CONTROLLER_GONE:checkpointed" \
	"killed mid-restore: reported, still suspended"
cli resume "$A_pid"
like "$out:$rc" "resumed in .*:0" "the next resume works"
ask A verify
is "$REPLY" "verify ok" "data intact"
ask A quit
wait "$A_pid"

# -- a driver call past the watchdog: said, and waited for
write_ini "[controller]" "watchdog_ms = 1000"
start W "$TARGET"
echo 2500 > "$T/fake/delay_checkpoint"
cli suspend "$W_pid"
rm "$T/fake/delay_checkpoint"
like "$out:$rc" "suspended in .*:0" "a 2.5 s checkpoint under a 1 s watchdog completes"
like "$(cat "$T/W.err")" "the driver's checkpoint has not answered after 2 s; still waiting" \
	"the watchdog said so at each interval"
"$CUDANAP" resume "$W_pid" > /dev/null
ask W quit
wait "$W_pid"
write_ini

# -- the target dies mid-suspend: its controller exits, nothing left behind
start D "$TARGET"
"$CUDANAP" suspend "$D_pid" > /dev/null && "$CUDANAP" resume "$D_pid" > /dev/null
ctl=$(ctl_of "$D_pid")
echo 1500 > "$T/fake/delay_checkpoint"
rm -f "$T/fake/events"
kill -USR1 "$D_pid"
eventually 20 in_delay checkpoint "$D_pid"
kill -9 "$D_pid"
wait "$D_pid" 2>/dev/null
check "the target's controller exits after the call in flight" eventually 5 gone "$ctl"
is "$(ps -o stat= --ppid $$ | grep -c Z)" 0 "no zombie left with the test's shell"
rm "$T/fake/delay_checkpoint"

# -- a stopped target: a clear error, nothing sent
start S "$TARGET"
kill -STOP "$S_pid"
eventually 10 stopped "$S_pid"
cli suspend "$S_pid"
like "$out:$rc" "^$S_pid: cannot suspend: it is stopped .*kill -CONT.*nothing sent:1" "a stopped target is refused in one line"
kill -CONT "$S_pid"
sleep 0.2 # a check that nothing happens: time for a queued signal to show, were there one
is "$(field "$S_pid" seq):$(field "$S_pid" state)" "0:running" "nothing was queued for it"
cli suspend "$S_pid"
like "$out:$rc" "suspended in .*:0" "once continued it suspends"
"$CUDANAP" resume "$S_pid" > /dev/null
ask S quit
wait "$S_pid"

# -- a storm: 1000 mixed signals in about 10 s end in the state the last one asked for. They are
# 10 ms apart: two different signals pending at the same moment reach any handler in the order of
# their numbers, not the order they were sent (the kernel keeps no other), so the last is sent
# 100 ms after the rest.
start R "$TARGET"
mkfifo "$T/z"
exec {z}<>"$T/z"
pause() { read -r -t "$1" -u "$z" || true; }
t0=$SECONDS
for i in $(seq 1000); do
	if ((RANDOM % 2)); then last=USR1; else last=USR2; fi
	[ "$i" = 1000 ] && pause 0.1
	kill -$last "$R_pid"
	pause 0.01
done
want=running
[ $last = USR1 ] && want=checkpointed
for _ in $(seq 500); do
	[ "$(field "$R_pid" busy)" = false ] && [ "$(field "$R_pid" state)" = "$want" ] && break
	sleep 0.02
done
sleep 0.5
diag "1000 signals in $((SECONDS - t0)) s; $(field "$R_pid" seq) actions taken"
is "$(field "$R_pid" state):$(field "$R_pid" result)" "$want:ok" "after the storm: the state the last signal ($last) asked for"
check "the target lives" kill -0 "$R_pid"
[ $want = checkpointed ] && "$CUDANAP" resume "$R_pid" > /dev/null
ask R verify
is "$REPLY" "verify ok" "data intact after the storm"
ask R quit
wait "$R_pid"

# -- a host copy that will not fit: refused before the lock
export CUDANAP_FAKE_FOOTPRINT_MIB=$((1 << 30))
start H "$TARGET"
cli suspend "$H_pid"
like "$out:$rc" "NO_HOST_MEMORY: the process holds 1073741824 MiB on its GPUs, but the host copy can have only [0-9]+ MiB \((MemAvailable|cgroup .*)\) less the 1024 MiB margin \(\[preflight\] host_margin_mib\); the process keeps running \(state running\):1" \
	"a suspend whose host copy cannot fit is refused in one line"
ask H verify
is "$REPLY" "verify ok" "the job runs on"
ask H quit
wait "$H_pid"
write_ini "[preflight]" "host_memory = false"
start H "$TARGET"
cli suspend "$H_pid"
like "$out:$rc" "suspended in .*:0" "host_memory = false leaves the check out"
"$CUDANAP" resume "$H_pid" > /dev/null
ask H quit
finish
