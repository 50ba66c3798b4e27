#!/usr/bin/env bash
# Slurm's preemption of a whole two-rank DDP job on real GPUs, on the NVLink route (NCCL's suspend
# API, CUDANAP_NCCL_LIB preloaded), with the real daemons of tests/slurm/cluster.sh: partitions low
# and high, PreemptMode=SUSPEND,GANG, the plugin's handover=. The low job, under --cudanap with
# SIGTSTP/SIGCONT as its signals and a 20 s process-group timeout, is suspended when a high job
# arrives that needs all of both GPUs but half of what the low job holds on each; the high job
# starts once both ranks are checkpointed, holds the GPUs past the low job's timeout and ends; Slurm
# resumes the low job, which trains on to its end with every loss identical to an uninterrupted run.
# Then the same arrival with PreemptMode=REQUEUE (the low job killed and requeued). For each, the
# time from the high job's submission to its first CUDA work done (its memory allocated and written
# on both GPUs) is printed.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
[ -n "${CUDANAP_NCCL_LIB:-}" ] && [ -f "$CUDANAP_NCCL_LIB" ] ||
	skip_all "CUDANAP_NCCL_LIB does not name a libnccl.so.2 with ncclCommSuspend (NCCL 2.29.7 or later)"
python3 -c 'import torch, torch.distributed; assert torch.cuda.device_count() >= 2 and torch.distributed.is_nccl_available()' 2> /dev/null ||
	skip_all "needs PyTorch with NCCL and two GPUs"
. "$(dirname "$0")/../slurm/cluster.sh"
py=$(cd "$(dirname "$0")" && pwd)/ddp_train.py
. "$(dirname "$0")/ddp_lib.sh"
export T HOLDMEM CUDANAP_NCCL_LIB
steps=${CUDANAP_SLURM_DDP_STEPS:-200}
# about 4 GiB a rank: parameters, gradients and DDP's buckets of a 268 M-parameter model
model="--width 8192 --layers 4 --timeout 20"
cpus=$(nproc)
hold_s=40 # how long the high job holds the GPUs: past the low job's 20 s timeout

# the same job, the same NCCL, without Slurm and uninterrupted
write_ini "[lock]" "timeout_ms = 10000"
MASTER_PORT=29551 LD_PRELOAD=$CUDANAP_NCCL_LIB "$CUDANAP" run -c "$T/job.ini" -- \
	python3 "$py" $steps $model > "$T/ref.out" 2> "$T/ref.err"
is "$(nsteps "$T/ref.out")" "$steps" "uninterrupted reference: $steps steps"

# room_wait_s: a resume that comes while the high job's process still leaves the GPUs waits for it
# (BESIDE_RESTORED), as docs/SLURM.md advises
printf '[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n[lock]\ntimeout_ms = 10000\n[restore]\nroom_wait_s = 30\n' > "$T/stop.ini"
free_mib() { nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i "$1"; }

# low_job PORT: submits the DDP job to partition low, its preload of cudanap first and the NCCL
# named after it; sets low, r0 and r1 once it trains, and held to the least MiB it holds on a GPU
low_job() {
	local g f0 f
	f0=("$(free_mib 0)" "$(free_mib 1)")
	low=$(sbatch --parsable -p low -c "$cpus" --cudanap="$T/stop.ini" -o "$T/low$1.out" -e "$T/low$1.err" \
		--wrap "export LD_PRELOAD=\$LD_PRELOAD:\$CUDANAP_NCCL_LIB MASTER_PORT=$1; exec python3 $py $steps $model")
	wait_step "$T/low$1.out" 5 || diag "the low job: $(job_state "$low"); $(tail -n 3 "$T/low$1.err")"
	read -r r0 r1 <<< "$(ranks_of "$T/low$1.out")"
	held=
	for g in 0 1; do
		f=$(( f0[g] - $(free_mib $g) ))
		[ -z "$held" ] || [ "$f" -lt "$held" ] && held=$f
	done
	free0=${f0[0]}
	[ "${f0[1]}" -lt "$free0" ] && free0=${f0[1]}
}

# high_job NAME: submits to partition high a job that holds, on each GPU, all that was free before
# the low job but 1 GiB and half of what the low job holds there: it fits only once the low job's
# memory is gone. Sets high, h and took (ms from the submission to its memory written on both GPUs).
high_job() {
	local gib t0
	gib=$(awk -v f="$free0" -v h="$held" 'BEGIN { printf "%.2f", (f - 1024 - h / 2) / 1024 }')
	attach "$1"
	t0=$(date +%s%N)
	high=$(sbatch --parsable -p high -c "$cpus" -o "$T/$1.log" \
		--wrap "exec \"\$HOLDMEM\" --all-gpus $gib < \"\$T/$1.in\" > \"\$T/$1.out\"")
	h=$(ready "$1")
	took=$(( ($(date +%s%N) - t0) / 1000000 ))
	check "the high job ($gib GiB on each GPU) starts and writes its memory" test -n "$h"
}

both_running() { state_is "$r0" running && state_is "$r1" running; }

# -- PreemptMode=SUSPEND,GANG: the low job sleeps while the high one runs
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st handover=120" \
	"PreemptType=preempt/partition_prio" "PreemptMode=SUSPEND,GANG" \
	"PreemptParameters=suspend_grace_time=30" \
	"PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 OverSubscribe=FORCE:1" \
	"PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 OverSubscribe=FORCE:1"
diag "Slurm $(sinfo -V 2>&1 | awk '{ print $2 }') on $NODE: $(sinfo -h -o '%P %T' | tr '\n' ' ')"
low_job 29552
STATUS_DIR=$(job_dir "$low")
check "the low job trains under --cudanap, rank pids $r0 $r1" test -n "$r1"
is "$(gpus_of "$r0" "$r1")" "0 1" "its ranks on GPUs 0 and 1 (nvidia-smi)"
diag "low job $low: at least $held MiB on each GPU, $free0 MiB free before it"
check "it holds more than 2 GiB on each GPU (so the high job fits only without it)" test "$held" -gt 2048
high_job H
suspend_ms=$took
is "$(job_state "$low"):$(states_of "$r0" "$r1")" "SUSPENDED:checkpointed checkpointed" \
	"Slurm suspended the low job; cudanap checkpointed both ranks"
like "$(field "$r0" nccl)" "^suspended: " "their communicators suspended through NCCL's API, the ranks leading their cut"
is "$(gpus_of "$r0" "$r1"):$(gpus_of "$h")" "- -:01" \
	"nvidia-smi: the sleeping ranks hold nothing; the high job holds memory on both GPUs"
waited=$(grep 'handover: job' "$S/log/slurmd.log" | tail -n 1 | sed 's/.*cudanap: //')
diag "SUSPEND,GANG: the high job's memory written on both GPUs $(in_s "$suspend_ms") s after its submission ($waited)"
n=$(nsteps "$T/low29552.out")
if [ -n "$h" ]; then
	sleep "$hold_s"
	ask H verify 120
	is "$REPLY" "verify ok" "the high job's memory works"
else
	diag "slurmd: $(grep -h 'cudanap' "$S/log/slurmd.log" | tail -n 3)" \
		"the low job's ranks: $(grep -h 'cudanap\[' "$T/low29552.err" | tail -n 4)"
fi
ask H quit 5
wait_final "$high"
wait_state "$low" RUNNING 600
check "when the high job ends Slurm resumes the low job; both ranks run again" \
	eventually 60 both_running
is "$(gpus_of "$r0" "$r1")" "0 1" "its ranks back on GPUs 0 and 1"
check "it trains on after $hold_s s asleep (past its 20 s timeout)" wait_step "$T/low29552.out" $((n + 3)) "$r0"
wait_final "$low" 1800
is "$(job_state "$low")" COMPLETED "the low job completes"
check "all $steps losses identical to the uninterrupted run" \
	test "$(losses "$T/low29552.out")" = "$(losses "$T/ref.out")"
said=$(grep -h -m1 -E 'Watchdog caught|watchdog got stuck|watchdog thread terminated|Heartbeat monitor timed out|Traceback' "$T/low29552.err" | cut -c1-300)
is "$said" "" "no watchdog spoke, nothing raised"
diag "the low job's cudanap lines: $(grep -h 'cudanap' "$T/low29552.err" | head -n 6)"

# -- PreemptMode=REQUEUE: the low job is killed and requeued. Not FORCE:1 here: without gang
# scheduling Slurm would run the two partitions' jobs side by side.
cluster_stop
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st handover=120" \
	"PreemptType=preempt/partition_prio" "PreemptMode=REQUEUE" \
	"PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 OverSubscribe=NO" \
	"PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 OverSubscribe=NO"
low_job 29553
check "a low job trains again, rank pids $r0 $r1" test -n "$r1"
high_job Q
requeue_ms=$took
check "Slurm killed the low job's ranks" eventually 60 gone "$r0" "$r1" ||
	diag "ranks: $(ps -o pid=,stat=,etime=,cmd= -p "$r0,$r1" | cut -c1-120 | tr '\n' ';')"
like "$(job_state "$low")" "^(PENDING|REQUEUED|REQUEUE_HOLD|REQUEUE_FED)$" "and requeued it ($(job_state "$low"))"
REPLY=
[ -n "$h" ] && ask Q verify 120
is "$REPLY" "verify ok" "the high job's memory works"
[ -n "$h" ] || diag "the high job: $(head -c 300 "$T/Q.log")"
[ -n "$h" ] && diag "REQUEUE: the high job's memory written on both GPUs $(in_s "$requeue_ms") s after its submission" &&
	diag "preemptor's submission to its first CUDA work done: $(in_s "$suspend_ms") s with SUSPEND,GANG and handover (the low job kept), $(in_s "$requeue_ms") s with REQUEUE (the low job killed)"
ask Q quit 5
wait_final "$high"
finish
