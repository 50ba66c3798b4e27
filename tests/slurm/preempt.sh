#!/usr/bin/env bash
# Slurm preemption that hands the GPU on, with real daemons and the fake driver: partitions low and
# high (PriorityTier 1 and 2, OverSubscribe=FORCE:1), PreemptType=preempt/partition_prio,
# PreemptMode=SUSPEND,GANG, GPUs not counted as GRES (Slurm never gives away a suspended job's
# GRES). A low job under --cudanap, with SIGTSTP/SIGCONT as its INI's signals, is suspended when a
# high job arrives; the plugin's handover= makes the high job start only once the low job's GPU
# memory is off the GPU; when the high job ends Slurm resumes the low one, which finishes with its
# data verified. The same for a two-rank NCCL job (the fake NCCL's suspend API), whose ranks lead
# their cut themselves.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/cluster.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake T TARGET CUDANAP
mkdir "$T/fake"
cpus=$(nproc)
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st handover=30" \
	"PreemptType=preempt/partition_prio" "PreemptMode=SUSPEND,GANG" \
	"PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 OverSubscribe=FORCE:1" \
	"PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 OverSubscribe=FORCE:1"
diag "slurmctld, slurmd and munged up on $NODE: $(sinfo -h -o '%P %T' | tr '\n' ' ')"
printf '[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n' > "$T/stop.ini"

# -- the low job: a CUDA program of the fake GPU, every CPU of the node
attach L
low=$(sbatch --parsable -p low -c "$cpus" --cudanap="$T/stop.ini" -o "$T/low.log" \
	--wrap 'exec "$TARGET" < "$T/L.in" > "$T/L.out"')
l=$(ready L)
check "the low job runs under cudanap" test -n "$l"
STATUS_DIR=$(job_dir "$low")
is "$(field "$l" state):$(job_state "$low")" running:RUNNING "running, Slurm says RUNNING"
check "its memory is on the (fake) GPU" test -e "$T/fake/$l.gpu"

# -- the high job arrives: it records what the GPU held when it started, then runs its own. The
# fake driver's checkpoint takes 1 s, as a real one of several GiB does: without the handover the
# high job would start while the low job's memory is still on the GPU.
echo 1000 > "$T/fake/delay_checkpoint"
attach H
high=$(sbatch --parsable -p high -c "$cpus" -o "$T/high.log" \
	--wrap 'ls "$T/fake" > "$T/H.seen"; exec "$TARGET" < "$T/H.in" > "$T/H.out"')
h=$(ready H)
check "the high job starts" test -n "$h"
wait_state "$low" SUSPENDED
is "$(job_state "$low"):$(job_state "$high")" SUSPENDED:RUNNING "Slurm suspended the low job for the high one"
until_state "$l" checkpointed
rm "$T/fake/delay_checkpoint"
is "$(field "$l" state)" checkpointed "the low job is checkpointed"
like "$(tr '\n' ' ' < "$T/H.seen")" "(^| )$l\.host " "when the high job started, the low job's memory was off the GPU (the handover)"
check "and not on it" bash -c "! grep -qx '$l.gpu' '$T/H.seen'"
eventually 20 stopped "$l" # Slurm's SIGSTOP follows its SIGTSTP by 2 s
is "$(awk '{ print $3 }' "/proc/$l/stat")" T "and Slurm has stopped it"
ask H verify
is "$REPLY" "verify ok" "the high job uses the GPU"
said=$(grep 'handover' "$S/log/slurmd.log" | tail -n 1)
like "$said" "handover: job $high waited (0\.[5-9]|[1-9])[0-9.]* s for 1 suspended job to let their GPUs go" \
	"slurmd's log says the high job waited for the low one"
diag "${said#*cudanap: }"

# -- the high job ends: Slurm resumes the low job, and cudanap its GPU memory
tell H quit
wait_final "$high"
is "$(job_state "$high")" COMPLETED "the high job completes"
wait_state "$low" RUNNING
until_state "$l" running
is "$(job_state "$low"):$(field "$l" state)" RUNNING:running "Slurm resumes the low job, cudanap restores it"
check "its memory is back on the GPU" test -e "$T/fake/$l.gpu"
ask L verify
is "$REPLY" "verify ok" "every byte back"
tell L quit
wait_final "$low"
is "$(job_state "$low")" COMPLETED "and it finishes"

# -- an NCCL job's two ranks (the fake NCCL, through its suspend API): Slurm signals every process
# of the job and no command line leads the ranks' cut, so they lead it themselves
. "$(dirname "$0")/../preload/fakerank.sh"
export CUDANAP_FAKE_NCCL=$FAKENCCL CUDANAP_FAKE_GPUS=2
printf '[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n[lock]\ntimeout_ms = 5000\n' > "$T/nccl.ini"
attach A
attach B
low=$(sbatch --parsable -p low -c "$cpus" --cudanap="$T/nccl.ini" -o "$T/nlow.log" \
	--wrap '"$TARGET" < "$T/A.in" > "$T/A.out" & "$TARGET" < "$T/B.in" > "$T/B.out" & wait')
a=$(ready A) b=$(ready B)
STATUS_DIR=$(job_dir "$low")
ask A "nccl init slurmjob 0 2"; r=$REPLY
ask B "nccl init slurmjob 1 2"
is "$r:$REPLY" "nccl ok:nccl ok" "a two-rank NCCL job runs under --cudanap"
ask A "nccl loop 3"; ask B "nccl loop 5"
check "it trains" advancing B
attach H
high=$(sbatch --parsable -p high -c "$cpus" -o "$T/high.log" \
	--wrap 'ls "$T/fake" > "$T/H.seen"; exec "$TARGET" < "$T/H.in" > "$T/H.out"')
h=$(ready H)
check "a high job arrives and starts" test -n "$h"
is "$(job_state "$low"):$(field "$a" state):$(field "$b" state)" SUSPENDED:checkpointed:checkpointed \
	"Slurm suspended the NCCL job; both ranks checkpointed, their cut led by themselves"
check "when the high job started, neither rank's memory was on the GPU" \
	bash -c "! grep -qxE '($a|$b)\.gpu' '$T/H.seen'"
diag "$(grep 'handover' "$S/log/slurmd.log" | tail -n 1 | sed 's/.*cudanap: //')"
tell H quit
wait_final "$high"
wait_state "$low" RUNNING
until_state "$a" running && until_state "$b" running
is "$(field "$a" state):$(field "$b" state):$(field "$b" nccl | cut -d' ' -f1)" running:running:suspend-api: \
	"Slurm resumed the job: both ranks restored, their communicator resumed"
check "A trains on" advancing A
check "B trains on" advancing B
is "$(steps A | cut -d' ' -f2):$(steps B | cut -d' ' -f2):$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "0:0:" \
	"no NCCL call failed, none reached a suspended communicator"
tell A quit
tell B quit
wait_final "$low"
is "$(job_state "$low")" COMPLETED "and the job finishes"

# -- without handover=: the race the option closes is Slurm's (the preemptor is launched while the
# preempted job's tasks get SIGTSTP); a job not under cudanap on the same node is never waited for
cluster_stop
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st handover=30" \
	"PreemptType=preempt/partition_prio" "PreemptMode=SUSPEND,GANG" \
	"PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 OverSubscribe=FORCE:1" \
	"PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 OverSubscribe=FORCE:1"
low=$(sbatch --parsable -p low -c "$cpus" -o /dev/null --wrap 'sleep 300')
wait_state "$low" RUNNING
t0=$SECONDS
high=$(sbatch --parsable -p high -c "$cpus" -o /dev/null --wrap 'true')
wait_final "$high"
is "$(job_state "$high")" COMPLETED "a plain low job (no cudanap) is preempted and the high job runs"
check "without waiting for it ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -lt 20
scancel "$low"
finish
