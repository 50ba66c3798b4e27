#!/usr/bin/env bash
# Two GPUs: a suspended job moved to the other GPU by index and by UUID (gpu_map names where the
# GPUs it started on go: the same map twice leaves it there, an empty map brings it home), with
# CUDA_VISIBLE_DEVICES set in the app, two jobs swapped with one-shot maps, one process on both
# GPUs, a move onto a full GPU refused, and restores beside a process that keeps grabbing the free
# memory (the reservation: 0 wedges).
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
gib=$(( ${CUDANAP_GPU_TEST_GIB:-8} / 2 ))
[ "$gib" -ge 1 ] || gib=1

uuid_of() { nvidia-smi --query-gpu=uuid --format=csv,noheader -i "$1"; }
on() { # on PID: "A:B", MiB on GPU 0 and 1 rounded to GiB
	echo "$(( ($(mib_on "$1" 0) + 512) / 1024 )):$(( ($(mib_on "$1" 1) + 512) / 1024 ))"
}
resume_with() { # resume_with PID GPU_MAP: suspend, set the map, resume; prints cudanap resume's line
	"$CUDANAP" suspend "$1" > /dev/null
	write_ini "[restore]" "gpu_map = $2"
	"$CUDANAP" resume "$1"
}
u0=$(uuid_of 0) u1=$(uuid_of 1)
diag "GPU 0 $u0, GPU 1 $u1; $gib GiB per job"

# -- by index
write_ini
start A "$HOLDMEM" "$gib"
pid=$A_pid
like "$(on "$pid")" "^[1-9][0-9]*:0$" "the job starts on GPU 0"
out=$(resume_with "$pid" "0=1, 1=0"); rc=$?
is "$rc" 0 "resume with gpu_map = 0=1, 1=0"
diag "$out"
like "$(on "$pid")" "^0:[1-9][0-9]*$" "nvidia-smi shows its memory on GPU 1"
ask A verify 120
is "$REPLY" "verify ok" "data intact on GPU 1"
ask A work
is "$REPLY" "work ok" "and it works on"
is "$(field "$pid" gpus)|$(field "$pid" home_gpus)" "1=$u1|0=$u0" "the status: on GPU 1, started on GPU 0"

# -- the same map again: it stays (it used to bounce back to GPU 0)
out=$(resume_with "$pid" "0=1, 1=0"); rc=$?
like "$rc:$(on "$pid")" "^0:0:[1-9][0-9]*$" "the same map applied twice leaves the job on GPU 1"
out=$(resume_with "$pid" "$u0=$u1, $u1=$u0"); rc=$?
like "$rc:$(on "$pid")" "^0:0:[1-9][0-9]*$" "so does the same map by UUID"
ask A verify 120
is "$REPLY" "verify ok" "data intact"

# -- an empty map: home
out=$(resume_with "$pid" ""); rc=$?
like "$rc:$(on "$pid")" "^0:[1-9][0-9]*:0$" "an empty map brings the job home to GPU 0"
ask A verify 120
is "$REPLY" "verify ok" "data intact"

# -- CUDA_VISIBLE_DEVICES=0 in the app: the controller still pairs every GPU
write_ini
CUDA_VISIBLE_DEVICES=0 start B "$HOLDMEM" "$gib"
out=$(resume_with "$B_pid" "0=1, 1=0"); rc=$?
is "$rc" 0 "an app with CUDA_VISIBLE_DEVICES=0 moves too"
like "$(on "$B_pid")" "^0:[1-9][0-9]*$" "it is on GPU 1"
ask B verify 120
is "$REPLY" "verify ok" "data intact"

# -- two jobs swapped: A on GPU 0, B on GPU 1 (both started on GPU 0), a one-shot map each
write_ini
"$CUDANAP" suspend --all -c "$T/job.ini" > /dev/null
"$CUDANAP" resume --gpu-map "0=1, 1=0" "$pid" > "$T/swapA" &
swap=$!
"$CUDANAP" resume --gpu-map "" "$B_pid" > "$T/swapB"; rb=$?
wait "$swap"
is "$?:$rb" 0:0 "two jobs swapped with resume --gpu-map, one each, at once"
diag "$(cat "$T/swapA" "$T/swapB")"
like "$(on "$pid"):$(on "$B_pid")" "^0:[1-9][0-9]*:[1-9][0-9]*:0$" "A now on GPU 1, B back on GPU 0"
ask A verify 120
r1=$REPLY
ask B verify 120
is "$r1:$REPLY" "verify ok:verify ok" "both intact"
ask B quit
wait "$B_pid"

# -- one process on both GPUs
write_ini
start C "$HOLDMEM" --all-gpus "$gib"
like "$(on "$C_pid")" "^[1-9][0-9]*:[1-9][0-9]*$" "a process holding memory on both GPUs"
"$CUDANAP" suspend "$C_pid" > /dev/null
is "$(field "$C_pid" state):$(on "$C_pid")" "checkpointed:0:0" "suspended: both GPUs freed"
write_ini "[restore]" "gpu_map = 0=1, 1=0"
cli resume "$C_pid"
is "$rc" 0 "resumed with the two GPUs swapped"
like "$(on "$C_pid")" "^[1-9][0-9]*:[1-9][0-9]*$" "memory on both again"
ask C verify 120
is "$REPLY" "verify ok" "data on both intact"
ask C quit
wait "$C_pid"

# -- a move onto a GPU without room: refused before the restore, the job stays restorable.
# A is on GPU 1; a plain process takes all but half of A's footprint on GPU 0, A's home.
write_ini
"$CUDANAP" suspend "$pid" > /dev/null
free0=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0)
hog=$(awk -v f="$free0" -v g="$gib" 'BEGIN { printf "%.2f", (f - 900) / 1024 - g / 2 }')
mkfifo "$T/hog.in"
CUDA_VISIBLE_DEVICES=0 "$HOLDMEM" "$hog" < "$T/hog.in" > "$T/hog.out" &
hog_pid=$!
exec {hog_fd}> "$T/hog.in"
for _ in $(seq 600); do grep -q ready "$T/hog.out" && break; sleep 0.1; done
diag "another process holds $hog GiB of GPU 0's $free0 MiB free: $(nvidia-smi --query-gpu=memory.free --format=csv,noheader -i 0) left"
cli resume "$pid"
is "$rc" 1 "a move home onto a GPU without room is refused"
like "$out" "NO_GPU_MEMORY: restore: GPU 0 \(GPU-[0-9a-f-]+\) has [0-9]+ MiB free; the job needs [0-9]+ MiB there.*\(state checkpointed\)" \
	"in one line, and the job stays checkpointed"
diag "$out"
echo quit >&"$hog_fd"
wait "$hog_pid"
cli resume "$pid"
is "$rc" 0 "once the memory is free the same resume works"
ask A verify 120
is "$REPLY" "verify ok" "data intact after the refusal"

ask A quit
wait "$pid"

# -- restores beside a process that grabs all free memory but 1 GiB, again and again. The
# reservation narrows the window but cannot close it: the driver allocates during the restore,
# after the controller has let its hold go. Measured and reported as a TODO, on a job of its own.
write_ini
if python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
	start E "$HOLDMEM" "$gib"
	CUDA_VISIBLE_DEVICES=0 python3 -c '
import random, time, torch
random.seed(1)
while True:
    free, _ = torch.cuda.mem_get_info()
    n = free - (1 << 30)
    x = torch.empty(n, dtype=torch.uint8, device="cuda") if n > 0 else None
    time.sleep(random.uniform(0.005, 0.15))
    del x
    torch.cuda.empty_cache()
    time.sleep(random.uniform(0.0, 0.05))
' > "$T/grabber.log" 2>&1 &
	grabber=$!
	sleep 5
	cycles=0 refusals=0 attempts=0 wedged=no
	for i in $(seq 10); do
		"$CUDANAP" suspend "$E_pid" > /dev/null || break
		for try in $(seq 200); do
			attempts=$((attempts + 1))
			out=$("$CUDANAP" resume "$E_pid") && break
			case $out in
			*NO_GPU_MEMORY*) refusals=$((refusals + 1)); sleep 0.05 ;;
			*) wedged=yes; diag "$out"; break 2 ;;
			esac
		done
		[ "$(field "$E_pid" state)" = running ] && cycles=$((cycles + 1))
	done
	kill "$grabber"
	wait "$grabber" 2> /dev/null
	diag "10 suspend/resume cycles beside the grabber: $cycles completed, $attempts restore attempts, $refusals refused before the restore, wedged: $wedged"
	todo "the driver allocates after the hold is let go" \
		"every restore beside a grabbing process is refused or succeeds" test "$cycles:$wedged" = "10:no"
	ask E quit 5
else
	ok 0 "# SKIP torch with CUDA not installed"
fi
finish
