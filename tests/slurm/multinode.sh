#!/usr/bin/env bash
# Jobs across nodes, on a Slurm cluster of two nodes on one host (nodes.sh), with the fake driver
# (each node its own GPUs) and the fake NCCL (its state shared, as the network between the ranks):
# a 2x2 NCCL job on NCCL's suspend API, its whole-job cycles by `cudanap suspend|resume --slurm J`
# from the controller and from a node (one line per node, every rank checkpointed with its
# communicator suspended, training on after each resume); status across nodes; a rank on one node
# failing its lock (the rollback resumes everything on both); one node's part of the command
# killed in the middle of the cut (the others give up, everything runs on); Slurm's own suspend
# and resume, the ranks leading their cut across the nodes over TCP; a rank killed in the middle
# of that cut; Slurm's SUSPEND,GANG preemption across both nodes, the handover counted on each;
# the epilog removing each node's files.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/nodes.sh"
. "$(dirname "$0")/../preload/fakerank.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$S/run/fake \
	CUDANAP_FAKE_NCCL_DIR=$T/nccl CUDANAP_FAKE_NCCL=$FAKENCCL CUDANAP_FAKE_GPUS=2 T TARGET CUDANAP
unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_NET_GDR_LEVEL
mkdir "$T/nccl"
nodes_start "required $SPANK preload=$PRELOAD statusbase=$S/run"
diag "slurmctld on the host, a slurmd on each of ${NODES[*]}: $(sinfo -h -o '%P %T %N' | tr '\n' ' ')"
printf '[lock]\ntimeout_ms = 5000\n[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n' > "$T/job.ini"

# job2x2 COMM [SBATCH ARGS...]: a job of 2 nodes x 2 ranks, each a target on its fifos R0..R3 with
# a communicator COMM of the 4 of them, all-reducing; job, pid[R] and node[R] set.
job2x2() {
	local comm=$1 r
	shift
	for r in 0 1 2 3; do attach "R$r"; done
	job=$(sbatch --parsable -N2 --ntasks-per-node=2 --cudanap="$T/job.ini" -o "$T/$comm.log" "$@" \
		--wrap 'srun bash -c '\''exec "$TARGET" < "$T/R$SLURM_PROCID.in" > "$T/R$SLURM_PROCID.out"'\''')
	for r in 0 1 2 3; do
		pid[r]=$(ready "R$r") node[r]=${NODES[r / 2]}
		[ -n "${pid[r]}" ] || return 1
	done
	for r in 0 1 2 3; do ask "R$r" "nccl init $comm $r 4"; [ "$REPLY" = "nccl ok" ] || return 1; done
	# a step every 20-35 ms (each leaves a file per rank in the fake NCCL's directory)
	for r in 0 1 2 3; do ask "R$r" "nccl loop $((20 + 5 * r))"; done
}
rfield() { STATUS_DIR=$(node_dir "${node[$1]}" "$job") field "${pid[$1]}" "$2"; } # rfield R KEY
states() { local r; for r in 0 1 2 3; do printf '%s ' "$(rfield "$r" state)"; done; }
rank_is() { [ "$(rfield "$1" state):$(rfield "$1" busy)" = "$2:false" ]; } # rank_is R STATE
all_are() { [ "$(states)" = "$1 $1 $1 $1 " ]; } # all_are STATE: every rank's status says it
comms() { local r; for r in 0 1 2 3; do rfield "$r" nccl | cut -d: -f1; done | sort -u | tr '\n' ' '; }
trains() { local r; for r in 0 1 2 3; do advancing "R$r" || return 1; done; }
clean() { [ -z "$(cat "$T/nccl/misuse" 2> /dev/null)$(ls "$T/nccl" | grep unmatched)" ]; }
quit_job() { local r; for r in 0 1 2 3; do tell "R$r" quit; done; wait_final "$job"; }
# hold R: rank R's loop held inside an NCCL call (the fake NCCL's hold file), which keeps the cut
# open; held once its steps stop (a check that nothing moves for 0.5 s)
hold() {
	local a
	touch "$T/nccl/hold.${pid[$1]}"
	for _ in $(seq 20); do
		a=$(steps "R$1")
		sleep 0.5
		[ "$(steps "R$1")" = "$a" ] && return 0
	done
	return 1
}
# cut_said R: rank R has said its counts at a cut (its note beside its status file)
cut_said() { [ -e "$(node_dir "${node[$1]}" "$job")/${pid[$1]}.nccl-cut" ]; }
# dialled NODE: how many connections NODE has open to the leader of a cut ([nccl] cut_port's
# ports, from 28640 on)
dialled() {
	local n=0 rem st port
	while read -r _ _ rem st _; do
		[ "$st" = 01 ] || continue
		port=$((16#${rem#*:}))
		[ "$port" -ge 28640 ] && [ "$port" -lt 28704 ] && n=$((n + 1))
	done < <(on_node "$1" cat /proc/net/tcp)
	echo "$n"
}
# relay_of NODE: the pid of this command's part on NODE (a task of its srun step there)
relay_of() {
	local p
	for p in $(grep -l -- '--relay' /proc/[0-9]*/cmdline 2> /dev/null | cut -d/ -f3); do
		tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "SLURMD_NODENAME=$1" && { echo "$p"; return; }
	done
}

job2x2 cut
check "a 2x2 NCCL job runs under --cudanap, two ranks on each node" test "${node[0]}:${node[3]}" = "cnode1:cnode2"
check "it trains" trains
is "$(tr '\0' '\n' < "/proc/${pid[2]}/environ" | grep ^SLURMD_NODENAME=):$(rfield 2 state)" \
	"SLURMD_NODENAME=cnode2:running" "rank 2 runs on cnode2, its status in cnode2's own job directory"

# -- whole-job cycles led from the controller: every node reached through Slurm
good=0 lines=0
for i in 1 2 3; do
	cli suspend --slurm "$job"
	[ "$rc" = 0 ] && all_are checkpointed && [ "$(comms)" = "suspended " ] || { diag "$out"; continue; }
	[ "$(grep -c '^node cnode[12]: [0-9]* processes, 2 suspended, [0-9]* without CUDA, 0 failed$' <<< "$out")" = 2 ] &&
		lines=$((lines + 1))
	cli resume --slurm "$job"
	[ "$rc" = 0 ] && all_are running && [ "$(comms)" = "suspend-api " ] && trains && good=$((good + 1))
done
is "$good" 3 "3 whole-job cycles from the controller: all 4 ranks checkpointed with their communicator suspended, then resumed, training on"
is "$lines" 3 "each outcome has one line per node: 2 suspended on each"
diag "$out"
check "no operation unmatched, none reached a suspended communicator" clean

# -- from a node of the job: a task of it on cnode2, and a shell on cnode1
out=$(srun --jobid="$job" --overlap -N1 -n1 -w cnode2 "$CUDANAP" suspend --slurm "$job" 2>&1); rc=$?
like "$rc:$out" "^0:.*total: 2 nodes, [0-9]+ processes, 4 suspended" "cudanap suspend --slurm in a task on cnode2 reaches both nodes"
check "all 4 checkpointed" all_are checkpointed
out=$(on_node cnode1 "$CUDANAP" resume --slurm "$job" 2>&1); rc=$?
like "$rc:$out" "^0:.*total: 2 nodes, [0-9]+ processes, 4 resumed" "cudanap resume --slurm from a shell on cnode1 reaches both"
check "all 4 run and train" eval 'all_are running && trains'
out=$(srun --jobid="$job" --overlap -N2 --ntasks-per-node=1 "$CUDANAP" suspend --slurm "$job" 2>&1); rc=$?
like "$rc:$out" "suspend --slurm $job reaches every node of the job by itself: run it once, not in each task of a step" \
	"the recipe of one command per node is refused: it would take the job over and over"
check "and nothing was suspended" all_are running

# -- the commands that only look, across nodes: status, a dry run; the JSON of an action
cli suspend --dry-run --slurm "$job"
like "$rc:$out" "^0:(.*
)?cnode1: ${pid[0]}: would suspend: .*
cnode2: ${pid[2]}: would suspend: " "suspend --dry-run --slurm from the controller asks the ranks of both nodes, each line naming its node"
cli suspend --slurm "$job" --json
like "$rc:$(tr -d '\n' <<< "$out")" '^0:\{"action":"suspend","job":"[0-9]+","nodes":\[ *\{"node":"cnode1","answered":true,"processes":[0-9]+,"ok":2,.*\{"node":"cnode2","answered":true,"processes":2,"ok":2,' \
	"suspend --slurm --json: an object with one entry per node"
like "$(tr -d '\n' <<< "$out")" '"processes":\[ *\{"node":"cnode1","pid":[0-9]+,"ok":true,' "and each process's entry naming its node"
is "$(grep -o '"status":{"pid":' <<< "$out" | wc -l)" "$(grep -o '{"node":"cnode[12]","pid":' <<< "$out" | wc -l)" \
	"each with its whole status file, however long (a node's lines come in pieces srun keeps apart)"
cli resume --slurm "$job"
check "resumed" eval 'all_are running && trains'
cli prepare --slurm "$job"
like "$rc:$out" "^0:.*
node cnode1: [0-9]+ processes, 2 prepared, [0-9]+ without CUDA, 0 failed
node cnode2: 2 processes, 2 prepared, 0 without CUDA, 0 failed" "prepare --slurm: the ranks of both nodes fault their host copies in ahead"
cli status --slurm "$job"
like "$out" "(^|
)cnode1 +${pid[0]} +running.*
cnode2 +${pid[2]} +running" "status --slurm from the controller: the rows of both nodes, each named"
is "$(grep -c '^NODE ' <<< "$out")" 1 "under one header"
check "in one table: each node's rows laid out again, every cell under its head" awk '
	/^NODE / { h = $0; next }
	h != "" && /^cnode[12] / {
		for (i = 2; i <= length(h); i++) {
			w = substr(h, i); sub(/ .*/, "", w)
			if (substr(h, i, 1) == " " || substr(h, i - 1, 1) != " ") continue
			if (w ~ /MIB$/) { e = i + length(w) - 1; if (substr($0, e, 1) == " " || substr($0, e + 1, 1) != " ") bad = 1 }
			else if (substr($0, i - 1, 1) != " " || substr($0, i, 1) == " ") bad = 1
		}
	}
	END { exit bad }' <<< "$out"

# -- a rank on cnode2 failing its lock: the rollback resumes everything, on both nodes
printf '[lock]\ntimeout_ms = 300\n[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n' > "$T/job.ini"
ask R3 "kernel 2000"
cli suspend --slurm "$job" --retries 0
is "$rc" 1 "rank 3's lock times out after the communicators' suspend: the job's suspend fails"
like "$out" "(^|
)cnode2: ${pid[3]}: suspend failed: .*its NCCL communicators stay suspended until the job is resumed" "rank 3's line says so, under its node"
like "$out" "(^|
)rollback: node cnode1: 2 processes resumed in [0-9.]+ s: every process runs again; node cnode2: 2 processes resumed in [0-9.]+ s: every process runs again" \
	"the rollback resumes the ranks of both nodes"
diag "$out"
check "all 4 run, their communicators resumed together" eval 'all_are running && [ "$(comms)" = "suspend-api " ]'
check "and they train on" trains
ask R3 sync 10
printf '[lock]\ntimeout_ms = 5000\n[signals]\nsuspend = SIGTSTP\nresume = SIGCONT\n' > "$T/job.ini"

# -- cnode2's part of the command killed in the middle of the cut: rank 0 held inside an NCCL call
# (the fake NCCL's hold file) keeps the cut open while the other three have said their counts
hold 0
t0=$SECONDS
"$CUDANAP" suspend --slurm "$job" --retries 0 > "$T/killed.out" 2>&1 &
bg=$!
eventually 20 eval 'cut_said 1 && cut_said 2 && cut_said 3'
r=$(relay_of cnode2)
check "the cut is under way, three ranks at it; the command's task on cnode2 is $r" test -n "$r"
kill -9 "$r"
rm "$T/nccl/hold.${pid[0]}"
wait "$bg"
is "$?" 1 "the suspend fails"
like "$(cat "$T/killed.out")" "(^|
)node cnode2: no answer for 10 s.*: its processes are as they were then" "one line says cnode2 did not answer"
diag "after $((SECONDS - t0)) s: $(tr '\n' '|' < "$T/killed.out")"
check "every rank runs on, on both nodes" eventually 20 all_are running
check "and the job trains on" trains

# -- Slurm's own suspend and resume: SIGTSTP and SIGCONT to every task on both nodes, no command
# line to lead the cut: the ranks meet over TCP at the one on cnode1 that leads it
good=0
for i in 1 2; do
	scontrol suspend "$job"
	eventually 20 all_are checkpointed && [ "$(comms)" = "suspended " ] || { diag "$(states)"; scontrol resume "$job"; continue; }
	eventually 20 stopped "${pid[3]}" # Slurm's SIGSTOP after its grace
	scontrol resume "$job"
	eventually 20 all_are running && [ "$(comms)" = "suspend-api " ] && trains && good=$((good + 1))
done
is "$good" 2 "2 cycles of scontrol suspend and resume: all 4 ranks checkpointed at one cut across the nodes, restored, training on"
check "no operation unmatched, none reached a suspended communicator" clean

# -- the leader's first port taken by another program, and a stranger at the leader: the ranks meet
# on the next of the job's ports, and a connection that cannot prove it is a rank is refused
h=$(printf '%s' "$job.0" | sha256sum | cut -c1-2)
first=$((28640 + 16#$h % 64)) second=$((28640 + (16#$h + 1) % 64))
node_bg cnode1 python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1])))
s.listen()
time.sleep(120)' "$first" &
squatter=$!
listening() { [[ $(on_node cnode1 cat /proc/net/tcp6) =~ :$(printf '%04X' "$1")\ [0-9A-F:]+\ 0A ]]; }
check "another program listens on the job's first port ($first) on cnode1" eventually 10 listening "$first"
hold 0
kill -TSTP "${pid[@]}"
eventually 20 eval 'cut_said 1 && cut_said 2 && cut_said 3'
check "the ranks' leader listens on the next one ($second)" eventually 10 listening "$second"
out=$(timeout 10 python3 - "$NET.11" "$second" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
f = s.makefile("rw")
print(f.readline().strip())
f.write("rank cnode2 4242 " + "0" * 32 + " " + "ab" * 16 + "\n")
f.flush()
print(f.readline().strip())
PY
)
like "$out" "^cut-hub 1 $job\.0 [0-9a-f]{32}
refused " "a stranger at the leader, without a proof, is greeted and refused"
rm "$T/nccl/hold.${pid[0]}"
check "the cut goes on: all 4 checkpointed" eventually 20 all_are checkpointed
kill -CONT "${pid[@]}"
check "and resumed, training on" eventually 20 eval 'all_are running && [ "$(comms)" = "suspend-api " ] && trains'
kill "$squatter"

# -- a rank on cnode2 killed in the middle of that cut (signals from elsewhere, rank 0 held again)
hold 0
kill -TSTP "${pid[@]}"
eventually 20 eval 'cut_said 1 && cut_said 2 && cut_said 3 && [ "$(dialled cnode2)" = 2 ]'
check "the ranks' own cut is under way, three of them at it, both of cnode2's connected to its leader" \
	eval 'cut_said 3 && [ "$(dialled cnode2)" = 2 ]'
kill -9 "${pid[3]}"
rm "$T/nccl/hold.${pid[0]}"
check "the three left give up and run on" eventually 20 eval 'rank_is 0 running && rank_is 1 running && rank_is 2 running'
like "$(rfield 2 message)" "rank ${pid[3]} on node cnode2 is gone" "rank 2 says why: rank 3, on cnode2, is gone"
diag "rank 0: $(rfield 0 message) | rank 1: $(rfield 1 message) | rank 2: $(rfield 2 message)"
scancel --signal=KILL --full "$job"
wait_final "$job"
for n in "${NODES[@]}"; do
	eventually 10 test ! -e "$(node_dir "$n" "$job")"
done
check "the epilog on each node removed that node's status directory" \
	eval '[ ! -e "$(node_dir cnode1 "$job")" ] && [ ! -e "$(node_dir cnode2 "$job")" ]'

# -- Slurm's SUSPEND,GANG preemption across both nodes: a high job that needs every CPU of both
cluster_stop
nodes_start "required $SPANK preload=$PRELOAD statusbase=$S/run handover=30" \
	"PreemptType=preempt/partition_prio" "PreemptMode=SUSPEND,GANG" \
	"PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 OverSubscribe=FORCE:1" \
	"PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 OverSubscribe=FORCE:1"
rm -rf "$T/nccl" && mkdir "$T/nccl"
job2x2 gang -p low
low=$job
check "a low 2x2 NCCL job trains" trains
echo 500 > "$S/nodes/cnode1/run/fake/delay_checkpoint"
echo 500 > "$S/nodes/cnode2/run/fake/delay_checkpoint"
high=$(sbatch --parsable -p high -N2 --ntasks-per-node=1 -c "$(nproc)" -o "$T/high.log" \
	--wrap 'srun bash -c '\''ls "$CUDANAP_FAKE_DIR" > "$T/H.seen.$SLURMD_NODENAME"; sleep 1'\''')
check "a high job that needs both nodes arrives and runs" wait_state "$high" RUNNING
is "$(job_state "$low")" SUSPENDED "Slurm suspended the low job"
check "its 4 ranks checkpointed at one cut, led by themselves across the nodes" eventually 20 all_are checkpointed
# its tasks wait in the plugin (handover=) until the low job's ranks let their GPUs go
check "the high job's tasks start on both nodes" eventually 30 test -s "$T/H.seen.cnode1" -a -s "$T/H.seen.cnode2"
check "when the high job's tasks started, none of the low ranks' memory was on either node's GPUs" \
	bash -c "test -s '$T/H.seen.cnode1' -a -s '$T/H.seen.cnode2' && ! grep -qxE '(${pid[0]}|${pid[1]})\\.gpu' '$T/H.seen.cnode1' && ! grep -qxE '(${pid[2]}|${pid[3]})\\.gpu' '$T/H.seen.cnode2'"
for n in "${NODES[@]}"; do
	log_like "$S/log/slurmd.$n.log" "handover: job $high waited [0-9.]+ s for 1 suspended job to let their GPUs go" \
		"slurmd on $n counted the handover"
done
wait_final "$high"
is "$(job_state "$high")" COMPLETED "the high job completes"
check "Slurm resumes the low job on both nodes" wait_state "$low" RUNNING
check "all 4 ranks restored, their communicator resumed" eventually 20 eval 'all_are running && [ "$(comms)" = "suspend-api " ]'
check "and it trains on" trains
check "nothing unmatched, no misuse" clean
rm "$S/nodes/cnode1/run/fake/delay_checkpoint" "$S/nodes/cnode2/run/fake/delay_checkpoint"
quit_job
is "$(job_state "$low")" COMPLETED "the low job finishes"
check "and the epilog on each node removed its files" eventually 10 eval \
	'[ ! -e "$(node_dir cnode1 "$low")" ] && [ ! -e "$(node_dir cnode2 "$low")" ]'
finish
