#!/usr/bin/env bash
# Two GPUs and naps: with [nap] wake_on = any a process napping on GPU 0, whose GPU another process
# has filled meanwhile, wakes on GPU 1 at its next CUDA call, which answers right; with wake_on =
# home the call waits, the status says waiting for room, and it wakes on GPU 0 once the filler is
# gone; a PyTorch session napped on GPU 1 wakes on GPU 0 (its home) by a computation. Prints the
# waking call's delay on the other GPU against a plain `cudanap resume --gpu-map` of the same
# process.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
py=${PYTHON:-python3}
gib=${CUDANAP_GPU_TEST_GIB:-8}
free_gib() { echo $(($(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i "$1") / 1024)); }
# fill GPU: a process holding all but 2 GiB of what is free there, on that GPU alone
fill() { CUDA_VISIBLE_DEVICES=$1 start F "$HOLDMEM" $(($(free_gib "$1") - 2)); }

# -- 1. wake_on = any: GPU 0 taken while it naps, it wakes on GPU 1
write_ini "[nap]" "wake_on = any" "[log]" "level = info"
start A "$HOLDMEM" "$gib"
pid=$A_pid
like "$(mib_on "$pid" 0):$(mib_on "$pid" 1)" "^[1-9][0-9]*:0$" "the napper starts on GPU 0"
cli nap "$pid"
is "$rc" 0 "it naps: $out"
fill 0
check "a filler takes GPU 0 ($(mib_on "$F_pid" 0) MiB)" test "$(mib_on "$F_pid" 0)" -gt 1024
ask A work 300
woke "$pid"
is "$REPLY:$(field "$pid" state)" "work ok:running" "its next call wakes it, on the other GPU, and works"
like "$(mib_on "$pid" 0):$(mib_on "$pid" 1)" "^0:[1-9][0-9]*$" "nvidia-smi shows it on GPU 1"
like "$("$CUDANAP" status --no-query "$pid")" "
$pid +running +wake .* 1 " "cudanap status shows GPU 1"
ask A verify 300
is "$REPLY" "verify ok" "every byte right on GPU 1"
wake_other=$(field "$pid" last_wake_ms)
# the same move by hand, for the figure: back home, then a plain resume onto GPU 1
ask F quit 10
wait "$F_pid"
"$CUDANAP" suspend "$pid" > /dev/null && "$CUDANAP" resume --gpu-map "" "$pid" > /dev/null
"$CUDANAP" suspend "$pid" > /dev/null
"$CUDANAP" resume --gpu-map "0=1, 1=0" "$pid" > /dev/null
plain=$(field "$pid" total_ms)
diag "$gib GiB onto the other GPU: the waking call waited $(in_s "$wake_other") s, a plain resume --gpu-map took $(in_s "$plain") s"
ask A quit 10

# -- 2. wake_on = home: the call waits for room, and wakes at home once the filler is gone
write_ini "[nap]" "wake_on = home" "[log]" "level = info"
start B "$HOLDMEM" "$gib"
"$CUDANAP" nap "$B_pid" > /dev/null
fill 0
ask B work 2
is "$REPLY" "" "wake_on = home, GPU 0 full: the waking call waits"
check "status: waiting for room" eventually 30 nap_is "$B_pid" "waiting for room"
like "$("$CUDANAP" status --no-query "$B_pid")" "
$B_pid: waiting for room: restore: GPU 0 " "and what it needs"
ask F quit 10
wait "$F_pid"
t0=$(date +%s%N)
answer B 60
ms=$((($(date +%s%N) - t0) / 1000000))
woke "$B_pid"
is "$REPLY:$(field "$B_pid" state)" "work ok:running" "the filler gone, it wakes at home and the call works"
# room is checked every 100 ms and an 8 GiB restore takes about 0.4 s
check "within a second of the filler's exit ($ms ms)" test "$ms" -lt 1000
like "$(mib_on "$B_pid" 0):$(mib_on "$B_pid" 1)" "^[1-9][0-9]*:0$" "on GPU 0"
ask B quit 10

# -- 3. a PyTorch session napped on GPU 1, woken home on GPU 0 by a computation
if "$py" -c "import torch" > /dev/null 2>&1; then
	write_ini "[nap]" "wake_on = home" "[restore]" "gpu_map = 0=1, 1=0"
	ref=$(echo compute | "$py" "$here/nap_session.py" torch "$gib" | grep '^result')
	start S "$py" "$here/nap_session.py" torch "$gib"
	"$CUDANAP" suspend "$S_pid" > /dev/null && "$CUDANAP" resume "$S_pid" > /dev/null
	like "$(mib_on "$S_pid" 0):$(mib_on "$S_pid" 1)" "^0:[1-9][0-9]*$" "the session runs on GPU 1 (gpu_map)"
	write_ini "[nap]" "wake_on = home"
	"$CUDANAP" nap "$S_pid" > /dev/null
	ask S compute 300
	is "$REPLY" "$ref" "napped on GPU 1, a computation wakes it home on GPU 0, right"
	like "$(mib_on "$S_pid" 0):$(mib_on "$S_pid" 1)" "^[1-9][0-9]*:0$" "on GPU 0 now"
	ask S quit 10
else
	skip "PyTorch session" "torch not installed"
fi
finish
