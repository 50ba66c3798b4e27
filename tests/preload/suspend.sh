#!/usr/bin/env bash
# Suspend and resume a target under the preload by real signals, with the fake driver.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"

write_ini "[hooks]" \
	"on_suspended = env > $T/hook.suspended; ls /proc/self/fd > $T/hook.fds" \
	"on_resumed = echo \$CUDANAP_EVENT \$CUDANAP_STATE \$CUDANAP_RESULT > $T/hook.resumed"
exec {leak}> "$T/leak" # a descriptor the app inherits without close-on-exec: not the hooks'
check "target starts under cudanap run" start A "$TARGET"
exec {leak}>&-
pid=$A_pid
check "status file written at start" test -f "$T/status/$pid.json"
is "$(stat -c %a "$T/status/$pid.json")" 600 "status file is mode 0600"
is "$(field "$pid" state)" running "state running at start"
ask A verify
is "$REPLY" "verify ok" "data verifies before suspend"

kill -USR1 "$pid"
settle "$pid" 1
is "$(field "$pid" state)" checkpointed "SIGUSR1 checkpoints"
is "$(field "$pid" result)" ok "result ok"
check "memory left the GPU" test ! -e "$T/fake/$pid.gpu" -a -e "$T/fake/$pid.host"
like "$(field "$pid" checkpoint_ms)" '^[0-9]+\.[0-9]+$' "checkpoint time recorded"
like "$(cat "$T/A.err")" "cudanap\[$pid\]: suspended in [0-9.]+ (ms|s) \(lock [0-9.]+ (ms|s), checkpoint" \
	"one log line with the timings"
eventually 20 has "$T/hook.fds" .
like "$(cat "$T/hook.suspended" 2>/dev/null)" "CUDANAP_EVENT=suspended" "on_suspended hook ran"
like "$(grep -E '^CUDANAP_(PID|STATE|RESULT)=' "$T/hook.suspended" | sort | tr '\n' ' ')" \
	"CUDANAP_PID=$pid CUDANAP_RESULT=ok CUDANAP_STATE=checkpointed" "hook environment"
check "hook has no cudanap in LD_PRELOAD" bash -c "! grep -q '^LD_PRELOAD=.*libcudanap' '$T/hook.suspended'"
is "$(wc -l < "$T/hook.fds" 2>/dev/null)" 4 "hook inherits only stdio (plus ls's own fd), none of the app's other descriptors"

ask A write 1
is "$REPLY" "" "the target's CUDA calls block while suspended"
kill -USR2 "$pid"
settle "$pid" 2
is "$(field "$pid" state)" running "SIGUSR2 resumes"
answer A
is "$REPLY" "write ok" "the blocked call completes after resume"
ask A verify
is "$REPLY" "verify ok" "data intact after resume"
eventually 20 has "$T/hook.resumed" .
is "$(cat "$T/hook.resumed" 2>/dev/null)" "resumed running ok" "on_resumed hook ran"

cli suspend --wait "$pid"
like "$out" "^$pid: suspended in " "cudanap suspend --wait reports"
is "$rc" 0 "cudanap suspend exits 0"
out=$("$CUDANAP" suspend "$pid")
is "$out" "$pid: already suspended" "a second suspend says already"
cli resume "$pid"
like "$out" "^$pid: resumed in .*restore .*unlock" "cudanap resume reports restore and unlock"
is "$rc" 0 "cudanap resume exits 0"
like "$("$CUDANAP" status)" "$pid +running +resume +ok" "cudanap status lists the process"
like "$("$CUDANAP" status --json "$pid")" "^\[\{\"pid\":$pid,.*\"state\":\"running\"" "cudanap status --json"

ask A quit
wait "$A_pid"
check "status file removed at exit" test ! -e "$T/status/$pid.json"
finish
