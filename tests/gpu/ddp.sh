#!/usr/bin/env bash
# Two-rank PyTorch jobs (NCCL) on two GPUs, with the NCCL PyTorch loads. On NCCL's default
# transports without the suspend API (NCCL older than 2.29.7) a suspend is refused in one line and
# the job trains on. Under [nccl] suspendable = true (sockets): a busy DDP job suspended and resumed
# with --tree CUDANAP_DDP_CYCLES times (20), its ranks swapped between the GPUs, suspends whose one
# rank's signal comes late (all suspended or all running, never half), FSDP, torchrun, two jobs on
# the same GPUs whose second one's restore beside the first is refused (BESIDE_RESTORED) until the
# first has finished, and a DDP and an FSDP job (one after the other) asleep 60 s five times past their process group's 20 s
# timeout, PyTorch's heartbeat monitor on; every loss is compared with an uninterrupted run.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
python3 -c 'import torch, torch.distributed; assert torch.cuda.device_count() >= 2 and torch.distributed.is_nccl_available()' 2> /dev/null ||
	skip_all "needs PyTorch with NCCL and two GPUs"
py=$(dirname "$0")/ddp_train.py
# ~67M parameters, bf16, no pause: an all-reduce of 268 MB is in flight most of the time.
busy=(--busy --width 4096 --layers 4 --batch 1024)
steps=400
. "$(dirname "$0")/ddp_lib.sh"

# CUDANAP_DDP_PARTS=sleeps: the long sleeps alone (they take CUDANAP_SLEEP_CYCLES times
# CUDANAP_SLEEP_S); CUDANAP_DDP_PARTS=cycles: all but them
if [ "${CUDANAP_DDP_PARTS:-all}" != sleeps ]; then
# -- the reference: the busy job uninterrupted, under the same INI
nccl_ini
t0=$(date +%s)
job $steps "${busy[@]}" > "$T/ref.out" 2> "$T/ref.err"
is "$(nsteps "$T/ref.out")" $steps "uninterrupted busy DDP reference: $steps steps"
diag "in $(($(date +%s) - t0)) s"
like "$(cat "$T/ref.err")" "\[nccl\] suspendable: NCCL uses sockets between ranks: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1" \
	"cudanap run says which NCCL variables it sets"

# -- default transports: refused before the lock, the job trains on
write_ini
job 1000 > "$T/def.out" 2> "$T/def.err" &
root=$!
check "a DDP job with NCCL's default transports trains under cudanap" wait_step "$T/def.out" 3
cli suspend --tree "$root"
if [[ $(field "$(ranks_of "$T/def.out" | cut -d' ' -f1)" nccl) == suspend-api* ]]; then
	ok 0 "# SKIP the NCCL PyTorch loads has the suspend API (ddpapi.sh)"
	"$CUDANAP" resume --tree "$root" > /dev/null
else
	is "$rc" 1 "suspend --tree of it fails"
	# the line names the NCCL's version and the two ways out
	is "$(grep -cE 'REFUSED: refusing to suspend NCCL ranks that share memory \(NCCL_P2P_DISABLE is unset.*\): NCCL 2\.[0-9.]+ has no ncclCommSuspend: .*\[nccl\] suspendable = true' <<< "$out")" 2 \
		"both ranks refuse in one line that names the NCCL version and [nccl] suspendable"
fi
diag "$(head -n 1 <<< "$out")"
n=$(nsteps "$T/def.out")
check "the job trains on" wait_step "$T/def.out" $((n + 3))
kill_tree "$root"

# -- the busy job on sockets
nccl_ini
job $steps "${busy[@]}" > "$T/busy.out" 2> "$T/busy.err" &
root=$!
check "the busy job trains under [nccl] suspendable" wait_step "$T/busy.out" 5
cycles_check "$T/busy.out" "$root" "${CUDANAP_DDP_CYCLES:-20}" "a busy DDP job on sockets"
swap_check "$T/busy.out" "$root" nccl_ini
# the first rank's lock waits for its collective, the peer then launches the next one, which spins
# until the peer's own signal comes; its lock times out
late_check "$T/busy.out" "$root" nccl_ini 500 1000 2000
check "the busy job finishes" wait_done "$T/busy.out" "$root"
check "all $steps losses bit-identical to the uninterrupted run" \
	test "$(losses "$T/busy.out")" = "$(losses "$T/ref.out")"

small_checks
beside_check 29545
fi

# -- long sleeps: no collective's clock runs while the job sleeps (docs/DISTRIBUTED.md)
if [ "${CUDANAP_DDP_PARTS:-all}" != cycles ]; then
	nccl_ini
	sleeps_check 29543
fi
finish
