#!/usr/bin/env bash
# Whole jobs: `cudanap suspend|resume --all` and `--tree PID`, with the fake driver. The preload
# suite runs one test at a time, so --all sees only this test's processes.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
write_ini

start A "$TARGET"
start B "$TARGET"
out=$("$CUDANAP" suspend --all); rc=$?
is "$rc" 0 "suspend --all exits 0"
like "$out" "(^|
)$A_pid: suspended in " "suspend --all: one line for the first job"
like "$out" "(^|
)$B_pid: suspended in " "and one for the second"
like "$out" "total: 2 processes, 2 suspended, 0 without CUDA, 0 failed, [0-9.]+ s$" "and the total"
is "$(field "$A_pid" state):$(field "$B_pid" state)" checkpointed:checkpointed "both checkpointed"
out=$("$CUDANAP" resume --all); rc=$?
like "$out:$rc" "total: 2 processes, 2 resumed, 0 without CUDA, 0 failed, [0-9.]+ s:0" "resume --all"
ask A verify
is "$REPLY" "verify ok" "the first job's data intact"
ask B verify
is "$REPLY" "verify ok" "the second job's data intact"

# -- a tree as a batch system starts it: a launcher shell, a CUDA worker, a worker without CUDA and
# two helpers, all preloaded, beside two jobs outside the tree.
setsid "$CUDANAP" run -c "$T/job.ini" -- bash -c "
	tail -f /dev/null | '$TARGET' > '$T/w1.out' &
	tail -f /dev/null | '$TARGET' --no-cuda > '$T/w2.out' &
	wait" &
root=$!
for _ in $(seq 200); do
	grep -q ready "$T/w1.out" "$T/w2.out" 2>/dev/null && [ "$(cat "$T"/w?.out | grep -c ready)" = 2 ] && break
	sleep 0.05
done
w1=$(awk '{ print $2 }' "$T/w1.out")
sleep 0.3 # the tails' status files
out=$("$CUDANAP" suspend --tree "$root"); rc=$?
is "$rc" 0 "suspend --tree exits 0"
like "$out" "(^|
)$w1: suspended in " "the CUDA worker in the tree is suspended"
like "$out" "(^|
)$root: no CUDA state, nothing to do" "the launcher shell has nothing to do"
is "$(field "$root" result)" CUDA_ERROR_NOT_INITIALIZED "the shell's controller found the driver (bash defines its own getenv)"
like "$out" "total: 5 processes, 1 suspended, 4 without CUDA, 0 failed" "the total counts the tree"
is "$(field "$w1" state)" checkpointed "the worker is checkpointed"
is "$(field "$A_pid" state):$(field "$B_pid" state)" running:running "jobs outside the tree untouched"
out=$("$CUDANAP" resume --tree "$root"); rc=$?
like "$out:$rc" "total: 5 processes, 1 resumed, 4 without CUDA, 0 failed, [0-9.]+ s:0" "resume --tree"
is "$(field "$w1" state)" running "the worker runs again"

# -- mistakes
out=$("$CUDANAP" suspend --tree 0 2>&1); rc=$?
is "$rc:$out" "2:cudanap: '0' is not a process id" "--tree with a bad pid"
out=$("$CUDANAP" suspend --tree 999999999 2>&1); rc=$?
is "$rc:$out" "1:cudanap: 999999999: no such process" "--tree with a pid that does not exist"
sleep 60 &
lone=$!
out=$("$CUDANAP" suspend --tree "$lone" 2>&1); rc=$?
is "$rc:$out" "1:cudanap: no process in that tree runs under cudanap" "--tree with no cudanap process in it"
kill "$lone"
out=$("$CUDANAP" suspend --all "$A_pid" 2>&1); rc=$?
is "$rc" 2 "--all with pids is a usage error"
like "$out" "not several of them" "and says so"
is "$(field "$A_pid" state)" running "the job was not touched"

kill -- -"$root"
ask A quit
ask B quit
wait "$A_pid" "$B_pid"
out=$("$CUDANAP" suspend --all 2>&1); rc=$?
is "$rc:$out" "1:cudanap: no process of this user runs under cudanap" "--all with nothing to do"
finish
