#!/usr/bin/env bash
# cudanap metrics, with the fake driver: every series labelled with the process's pid, user, Slurm
# job (from its cgroup, as Slurm's cgroup plugins make it) and command; the processes' states
# (napping its own), the GPU memory each holds or gave back on each GPU (labels gpu and UUID as
# dcgm-exporter writes them), the byte-seconds given back (counting up while a process sleeps,
# kept once it wakes), its actions by result, and histograms of its suspends, resumes and wakes,
# in Prometheus' text format: checked by promtool (Debian's prometheus package) and parsed back;
# --textfile writes cudanap.prom atomically, readable by node_exporter. A real Prometheus scrapes
# it in prometheus.sh.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
mkdir "$T/fake"
write_ini
metrics() { "$CUDANAP" metrics -c "$T/job.ini"; }
# value NAME LABEL...: the value of the sample NAME whose labels include each LABEL (k="v") in the
# last scrape ($T/m); "" when none
value() {
	local name=$1
	shift
	awk -v name="$name" -v want="$(printf '%s\n' "$@")" '
		BEGIN { n = split(want, w, "\n") }
		index($0, name "{") == 1 {
			for (i = 1; i <= n; i++) if (index($0, w[i] ",") == 0 && index($0, w[i] "}") == 0) next
			print $NF; exit
		}' "$T/m"
}
labels_of() { grep "^$1{pid=\"$2\"" "$T/m" | head -n 1 | sed 's/^[^{]*{//; s/}.*//'; } # NAME PID
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
uuid0=GPU-face0000-0000-0000-0000-000000000000

start A "$TARGET"
CUDANAP_FAKE_START_GPU=1 start B "$TARGET" 'a"b\c'
# A Slurm job's cgroup (cgroup v1's pids hierarchy, or v2), made for A where root may: its job
# label is read from there, never from its environment
job= cgdir=
# removed at the end, once A and its controller (which it started in there) are gone
cg_rm() { rmdir "$cgdir/job_4242" 2> /dev/null; }
cg_gone() { eventually 10 cg_rm; rmdir "$cgdir"; }
for root in /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -w "$root/cgroup.procs" ] || continue
	mkdir -p "$root/cudanap-test-$$/job_4242" 2> /dev/null || continue
	cgdir=$root/cudanap-test-$$
	if echo "$A_pid" > "$cgdir/job_4242/cgroup.procs" 2> /dev/null; then
		job=4242
		at_exit cg_gone
		break
	fi
	rmdir "$cgdir/job_4242" "$cgdir"
done
"$CUDANAP" suspend -c "$T/job.ini" "$B_pid" > /dev/null && "$CUDANAP" resume -c "$T/job.ini" "$B_pid" > /dev/null
"$CUDANAP" status -c "$T/job.ini" "$A_pid" "$B_pid" > /dev/null # asked: what each holds now
"$CUDANAP" suspend -c "$T/job.ini" "$A_pid" > /dev/null
"$CUDANAP" nap -c "$T/job.ini" "$B_pid" > /dev/null
ask B "drv launch export 5"
woke "$B_pid"
metrics > "$T/m"; rc=$?
is "$rc" 0 "cudanap metrics exits 0"
if command -v promtool > /dev/null; then
	out=$(promtool check metrics < "$T/m" 2>&1); rc=$?
	is "$rc:$out" "0:" "promtool check metrics: no error, no lint"
else
	skip "promtool check metrics" "no promtool (Debian's prometheus package)"
fi
user=$(id -un)
if [ -n "$job" ]; then
	is "$(labels_of cudanap_process_state "$A_pid")" "pid=\"$A_pid\",user=\"$user\",slurm_job=\"4242\",command=\"$TARGET\",state=\"checkpointed\"" \
		"A's labels: pid, user, its Slurm job from its cgroup, command, and its state"
else
	skip "A's labels with a Slurm job" "no cgroup root may make here"
	is "$(labels_of cudanap_process_state "$A_pid")" "pid=\"$A_pid\",user=\"$user\",slurm_job=\"\",command=\"$TARGET\",state=\"checkpointed\"" \
		"A's labels: pid, user, no job, command, and its state"
fi
is "$(labels_of cudanap_process_state "$B_pid")" "pid=\"$B_pid\",user=\"$user\",slurm_job=\"\",command=\"$TARGET a\\\"b\\\\c\",state=\"running\"" \
	"B's: outside a job, its command's quote and backslash escaped"
is "$(value cudanap_process_state "pid=\"$A_pid\"" 'state="checkpointed"'):$(value cudanap_process_state "pid=\"$B_pid\"" 'state="running"')" \
	1:1 "each process's state"
is "$(value cudanap_gpu_memory_bytes "pid=\"$A_pid\"" 'gpu="0"' "UUID=\"$uuid0\"" 'state="released"')" 1048576000 \
	"the suspended one: the 1000 MiB it held on GPU 0, released, with GPU 0's UUID"
is "$(value cudanap_gpu_memory_bytes "pid=\"$B_pid\"" 'gpu="1"' 'UUID="GPU-face0000-0000-0000-0000-000000000001"' 'state="held"')" 1048576000 \
	"the running one: what it holds on GPU 1"
actions() { # PID: its successes, suspend:resume:nap:wake
	local a out= sep=
	for a in suspend resume nap wake; do
		out+=$sep$(value cudanap_actions_total "pid=\"$1\"" "action=\"$a\"" 'result="ok"')
		sep=:
	done
	echo "$out"
}
is "$(actions "$B_pid")" 1:1:1:1 "B's actions: a suspend, a resume, a nap and a wake, each ok"
is "$(actions "$A_pid")" 1:0:0:0 "A's: one suspend; the others 0, there before the first"
# histogram NAME PID: "count:+Inf bucket:buckets ascending?:sum > 0?"
histogram() {
	local c inf
	c=$(value "$1_count" "pid=\"$2\"")
	inf=$(value "$1_bucket" "pid=\"$2\"" 'le="+Inf"')
	grep "^$1_bucket{pid=\"$2\"" "$T/m" | awk -v c="$c" -v inf="$inf" -v sum="$(value "$1_sum" "pid=\"$2\"")" '
		{ if ($NF < last) up = "no"; last = $NF; n++ }
		END { printf "%s:%s:%s:%s:%d", c, inf, (up ? up : "yes"), (sum > 0 ? "yes" : "no"), n }'
}
is "$(histogram cudanap_suspend_seconds "$B_pid")" 2:2:yes:yes:12 \
	"suspend seconds, a histogram: B's suspend and nap, 12 buckets, cumulative, +Inf the count, a sum"
is "$(histogram cudanap_resume_seconds "$B_pid")" 2:2:yes:yes:12 "resume seconds: its resume and its wake"
is "$(histogram cudanap_wake_seconds "$B_pid")" 1:1:yes:yes:12 "wake seconds: what its waking call waited"
b1=$(value cudanap_released_byte_seconds_total "pid=\"$B_pid\"")
a1=$(value cudanap_released_byte_seconds_total "pid=\"$A_pid\"")
check "the byte-seconds B gave back while it was suspended and while it napped ($b1)" gt "$b1" 0
sleep 1 # time passes: A, asleep, gives back 1000 MiB a second more
metrics > "$T/m"
a2=$(value cudanap_released_byte_seconds_total "pid=\"$A_pid\"")
check "A's count up while it sleeps: about 1000 MiB a second ($a1 then $a2)" \
	awk -v a="$a1" -v b="$a2" 'BEGIN { d = (b - a) / 1048576000; exit !(d > 0.9 && d < 3) }'
is "$(value cudanap_released_byte_seconds_total "pid=\"$B_pid\"")" "$b1" "B's stays as it was while it runs"
"$CUDANAP" resume -c "$T/job.ini" "$A_pid" > /dev/null
metrics > "$T/m"
a3=$(value cudanap_released_byte_seconds_total "pid=\"$A_pid\"")
check "A's kept once it runs again, never less ($a2 then $a3)" gt "$a3" "$a2"
like "$(field "$A_pid" released_byte_s)" "^[0-9]+\.[0-9]+$" "kept by the process, in its status file"
is "$(value cudanap_gpu_memory_bytes "pid=\"$A_pid\"" 'state="released"')" "" "and it holds its memory again"

# -- failures by result: a lock that times out, and a refusal
write_ini "[lock]" "timeout_ms = 200"
ask A "kernel 2000"
"$CUDANAP" suspend -c "$T/job.ini" "$A_pid" > /dev/null
ask A "drv call gpa2 cuMemAllocManaged"
"$CUDANAP" suspend -c "$T/job.ini" "$A_pid" > /dev/null
ask A "drv call gpa2 cuMemFree"
metrics > "$T/m"
is "$(value cudanap_actions_total "pid=\"$A_pid\"" 'action="suspend"' 'result="CUDA_ERROR_NOT_READY"'):$(value cudanap_actions_total "pid=\"$A_pid\"" 'action="suspend"' 'result="REFUSED"')" \
	1:1 "failures counted by result: the lock that timed out, the refusal"
is "$(histogram cudanap_suspend_seconds "$A_pid" | cut -d: -f1)" 1 "only successes are timed"
is "$(field "$A_pid" actions)" "suspend ok 1,resume ok 1,suspend CUDA_ERROR_NOT_READY 1,suspend REFUSED 1" \
	"kept by the process, in its status file"
write_ini

# -- --textfile: cudanap.prom replaced atomically, readable by node_exporter's user
mkdir "$T/tf"
: > "$T/tf/.cudanap.prom.tmp" # left by a run that died: replaced, never appended to
"$CUDANAP" metrics -c "$T/job.ini" --textfile "$T/tf"; rc=$?
is "$rc:$(ls -A "$T/tf"):$(stat -c %a "$T/tf/cudanap.prom")" "0:cudanap.prom:644" \
	"--textfile DIR: DIR/cudanap.prom, 0644, no temporary file left"
if command -v promtool > /dev/null; then
	check "and promtool takes it" promtool check metrics < "$T/tf/cudanap.prom"
fi
cli2 metrics --textfile "$T/none"
like "$rc:$out" "^1:cudanap: --textfile $T/none: cannot write cudanap.prom: No such file or directory$" "a DIR that is not there: one line"
cli2 metrics extra
is "$rc" 2 "an argument it does not take: a usage error"
ask A quit
ask B quit
finish
