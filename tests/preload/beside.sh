#!/usr/bin/env bash
# A resume does not move a process onto a GPU where another process runs that cudanap restored,
# when either has NCCL communicators ([restore] beside_restored, preload/agent/beside.c): refused
# in one line, the process still suspended and restorable; a resume onto the GPUs it slept on, a
# neighbour never restored, two plain programs and beside_restored = true go through; a nap's wake
# onto another GPU is refused the same way and waits. On a fake machine of three GPUs, the fake NCCL
# giving one process a communicator of one rank.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=3
export CUDANAP_FAKE_NCCL=$FAKENCCL
unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_NET_GDR_LEVEL
mkdir "$T/fake"
uuid() { printf 'GPU-face0000-0000-0000-0000-0000000000%02x' "$1"; }
write_ini
gpu_of() { ask "$1" gpu; echo "${REPLY#gpu }"; }
# moved PID MAP: suspend, then resume with the one-shot MAP; prints the resume's line and rc
moved() {
	"$CUDANAP" suspend "$1" > /dev/null || echo "suspend failed"
	"$CUDANAP" resume --gpu-map "$2" "$1"
	echo "rc $?"
}

# -- B, a plain program, moved to GPU 1: restored once
start B "$TARGET" || diag "B did not start"
is "$(field "$B_pid" restores)" 0 "a process never restored says restores 0"
out=$(moved "$B_pid" "0=1, 1=0")
is "$(gpu_of B):$(field "$B_pid" restores)" "1:1" "B moved to GPU 1; its status counts the restore"

# -- A, with an NCCL communicator, on GPU 0
start A "$TARGET" || diag "A did not start"
ask A "nccl init solo 0 1"
is "$REPLY" "nccl ok" "A has a communicator"
out=$(moved "$A_pid" "0=1, 1=0")
like "$out" "$A_pid: resume failed: BESIDE_RESTORED: restore: GPU 1 \($(uuid 1)\) runs pid $B_pid, which cudanap restored: moved beside one, both have died \(\[restore\] beside_restored\); still suspended: resume it where it slept, or elsewhere" \
	"A's move onto B's GPU is refused in one line naming the GPU and the process"
like "$out" "rc 1$" "the resume exits 1"
is "$(field "$A_pid" state):$(field "$A_pid" result)" "checkpointed:BESIDE_RESTORED" \
	"A stays suspended, the status says why"
out=$("$CUDANAP" resume "$A_pid"); rc=$?
ask A verify
is "$rc:$(gpu_of A):$REPLY" "0:0:verify ok" "resumed where it slept (GPU 0, beside no one): it runs, data intact"
out=$(moved "$A_pid" "0=2, 2=0")
is "$(gpu_of A):${out##*rc }" "2:0" "a move onto a GPU where no restored process runs goes through"

# -- a neighbour never restored: D starts on GPU 0, A comes home beside it
start D "$TARGET" || diag "D did not start"
"$CUDANAP" suspend "$A_pid" > /dev/null
out=$("$CUDANAP" resume --gpu-map "" "$A_pid"); rc=$?
is "$rc:$(gpu_of A)" "0:0" "A moved home beside D, which was never restored"

# -- a neighbour whose first restore is under way counts: D's status file says so (as D's own
# would while it resumes; restores of one directory take turns through the driver's setup, so its
# memory is on the GPU by the time the next one checks)
out=$(moved "$A_pid" "0=2, 2=0")
is "$(gpu_of A)" 2 "A moved to GPU 2"
"$CUDANAP" suspend "$A_pid" > /dev/null
cp "$T/status/$D_pid.json" "$T/D.json"
sed 's/"busy":false,\("seq":[0-9]*\),"action":"[a-z]*"/"busy":true,\1,"action":"resume"/' "$T/D.json" > "$T/status/$D_pid.json.new"
mv "$T/status/$D_pid.json.new" "$T/status/$D_pid.json"
is "$(field "$D_pid" busy):$(field "$D_pid" action):$(field "$D_pid" restores)" "true:resume:0" \
	"D's status: busy with a resume, no restore behind it"
out=$("$CUDANAP" resume --gpu-map "" "$A_pid" 2>&1); rc=$?
like "$rc:$out" "^1:.*BESIDE_RESTORED: restore: GPU 0 \($(uuid 0)\) runs pid $D_pid," \
	"A's move home beside D, restoring, is refused"
mv "$T/D.json" "$T/status/$D_pid.json"
out=$("$CUDANAP" resume --gpu-map "" "$A_pid"); rc=$?
is "$rc:$(gpu_of A)" "0:0" "D's status as it is, running: A moves home beside it"

# -- the neighbour has the communicator: B (plain) moved onto GPU 0, where A (restored) runs
out=$(moved "$B_pid" "")
like "$out" "$B_pid: resume failed: BESIDE_RESTORED: restore: GPU 0 \($(uuid 0)\) runs pid $A_pid, " \
	"a plain program's move onto the GPU of a restored process with a communicator is refused"
is "$(field "$B_pid" state)" checkpointed "B stays suspended"
out=$("$CUDANAP" resume "$B_pid"); rc=$?
like "$rc:$out" "^1:.*BESIDE_RESTORED" "the INI's map (home, GPU 0) again: refused again"
out=$("$CUDANAP" resume --gpu-map "0=1, 1=0" "$B_pid"); rc=$?
is "$rc:$(gpu_of B)" "0:1" "with the map that put it on GPU 1, it resumes where it slept"

# -- two plain programs: D moved onto GPU 1 beside B (restored)
out=$(moved "$D_pid" "0=1, 1=0")
ask D verify
is "$(gpu_of D):${out##*rc }:$REPLY" "1:0:verify ok" "a plain program moves beside a restored plain program"

# -- a resume onto the GPUs it slept on is never refused: D comes home while A sleeps there (a
# process asleep holds nothing on its GPU), then A resumes there beside D, both restored
"$CUDANAP" suspend "$A_pid" > /dev/null
out=$(moved "$D_pid" "")
is "${out##*rc }:$(gpu_of D)" "0:0" "D moves home to GPU 0, where A sleeps"
out=$("$CUDANAP" resume "$A_pid"); rc=$?
ask A verify
is "$rc:$(gpu_of A):$REPLY" "0:0:verify ok" "A resumes where it slept, beside D"

# -- [restore] beside_restored = true lets the move through
write_ini "[restore]" "beside_restored = true"
out=$(moved "$A_pid" "0=1, 1=0")
ask A verify
is "$(gpu_of A):${out##*rc }:$REPLY" "1:0:verify ok" "beside_restored = true: A moves onto B's GPU"

# -- a nap's wake onto another GPU is a move too: E (plain) napped on GPU 0, no room there nor on
# GPU 2, GPU 1 (room, but A with its communicator runs there, restored): the wake is refused
# there, the call waits, and it wakes at home once there is room
write_ini "[nap]" "wake_on = any"
start E "$TARGET" || diag "E did not start"
"$CUDANAP" nap "$E_pid" > /dev/null
check "E napped" napped "$E_pid"
echo 500 > "$T/fake/free.0"
echo 500 > "$T/fake/free.2"
ask E "drv launch export 5" 1
is "$REPLY" "" "E's call waits"
# its wake tries home again every second (no room), then GPU 1: nap_why keeps the last refusal
refused() { [[ $(field "$E_pid" nap_why) =~ ^BESIDE_RESTORED: ]]; }
check "its wake onto GPU 1, beside A, is refused" eventually 20 refused
like "$(field "$E_pid" nap):$(field "$E_pid" state):$(field "$E_pid" nap_why)" \
	"^waking:checkpointed:BESIDE_RESTORED: .*GPU 1 .*runs pid $A_pid," "its status says so, still asleep"
# (the status is written before the log line)
said_once() { [ "$(grep -c 'a call waits for the GPU: BESIDE_RESTORED' "$T/E.err")" = 1 ]; }
check "its log says so once" eventually 5 said_once
rm "$T/fake/free.0"
answer E 20
woke "$E_pid"
is "$REPLY:$(field "$E_pid" state):$(field "$E_pid" gpus)" "launch 0:running:0=$(uuid 0)" \
	"room at home: it wakes there, the call answers"
rm -f "$T/fake/free.2"

for p in A B D E; do ask "$p" quit; done
finish
