#!/usr/bin/env bash
# Room on the target GPUs before a restore: the footprint recorded at suspend, the free-memory
# check with its margin, the reservation held until the restore, and what happens without them
# (the fake, like the real driver, wedges a process restored onto a GPU without room).
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
mkdir "$T/fake"
ev() { tr '\n' ' ' < "$T/fake/events" 2>/dev/null; rm -f "$T/fake/events"; }
write_ini
start A "$TARGET" || diag "target did not start"
pid=$A_pid

"$CUDANAP" suspend "$pid" > /dev/null
is "$(field "$pid" footprint_mib)" 1000.000 "the footprint is recorded at suspend"
cli resume "$pid"
is "$rc" 0 "a resume with room"
is "$(ev)" "reserve 0 1000 release 0 restore 0 " "the footprint is held on the GPU and let go just before the restore"

"$CUDANAP" suspend "$pid" > /dev/null
write_ini "[restore]" "gpu_map = 0=1, 1=0"
echo 500 > "$T/fake/free.1"
cli resume "$pid"
is "$rc" 1 "a move onto a GPU without room is refused"
like "$out" "NO_GPU_MEMORY: restore: GPU 1 \(GPU-face0000-0000-0000-0000-000000000001\) has 500 MiB free; the job needs 1000 MiB there plus a 256 MiB margin \(\[restore\] margin_mib\); still suspended" \
	"with one line saying why"
is "$(field "$pid" state):$(ev)" "checkpointed:" "the driver was not asked to restore"
echo 1200 > "$T/fake/free.1"
cli resume "$pid"
like "$out:$rc" "has 1200 MiB free; .*:1" "the margin counts"
write_ini "[restore]" "gpu_map = 0=1, 1=0" "margin_mib = 100"
cli resume "$pid"
is "$rc" 0 "a smaller margin lets it through"
ask A gpu
is "$REPLY" "gpu 1" "the job moved to GPU 1"
ask A verify
is "$REPLY" "verify ok" "data intact"
ev > /dev/null

# -- room that comes later ([restore] room_wait_s): the way home to GPU 0, which lacks it
"$CUDANAP" suspend "$pid" > /dev/null
echo 500 > "$T/fake/free.0"
write_ini "[restore]" "room_wait_s = 1"
t0=$(date +%s%N)
cli resume "$pid"
like "$out:$rc" "NO_GPU_MEMORY: restore: GPU 0 .* has 500 MiB free.*still suspended.*:1" \
	"room_wait_s = 1: no room in that time, refused as before"
check "after waiting for it ($(( ($(date +%s%N) - t0) / 1000000 )) ms)" test $(( ($(date +%s%N) - t0) / 1000000 )) -ge 1000
write_ini "[restore]" "room_wait_s = 20"
(sleep 1; rm "$T/fake/free.0") &
cli resume "$pid"
w=$(field "$pid" wait_ms)
check "room_wait_s = 20: room that comes after 1 s lets the resume through (waited $w ms)" \
	awk -v w="$w" -v rc="$rc" 'BEGIN { exit !(rc == 0 && w >= 700) }'
ask A gpu
is "$REPLY" "gpu 0" "home on GPU 0"
ask A verify
is "$REPLY" "verify ok" "data intact"
write_ini "[restore]" "gpu_map = 0=1, 1=0" "margin_mib = 100"
"$CUDANAP" suspend "$pid" > /dev/null
cli resume "$pid"
ask A gpu
is "$rc:$REPLY" "0:gpu 1" "and back to GPU 1 with the map"
ev > /dev/null

rm "$T/fake/free.1"
"$CUDANAP" suspend "$pid" > /dev/null
echo 2 > "$T/fake/fail_alloc"
cli resume "$pid"
like "$out:$rc" "cannot hold 1000 MiB on GPU 1 \(GPU-face0000-0000-0000-0000-000000000001\) until the restore: CUDA_ERROR_OUT_OF_MEMORY .*state checkpointed.*:1" \
	"a reservation that fails refuses the restore"
rm "$T/fake/fail_alloc"
write_ini "[restore]" "gpu_map = 0=1, 1=0" "reserve = false"
cli resume "$pid"
is "$rc:$(ev)" "0:restore 1 " "reserve = false checks but holds nothing"
ask A verify
is "$REPLY" "verify ok" "data intact after the refusals"
ask A quit
wait "$pid"

# -- without NVML nothing is checked: the restore runs out of memory and the job is lost. This is
# what the check prevents.
write_ini
rm -f "$T/fake/free.1"
CUDANAP_LIBNVML=$T/no-such-nvml.so start B "$TARGET"
"$CUDANAP" suspend "$B_pid" > /dev/null
like "$(cat "$T/B.err")" "free GPU memory will not be checked before the restore: NVML \($T/no-such-nvml.so\) cannot be loaded" \
	"a suspend without NVML says the check cannot be made"
is "$(field "$B_pid" footprint_mib)" "null" "and records no footprint"
echo 500 > "$T/fake/free.1"
cli resume "$B_pid"
is "$rc" 0 "(its GPU 0 has room: resumed)"
"$CUDANAP" suspend "$B_pid" > /dev/null
write_ini "[restore]" "gpu_map = 0=1, 1=0"
cli resume "$B_pid"
like "$out:$rc" "CUDA_ERROR_OUT_OF_MEMORY.*:1" "unchecked, the restore runs out of memory"
rm "$T/fake/free.1"
cli resume "$B_pid"
like "$out:$rc" "CUDA_ERROR_OPERATING_SYSTEM.*:1" "and the fake, like the driver, never restores it again"
ask B quit
finish
