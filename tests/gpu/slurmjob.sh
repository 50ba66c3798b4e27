#!/usr/bin/env bash
# Slurm with the real driver: a 4 GiB job submitted with sbatch --cudanap to a one-node cluster of
# real daemons (tests/slurm/cluster.sh), suspended and resumed by job id; its GPU memory is freed
# while it sleeps and every byte comes back.
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
out=$("$CUDANAP" suspend --slurm "$j"); rc=$?
is "$rc" 0 "cudanap suspend --slurm $j"
diag "$out"
is "$(field "$g" state):$(gpu_mib "$g")" checkpointed:0 "checkpointed, its GPU memory freed (nvidia-smi)"
out=$("$CUDANAP" status --slurm "$j")
like "$out" "$NODE +$g +checkpointed .* $held " "status --slurm: node, pid, state and the MiB it held"
diag "$out"
out=$("$CUDANAP" resume --slurm "$j"); rc=$?
is "$rc" 0 "cudanap resume --slurm $j"
diag "$out"
ask G verify 120
is "$REPLY" "verify ok" "every byte back"
like "$(gpu_mib "$g")" "^[1-9]" "on the GPU again"
ask G quit
wait_state "$j" COMPLETED 300
is "$(job_state "$j")" COMPLETED "the job completes"
finish
