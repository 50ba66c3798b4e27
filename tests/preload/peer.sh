#!/usr/bin/env bash
# Peer access between a process's GPUs, with the fake driver modelling driver 580 (fakepeer.c): a
# process checkpointed with peer access on and an allocation over 256 MiB is lost at its restore,
# so no path (a signal, the CLI, a nap by itself or asked, an NCCL job's cut) reaches the lock while
# it holds both, by default ([peer] mode = refuse), each refusal one line naming the GPUs, the
# allocation and the libraries; the status, the dry run and pick say it. With smaller allocations
# it suspends with its peer access on, which stays on. With [peer] mode = off the suspend turns it off after the gate closes,
# the resume asks for it again, which the driver refuses after a restore, so it stays off, said in
# the log and the status; a suspend that fails turns it on again. Once restored, a process is told
# its GPUs cannot access each other, whichever the mode. All of it with [memory] own = never: the
# memory is the driver's own (owned.sh has what cudanap owns).
. "$(dirname "$0")/../lib.sh"
INI_EXTRA=("[memory]" "own = never")
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
mkdir "$T/fake"
drv_state() { "$FAKECTL" "$FAKECUDA" state "$1"; }
peers_on() { cat "$T/fake/$1.peers" 2> /dev/null | sort | tr '\n' ' '; }
refusal="refusing to suspend a process with peer access between its GPUs \(GPU 1->0, GPU 0->1 by cuCtxEnablePeerAccess in fake_target\) and an allocation over 256 MiB \(512 MiB by cuMemAlloc_v2 in fake_target\): the driver cannot restore it"

# -- the fake driver loses a process checkpointed with peer access on and an allocation over 256 MiB,
# as driver 580 does
write_ini
start P "$TARGET"
ask P "drv alloc export 512"
ask P "drv peer export on 0 1"
is "$REPLY" "peer 0" "peer access GPU 0->1 turned on (CUDA's numbers)"
for step in lock checkpoint; do "$FAKECTL" "$FAKECUDA" $step "$P_pid" > /dev/null; done
is "$("$FAKECTL" "$FAKECUDA" restore "$P_pid")" CUDA_ERROR_INVALID_VALUE "fake driver: its restore fails"
is "$("$FAKECTL" "$FAKECUDA" restore "$P_pid")" CUDA_ERROR_OPERATING_SYSTEM "and every later one: the process is lost"
is "$("$FAKECTL" "$FAKECUDA" unlock "$P_pid")" CUDA_ERROR_ILLEGAL_STATE "it cannot even be unlocked"
kill -9 "$P_pid"

# -- [peer] mode = refuse (the default): no path reaches the lock
write_ini "[lock]" "timeout_ms = 5000"
start A "$TARGET"
pid=$A_pid
ask A "drv alloc export 256"
is "$REPLY" "alloc 0" "256 MiB allocated"
ask A "drv peer gpa2 on 0 1"
is "$REPLY" "peer 0" "0->1 turned on by cuGetProcAddress's function (the runtime's path)"
ask A "drv peer export on 1 0"
is "$REPLY" "peer 0" "1->0 by the exported name"
ask A "drv peer export on 1 0"
is "$REPLY" "peer 704" "asked again: the driver's PEER_ACCESS_ALREADY_ENABLED, passed on"
# no allocation over 256 MiB: the driver restores it with its peer access on, which stays on
cli suspend "$pid"
is "$rc" 0 "peer access on, allocations of 256 MiB at most: suspended ($out)"
is "$(peers_on "$pid")" "0 1 1 0 " "its peer access left on"
cli resume "$pid"
is "$rc" 0 "and resumed ($out)"
ask A "drv peer export on 0 1"
is "$REPLY" "peer 704" "its peer access still on"
ask A "drv peer export can 0 1"
is "$REPLY" "peer 0 1" "and the app is told so"
like "$(field "$pid" peer)" "^GPU 1->0, GPU 0->1 by cuCtxEnablePeerAccess in fake_target$" "the status says so"
ask A "drv alloc export 512"
is "$REPLY" "alloc 0" "512 MiB allocated"
out=$("$CUDANAP" status -c "$T/job.ini" "$pid")
like "$out" "
$pid +running .* no " "cudanap status: SUSPEND no"
like "$out" "
$pid: would refuse: $refusal" "and the line that says why"
like "$("$CUDANAP" status --json "$pid" | tr -d '\n')" "\"peer\":\"GPU 1->0, GPU 0->1 by cuCtxEnablePeerAccess in fake_target\"" \
	"status --json: the peer field"
cli suspend --dry-run "$pid"
like "$rc:$out" "^1:$pid: would refuse: $refusal" "suspend --dry-run: would refuse, exit 1"
cli pick -c "$T/job.ini" --free 500M
like "$rc:$out" "^1:$pid: would refuse: $refusal.*
cannot free 500 MiB on GPU [01]: " "pick: it is not picked, and says why"
seq=$(field "$pid" seq)
kill -USR1 "$pid"
settle "$pid" $((seq + 1))
is "$(field "$pid" state):$(field "$pid" result)" running:REFUSED "a signal: refused, running"
like "$(field "$pid" message)" "^$refusal; \[memory\] own = auto owns such memory, \[peer\] mode = off turns the access off$" \
	"the status's message: the GPUs, the call and its library, the way out"
cli suspend "$pid"
like "$rc:$out" "^1:$pid: suspend failed: REFUSED: $refusal.* \(state running\)$" "cudanap suspend: refused in one line, exit 1"
cli nap "$pid"
like "$rc:$out" "^1:$pid: nap failed: REFUSED: $refusal" "cudanap nap: refused"
is "$(drv_state "$pid")" "CUDA_SUCCESS 0" "the driver never saw a lock: RUNNING"
ask A verify
is "$REPLY" "verify ok" "the process runs on, its memory intact"
# turned off by the app: it suspends
ask A "drv peer export off 0 1"
ask A "drv peer export off 1 0"
is "$REPLY" "peer 0" "the app turns its peer access off"
like "$("$CUDANAP" status --json "$pid" | tr -d '\n')" "\"peer\":\"\"" "the status: none"
ask A "drv peer export on 0 1"
ask A "drv free export"
is "$REPLY" "free 0" "or, peer access on, frees its large allocation"
like "$("$CUDANAP" suspend --dry-run "$pid")" "^$pid: would suspend" "then it would suspend"
ask A "drv peer export off 0 1"
cli suspend "$pid"
is "$rc" 0 "then it suspends ($out)"
"$CUDANAP" resume "$pid" > /dev/null
ask A verify
is "$REPLY" "verify ok" "and resumes, intact"
# once restored, the driver refuses peer access toward its memory: the app is told it cannot
ask A "drv peer export can 0 1"
is "$REPLY" "peer 0 0" "restored: cuDeviceCanAccessPeer says 0"
ask A "drv peer export on 0 1"
is "$REPLY" "peer 217" "and cuCtxEnablePeerAccess PEER_ACCESS_UNSUPPORTED, not the driver's INVALID_HANDLE"
ask A quit

# -- idle: not napped, said once
write_ini "[nap]" "idle_s = 1"
start N "$TARGET"
ask N "drv alloc export 512"
ask N "drv peer export on 0 1"
ask N "drv launch export 5"
check "idle for [nap] idle_s: not napped, and its status says why" eventually 10 nap_is "$N_pid" "not napped"
like "$(field "$N_pid" nap_why)" "^REFUSED: refusing to suspend a process with peer access between its GPUs \(GPU 1->0 by" "nap_why"
logged() { [ "$(grep -c 'not napped: REFUSED: refusing to suspend a process with peer access' "$T/N.err")" = 1 ]; }
check "said in the log" eventually 5 logged
naps=$(field "$N_pid" naps)
sleep 3 # nothing is to happen: the next try waits for the back-off (2 s idle), and is refused
is "$(field "$N_pid" state):$(field "$N_pid" naps)" "running:$naps" "it is never napped"
check "and said once" logged
ask N quit

# -- an NCCL job's cut: the rank with peer access is refused before the cut, the job runs on
export CUDANAP_FAKE_NCCL=$FAKENCCL
unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_NET_GDR_LEVEL
write_ini "[lock]" "timeout_ms = 5000"
for r in 0 1; do
	start "R$r" "$TARGET"
	ask "R$r" "nccl init job1 $r 2"
	ask "R$r" "nccl loop 3"
done
ask R0 "drv alloc export 512"
ask R0 "drv peer export on 0 1"
cli suspend "$R0_pid" "$R1_pid"
like "$rc:$out" "^1:.*$R0_pid: suspend failed: REFUSED: refusing to suspend a process with peer access" \
	"the job's suspend: the rank with peer access refused"
is "$(field "$R0_pid" state):$(field "$R1_pid" state)" running:running "both ranks run on"
is "$(drv_state "$R0_pid"):$(drv_state "$R1_pid")" "CUDA_SUCCESS 0:CUDA_SUCCESS 0" "neither was locked"
for r in 0 1; do ask "R$r" quit; done
unset CUDANAP_FAKE_NCCL

# -- [peer] mode = off: turned off for the suspend, asked for again, off after the restore
write_ini "[peer]" "mode = off" "[lock]" "timeout_ms = 500" "[log]" "level = info"
start B "$TARGET"
pid=$B_pid
ask B "drv peer export can 0 1"
is "$REPLY" "peer 0 1" "never restored: the GPUs can access each other"
ask B "drv alloc export 512"
ask B "drv peer export on 0 1"
ask B "drv peer export on 1 0"
is "$(peers_on "$pid")" "0 1 1 0 " "the driver has both directions on"
like "$("$CUDANAP" suspend --dry-run "$pid")" "^$pid: would suspend: .*; peer access GPU 1->0, GPU 0->1 by cuCtxEnablePeerAccess in fake_target \(a suspend turns it off" \
	"dry run: it would suspend, its peer access turned off"
# a suspend that fails gives it back: a kernel longer than [lock] timeout_ms
ask B "drv launch export 1500"
cli suspend "$pid"
like "$rc:$out" "^1:.*lock timed out" "a suspend whose lock times out fails"
is "$(peers_on "$pid")" "0 1 1 0 " "and the peer access it turned off is on again"
ask B "drv bgsync export"
eventually 20 synced B
cli suspend "$pid"
is "$rc" 0 "suspended ($out)"
is "$(peers_on "$pid")" "" "the driver had no peer access on at the checkpoint"
cli resume "$pid"
is "$rc" 0 "resumed: the restore went through ($out)"
like "$(cat "$T/B.err")" "cudanap\[$pid\]: peer access between its GPUs stays off after the resume \(off since the resume: GPU 1->0, GPU 0->1 by cuCtxEnablePeerAccess in fake_target\): cuCtxEnablePeerAccess: CUDA_ERROR_INVALID_HANDLE \(400\): the driver cannot give it back after a restore" \
	"asked for again, refused by the driver: one line in the log"
is "$(field "$pid" peer)" "off since the resume: GPU 1->0, GPU 0->1 by cuCtxEnablePeerAccess in fake_target" \
	"the status says it is off"
like "$("$CUDANAP" status -c "$T/job.ini" "$pid")" "
$pid: peer access off since the resume: GPU 1->0" "cudanap status too"
ask B "drv peer export can 1 0"
is "$REPLY" "peer 0 0" "the app is told its GPUs cannot access each other"
ask B "drv peer export on 1 0"
is "$REPLY" "peer 217" "and turning it on answers PEER_ACCESS_UNSUPPORTED"
ask B verify
is "$REPLY" "verify ok" "its memory intact"
cli suspend "$pid"
is "$rc" 0 "it suspends again ($out)"
"$CUDANAP" resume "$pid" > /dev/null
ask B verify
is "$REPLY" "verify ok" "and resumes"
ask B quit

# -- a process on two GPUs with its peer access on, napped, woken by its next call: at home with
# wake_on = home; with wake_on = any, the part of its memory on a full GPU goes to a GPU with room
# and the other part stays (four fake GPUs)
export CUDANAP_FAKE_GPUS=4
rm -f "$T"/fake/free.*
write_ini "[nap]" "wake_on = home"
CUDANAP_FAKE_START_GPU=0,1 start N "$TARGET"
pid=$N_pid
ask N "drv peer export on 3 2"
ask N "drv peer export on 2 3"
# gpus_now: the GPUs (nvidia-smi order) its memory is on, from the status
gpus_now() { field "$pid" gpus | sed 's/=GPU-[^,]*//g' | tr , '\n' | sort -n | paste -sd,; }
cli nap "$pid"
is "$rc" 0 "napped ($out)"
ask N "drv launch export 5"
woke "$pid"
is "$REPLY:$(gpus_now)" "launch 0:0,1" "wake_on = home: its next call wakes it on GPUs 0 and 1"
is "$(field "$pid" peer)" "GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in fake_target" "with its peer access on (CUDA's 3 and 2)"
write_ini "[nap]" "wake_on = any"
"$CUDANAP" nap "$pid" > /dev/null
echo 500 > "$T/fake/free.0"
ask N "drv launch export 5"
woke "$pid"
is "$REPLY:$(gpus_now)" "launch 0:1,2" "wake_on = any, GPU 0 full: its part there went to GPU 2, the one on GPU 1 stayed"
ask N verify
is "$REPLY" "verify ok" "its memory intact"
is "$(peers_on "$pid")" "2 3 3 2 " "its peer access on"
is "$(field "$pid" peer)" "GPU 2->1, GPU 1->2 by cuCtxEnablePeerAccess in fake_target" "the status names the GPUs it is on now"
"$CUDANAP" nap "$pid" > /dev/null
echo 500 > "$T/fake/free.1"
ask N "drv launch export 5"
woke "$pid"
is "$REPLY:$(gpus_now)" "launch 0:2,3" "GPU 1 full too: that part went to GPU 3"
"$CUDANAP" nap "$pid" > /dev/null
rm "$T/fake/free.0" "$T/fake/free.1"
echo 500 > "$T/fake/free.2"
echo 500 > "$T/fake/free.3"
ask N "drv launch export 5"
woke "$pid"
is "$REPLY:$(gpus_now)" "launch 0:0,1" "GPUs 2 and 3 full, 0 and 1 free again: both parts moved, onto 0 and 1"
like "$(tr '\n' ' ' < "$T/fake/events")" "reserve 2 1000 reserve 1 1000 release 2 release 1 restore 2 reserve 3 1000 reserve 2 1000 release 3 release 2 restore 2 reserve 0 1000 reserve 1 1000 release 0 release 1 restore 0 $" \
	"the controller held room on both target GPUs before each of those restores"
"$CUDANAP" nap "$pid" > /dev/null
echo 500 > "$T/fake/free.0"
echo 500 > "$T/fake/free.1"
ask N "drv launch export 5" 1
check "no room for a part anywhere: it waits for room" eventually 20 nap_is "$pid" "waiting for room"
rm -f "$T"/fake/free.*
answer N 20
woke "$pid"
is "$REPLY:$(gpus_now)" "launch 0:0,1" "room again: it wakes where it was"
ask N verify
is "$REPLY" "verify ok" "its memory intact"
ask N quit
export CUDANAP_FAKE_GPUS=2

# -- the INI
printf '[peer]\nmode = maybe\n' > "$T/bad.ini"
is "$("$CUDANAP" check-config "$T/bad.ini" 2>&1)" "cudanap: $T/bad.ini:2: peer.mode: 'maybe' is not refuse or off" "mode: refuse or off"
finish
