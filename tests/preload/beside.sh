#!/usr/bin/env bash
# A restored NCCL rank shares no GPU with another job's process ([restore] beside_restored,
# preload/agent/beside.c): a process with NCCL communicators is not restored (where it slept or
# moved) onto a GPU where any process runs but its own job's ranks, and a process without them is
# not restored onto a GPU where a rank runs of an NCCL job that cudanap restored (or is restoring).
# Refused in one line, the process stays suspended and restorable; a rank of its own job, a
# neighbour asleep, plain processes beside plain ones or beside an NCCL job never restored, and
# beside_restored = true go through; a nap's wake beside a restored NCCL job waits for it to sleep
# (with [nap] wake_on = any it goes where none runs);
# with [restore] room_wait_s a resume waits; a restored rank's status names another job's process
# (compute or graphics) that started on its GPU. On a fake machine of three GPUs, the fake NCCL giving
# each job its communicator.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=3
export CUDANAP_FAKE_NCCL=$FAKENCCL
unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_NET_GDR_LEVEL
mkdir "$T/fake"
uuid() { printf 'GPU-face0000-0000-0000-0000-0000000000%02x' "$1"; }
write_ini
gpu_of() { ask "$1" gpu; echo "${REPLY#gpu }"; }
# job NAME COMM RANK NRANKS: a target with a communicator COMM of the fake NCCL (on GPU 0)
job() {
	start "$1" "$TARGET" || { diag "$1 did not start"; return 1; }
	ask "$1" "nccl init $2 $3 $4"
	[ "$REPLY" = "nccl ok" ] || diag "$1: nccl init: $REPLY"
}
# again PID [MAP]: suspend, then resume (with the one-shot MAP when given); the resume's line, rc
again() {
	"$CUDANAP" suspend "$1" > /dev/null || echo "suspend failed"
	"$CUDANAP" resume ${2+--gpu-map "$2"} "$1"
	echo "rc $?"
}
# refusal GPU PID: the start of the line for an NCCL job's restore refused beside PID on GPU;
# refused GPU PID: a process's restore refused beside PID, a restored NCCL rank, on GPU
refusal() { echo "resume failed: BESIDE_RESTORED: restore: GPU $1 \($(uuid "$1")\) runs pid $2, not of this NCCL job"; }
refused() { echo "resume failed: BESIDE_RESTORED: restore: GPU $1 \($(uuid "$1")\) runs pid $2 of an NCCL job that cudanap restored"; }

# -- two NCCL jobs on GPU 0, X and Y, both suspended; X resumed where it slept, alone there
job X jx 0 1
job Y jy 0 1
is "$(field "$X_pid" restores)" 0 "a process never restored says restores 0"
"$CUDANAP" suspend "$X_pid" "$Y_pid" > /dev/null
cli resume "$X_pid"
is "$rc:$(gpu_of X):$(field "$X_pid" restores)" "0:0:1" "X resumed where it slept; its status counts the restore"

# -- Y's resume where it slept, beside X: refused
cli resume "$Y_pid"
like "$out" "^$Y_pid: $(refusal 0 "$X_pid"): restored, a rank's collective waiting there beside another's work is stopped by the driver after ~5 s \(\[restore\] beside_restored\); still suspended: resume it once that process sleeps or has ended, or onto other GPUs \(state checkpointed\)$" \
	"Y's resume where it slept, beside X, is refused in one line naming the GPU and the process"
is "$rc:$(field "$Y_pid" state):$(field "$Y_pid" result)" "1:checkpointed:BESIDE_RESTORED" \
	"it exits 1; Y stays suspended, its status says why"
cli resume --gpu-map "0=1, 1=0" "$Y_pid"
ask Y verify
is "$rc:$(gpu_of Y):$REPLY" "0:1:verify ok" "onto another GPU, beside no one, it resumes: data intact"

# -- X moved onto GPU 1, beside Y: refused; home again
out=$(again "$X_pid" "0=1, 1=0")
like "$out" "^$X_pid: $(refusal 1 "$Y_pid"):" "X's move onto Y's GPU is refused"
is "${out##*rc }:$(field "$X_pid" state)" "1:checkpointed" "X stays suspended"
cli resume "$X_pid"
is "$rc:$(gpu_of X)" "0:0" "resumed where it slept, GPU 0 (Y is on GPU 1)"

# -- a rank of the same job is not another job: R0 and R1, one job's two ranks, sharing GPU 2 (as a
# rank's stray context would), both restored there
job R0 jr 0 2
job R1 jr 1 2
"$CUDANAP" suspend "$R0_pid" "$R1_pid" > /dev/null
"$CUDANAP" resume --gpu-map "0=2, 2=0" "$R0_pid" "$R1_pid" > /dev/null; rc=$?
is "$rc:$(gpu_of R0):$(gpu_of R1)" "0:2:2" "both ranks of one job moved onto GPU 2"
like "$(field "$R0_pid" nccl_keys):$(field "$R1_pid" nccl_keys)" "^([0-9a-f]{16}):\1$" "their status files name the communicator they share"
out=$(again "$R0_pid" ""); rc=$?
is "${out##*rc }:$(gpu_of R0)" "0:2" "R0 restored beside R1, a restored rank of its own job"
"$CUDANAP" status "$R0_pid" > /dev/null
is "$(field "$R0_pid" query_seq):$(field "$R0_pid" beside)" "1:" \
	"asked, R0's status names no one beside it: R1 is of its job"
is "$(field "$X_pid" nccl_keys)" "" "a communicator of one rank spans no other process: no key"
# one process holding every rank of a communicator (as ncclCommInitAll's, whose key is made of the
# devices, the same in any process on those GPUs): no key, so never taken for another's job
job L jl 0 2
ask L "nccl init jl 1 2"
"$CUDANAP" status "$L_pid" > /dev/null
is "$(field "$L_pid" nccl):$(field "$L_pid" nccl_keys)" "suspend-api: 2 communicators (NCCL 2.30.7):" \
	"a process with both ranks of its communicator: two communicators, no key"
ask L quit

# -- a process without communicators counts beside an NCCL job: P, never suspended, on GPU 0
start P "$TARGET" || diag "P did not start"
out=$(again "$X_pid" ""); rc=$?
like "$out" "^$X_pid: $(refusal 0 "$P_pid"):" \
	"X's resume where it slept, beside P (no communicators, never restored), is refused"
"$CUDANAP" suspend "$P_pid" > /dev/null
cli resume "$X_pid"
is "$rc:$(gpu_of X)" "0:0" "with P asleep, X resumes where it slept"

# -- and a process without communicators is not restored beside a restored NCCL rank
cli resume "$P_pid"
like "$out" "^$P_pid: $(refused 0 "$X_pid"), whose collective waiting there beside this work is stopped by the driver after ~5 s \(\[restore\] beside_restored\); still suspended: resume it once that process sleeps or has ended, or onto other GPUs \(state checkpointed\)$" \
	"P's resume where it slept, beside X, is refused in one line"
is "$rc:$(field "$P_pid" state):$(field "$P_pid" result)" "1:checkpointed:BESIDE_RESTORED" "P stays suspended"
cli resume --gpu-map "0=1, 1=0" "$P_pid"
like "$rc:$out" "^1:$P_pid: $(refused 1 "$Y_pid")," "nor moved beside Y"
"$CUDANAP" suspend "$R0_pid" "$R1_pid" > /dev/null
cli resume --gpu-map "0=2, 2=0" "$P_pid"
ask P verify
is "$rc:$(gpu_of P):$REPLY" "0:2:verify ok" "onto GPU 2, whose NCCL ranks sleep, it resumes: data intact"

# -- plain beside plain, and plain beside an NCCL job never restored: Q moved beside P (restored);
# N, an NCCL job never restored, starts on GPU 0; Q home beside N (X asleep)
start Q "$TARGET" || diag "Q did not start"
out=$(again "$Q_pid" "0=2, 2=0")
is "$(gpu_of Q):${out##*rc }" "2:0" "a process without communicators moves beside a restored one without them"
job N jn 0 1
"$CUDANAP" status "$N_pid" > /dev/null # asked, its status names its communicator
is "$(field "$N_pid" nccl)" "suspend-api: 1 communicator (NCCL 2.30.7)" "N's status, asked, has its communicator"
"$CUDANAP" suspend "$X_pid" > /dev/null
out=$(again "$Q_pid" "")
is "$(gpu_of Q):${out##*rc }" "0:0" "and comes home beside N, an NCCL job never restored"
cli resume "$X_pid"
like "$rc:$out" "^1:$X_pid: resume failed: BESIDE_RESTORED: restore: GPU 0 \($(uuid 0)\) runs pid ($N_pid|$Q_pid), not of this NCCL job:" \
	"X is not restored beside N (another NCCL job, never restored) and Q"

# -- a neighbour whose first restore is under way counts: N's status file says so (as N's own
# would while it resumes; restores of one directory take turns through the driver's setup, so its
# memory is on the GPU by the time the next one checks)
"$CUDANAP" suspend "$Q_pid" > /dev/null
cp "$T/status/$N_pid.json" "$T/N.json"
sed 's/"busy":false,\("seq":[0-9]*\),"action":"[a-z]*"/"busy":true,\1,"action":"resume"/' "$T/N.json" > "$T/status/$N_pid.json.new"
mv "$T/status/$N_pid.json.new" "$T/status/$N_pid.json"
is "$(field "$N_pid" busy):$(field "$N_pid" action):$(field "$N_pid" restores)" "true:resume:0" \
	"N's status: busy with a resume, no restore behind it"
cli2 resume "$Q_pid"
like "$rc:$out" "^1:$Q_pid: $(refused 0 "$N_pid")," "Q's resume beside N, restoring, is refused"
mv "$T/N.json" "$T/status/$N_pid.json"
cli resume "$Q_pid"
is "$rc:$(gpu_of Q)" "0:0" "N's status as it is, running: Q resumes beside it"

# -- [restore] beside_restored = true lets it through: X home to GPU 0 beside N and Q
write_ini "[restore]" "beside_restored = true"
cli resume "$X_pid"
ask X verify
is "$rc:$(gpu_of X):$REPLY" "0:0:verify ok" "beside_restored = true: X resumes beside N and Q"
write_ini

# -- a nap's wake is a restore too (an NCCL rank never naps: its peers would stall): E, without
# communicators, napped on GPU 0; its next call waits while X, restored, runs there, and is
# answered once X sleeps
job F jf 0 1
cli2 nap "$F_pid"
like "$rc:$out" "^1:.*REFUSED: an NCCL rank: not napped alone" "an NCCL rank is not napped"
ask F quit
start E "$TARGET" || diag "E did not start"
"$CUDANAP" nap "$E_pid" > /dev/null
check "E napped" napped "$E_pid"
echo "drv launch export 5" >&"$E_in"
check "E's call waits for its wake" eventually 10 nap_is "$E_pid" "waiting for an NCCL job to sleep"
like "$(field "$E_pid" nap_why)" "^restore: $(refused 0 "$X_pid" | sed 's/^resume failed: BESIDE_RESTORED: restore: //')" \
	"its status says it waits beside X, a restored NCCL rank"
like "$("$CUDANAP" status "$E_pid")" " napping\\*? .* waiting for an NCCL job to sleep .*
$E_pid: waiting for an NCCL job to sleep: restore: GPU 0 " "cudanap status: napping, waiting for an NCCL job to sleep, and what it waits for"
"$CUDANAP" suspend "$X_pid" > /dev/null
answer E 20
said=$REPLY
woke "$E_pid"
is "$said:$(field "$E_pid" state):$(gpu_of E)" "launch 0:running:0" "X asleep, E wakes where it napped and the call answers"

# -- with [nap] wake_on = any it wakes elsewhere instead: not on GPU 1 (Y, a restored NCCL rank),
# on GPU 2 (P, restored, without communicators); X back on GPU 0 beside N and Q meanwhile
"$CUDANAP" nap "$E_pid" > /dev/null
check "E napped again" napped "$E_pid"
write_ini "[restore]" "beside_restored = true"
cli resume "$X_pid"
is "$rc:$(gpu_of X)" "0:0" "X restored on GPU 0 again (beside_restored = true: beside N and Q)"
write_ini "[nap]" "wake_on = any"
ask E "drv launch export 5" 20
said=$REPLY
woke "$E_pid"
is "$said:$(field "$E_pid" state):$(gpu_of E)" "launch 0:running:2" \
	"wake_on = any: E wakes on GPU 2, where no restored NCCL rank runs, and the call answers"
"$CUDANAP" suspend "$X_pid" > /dev/null
write_ini

# -- [restore] room_wait_s: a resume beside a restored NCCL job waits for it to sleep, and is
# refused when it does not in time (X and Y alone on GPU 0: the others gone)
for p in N Q E; do ask "$p" quit; done
for p in N Q E; do eventually 10 test ! -e "$T/status/$(eval echo "\$${p}_pid").json" 2> /dev/null; done
write_ini "[restore]" "room_wait_s = 1"
cli resume "$X_pid"
is "$rc:$(gpu_of X)" "0:0" "X resumed on GPU 0, alone there"
"$CUDANAP" suspend "$Y_pid" > /dev/null
cli resume --gpu-map "" "$Y_pid"
waited=$(field "$Y_pid" wait_ms)
like "$rc:$out" "^1:$Y_pid: $(refusal 0 "$X_pid"):" "room_wait_s = 1: Y's resume beside X is refused"
check "after waiting for X to sleep the whole second (wait_ms $waited)" \
	test "${waited%.*}" -ge 900 2> /dev/null
write_ini "[restore]" "room_wait_s = 60"
"$CUDANAP" resume --gpu-map "" "$Y_pid" > "$T/Y.resume" 2>&1 &
resumer=$!
resuming() { [ "$(field "$Y_pid" busy):$(field "$Y_pid" action)" = true:resume ]; }
check "room_wait_s = 60: Y's resume waits" eventually 10 resuming
"$CUDANAP" suspend "$X_pid" > /dev/null
wait "$resumer"; rc=$?
ask Y verify
is "$rc:$(gpu_of Y):$REPLY:$(field "$Y_pid" state)" "0:0:verify ok:running" \
	"once X sleeps, Y is restored where it slept, data intact"
like "$(field "$Y_pid" wait_ms)" "^[0-9]+\.[0-9]+$" "its status counts the wait"
write_ini

# -- a process that starts on a restored rank's GPU asks cudanap nothing; the rank's status names
# it: G, started on GPU 0 beside Y (restored, running); then a graphics process there
start G "$TARGET" || diag "G did not start"
out=$("$CUDANAP" status)
like "$out" "
$Y_pid: beside another job: GPU 0 runs pid $G_pid, not of its NCCL job: a restored rank's collective waiting there beside that work is stopped by the driver after ~5 s" \
	"cudanap status: a line names G beside Y, a restored NCCL rank"
is "$(field "$Y_pid" beside):$(field "$G_pid" beside)" "GPU 0 runs pid $G_pid:" \
	"Y's status's beside field names it; G's (no communicators) is empty"
write_ini "[restore]" "beside_restored = true"
"$CUDANAP" status "$Y_pid" > /dev/null
is "$(field "$Y_pid" beside)" "" "with beside_restored = true nothing is named"
write_ini
ask G quit
wait "$G_pid" 2> /dev/null # reaped: a zombie still counts as running on the fake GPU
eventually 10 test ! -e "$T/status/$G_pid.json"
out=$("$CUDANAP" status "$Y_pid")
is "$(field "$Y_pid" beside):$(grep -c 'beside another job' <<< "$out")" ":0" "G gone: nothing named"
echo 4242 > "$T/fake/graphics.0"
"$CUDANAP" status "$Y_pid" > /dev/null
is "$(field "$Y_pid" beside)" "GPU 0 runs pid 4242" "a graphics process on its GPU (a display server) is named too"
"$CUDANAP" suspend "$Y_pid" > /dev/null
cli resume "$Y_pid"
like "$rc:$out" "^1:$Y_pid: $(refusal 0 4242):" "and Y's restore beside it is refused"
rm "$T/fake/graphics.0"
cli resume "$Y_pid"
ask Y verify
is "$rc:$(gpu_of Y):$REPLY" "0:0:verify ok" "the graphics process gone, Y resumes where it slept"

for p in X Y R0 R1 P; do ask "$p" quit; done
finish
