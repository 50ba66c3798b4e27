#!/usr/bin/env bash
# Whole jobs: `cudanap suspend|resume --all` and `--tree PID`, and a group's suspend all or
# nothing (rollback, retries, --each), with the fake driver. --all is given this test's INI (-c):
# it then takes only the processes whose status files are in this test's directory, and another
# suite running at the same time (a second build, CI) is left alone.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
write_ini

start A "$TARGET"
start B "$TARGET"
cli suspend --all -c "$T/job.ini"
is "$rc" 0 "suspend --all exits 0"
like "$out" "(^|
)$A_pid: suspended in " "suspend --all: one line for the first job"
like "$out" "(^|
)$B_pid: suspended in " "and one for the second"
like "$out" "total: 2 processes, 2 suspended, 0 without CUDA, 0 failed, [0-9.]+ s$" "and the total"
is "$(field "$A_pid" state):$(field "$B_pid" state)" checkpointed:checkpointed "both checkpointed"
cli resume --all -c "$T/job.ini"
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
# the tree's five status files: the shell, the two tails, the two workers
tree_files() { [ "$(for p in $root $(pgrep -P "$root"); do [ -e "$T/status/$p.json" ] && echo "$p"; done | wc -l)" -ge 5 ]; }
eventually 20 tree_files
cli suspend --tree "$root"
is "$rc" 0 "suspend --tree exits 0"
like "$out" "(^|
)$w1: suspended in " "the CUDA worker in the tree is suspended"
like "$out" "(^|
)$root: no CUDA state, nothing to do" "the launcher shell has nothing to do"
is "$(field "$root" seq)" 0 "the shell got no signal: it never loaded the driver"
like "$out" "total: 5 processes, 1 suspended, 4 without CUDA, 0 failed" "the total counts the tree"
is "$(field "$w1" state)" checkpointed "the worker is checkpointed"
is "$(field "$A_pid" state):$(field "$B_pid" state)" running:running "jobs outside the tree untouched"
cli resume --tree "$root"
like "$out:$rc" "total: 5 processes, 1 resumed, 4 without CUDA, 0 failed, [0-9.]+ s:0" "resume --tree"
is "$(field "$w1" state)" running "the worker runs again"
# options in any order: --tree as a flag before other options, the root after them
cli2 suspend --tree --timeout 30 --json "$root"
like "$rc:$out" "^0:.*\"total\"" "suspend --tree --timeout 30 --json PID: --tree a flag, the PID its root"
is "$(field "$w1" state)" checkpointed "the worker is checkpointed"
cli resume "--tree=$root" --timeout 30
like "$out:$rc" "total: 5 processes, 1 resumed, .*:0" "resume --tree=PID"
cli suspend "$w1" --timeout 30
like "$out:$rc" "^$w1: suspended in .*:0" "suspend PID --timeout 30: an option after the PID"
cli resume --tree --retries 1 "$root" --no-wait
is "$rc" 0 "resume --tree --retries 1 PID --no-wait"
settle "$w1" 4
is "$(field "$w1" state)" running "and the worker runs again"
cli2 suspend --tree
is "$rc:$out" "2:cudanap: --tree: which process? give its PID" "--tree with no PID: one line"
cli2 suspend --slurm 1 2
is "$rc:$out" "2:cudanap: give PIDs, --all, --tree or --slurm, not several of them" "--slurm JOBID PID: refused"
kill -USR1 "$root"
settle "$root" 1
is "$(field "$root" result)" CUDA_ERROR_NOT_INITIALIZED "signalled by hand, the shell's controller finds the driver (bash defines its own getenv)"

# -- mistakes
cli2 suspend --tree 0
is "$rc:$out" "2:cudanap: '0' is not a process id" "--tree with a bad pid"
cli2 suspend --tree 999999999
is "$rc:$out" "1:cudanap: 999999999: no such process" "--tree with a pid that does not exist"
sleep 60 &
lone=$!
cli2 suspend --tree "$lone"
is "$rc:$out" "1:cudanap: no process in that tree runs under cudanap" "--tree with no cudanap process in it"
kill "$lone"
cli2 suspend --all "$A_pid"
is "$rc" 2 "--all with pids is a usage error"
like "$out" "not several of them" "and says so"
is "$(field "$A_pid" state)" running "the job was not touched"

# -- every process checked before any is signalled: a PID that is not a cudanap process (mistyped,
# gone) or a stopped one refuses the whole command, nothing sent to the others
sleep 0 &
gone=$!
wait "$gone"
seqs="$(field "$A_pid" seq):$(field "$B_pid" seq)"
cli2 suspend "$A_pid" "$gone"
like "$rc:$out" "^1:$A_pid: nothing sent: the job is refused \($gone\)
$gone: no such process
refused: 1 of 2 processes cannot suspend \($gone\); nothing was signalled: leave it out, or act on each with --each
total: 2 processes, 0 suspended, 0 without CUDA, 2 failed, [0-9.]+ s$" \
	"suspend GOOD GONE: refused before any signal, in one line, exit 1"
is "$(field "$A_pid" state):$(field "$A_pid" seq):$(field "$A_pid" busy)" "running:${seqs%%:*}:false" \
	"the good one untouched: no action, no rollback"
like "$("$CUDANAP" suspend --json "$A_pid" "$gone" | tr -d '\n')" '"refused":"refused: 1 of 2 processes cannot suspend' \
	"--json: refused"
"$CUDANAP" suspend "$B_pid" > /dev/null
cli2 resume "$B_pid" "$gone"
like "$rc:$out" "^1:.*refused: 1 of 2 processes cannot resume \($gone\); nothing was signalled" "resume too"
is "$(field "$B_pid" state)" checkpointed "the sleeper left asleep"
"$CUDANAP" resume "$B_pid" > /dev/null
kill -STOP "$B_pid"
eventually 10 stopped "$B_pid"
seqs="$(field "$A_pid" seq):$(field "$B_pid" seq)"
cli2 suspend "$A_pid" "$B_pid"
like "$rc:$out" "^1:.*$B_pid: cannot suspend: it is stopped .*; nothing sent
refused: 1 of 2 processes cannot suspend \($B_pid\)" "a stopped one refuses the job, as the dry run would"
is "$(fields "$A_pid" state:seq):$(field "$B_pid" seq)" "running:$seqs" "neither was touched"
kill -CONT "$B_pid"
cli2 suspend --each "$A_pid" "$gone"
like "$rc:$out" "^1:$A_pid: suspended in .*
$gone: no such process" "--each: the good one acted on, the bad one fails"
"$CUDANAP" resume "$A_pid" > /dev/null

# -- all or nothing: a suspend of several processes ends with all suspended or all running
write_ini "[lock]" "timeout_ms = 300"
ask B "kernel 3000" # B's GPU is busy for 3 s: its lock times out, as a rank's in a collective
cli suspend --retries 0 "$A_pid" "$B_pid"
is "$rc" 1 "a group suspend with one failed lock exits 1"
like "$out" "(^|
)$B_pid: suspend failed: CUDA_ERROR_NOT_READY: lock timed out" "the failing process's line"
like "$out" "(^|
)rollback: 1 process resumed in [0-9.]+ s: every process runs again(
|$)" "one line says the suspended one was resumed"
like "$out" "total: 2 processes, 0 suspended, 0 without CUDA, 2 failed \(rolled back\), [0-9.]+ s$" \
	"and the total says the job was rolled back"
is "$(field "$A_pid" state):$(field "$B_pid" state)" running:running "both run"
ask A verify
is "$REPLY" "verify ok" "the rolled-back process's data intact"
ask B sync 10 # its kernel ends

ask B "kernel 2000"
t0=$SECONDS
cli suspend --retries 3 "$A_pid" "$B_pid"
diag "$(echo "$out" | grep -c '^attempt') failed attempts before success in $((SECONDS - t0)) s"
is "$rc" 0 "with retries, the whole job is suspended once the lock can be had"
like "$out" "(^|
)attempt 1: $B_pid: suspend failed: CUDA_ERROR_NOT_READY.*; rollback: 1 process resumed in [0-9.]+ s: every process runs again; trying again in 0.5 s(
|$)" "a failed attempt is said in one line, rolled back, and tried again"
like "$out" "total: 2 processes, 2 suspended, 0 without CUDA, 0 failed, [0-9.]+ s$" "the total"
is "$(field "$A_pid" state):$(field "$B_pid" state)" checkpointed:checkpointed "both suspended"
"$CUDANAP" resume "$A_pid" "$B_pid" > /dev/null

ask B "kernel 3000"
cli suspend --each "$A_pid" "$B_pid"
is "$rc" 1 "--each: the failure still fails the command"
is "$(field "$A_pid" state):$(field "$B_pid" state)" checkpointed:running "--each: no rollback"
check "--each: no rollback line" test -z "$(grep rollback <<< "$out")"
"$CUDANAP" resume "$A_pid" > /dev/null
ask B sync 10

# A failure that waiting cannot cure (a refusal) is rolled back and not tried again.
ask B "ipc open"
cli suspend --retries 3 "$A_pid" "$B_pid"
like "$out:$rc" "REFUSED.*rollback: 1 process resumed.*\(rolled back\).*:1$" "a refusal: rolled back"
check "a refusal is not tried again" test -z "$(grep '^attempt' <<< "$out")"
is "$(field "$A_pid" state)" running "the other process runs"
ask B "ipc close"

# One process's signal arriving 0.7 s after the other's (a node that answers late): the command
# waits for both outcomes.
start C "$TARGET"
out=$(CN_SLOW_KILL="$C_pid:700" LD_PRELOAD=$SLOWKILL "$CUDANAP" suspend "$A_pid" "$C_pid"); rc=$?
late=$(( ($(field "$C_pid" call_ns) - $(field "$A_pid" call_ns)) / 1000000 ))
check "a signal sent late reaches its process late (${late} ms)" test "$late" -ge 600
like "$out:$rc" "total: 2 processes, 2 suspended, 0 without CUDA, 0 failed, [0-9.]+ s:0" \
	"the command waits for the late one's outcome"
"$CUDANAP" resume "$A_pid" "$C_pid" > /dev/null
ask C quit

kill -- -"$root"
ask A quit
ask B quit
wait "$A_pid" "$B_pid" "$root"
# the tree's processes die on their own time: one still exiting when --all looks is acted on
# and found gone (seen once in a CI run), so wait until none is left
group_gone() { ! kill -0 -- -"$root" 2> /dev/null; }
eventually 20 group_gone || diag "the tree's processes still run after 20 s"
cli2 suspend --all -c "$T/job.ini"
is "$rc:$out" "1:cudanap: no process of this user runs under cudanap" "--all with nothing to do"

# -- a member of a whole job that exits between the command's pick and its signal holds no GPU: it
# is left out, not a failure that rolls the others back. The command held at its first signal
# (CN_HOLD_KILL), the other process quits meanwhile.
start H1 "$TARGET"
start H2 "$TARGET"
CN_HOLD_KILL="$T/go" LD_PRELOAD=$SLOWKILL "$CUDANAP" suspend --all -c "$T/job.ini" > "$T/hold.out" 2>&1 &
cmd=$!
check "the command holds at its first signal" eventually 20 test -s "$T/go.held"
held=$(cat "$T/go.held")
if [ "$held" = "$H1_pid" ]; then quits=H2; else quits=H1; fi
eval "gone=\$${quits}_pid"
ask "$quits" quit
wait "$gone"
touch "$T/go"
wait "$cmd"; rc=$?
out=$(cat "$T/hold.out")
like "$rc:$out" "^0:.*$gone: exited before its signal: left out.*
total: 1 process, 1 suspended, 0 without CUDA, 0 failed, [0-9.]+ s$" \
	"suspend --all: the process gone since the pick is left out, the other suspended, exit 0"
is "$(field "$held" state)" checkpointed "its status says suspended"
cli2 suspend "$gone"
like "$rc:$out" "^1:$gone: no such process" "a PID named that is gone still fails"
"$CUDANAP" resume "$held" > /dev/null
if [ "$held" = "$H1_pid" ]; then ask H1 quit; else ask H2 quit; fi
finish
