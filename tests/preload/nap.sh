#!/usr/bin/env bash
# Naps, with the fake driver: an idle process naps by itself ([nap] idle_s, cudanap run --nap) or
# when told (cudanap nap), and its next driver call that needs the GPU wakes it, by every path a
# program takes to the driver, and gets the right answer; queries, context switches and capture
# questions are answered while it naps without waking it (an XLA-like poller neither keeps it
# awake nor wakes it, and never enters the driver); a thread inside a long call, or a kernel
# longer than idle_s, keeps it awake and untouched; two threads waking it at once make one wake;
# signals and the CLI during a nap; wake_on = home and any on two fake GPUs, waiting for room
# until it appears; an NCCL rank and an IPC importer are not napped, said once; a nap to disk; a
# forked child; a wake whose INI broke meanwhile; the status fields and the INI's errors.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
mkdir "$T/fake"
entered() { grep -c '^entered' "$T/fake/events" 2> /dev/null || true; }
xla() { ask "$1" "drv xlapolled"; set -- $REPLY; echo "${2:-0} ${3:-?}"; }
has_field() { [ -n "$(field "$1" "$2")" ]; }
seq_above() { [ "$(field "$1" seq)" -gt "$2" ] 2> /dev/null; }
above() { local n=$1 v; shift; v=$("$@"); [ "${v%% *}" -gt "$n" ] 2> /dev/null; }

# -- idle for [nap] idle_s: it naps, and a launch wakes it with the right answer
write_ini "[nap]" "idle_s = 1" "[log]" "level = info"
start A "$TARGET"
pid=$A_pid
t0=$(date +%s%3N)
ask A "drv launch export 5"
is "$REPLY" "launch 0" "the process works the GPU"
check "idle for a second, it naps" napped "$pid" 20
# idle since its last work: after the launch began, and the look that saw it (every quarter of
# idle_s) well before the nap, which comes a second after it
since=$(date -d "$(field "$pid" idle_since)" +%s%3N)
check "idle_since: when its work stopped ($(field "$pid" idle_since))" \
	test "$since" -ge "$t0" -a "$since" -le "$((t0 + 3000))"
is "$(field "$pid" nap):$(field "$pid" action):$(field "$pid" naps)" "napping:nap:1" \
	"the status: nap napping, the action a nap, one nap"
like "$("$CUDANAP" status --no-query "$pid")" "
$pid +napping +nap +ok .* napping +1/0 " "cudanap status: STATE napping, NAP napping, NAPS 1/0"
like "$("$CUDANAP" status --no-query --json "$pid")" '"state":"napping"' "--json: the same word, napping"
like "$("$CUDANAP" metrics -c "$T/job.ini")" "cudanap_process_state\{pid=\"$pid\",[^}]*state=\"napping\"\} 1" \
	"metrics: the same word, napping"
log_like "$T/A.err" "cudanap\[$pid\]: napped \(after 1 s idle\): 1000 MiB of GPU memory freed in [0-9.]+ ms \(lock .*checkpoint .*\); it wakes at its next CUDA call that needs the GPU" \
	"one log line for the nap, with its figures"
ask A "drv launch export 5"
is "$REPLY" "launch 0" "a launch while it naps: it runs, and answers right"
woke "$pid"
is "$(field "$pid" state):$(field "$pid" action):$(field "$pid" wakes)" "running:wake:1" "the launch woke it"
like "$(field "$pid" last_wake_ms)" "^[0-9]+\.[0-9]+$" "last_wake_ms: the delay the call saw ($(field "$pid" last_wake_ms) ms)"
log_like "$T/A.err" "cudanap\[$pid\]: woke for a driver call: 1000 MiB back on the GPU in [0-9.]+ ms \(restore .*unlock .*\); the call waited [0-9.]+ ms" \
	"one log line for the wake"
ask A verify
is "$REPLY" "verify ok" "its memory came back intact"
is "$(entered)" 0 "no call entered the driver while it napped"

# -- while it naps: queries, context switches and capture questions are answered, no wake
check "it naps again" napped "$pid" 20
answers=
for fn in cuStreamQuery cuEventQuery cuCtxSetCurrent cuCtxGetCurrent cuStreamIsCapturing; do
	ask A "drv call export $fn"
	answers+="${REPLY#call } "
done
is "$answers" "0 0 0 0 0 " "cuStreamQuery, cuEventQuery, cuCtxSetCurrent, cuCtxGetCurrent (the kept context), cuStreamIsCapturing: answered"
is "$(field "$pid" state):$(field "$pid" wakes)" "napping:1" "without waking it"
ask A "drv launch export 5"
ask A "drv call gpa2 cuCtxGetCurrent"
is "$REPLY" "call 0" "after the wake the driver itself has the context the thread made current while it napped"
woke "$pid"
is "$(field "$pid" wakes)" 2 "the launch woke it"
is "$(entered)" 0 "and no call entered the driver while it napped"

# -- XLA's poller neither keeps it awake nor wakes it
ask A "drv xlapoll export 20"
check "with a poller making a context current, querying and asking about captures every 20 ms, it naps" \
	napped "$pid" 20
p1=$(xla A)
sleep 1 # nothing is to happen: the poller's calls are answered at the gate
p2=$(xla A)
check "the poller went on while it napped ($p1 -> $p2 rounds, none failed)" test "${p2%% *}" -gt "${p1%% *}" -a "${p2#* }" = 0
is "$(field "$pid" state):$(field "$pid" wakes)" "napping:2" "and did not wake it"
is "$(entered)" 0 "none of its calls entered the driver"
# an open capture: cuStreamIsCapturing needs the driver, and wakes it
ask A "drv call export cuStreamBeginCapture"
check "a capture begun wakes it" eventually 20 state_is "$pid" running
check "the poller's capture question keeps waking it" eventually 20 above 3 field "$pid" wakes
ask A "drv call export cuStreamEndCapture"
is "$REPLY" "call 0" "the capture ends"
check "then it naps again, the poller going on" napped "$pid" 20
ask A quit

# -- every path a program takes to the driver wakes it, and the call answers right
write_ini
start B "$TARGET"
pid=$B_pid
for path in export dlsym default gpa gpa2 ptds v13; do
	cli nap "$pid"
	w0=$(field "$pid" wakes)
	ask B "drv launch $path 5"
	woke "$pid"
	is "$rc:$REPLY:$(field "$pid" state):$(field "$pid" wakes)" "0:launch 0:running:$((w0 + 1))" \
		"$path: cudanap nap, then a launch by $path wakes it and answers right"
done
like "$out" "^$pid: napping: woken by its next CUDA call; napped in " "cudanap nap's line"
is "$(field "$pid" nap)" off "without [nap] idle_s, it is awake after and naps no more by itself"
ask B verify
is "$REPLY" "verify ok" "data intact after seven naps"

# -- two threads need the GPU at once: one wake, each call runs once
"$CUDANAP" nap "$pid" > /dev/null
ask B "drv bgsync export"
ask B "drv launch export 5"
eventually 20 synced B
woke "$pid"
like "$REPLY:$(field "$pid" wakes)" "^synced 0 [0-9.]+:8$" "a synchronize in one thread and a launch in another: both answered, one wake"

# -- signals and the CLI during a nap
"$CUDANAP" nap "$pid" > /dev/null
seq=$(field "$pid" seq)
kill -USR1 "$pid"
eventually 20 seq_above "$pid" "$seq"
is "$(field "$pid" state):$(field "$pid" nap)" "napping:napping" "a suspend signal changes nothing"
log_like "$T/B.err" "cudanap\[$pid\]: napping already: it wakes at its next CUDA call" "and says so"
cli suspend "$pid"
is "$rc" 0 "cudanap suspend of a napping process: already asleep ($out)"
cli nap "$pid"
like "$rc:$out" "^0:$pid: already napping" "cudanap nap of it: napping already"
cli resume "$pid"
woke "$pid" # the wake is counted after the resume's outcome is written
like "$rc:$out:$(field "$pid" wakes)" "^0:$pid: resumed in .*:9$" "cudanap resume wakes it (a wake counted)"
ask B "drv launch export 5"
is "$REPLY:$(field "$pid" wakes)" "launch 0:9" "and its calls run without another wake"
"$CUDANAP" nap "$pid" > /dev/null
kill -USR2 "$pid"
check "kill -USR2 wakes it too" eventually 20 state_is "$pid" running

# -- a thread inside a long call, and a kernel longer than idle_s: not napped, not slowed
write_ini "[nap]" "idle_s = 1"
kill -USR2 "$pid" # the INI read again
settle "$pid" 10
naps=$(field "$pid" naps)
ask B "drv launch export 2500"
ask B "drv bgsync export"
t0=$(date +%s%N)
eventually 20 synced B
ms=$((($(date +%s%N) - t0) / 1000000))
is "$(field "$pid" state):$(field "$pid" naps)" "running:$naps" "a thread inside cuStreamSynchronize for 2.5 s: no nap"
check "the synchronize took the kernel's time, not more ($ms ms after the call)" test "$ms" -lt 3500
ask B "drv launch export 3000"
check "a kernel of 3 s, no thread waiting: after idle_s the nap's lock gives up" \
	eventually 20 nap_is "$pid" awake
eventually 20 has_field "$pid" nap_why
like "$(field "$pid" nap_why)" "CUDA_ERROR_NOT_READY: .*GPU work still running \(a nap's lock\); the process keeps running" \
	"nap_why says why"
log_like "$T/B.err" "not napped: CUDA_ERROR_NOT_READY.*; next try after 2 s idle" "said once, with the back-off"
ask B "drv call export cuStreamQuery" 2
is "$REPLY" "call 600" "and the process runs on: its next call answers at once (not ready: the kernel runs)"
check "once the kernel ends, it naps after the back-off" napped "$pid" 20
is "$(grep -c 'not napped' "$T/B.err")" 1 "the failure was said once"
ask B "drv launch export 5"
ask B verify
is "$REPLY" "verify ok" "and its memory is whole"
ask B quit

# -- wake_on: home waits for room there; any takes another GPU of its model
write_ini "[nap]" "wake_on = home"
start C "$TARGET"
pid=$C_pid
"$CUDANAP" nap "$pid" > /dev/null
echo 500 > "$T/fake/free.0"
ask C "drv launch export 5" 1
is "$REPLY" "" "no room on its GPU: the waking call waits"
check "status: waiting for room" eventually 20 nap_is "$pid" "waiting for room"
like "$("$CUDANAP" status --no-query "$pid")" "
$pid +napping\*? .* waiting for room .*
$pid: waiting for room: restore: GPU 0 .*has 500 MiB free" "cudanap status says what it waits for"
log_like "$T/C.err" "a call waits for the GPU: NO_GPU_MEMORY: restore: GPU 0 .*; room checked every 100 ms" "a log line says so once"
rm "$T/fake/free.0"
answer C 20
woke "$pid"
is "$REPLY:$(field "$pid" state)" "launch 0:running" "room appears: it wakes, the call answers"
is "$(grep -c 'a call waits for the GPU' "$T/C.err")" 1 "the wait was said once"
ask C quit
write_ini "[nap]" "wake_on = any"
start D "$TARGET"
pid=$D_pid
"$CUDANAP" nap "$pid" > /dev/null
echo 500 > "$T/fake/free.0"
ask D "drv launch export 5"
woke "$pid"
is "$REPLY:$(field "$pid" state)" "launch 0:running" "wake_on = any: no room at home, it wakes elsewhere"
like "$(field "$pid" gpus)" "^1=" "on GPU 1"
ask D "drv launch export 5"
ask D verify
is "$REPLY" "verify ok" "intact"
"$CUDANAP" nap "$pid" > /dev/null
echo 500 > "$T/fake/free.1"
ask D "drv launch export 5" 1
check "no room anywhere: waiting for room" eventually 20 nap_is "$pid" "waiting for room"
out=$("$CUDANAP" resume --gpu-map 0=0 "$pid" 2>&1)
like "$out" "NO_GPU_MEMORY" "cudanap resume --gpu-map to a full GPU: refused, still asleep"
rm "$T/fake/free.0"
answer D 20
woke "$pid"
is "$REPLY:$(field "$pid" state)" "launch 0:running" "room on GPU 0: it wakes there"
rm -f "$T/fake/free.1"
ask D quit

# -- not napped, said once: an NCCL rank, an importer of another's memory
write_ini "[nap]" "idle_s = 1"
start N "$TARGET"
ask N "thread pt_nccl_watchdg"
ask N "drv launch export 5"
check "an NCCL rank idle: not napped" eventually 20 nap_is "$N_pid" "not napped"
like "$(field "$N_pid" nap_why)" "^REFUSED: an NCCL rank: not napped alone, its peers would stall" "nap_why says why"
like "$("$CUDANAP" status --no-query "$N_pid")" "
$N_pid: not napped: REFUSED: an NCCL rank" "cudanap status says it after the table"
sleep 2.5 # the back-off: one try, said once
is "$(grep -c 'not napped' "$T/N.err")" 1 "said once in the log"
ask N quit
start I "$TARGET"
ask I "ipc open"
ask I "drv launch export 5"
check "an IPC importer idle: not napped" eventually 20 nap_is "$I_pid" "not napped"
like "$(field "$I_pid" nap_why)" "imported from another process" "nap_why says why"
ask I quit

# -- to disk; cudanap run --nap; a forked child
mkdir "$T/hib"
write_ini "[nap]" "to = disk" "[hibernate]" "dir = $T/hib"
CUDANAP_FAKE_COPY_MIB=64 start H "$TARGET"
"$CUDANAP" nap "$H_pid" > /dev/null
like "$(field "$H_pid" disk_mib):$(field "$H_pid" message)" "^[1-9][0-9.]*:napped to $T/hib" "[nap] to = disk: the copy went to disk"
ask H "drv launch export 5"
ask H verify
woke "$H_pid"
is "$REPLY:$(field "$H_pid" state)" "verify ok:running" "woken from disk, intact"
ask H quit
write_ini
rm -f "$T/fake/free."*
mkfifo "$T/R.in" "$T/R.out"
"$CUDANAP" run -c "$T/job.ini" --nap 1 -- "$TARGET" < "$T/R.in" > "$T/R.out" 2>> "$T/R.err" &
R_pid=$!
exec {R_in}> "$T/R.in" {R_out}< "$T/R.out"
read -r -t 60 -u "$R_out" line
ask R "drv launch export 5"
check "cudanap run --nap 1: it naps" napped "$R_pid" 20
ask R "drv forkpoll export $T/child"
child=${REPLY#forkpoll }
ask R "drv launch export 5"
woke "$R_pid"
is "$REPLY:$(field "$R_pid" state)" "launch 0:running" "the parent woke, a child forked meanwhile"
c1=$(cat "$T/child" 2> /dev/null || echo 0)
check "the parent naps again" napped "$R_pid" 20
c2=$(cat "$T/child" 2> /dev/null || echo 0)
check "the child's queries go on through the parent's naps ($c1 -> $c2)" test "$c2" -gt "$c1"
is "$(entered)" 0 "nothing entered the driver while checkpointed"
kill "$child" 2> /dev/null
ask R quit

# -- a wake whose INI is now broken: the call waits, the process still napping, it says so; the
# wake is tried again and goes through once the INI is fixed
write_ini "[nap]" "idle_s = 1" "[log]" "level = info"
start W "$TARGET"
ask W "drv launch export 5"
check "it naps" napped "$W_pid" 20
printf '[lock]\ntimeout_ms = soon\n' >> "$T/job.ini"
echo "drv launch export 5" >&"$W_in"
wake_failed() { [ "$(field "$W_pid" action):$(field "$W_pid" result):$(field "$W_pid" state)" = wake:CONFIG_ERROR:napping ]; }
check "a call wakes it, the INI is broken: the wake fails with CONFIG_ERROR" eventually 10 wake_failed
like "$(field "$W_pid" message)" "lock.timeout_ms: .*; still napping$" "and says that it is still napping"
write_ini "[nap]" "idle_s = 1" "[log]" "level = info"
answer W 20
is "$REPLY" "launch 0" "the INI fixed, the wake goes through and the call answers right"
woke "$W_pid"
ask W verify
is "$REPLY" "verify ok" "its memory came back intact"
ask W quit

# -- the INI
printf '[nap]\nto = disk\n' > "$T/bad.ini"
is "$("$CUDANAP" check-config "$T/bad.ini" 2>&1)" "cudanap: $T/bad.ini:2: nap.to: disk needs a directory in [hibernate] dir" "to = disk without a directory"
printf '[nap]\nidle_s = soon\n' > "$T/bad.ini"
like "$("$CUDANAP" check-config "$T/bad.ini" 2>&1)" "^cudanap: $T/bad.ini:2: nap.idle_s: 'soon' is not a number" "idle_s not a number"
printf '[nap]\nwake_on = anywhere\n' > "$T/bad.ini"
is "$("$CUDANAP" check-config "$T/bad.ini" 2>&1)" "cudanap: $T/bad.ini:2: nap.wake_on: 'anywhere' is not home or any" "wake_on unknown"
cli2 run --nap soon -- true
is "$rc:$out" "2:cudanap: --nap wants seconds, from 0 to 86400" "cudanap run --nap with no number"
finish
