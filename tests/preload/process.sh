#!/usr/bin/env bash
# The preload as a guest in the app's process: signal mask and dispositions, forks, the controller's
# lifetime, pipes, and the toggle signal.
. "$(dirname "$0")/../lib.sh"
# ASan's fork() interceptor holds its own locks across fork(), inside which cudanap starts a
# forked child's agent thread: the child deadlocks under the ASan runtime only.
[ -z "${CN_SANITIZER_RUNTIME:-}" ] || skip_all "forks under the ASan runtime"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
write_ini

# -- the app's signal mask and ignored signals are exactly as without cudanap
probe='trap "" HUP TERM; exec grep -E "^Sig(Blk|Ign)" /proc/self/status'
plain=$(bash -c "$probe")
with=$(LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini bash -c "$probe")
is "$with" "$plain" "signal mask and ignored signals unchanged"
# Signals caught, as a hex mask, minus glibc's internal real-time ones (32, 33).
caught() { printf '%x' $(( 0x$(grep SigCgt /proc/self/status | cut -f2) & 0xffffffff )); }
export -f caught
plain=$(LD_PRELOAD=${CN_SANITIZER_RUNTIME:-} bash -c caught)
with=$(LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini bash -c caught)
is "$(printf '%x' $(( 0x$with ^ 0x$plain )))" a00 "cudanap catches SIGUSR1 and SIGUSR2 and nothing else"

# -- nested forks: a grandchild must not close descriptors the app reopened on our old numbers
out=$(LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini bash -c 'echo $(echo nested | cat) $( (echo deeper | cat) | cat)' 2>&1)
is "$out" "nested deeper" "pipes in nested subshells survive the preload"

# -- the controller: started at the first request, adopted by init, gone with the target
# a process's controllers by their argument, its pid: another suite's run beside this one has its own
exec {leak}> "$T/leak" # a descriptor the app inherits without close-on-exec
start A "$TARGET" || diag "target did not start"
exec {leak}>&-
pid=$A_pid
check "the app holds the inherited descriptor" bash -c "ls -l /proc/$pid/fd | grep -q '$T/leak'"
is "$(ctl_of "$pid" | wc -w)" 0 "no controller before the first signal"
kill -USR1 "$pid"
settle "$pid" 1
ctl=$(ctl_of "$pid")
check "one controller started by the first signal" test "$(echo "$ctl" | wc -w)" -eq 1
ppid=$(ps -o ppid= -p "$ctl" | tr -d ' ')
check "the controller is not the app's child" test "$ppid" != "$pid"
is "$(ls /proc/"$ctl"/fd | sort -n | tr '\n' ' ')" "0 1 2 3 " "the controller holds only stdio and its socket, none of the app's inherited descriptors"
is "$(readlink /proc/"$ctl"/fd/1)" /dev/null "the controller's stdout is /dev/null"
check "the app has no zombie child left from starting it" \
	bash -c "! ps -o stat= --ppid $pid | grep -q Z"
kill -USR2 "$pid"
settle "$pid" 2
ask A quit
wait "$pid"
check "the controller exits with the target" eventually 5 gone "$ctl"

# -- status files go with the process, by exit() or by _exit() (dash, forked workers)
for sh in /bin/sh /bin/bash; do
	LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini $sh -c 'exit 0'
	LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini $sh -c ':'
done
is "$(ls "$T/status" | wc -l)" 0 "short processes leave no status file behind"

# -- an exec'd child inherits no cudanap descriptor (after the controller has started, too)
out=$(LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini bash -c 'kill -USR1 $$; sleep 0.3; exec env -u LD_PRELOAD ls -l /proc/self/fd' 2>/dev/null)
is "$(echo "$out" | awk '$9 ~ /^[0-9]+$/ && $9 > 2' | grep -cE 'pipe:|socket:')" 0 "an exec'd child has no cudanap pipe or socket"

# -- `app | cat` sees EOF: the controller does not hold the app's pipes
out=$(timeout 10 bash -c "'$CUDANAP' run -c '$T/job.ini' -- /bin/echo hello | cat"); rc=$?
is "$out:$rc" "hello:0" "a pipeline through the app ends"

# -- a child forked without exec never acts through its parent's controller
start B "$TARGET"
ask B fork
child=${REPLY#child }
kill -USR1 "$child"
settle "$child" 1
check "the forked child survives the suspend signal" kill -0 "$child"
is "$(field "$child" state)" no-cuda "the child answers for itself: no CUDA"
is "$(field "$B_pid" seq)" 0 "the parent did not act on the child's signal"
is "$(field "$B_pid" state)" running "the parent is still running"
kill "$child"
kill -USR1 "$B_pid"
settle "$B_pid" 1
is "$(field "$B_pid" state)" checkpointed "the parent still answers its own signal"
kill -USR2 "$B_pid"
settle "$B_pid" 2
ask B verify
is "$REPLY" "verify ok" "parent data intact"
ask B quit

# -- exec'd children start fresh, with their own controller
start D bash -c 'exec "$0" "$@"' "$TARGET"
kill -USR1 "$D_pid"
settle "$D_pid" 1
is "$(field "$D_pid" state)" checkpointed "an exec'd program is suspended on its own"
kill -USR2 "$D_pid"
settle "$D_pid" 2
ask D verify
is "$REPLY" "verify ok" "and resumed intact"
ask D quit

# -- one signal for both: it toggles
write_ini "[signals]" "suspend = SIGRTMIN+3" "resume = RTMIN+3"
start C "$TARGET"
kill -s RTMIN+3 "$C_pid" 2>/dev/null || kill -$(( $(kill -l RTMIN) + 3 )) "$C_pid"
settle "$C_pid" 1
is "$(field "$C_pid" state)" checkpointed "the first toggle suspends"
kill -$(( $(kill -l RTMIN) + 3 )) "$C_pid"
settle "$C_pid" 2
is "$(field "$C_pid" state)" running "the second toggle resumes"
cli suspend "$C_pid"
like "$out:$rc" "suspended in .*:0" "cudanap suspend sends the job's own signal"
cli suspend "$C_pid"
is "$out:$rc" "$C_pid: already suspended:0" "and does not toggle a suspended job back"
cli resume "$C_pid"
like "$out:$rc" "resumed in .*:0" "cudanap resume toggles it back"
ask C verify
is "$REPLY" "verify ok" "data intact"

# -- a burst of signals folds into the state the last one asked for
for i in $(seq 20); do kill -$(( $(kill -l RTMIN) + 3 )) "$C_pid"; done
kill -$(( $(kill -l RTMIN) + 3 )) "$C_pid"
settle "$C_pid" 5
quiet "$C_pid"
b=$(field "$C_pid" state)
like "$b" "^(running|checkpointed)$" "the state is consistent after 21 toggles"
[ "$b" = checkpointed ] && "$CUDANAP" resume "$C_pid" > /dev/null
ask C verify
is "$REPLY" "verify ok" "data intact after the burst"
ask C quit
finish
