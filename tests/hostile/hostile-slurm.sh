#!/usr/bin/env bash
# A local user against another's Slurm jobs, with real daemons (tests/slurm/cluster.sh) and the
# fake driver: the attacker can make nothing in the plugin's directories (root's, and each job's
# given to its user); the victim's own suspended job's directory holds a FIFO, links to a file and
# to a directory, an oversized and a garbage status file, and statuses naming another user's
# process and two of its own outside the job (one with the job's SLURM_JOB_ID in its environment),
# and another job's task still starts at once, the handover wait believing none of it; root's
# --slurm finds the job's process; the victim continues its job's process after Slurm stopped it
# and says it holds its GPU: a task that starts handover= seconds after the suspend does not wait
# for it; the epilog removes the job's directory, whatever it holds (300 directories deep), whatever
# its mode, and nothing a link in it pointed to. That max_s bounds the wait, squeue and scontrol
# included: tests/unit/test_rootpaths.c.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/users.sh"

# -- Slurm: the plugin's directories, the handover wait, the epilog
. "$(dirname "$0")/../slurm/cluster.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA
cluster_start "required $SPANK preload=$PRELOAD statusbase=$S/st handover=5"
chmod 755 "$S"
printf '[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n' > "$T/pub/stop.ini"
chmod 644 "$T/pub/stop.ini"
jv=$(sbatch --parsable --uid=cnvictim --cudanap="$T/pub/stop.ini" -D "$T/pub" -o "$T/pub/v.log" \
	--wrap 'exec sleep 300')
vp=$(job_pid "$jv" sleep)
vdir=$(job_dir "$jv")
eventually 20 test -e "$vdir/$vp.json"
is "$(stat -c '%U %a' "$S/st/cudanap"):$(stat -c '%U %a' "$vdir")" "root 711:cnvictim 700" \
	"the victim's job: its directory, cnvictim's (0700), in the plugin's, root's (0711)"
not() { ! "$@" 2> /dev/null; }
check "the attacker can make no job directory there" not "${AS_A[@]}" mkdir "$S/st/cudanap/job$((jv + 1))"
check "nor put anything in the victim's" not "${AS_A[@]}" mkfifo "$vdir/1.json"
# What the victim itself can plant in its job's directory: a FIFO, links to a file and to a
# directory, an oversized and a garbage file, statuses of another user's process and of one of
# its own outside the job, each claiming to hold its GPU.
"${AS_A[@]}" /bin/sleep 300 &
ap=$!
"${AS_V[@]}" /bin/sleep 300 &
stray=$!
# and one of its own outside Slurm that says it is the job's (SLURM_JOB_ID in its environment)
"${AS_V[@]}" SLURM_JOB_ID="$jv" /bin/sleep 300 &
forged=$!
eventually 20 test -e "/proc/$ap" -a -e "/proc/$stray" -a -e "/proc/$forged"
claim() { printf '{"pid":%d,"starttime":%s,"state":"running"}' "$1" "$(awk '{ print $22 }' "/proc/$1/stat")"; }
head -c 1000000 /dev/zero | tr '\0' '{' > "$T/pub/big"
chmod 644 "$T/pub/big"
"${AS_V[@]}" sh -c 'cd "$1" && mkfifo 1.json && ln -s /etc/shadow 2.json && ln -s / 3.json &&
	cp "$2" 4.json && echo garbage > 5.json && printf %s "$3" > "$4.json" &&
	printf %s "$5" > "$6.json" && printf %s "$7" > "$8.json"' _ "$vdir" "$T/pub/big" \
	"$(claim "$ap")" "$ap" "$(claim "$stray")" "$stray" "$(claim "$forged")" "$forged"
is "$(ls "$vdir" | wc -l)" 9 "the victim planted eight things in its job's directory"
# root's --slurm finds the job's processes, which are the victim's
out=$("$CUDANAP" suspend --dry-run --slurm "$jv" 2>&1)
like "$out" "^$vp: " "root's suspend --dry-run --slurm finds the victim's job's process"
check "and not the one that only says it is the job's" not grep -q "^$forged:" <<< "$out"
t_suspend=$(date +%s.%N)
scontrol suspend "$jv"
wait_state "$jv" SUSPENDED
jr=$(sbatch --parsable -D "$T/pub" -o "$T/pub/r.log" --wrap "echo started > '$T/pub/r.start'")
eventually 30 test -s "$T/pub/r.start"
said=$(grep "handover: job $jr " "$S/log/slurmd.log" | tail -n 1)
like "$said" "job $jr waited [0-9.]+ s for 1 suspended job" \
	"another job's task looked at the suspended job, which held nothing (slurmd's log)"
took=$(sed -n 's/.* waited \([0-9.]*\) s .*/\1/p' <<< "$said")
check "and started at once: it waited ${took:-?} s (handover=5)" \
	awk -v t="${took:-9}" 'BEGIN { exit !(t < 1) }'
kill "$ap" "$stray" "$forged" 2> /dev/null
# The victim continues its own job's process after Slurm stopped it (SIGCONT: the job stays
# suspended for Slurm) and says in its status file, again and again, that it holds its GPU: a
# task that starts more than handover= seconds after the suspend does not wait for it (every task
# of every job on the node waited the whole handover= time, for as long as the job stayed
# suspended). The file names the job's own signals, and says an action is under way: a root
# `cudanap status` of a run beside this one asks every process on the host that is not busy, with
# the signal its file names (one naming none would send the job's sleep SIGUSR1), and the job's
# agent, answering, wrote its own status ("no CUDA") over the claim: the next task's look, between
# that and the claimer's next write, found nothing held (2 runs in 9 beside other builds' suites).
check "Slurm stopped the victim's job's process after its grace" eventually 20 stopped "$vp"
"${AS_V[@]}" kill -CONT "$vp"
check "and the victim continued it: it runs, its job still suspended" \
	eventually 20 not stopped "$vp"
is "$(job_state "$jv")" SUSPENDED "squeue still says the job is suspended"
"${AS_V[@]}" sh -c 'while :; do printf %s "$2" > "$1/.f" && mv "$1/.f" "$1/$3.json"; sleep 0.2; done' \
	_ "$vdir" "$(claim "$vp" | sed 's/}$/,"gpu_now":"0:1000","gpus":"0=GPU-x","suspend_signal":20,"resume_signal":18,"busy":true}/')" "$vp" &
claimer=$!
past() { awk -v t0="$1" -v s="$2" -v now="$(date +%s.%N)" 'BEGIN { exit !(now > t0 + s) }'; }
eventually 20 past "$t_suspend" 6
is "$(job_state "$jv"):$(test -d "$vdir" && echo dir)" SUSPENDED:dir "6 s after its suspend the job is still suspended, its directory there"
jr2=$(sbatch --parsable -D "$T/pub" -o "$T/pub/r2.log" --wrap "echo started > '$T/pub/r2.start'")
eventually 60 test -s "$T/pub/r2.start" ||
	diag "job $jr2 did not start: $(cat "$T/pub/r2.log" 2>&1) $(squeue 2>&1) $(tail -n 5 "$S/log/slurmd.log")"
said=$(grep "handover: job $jr2 " "$S/log/slurmd.log" | tail -n 1)
took=$(sed -n 's/.* waited \([0-9.]*\) s .*/\1/p' <<< "$said")
check "a task 6 s after the suspend starts at once: it waited ${took:-?} s (handover=5): $said" \
	awk -v t="${took:-9}" 'BEGIN { exit !(t < 1) }'
log_like "$S/log/slurmd.log" "handover: not waiting for 1 process of 1 job suspended more than 5 s ago: still running with GPU memory, continued by their user" \
	"slurmd's log says why it did not wait"
kill "$claimer"
wait "$claimer" 2> /dev/null
# The epilog, the job's directory holding directories (one of mode 0000), 300 deep with 10 MiB at
# the bottom (64 levels used to be as deep as it went), and made 0777 by its user.
touch "$T/pub/keep" && "${AS_V[@]}" ln -s "$T/pub/keep" "$vdir/keep.json"
"${AS_V[@]}" sh -c 'mkdir -p "$1/sub/deeper" && chmod 0 "$1/sub/deeper" && chmod 777 "$1"' _ "$vdir"
"${AS_V[@]}" python3 -c 'import os, sys
d = os.path.join(sys.argv[1], *["d"] * 300)
os.makedirs(d)
open(os.path.join(d, "big.json"), "wb").write(b"{" * (10 << 20))' "$vdir" 2>&1 | sed 's/^/# /'
check "the victim left 10 MiB 300 directories deep" test -s "$vdir$(printf '/d%.0s' $(seq 300))/big.json"
scontrol resume "$jv"
scancel "$jv"
wait_final "$jv"
eventually 20 test ! -e "$vdir"
check "the epilog removed the victim's job directory, its directories, 300 deep and 0777, and all" test $? -eq 0
check "and nothing a link in it pointed to" test -e "$T/pub/keep" -a -e /etc/shadow
finish
