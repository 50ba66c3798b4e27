# A one-node Slurm cluster for the tests, made of Debian's own daemons: munged, slurmctld and slurmd
# run as processes of the test, with every file under $T/slurm, and are stopped by their PIDs.
# Sourced after lib.sh. A daemon that cannot start skips the suite with the daemon's own error.
# SLURM_PLUGINDIR names Slurm's plugins where they are not at their built-in place.
for b in munged slurmctld slurmd sbatch srun scontrol squeue scancel; do
	command -v "$b" > /dev/null ||
		skip_all "$b not found: Slurm's daemons are not installed (Debian: slurmctld slurmd slurm-client munge)"
done
[ -n "${SPANK:-}" ] && [ -f "$SPANK" ] || skip_all "the SPANK plugin is not built (no slurm/spank.h when meson set up)"
[ "$(id -u)" = 0 ] || skip_all "the test cluster's daemons run as root"

S=$T/slurm
export SLURM_CONF=$S/slurm.conf
NODE=$(hostname -s)
cluster_pids=() cluster_slices=()

# daemon_failed NAME LOG: skip the suite with the daemon's last error line.
daemon_failed() {
	local why
	why=$(grep -iE 'error|fatal' "$2" "$S/log/$1"*.log 2> /dev/null | grep -v 'initialization failed' | tail -n 1)
	why=${why#*:}
	skip_all "$1 did not start: ${why:-$(tail -n 1 "$2" 2> /dev/null)}"
}

# cluster_lock NAME: one test cluster of this kind per host at a time: a second suite running
# beside this one (another build, CI) waits here.
cluster_lock() {
	if [ -z "${cluster_lock:-}" ]; then
		exec {cluster_lock}> "${TMPDIR:-/tmp}/$1"
		flock -w 500 "$cluster_lock" || { ok 1 "no test cluster free after 500 s"; finish; }
	fi
}

# munge_start: munged up, its socket and key under $S/munge; the directories of $S made.
munge_start() {
	mkdir -p "$S/munge" "$S/ctld" "$S/d" "$S/log" "$S/st"
	chmod 700 "$S/munge"
	chmod 755 "$S/st" # the plugin's statusbase: root makes cudanap/ in it
	head -c 1024 /dev/urandom > "$S/munge/key"
	chmod 400 "$S/munge/key"
	munged -F -f --socket="$S/munge/sock" --key-file="$S/munge/key" --pid-file="$S/munge/pid" \
		--seed-file="$S/munge/seed" --log-file="$S/log/munged.log" > "$S/log/munged.out" 2>&1 &
	cluster_pids+=($!)
	for _ in $(seq 100); do [ -S "$S/munge/sock" ] && break; sleep 0.1; done
	[ -S "$S/munge/sock" ] || daemon_failed munged "$S/log/munged.out"
}

# slurm_conf PLUGSTACK_LINE CTLD_ADDR NODE_LINES [SLURM.CONF LINE...]: plugstack.conf and
# slurm.conf for a cluster whose slurmctld listens on CTLD_ADDR and whose nodes NODE_LINES name.
# Lines given replace the two partitions (debug, the default, and gpu) when one of them names a
# partition, and are added either way. With per_node set, each slurmd's files are named after its
# node (%n): several run on one host.
slurm_conf() {
	local plug=$1 addr=$2 nodes=$3 parts="PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP"
	shift 3
	printf '%s\n' "$@" | grep -q '^PartitionName=' && parts=
	printf '%s\n' "$plug" > "$S/plugstack.conf"
	cat > "$SLURM_CONF" <<-CONF
	ClusterName=cudanap
	SlurmctldHost=$NODE($addr)
	SlurmctldPort=$(free_port)
	SlurmdPort=$(free_port)
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/munge
	AuthInfo=socket=$S/munge/sock
	CredType=cred/munge
	StateSaveLocation=$S/ctld
	SlurmdSpoolDir=$S/d${per_node:+/%n}
	SlurmctldPidFile=$S/ctld.pid
	SlurmdPidFile=$S/d${per_node:+/%n}.pid
	SlurmctldLogFile=$S/log/slurmctld.log
	SlurmdLogFile=$S/log/slurmd${per_node:+.%n}.log
	PlugStackConfig=$S/plugstack.conf
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	SwitchType=switch/none
	MpiDefault=none
	SchedulerType=sched/builtin
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	ReturnToService=2
	JobCompType=jobcomp/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	MailProg=/bin/true
	${SLURM_PLUGINDIR:+PluginDir=$SLURM_PLUGINDIR}
	$nodes
	$parts
	CONF
	[ $# -eq 0 ] || printf '%s\n' "$@" >> "$SLURM_CONF"
}

# cgroup_slices: on a cgroup v2 host slurmd asks systemd over D-Bus for a scope; a test machine may
# have neither, and slurmd then makes its cgroup itself. Its stepd's cgroup goes under
# system.slice beside the cgroup slurmd starts in (the root's on most hosts; a sandbox may put the
# test in a cgroup of its own), made here if missing and removed again.
cgroup_slices() {
	local own slice
	own=$(sed -n 's/^0:://p' /proc/self/cgroup 2> /dev/null)
	own=${own%/*}
	cluster_slices=()
	for slice in /sys/fs/cgroup/system.slice "/sys/fs/cgroup$own/system.slice"; do
		[ -f /sys/fs/cgroup/cgroup.controllers ] && [ ! -d "$slice" ] && mkdir "$slice" 2> /dev/null &&
			cluster_slices+=("$slice")
	done
}

# ctld_start: slurmctld up (10 s at most), or the suite skipped with its error.
ctld_start() {
	slurmctld -D -i > "$S/log/slurmctld.out" 2>&1 &
	cluster_pids+=($!)
	for _ in $(seq 100); do scontrol ping 2> /dev/null | grep -q UP && break; sleep 0.1; done
	scontrol ping 2> /dev/null | grep -q UP || daemon_failed slurmctld "$S/log/slurmctld.out"
}

# cluster_start PLUGSTACK_LINE [SLURM.CONF LINE...]: the cluster up with that line in
# plugstack.conf, one node idle; $S/st is there for the plugin's statusbase (slurm_conf says what
# the lines do).
cluster_start() {
	local plug=$1
	shift
	# Two clusters of this kind share the node's name, and with it slurmd's cgroup
	# (system.slice/NODE_slurmstepd.scope), which each cleans up after itself.
	cluster_lock cudanap-test-cluster.lock
	munge_start
	slurm_conf "$plug" 127.0.0.1 "NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN" "$@"
	cgroup_slices
	ctld_start
	slurmd_start && return 0
	# slurmd initialises a cgroup plugin whatever the other plugins are; where cgroup v2 cannot
	# serve it (a sandbox that gives the test a cgroup it may not make system.slice beside), the v1
	# plugin starts, and nothing here uses it.
	if grep -q 'Unable to initialize cgroup plugin' "$S/log/slurmd.log" "$S/log/slurmd.out" 2> /dev/null; then
		printf 'CgroupPlugin=cgroup/v1\n' >> "$S/cgroup.conf"
		mv "$S/log/slurmd.log" "$S/log/slurmd-cgroup.log"
		unset 'cluster_pids[2]'
		slurmd_start && return 0
	fi
	daemon_failed slurmd "$S/log/slurmd.out"
}

# slurmd_start: slurmd up, its node idle (30 s at most); 1 if it died or never got there.
slurmd_start() {
	local pid
	slurmd -D > "$S/log/slurmd.out" 2>&1 &
	pid=$!
	cluster_pids+=("$pid")
	for _ in $(seq 300); do
		[ "$(sinfo -h -n "$NODE" -o %T 2> /dev/null | head -n 1)" = idle ] && return 0
		kill -0 "$pid" 2> /dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Every job cancelled, then the daemons stopped, last started first.
cluster_stop() {
	local i
	if [ ${#cluster_pids[@]} -ge 3 ]; then
		scancel --full --signal=KILL --quiet $(squeue -h -o %i 2> /dev/null) 2> /dev/null
		for _ in $(seq 100); do [ -z "$(squeue -h 2> /dev/null)" ] && break; sleep 0.1; done
	fi
	for ((i = ${#cluster_pids[@]} - 1; i >= 0; i--)); do kill "${cluster_pids[i]}" 2> /dev/null; done
	for i in "${cluster_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$i" 2> /dev/null || break; sleep 0.1; done
		kill -9 "$i" 2> /dev/null
	done
	cluster_pids=()
	for i in "${cluster_slices[@]}"; do find "$i" -depth -type d -exec rmdir {} + 2> /dev/null; done
	cluster_slices=()
}
trap 'cluster_stop; cleanup' EXIT
trap 'exit 1' TERM INT

# job_state J: Slurm's state of job J (PENDING, RUNNING, COMPLETED, FAILED, ...).
job_state() { scontrol show job "$1" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# wait_final J [TENTHS]: until job J has ended (COMPLETED, FAILED, CANCELLED, ...): a job leaves
# RUNNING for COMPLETING first, while its steps are cleaned up.
wait_final() {
	for _ in $(seq "${2:-300}"); do
		case $(job_state "$1") in
		PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | "") sleep 0.1 ;;
		*) return 0 ;;
		esac
	done
	return 1
}
# job_pid J COMMAND: the pid of J's process running COMMAND (its name in /proc/PID/comm), once it
# runs; scontrol listpids may list a step's pid as -1 before its task has started.
job_pid() {
	local p
	for _ in $(seq 300); do
		for p in $(scontrol listpids "$1" 2> /dev/null | awk 'NR > 1 && $1 > 0 { print $1 }'); do
			[ "$(cat "/proc/$p/comm" 2> /dev/null)" = "$2" ] && { echo "$p"; return 0; }
		done
		sleep 0.1
	done
	diag "no $2 in job $1 ($(job_state "$1")): $(scontrol listpids "$1" 2>&1 | tr '\n' ' ')" >&2
	return 1
}
# wait_state J STATE [TENTHS]: until job J is in STATE.
wait_state() {
	for _ in $(seq "${3:-300}"); do [ "$(job_state "$1")" = "$2" ] && return 0; sleep 0.1; done
	return 1
}

# attach NAME: fifos $T/NAME.in and .out that a job's target reads and writes, opened here for
# ask/answer without waiting for the job.
attach() {
	local fin fout
	rm -f "$T/$1.in" "$T/$1.out"
	mkfifo "$T/$1.in" "$T/$1.out"
	exec {fin}<> "$T/$1.in"
	exec {fout}<> "$T/$1.out"
	printf -v "${1}_in" '%s' "$fin"
	printf -v "${1}_out" '%s' "$fout"
}
# tell NAME LINE: LINE to its target, no answer awaited (quit answers nothing: ask would wait
# for its timeout on the fifo attach keeps open)
tell() { local fd; eval "fd=\$${1}_in"; echo "$2" >&"$fd"; }
# ready NAME: its target's pid, once it has said "ready PID ..."
ready() {
	answer "$1" 60
	[ "${REPLY%% *}" = ready ] && { REPLY=${REPLY#ready }; echo "${REPLY%% *}"; }
}
job_dir() { echo "$S/st/cudanap/job$1"; }
# until_state PID STATE: until PID's status file says STATE (20 s at most); srun forwards a
# signal to its tasks, so a task may count one signal twice and seq alone cannot tell.
until_state() {
	for _ in $(seq 200); do [ "$(field "$1" state)" = "$2" ] && [ "$(field "$1" busy)" = false ] && return 0; sleep 0.1; done
	return 1
}
