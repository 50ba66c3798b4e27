#!/usr/bin/env bash
# How long the commands that ask processes wait, and what a terminal shows meanwhile, with the
# fake driver: status, suspend --dry-run and pick each wait 5 s at most for an answer (a process
# whose agent is busy in a hook for 20 s is said not to answer, long before the hook ends), pick
# and a dry run take --timeout; an action or a question that lasts over a second shows a progress
# line on a terminal, rewritten in place and erased before the command's own lines, and none when
# stderr is not a terminal.
. "$(dirname "$0")/../lib.sh"
command -v python3 > /dev/null || skip_all "no python3 for a pseudo-terminal"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
onpty() { python3 "$(dirname "$0")/onpty.py" "$@"; } # onpty RAW SCREEN CMD...
hook_ran() { [ -e "$T/hook.end" ]; }
write_ini "[hooks]" "on_resumed = touch $T/hook.start; sleep 20; touch $T/hook.end" "timeout_ms = 60000"
start A "$TARGET"

out=$("$CUDANAP" suspend --dry-run -c "$T/job.ini" "$A_pid"); rc=$?
like "$rc:$out" "^0:$A_pid: would suspend: 1000 MiB on GPU 0" "asked, it answers: it would suspend"

# -- a process that cannot answer now: its agent runs a hook of 20 s after its resume
cli suspend "$A_pid"
cli resume "$A_pid"
like "$out" "^$A_pid: resumed in" "resumed; its hook runs for 20 s, the agent waiting for it"
eventually 10 test -e "$T/hook.start"
"$CUDANAP" pick --free 1 -c "$T/job.ini" > "$T/pick.out" 2>&1 &
pick=$!
"$CUDANAP" suspend --dry-run -c "$T/job.ini" "$A_pid" > "$T/dry.out" 2>&1 &
dry=$!
onpty "$T/status.raw" "$T/status.screen" "$CUDANAP" status -c "$T/job.ini" "$A_pid" &
status=$!
wait "$pick"; pick_rc=$?
wait "$dry"; dry_rc=$?
wait "$status"
check "status, suspend --dry-run and pick all ended before the hook did: each waited less than 20 s" \
	test ! -e "$T/hook.end"
is "$pick_rc:$(grep "^$A_pid:" "$T/pick.out")" \
	"1:$A_pid: would refuse: no answer (its agent is stuck, or it ignores User defined signal 1)" \
	"pick: the process that did not answer is said so, nothing picked"
is "$dry_rc:$(cat "$T/dry.out")" \
	"1:$A_pid: would refuse: no answer (its agent is stuck, or it ignores User defined signal 1)" \
	"suspend --dry-run: the same"
like "$(cat "$T/status.raw")" $'\r'"cudanap: asking 1 process what a suspend would do: 0 answered, [0-9.]+ s \(5 s at most\)" \
	"status on a terminal: a progress line while it waits more than a second"
like "$(head -n 1 "$T/status.screen")" "^PID +STATE " "and the table's header where it stood: the line erased"
unlike "$(cat "$T/status.screen")" "asking" "nothing of it left on the screen"
eventually 40 hook_ran
out=$("$CUDANAP" suspend --dry-run -c "$T/job.ini" "$A_pid"); rc=$?
like "$rc:$out" "^0:$A_pid: would suspend: " "the hook over, it answers again"

# -- --timeout: pick and a dry run wait that long at most
rm -f "$T/hook.start" "$T/hook.end"
write_ini "[hooks]" "on_resumed = touch $T/hook.start; sleep 6; touch $T/hook.end"
cli resume "$A_pid" # nothing to do: no hook runs
cli suspend "$A_pid"
cli resume "$A_pid"
eventually 10 test -e "$T/hook.start"
cli2 pick --free 1 -c "$T/job.ini" --timeout 0.5
like "$rc:$out" "^1:.*$A_pid: would refuse: no answer" "pick --timeout 0.5: no answer within it"
cli2 suspend --dry-run --timeout 0.5 -c "$T/job.ini" "$A_pid"
like "$rc:$out" "^1:$A_pid: would refuse: no answer" "suspend --dry-run --timeout 0.5: the same"
cli2 pick --free 1 --timeout -1
is "$rc:$out" "2:cudanap: --timeout wants a number of seconds above 0" "pick --timeout must be above 0"
eventually 40 hook_ran

# -- an action over a second on a terminal: its progress line, then its own line alone
write_ini
echo 2500 > "$T/fake/delay_checkpoint"
onpty "$T/susp.raw" "$T/susp.screen" "$CUDANAP" suspend "$A_pid"
is "$?" 0 "suspend on a terminal of a checkpoint of 2.5 s: exit 0"
like "$(cat "$T/susp.raw")" $'\r'"cudanap: suspending 1 process: 0 done, [0-9.]+ s \(600 s at most\)" \
	"a progress line while it waits"
is "$(grep -c . "$T/susp.screen")" 1 "the screen holds one line at the end"
like "$(cat "$T/susp.screen")" "^$A_pid: suspended in [0-9.]+ s \(" "the suspend's own"
rm "$T/fake/delay_checkpoint"
cli resume "$A_pid"
echo 2500 > "$T/fake/delay_checkpoint"
"$CUDANAP" suspend "$A_pid" > "$T/plain.out" 2> "$T/plain.err"
is "$?:$(cat "$T/plain.err")" "0:" "stderr not a terminal: no progress line"
like "$(cat "$T/plain.out")" "^$A_pid: suspended in " "the suspend's line alone"
rm "$T/fake/delay_checkpoint"
cli resume "$A_pid"
onpty "$T/quick.raw" "$T/quick.screen" "$CUDANAP" suspend "$A_pid"
unlike "$(cat "$T/quick.raw")" "suspending" "an action shorter than a second: no progress line"
cli resume "$A_pid"
ask A quit
finish
