#!/usr/bin/env bash
# Two-rank PyTorch jobs on NCCL's default transports (P2P over NVLink, cuMem, shared memory),
# suspended through NCCL's own suspend API (2.29.7 or later, named by CUDANAP_NCCL_LIB and
# preloaded after the library): the NCCL version and the P2P transport checked in NCCL's own log; a
# busy DDP job and an FSDP job each suspended and resumed with --tree CUDANAP_DDP_CYCLES times (20),
# GPU memory freed at each suspend, the ranks swapped between the GPUs at every other resume and
# home at the rest; the same map twice and the INI's map emptied; a rank's signal late (all
# suspended or all running); torchrun; two jobs on the same GPUs whose second one's restore beside
# the first is refused (BESIDE_RESTORED) until the first has finished; a DDP and an FSDP job (one after the other) asleep 60 s five
# times past their process group's 20 s timeout, PyTorch's heartbeat monitor on; every loss
# compared with an uninterrupted run.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
[ -n "${CUDANAP_NCCL_LIB:-}" ] && [ -f "$CUDANAP_NCCL_LIB" ] ||
	skip_all "CUDANAP_NCCL_LIB does not name a libnccl.so.2 with ncclCommSuspend (NCCL 2.29.7 or later)"
python3 -c 'import torch, torch.distributed; assert torch.cuda.device_count() >= 2 and torch.distributed.is_nccl_available()' 2> /dev/null ||
	skip_all "needs PyTorch with NCCL and two GPUs"
py=$(dirname "$0")/ddp_train.py
busy=(--busy --width 4096 --layers 4 --batch 1024)
# At full speed (a few ms a step) the job runs through hundreds of steps between two actions.
steps=${CUDANAP_DDPAPI_STEPS:-6000}
. "$(dirname "$0")/ddp_lib.sh"
api_ini() { write_ini "[lock]" "timeout_ms = ${LOCK_MS:-5000}" "$@"; }
# the NCCL named, preloaded (cudanap run puts the library before it)
job_cmd() { LD_PRELOAD=$CUDANAP_NCCL_LIB "$CUDANAP" run -c "$T/job.ini" -- "$@"; }

# CUDANAP_DDP_PARTS=sleeps: the long sleeps alone (they take CUDANAP_SLEEP_CYCLES times
# CUDANAP_SLEEP_S); CUDANAP_DDP_PARTS=cycles: all but them
if [ "${CUDANAP_DDP_PARTS:-all}" != sleeps ]; then
# -- the NCCL loaded, and its transports
api_ini
NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$T/info.%p job 3 > "$T/info.out" 2> "$T/info.err"
cat "$T"/info.[0-9]* > "$T/info.log" 2> /dev/null
like "$(grep -m1 'NCCL version' "$T/info.log")" "NCCL version 2\.(29\.[7-9]|[3-9][0-9]\.)" \
	"the job loads the NCCL named ($(grep -m1 -o 'NCCL version [0-9.]*' "$T/info.log"))"
like "$(grep -m1 -E 'via P2P/(CUMEM|IPC)' "$T/info.log")" "via P2P" \
	"its channels go over P2P ($(grep -m1 -oE 'via P2P/[A-Z/]+' "$T/info.log"))"

# -- the busy job uninterrupted, under the same INI and NCCL
job $steps "${busy[@]}" > "$T/ref.out" 2> "$T/ref.err"
is "$(nsteps "$T/ref.out")" $steps "uninterrupted busy DDP reference on the default transports: $steps steps"

job $steps "${busy[@]}" > "$T/busy.out" 2> "$T/busy.err" &
root=$!
check "the busy job trains under cudanap" wait_step "$T/busy.out" 5
cycles_check "$T/busy.out" "$root" "${CUDANAP_DDP_CYCLES:-20}" "a busy DDP job on NCCL's default transports" swap
like "$(field "$r0" nccl)" "^suspend-api: [0-9]+ communicators? \(NCCL 2\.[0-9.]+\)$" \
	"its status says its communicators go through NCCL's suspend API"
swap_check "$T/busy.out" "$root" api_ini
late_check "$T/busy.out" "$root" api_ini 500 2000
check "the busy job finishes" wait_done "$T/busy.out" "$root"
check "all $steps losses bit-identical to the uninterrupted run" \
	test "$(losses "$T/busy.out")" = "$(losses "$T/ref.out")"

FSDP_CYCLES=${CUDANAP_DDP_CYCLES:-20} small_checks swap
api_ini
beside_check 29547
fi

# -- long sleeps: no collective's clock runs while the job sleeps (docs/DISTRIBUTED.md)
if [ "${CUDANAP_DDP_PARTS:-all}" != cycles ]; then
	api_ini
	sleeps_check 29541
fi
finish
