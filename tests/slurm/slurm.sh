#!/usr/bin/env bash
# Slurm with real daemons (cluster.sh) and the fake driver: the SPANK plugin's --cudanap on srun,
# sbatch and salloc, a bad INI refused at submission and at launch, whole-job suspend and resume
# by job id (a batch script and an srun step as one job), scancel --signal, --signal=B:USR1@T with
# the batch-script trap, scontrol suspend/resume with SIGTSTP/SIGCONT as the INI's signals, the
# per-job status directory removed at the job's end, and a job without --cudanap left alone.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/cluster.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake T TARGET CUDANAP
mkdir "$T/fake"
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st"
diag "slurmctld, slurmd and munged up on $NODE: $(sinfo -h -o '%P %T' | tr '\n' ' ')"

printf '[lock]\ntimeout_ms = 5000\n' > "$T/job.ini"
printf '[lock]\ntimeout_ms = soon\n' > "$T/bad.ini"

# -- the option
like "$(srun --help 2>&1)" "--cudanap=\[INI\|off\]" "srun --help lists --cudanap=[INI|off]"
like "$(sbatch --help 2>&1)" "--cudanap" "so does sbatch --help"
like "$(salloc --help 2>&1)" "--cudanap" "and salloc --help"

# -- a bad INI: refused at submission, in the INI's own line, with no job queued
out=$(cd "$T" && sbatch --cudanap=bad.ini --wrap true 2>&1); rc=$?
is "$rc" 1 "sbatch --cudanap=bad.ini fails"
like "$out" "cudanap: $T/bad.ini:2: lock.timeout_ms: 'soon' is not a number" "with file:line of the error"
out=$(srun --cudanap="$T/missing.ini" true 2>&1); rc=$?
like "$rc:$out" "^1:.*cudanap: $T/missing.ini" "srun with an INI that does not exist fails at once"
is "$(squeue -h | wc -l)" 0 "nothing was queued"
# broken between submission and launch: the launch fails
cp "$T/job.ini" "$T/late.ini"
j=$(cd "$T" && sbatch --parsable --hold --cudanap=late.ini -o "$T/late.log" --wrap 'echo ran')
cp "$T/bad.ini" "$T/late.ini"
scontrol release "$j"
wait_final "$j"
is "$(job_state "$j")" FAILED "an INI broken before the launch fails the job"
check "its script never ran" test "$(grep -c '^ran' "$T/late.log")" = 0
like "$(cat "$T/late.log")" "(^|
)cudanap: $T/late.ini:2: lock.timeout_ms" "the INI's error in the job's output"
is "$(sinfo -h -R | wc -l)" 0 "the node is not drained for it"

# -- a job of two steps: the batch script's own target and an srun step's
attach A
attach B
cat > "$T/two.sh" <<'EOF'
#!/bin/bash
"$TARGET" < "$T/A.in" > "$T/A.out" &
srun -n1 bash -c 'exec "$TARGET" < "$T/B.in" > "$T/B.out"' &
wait
EOF
j=$(sbatch --parsable -n2 --cudanap="$T/job.ini" -o "$T/two.log" "$T/two.sh")
a=$(ready A) b=$(ready B)
check "sbatch --cudanap: the batch script's target and the srun step's both start" test -n "$a" -a -n "$b"
diag "job $j: pids $a (batch step) and $b (step 0); scontrol listpids: $(scontrol listpids "$j" | awk 'NR > 1 { printf "%s:%s ", $1, $3 }')"
STATUS_DIR=$(job_dir "$j")
like "$(tr '\0' '\n' < "/proc/$b/environ" | grep -E '^(LD_PRELOAD|CUDANAP_CONFIG|CUDANAP_STATUS_DIR)=' | sort | tr '\n' ' ')" \
	"^CUDANAP_CONFIG=$T/job.ini CUDANAP_STATUS_DIR=$STATUS_DIR LD_PRELOAD=.*libcudanap.so $" \
	"a task's environment: the preload appended, the INI and the job's status directory"
is "$(stat -c %a "$STATUS_DIR"):$(field "$a" state):$(field "$b" state)" "700:running:running" \
	"the per-job status directory (0700) has both"
cli suspend --slurm "$j"
is "$rc" 0 "cudanap suspend --slurm $j"
like "$out" "total: [0-9]+ processes, 2 suspended, [0-9]+ without CUDA, 0 failed" "both targets suspended, the rest passed over"
diag "$out"
is "$(field "$a" state):$(field "$b" state)" checkpointed:checkpointed "both checkpointed"
out=$("$CUDANAP" status --slurm "$j")
like "$out" "NODE +PID" "status --slurm has a NODE column"
like "$out" "(^|
)$NODE +$b +checkpointed" "and one line per process: node, pid, state"
diag "$out"
like "$("$CUDANAP" status --slurm "$j" --json)" "\"node\": *\"$NODE\".*\"pid\": *$a" "--json names the node"
cli resume --slurm "$j"
like "$rc:$out" "^0:.*2 resumed" "cudanap resume --slurm $j"
ask A verify
r=$REPLY
ask B verify
is "$r:$REPLY" "verify ok:verify ok" "every byte of both back"

# -- scancel --signal to every process of the job (the batch shell too: it runs under cudanap)
scancel --signal=USR1 --full "$j"
until_state "$a" checkpointed
until_state "$b" checkpointed
is "$(field "$a" state):$(field "$b" state):$(job_state "$j")" checkpointed:checkpointed:RUNNING \
	"scancel --signal=USR1 --full: both checkpointed, the job runs on"
scancel --signal=USR2 --full "$j"
until_state "$a" running
until_state "$b" running
is "$(field "$a" state):$(field "$b" state)" running:running "scancel --signal=USR2 --full: both running"
ask A verify
r=$REPLY
ask B verify
is "$r:$REPLY" "verify ok:verify ok" "data intact"
tell A quit
tell B quit
wait_state "$j" COMPLETED 300
is "$(job_state "$j")" COMPLETED "the job completes"
for _ in $(seq 300); do [ -e "$STATUS_DIR" ] || break; sleep 0.1; done
check "its status directory is gone with it (the plugin's job epilog)" test ! -e "$STATUS_DIR"

# -- a job without --cudanap: Slurm's usual meaning of USR1 (it ends the job)
j=$(sbatch --parsable -o /dev/null --wrap 'sleep 300')
pid=$(job_pid "$j" sleep)
check "a job without --cudanap has no preload" test -n "$pid" -a -z "$(tr '\0' '\n' < "/proc/$pid/environ" | grep '^LD_PRELOAD=.*libcudanap')"
scancel --signal=USR1 --full "$j"
wait_final "$j"
like "$(job_state "$j")" "FAILED|CANCELLED" "USR1 ends it, as without cudanap ($(job_state "$j"))"
check "and no status directory was made for it" test ! -e "$(job_dir "$j")"

# -- a site default (plugstack default=) for one partition; --cudanap=off opts out
cluster_stop
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st default=$T/job.ini partitions=gpu"
env_of() { # env_of SRUN-ARGS...: LD_PRELOAD and CUDANAP_CONFIG of a task
	srun -Q "$@" bash -c 'echo "${LD_PRELOAD:-none} ${CUDANAP_CONFIG:-none}"' 2>&1
}
like "$(env_of -p gpu)" "libcudanap.so $T/job.ini$" "default=INI partitions=gpu: a job in gpu runs under cudanap"
is "$(env_of -p debug)" "none none" "a job in another partition does not"
is "$(env_of -p gpu --cudanap=off)" "none none" "--cudanap=off opts out"
like "$(LD_PRELOAD=libc.so.6 env_of -p debug --cudanap)" "^libc.so.6:.*libcudanap.so $T/job.ini$" \
	"--cudanap with no INI takes the site's; an LD_PRELOAD of the job's own is kept first"

# -- scontrol suspend: SIGTSTP, 2 s, SIGSTOP; scontrol resume: SIGCONT. With those as the INI's
# signals the GPU is let go before the stop and taken back at the continue.
printf '[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n' > "$T/stop.ini"
attach C
j=$(sbatch --parsable --cudanap="$T/stop.ini" -o /dev/null --wrap 'exec "$TARGET" < "$T/C.in" > "$T/C.out"')
c=$(ready C)
STATUS_DIR=$(job_dir "$j")
scontrol suspend "$j"
until_state "$c" checkpointed
eventually 20 stopped "$c" # Slurm's SIGSTOP follows its SIGTSTP by 2 s
is "$(field "$c" state):$(awk '{ print $3 }' "/proc/$c/stat")" checkpointed:T \
	"[signals] suspend = SIGTSTP: scontrol suspend checkpoints the job, then Slurm stops it"
scontrol resume "$j"
until_state "$c" running
like "$(field "$c" state):$(awk '{ print $3 }' "/proc/$c/stat")" "^running:[SR]$" "resume = SIGCONT: scontrol resume restores it"
ask C verify
is "$REPLY" "verify ok" "data intact"
tell C quit

# -- sbatch --signal=B:USR1@T: the batch shell's trap suspends the whole job before its time limit
attach D
cat > "$T/limit.sh" <<'EOF'
#!/bin/bash
trap '"$CUDANAP" suspend --slurm "$SLURM_JOB_ID" > "$T/trap.log" 2>&1' USR1
srun -n1 bash -c 'exec "$TARGET" < "$T/D.in" > "$T/D.out"' &
pid=$!
while ! wait "$pid"; do kill -0 "$pid" 2> /dev/null || break; done
EOF
j=$(sbatch --parsable --time=2 --signal=B:USR1@100 --cudanap="$T/job.ini" -o "$T/limit.log" "$T/limit.sh")
d=$(ready D)
STATUS_DIR=$(job_dir "$j")
t0=$(date +%s)
for _ in $(seq 900); do [ "$(field "$d" state)" = checkpointed ] && break; sleep 0.1; done
is "$(field "$d" state)" checkpointed "--signal=B:USR1@100 with --time=2: the trap suspended the job"
diag "after $(( $(date +%s) - t0 )) s; the trap's cudanap: $(tr '\n' ' ' < "$T/trap.log")"
is "$(job_state "$j")" RUNNING "the job runs on, asleep"
cli resume --slurm "$j"
is "$rc" 0 "resume --slurm"
ask D verify
is "$REPLY" "verify ok" "data intact"
tell D quit
finish
