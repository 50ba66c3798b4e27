#!/usr/bin/env bash
# Slurm with the real driver, on a one-node cluster of real daemons (tests/slurm/cluster.sh): a
# 4 GiB job submitted with sbatch --cudanap, suspended and resumed by job id, its GPU memory freed
# while it sleeps and every byte back; Slurm's preemption handing the GPU on (partitions low and
# high, PreemptMode=SUSPEND,GANG, the plugin's handover=): a high job that needs the memory the low
# one holds starts once the low one is checkpointed, and the low one resumes verified; and a job
# larger than Slurm's 2 s grace under scontrol suspend (CUDANAP_SLURM_BIG_GIB, default 32): what
# it keeps while stopped, and that it comes back whole.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
. "$(dirname "$0")/../slurm/cluster.sh"
export T HOLDMEM
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st"
printf '[lock]\ntimeout_ms = 10000\n' > "$T/job.ini"
gib=4

attach G
j=$(sbatch --parsable --cudanap="$T/job.ini" -o "$T/job.log" --wrap "exec \"\$HOLDMEM\" $gib < \"\$T/G.in\" > \"\$T/G.out\"")
g=$(ready G)
check "sbatch --cudanap: a $gib GiB job starts" test -n "$g"
STATUS_DIR=$(job_dir "$j")
held=$(gpu_mib "$g")
diag "job $j, pid $g, $held MiB on the GPU"
cli suspend --slurm "$j"
is "$rc" 0 "cudanap suspend --slurm $j"
diag "$out"
is "$(field "$g" state):$(gpu_mib "$g")" checkpointed:0 "checkpointed, its GPU memory freed (nvidia-smi)"
out=$("$CUDANAP" status --slurm "$j")
like "$out" "$NODE +$g +checkpointed .* $held " "status --slurm: node, pid, state and the MiB it held"
diag "$out"
cli resume --slurm "$j"
is "$rc" 0 "cudanap resume --slurm $j"
diag "$out"
ask G verify 120
is "$REPLY" "verify ok" "every byte back"
like "$(gpu_mib "$g")" "^[1-9]" "on the GPU again"
ask G quit
wait_state "$j" COMPLETED 300
is "$(job_state "$j")" COMPLETED "the job completes"

# -- preemption: the high job needs the memory the low one holds
cluster_stop
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st handover=60" \
	"PreemptType=preempt/partition_prio" "PreemptMode=SUSPEND,GANG" \
	"PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 OverSubscribe=FORCE:1" \
	"PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 OverSubscribe=FORCE:1"
printf '[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n' > "$T/stop.ini"
cpus=$(nproc)
free0=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0)
low_gib=8
attach L
low=$(sbatch --parsable -p low -c "$cpus" --cudanap="$T/stop.ini" -o "$T/low.log" \
	--wrap "exec \"\$HOLDMEM\" $low_gib < \"\$T/L.in\" > \"\$T/L.out\"")
l=$(ready L)
STATUS_DIR=$(job_dir "$low")
check "the low job ($low_gib GiB) runs under cudanap" test -n "$l"
diag "low job $low, pid $l, $(gpu_mib "$l") MiB on the GPU, $free0 MiB free before it"
# the high job needs all of what was free but half the low job's share: only with its memory gone
high_gib=$(awk -v f="$free0" -v g="$low_gib" 'BEGIN { printf "%.2f", (f - 1024) / 1024 - g / 2 }')
attach H
t0=$(date +%s%N)
high=$(sbatch --parsable -p high -c "$cpus" -o "$T/high.log" \
	--wrap "exec \"\$HOLDMEM\" $high_gib < \"\$T/H.in\" > \"\$T/H.out\"")
h=$(ready H)
check "the high job ($high_gib GiB) starts and allocates" test -n "$h"
diag "high job $high, pid $h: ready after $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep handover "$S/log/slurmd.log" | tail -n 1 | sed 's/.*cudanap: //')"
is "$(job_state "$low"):$(field "$l" state)" SUSPENDED:checkpointed "Slurm suspended the low job, cudanap checkpointed it"
like "$(gpu_mib "$l"):$(gpu_mib "$h")" "^0:[1-9][0-9]*$" "nvidia-smi: the sleeper holds nothing, the preemptor its $high_gib GiB"
ask H verify 120
is "$REPLY" "verify ok" "the high job's memory works"
ask H quit
wait_final "$high"
wait_state "$low" RUNNING 600
until_state "$l" running
is "$(job_state "$low"):$(field "$l" state)" RUNNING:running "when it ends Slurm resumes the low job, cudanap restores it"
ask L verify 120
is "$REPLY" "verify ok" "every byte of the low job back"
ask L quit
wait_final "$low"

# -- a job larger than Slurm 22.05's 2 s between SIGTSTP and SIGSTOP
big=${CUDANAP_SLURM_BIG_GIB:-32}
attach B
jb=$(sbatch --parsable -p low -c "$cpus" --cudanap="$T/stop.ini" -o "$T/big.log" \
	--wrap "exec \"\$HOLDMEM\" $big < \"\$T/B.in\" > \"\$T/B.out\"")
b=$(ready B)
STATUS_DIR=$(job_dir "$jb")
held=$(gpu_mib "$b")
scontrol suspend "$jb"
eventually 30 stopped "$b"
sleep 3 # what it holds while Slurm keeps it stopped
diag "$big GiB under scontrol suspend: $held MiB before; stopped with state $(field "$b" state) (busy $(field "$b" busy)), $(gpu_mib "$b") MiB on the GPU 3 s after the stop"
scontrol resume "$jb"
until_state "$b" running
ask B verify 300
is "$(field "$b" state):$REPLY" "running:verify ok" "$big GiB: after scontrol resume it runs, every byte back"
diag "its last action: $(field "$b" action) $(field "$b" result), $(field "$b" message)"
ask B quit
wait_final "$jb"
finish
