#!/usr/bin/env bash
# cudanap metrics, with the fake driver: every series labelled with the process's pid, user, Slurm
# job (from its cgroup, as Slurm's cgroup plugins make it) and command (the program's name; its
# command line only with --command-line); the processes' states (napping its own), the GPU memory
# each holds or gave back on each GPU (labels gpu and UUID as dcgm-exporter writes them), its host
# copy in memory and on disk, its idle seconds, its GPU's model, the byte-seconds given back
# (counting up while a process sleeps, kept once it wakes), its actions by result, histograms of
# its suspends, resumes and wakes, and cudanap's version, in Prometheus' text format: checked by
# promtool (Debian's prometheus package) and parsed back; --textfile writes cudanap.prom
# atomically, readable by node_exporter; --listen serves it over HTTP, bad requests answered
# and survived. A real Prometheus scrapes both in prometheus.sh.
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

# B's program has a quote and a backslash in its name, and its arguments a secret
mkdir "$T/bin"
ln -s "$(readlink -f "$TARGET")" "$T/bin/fake\"tar\\get"
CUDANAP_FAKE_COPY_MIB=64 start A "$TARGET"
CUDANAP_FAKE_START_GPU=1 start B "$T/bin/fake\"tar\\get" --token=s3cret 'a"b\c'
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
	is "$(labels_of cudanap_process_state "$A_pid")" "pid=\"$A_pid\",user=\"$user\",slurm_job=\"4242\",command=\"fake_target\",state=\"checkpointed\"" \
		"A's labels: pid, user, its Slurm job from its cgroup, command (its program's name), and its state"
else
	skip "A's labels with a Slurm job" "no cgroup root may make here"
	is "$(labels_of cudanap_process_state "$A_pid")" "pid=\"$A_pid\",user=\"$user\",slurm_job=\"\",command=\"fake_target\",state=\"checkpointed\"" \
		"A's labels: pid, user, no job, command (its program's name), and its state"
fi
is "$(labels_of cudanap_process_state "$B_pid")" "pid=\"$B_pid\",user=\"$user\",slurm_job=\"\",command=\"fake\\\"tar\\\\get\",state=\"running\"" \
	"B's: outside a job, its program's name with its quote and backslash escaped"
check "no argument in a label: B's secret is not there" bash -c '! grep -q s3cret "$1"' _ "$T/m"
"$CUDANAP" metrics -c "$T/job.ini" --command-line > "$T/argv"
is "$(grep "^cudanap_process_state{pid=\"$B_pid\"" "$T/argv" | sed 's/.*command="//; s/",state.*//')" \
	"$T/bin/fake\\\"tar\\\\get --token=s3cret a\\\"b\\\\c" "--command-line: the whole command line, escaped, as asked"
is "$(value cudanap_build_info "version=\"$("$CUDANAP" --version | sed 's/^cudanap //')\"")" 1 \
	"cudanap_build_info: its version, once, with no process's labels"
is "$(value cudanap_copy_bytes "pid=\"$A_pid\"" 'where="host"'):$(value cudanap_copy_bytes "pid=\"$A_pid\"" 'where="disk"')" \
	"$((68 << 20)):0" "the suspended one's host copy: 64 MiB and the fake driver's 1/16 in host memory, none on disk"
is "$(value cudanap_copy_bytes "pid=\"$B_pid\"" 'where="host"'):$(value cudanap_copy_bytes "pid=\"$B_pid\"" 'where="disk"')" \
	"0:0" "the running one's: none"
is "$(value cudanap_gpu_model_info "pid=\"$B_pid\"" 'model="Fake GPU 80GB"')" 1 "the model of its GPU, as last asked"
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

# -- idle seconds, where naps follow a process
RUN_ARGS=(--nap 600)
start C "$TARGET"
unset RUN_ARGS
ask C "drv launch export 5" # a call the gate sees: its idleness is followed from there
idle_c() { metrics > "$T/m"; gt "$(value cudanap_idle_seconds "pid=\"$C_pid\"")" 1; }
check "a process whose naps follow it: its idle seconds ($(value cudanap_idle_seconds "pid=\"$C_pid\""))" \
	eventually 20 idle_c
is "$(value cudanap_idle_seconds "pid=\"$A_pid\"")" "" "one whose naps are off: no idle seconds"
ask C "drv launch export 5"
busy_c() { metrics > "$T/m"; awk -v v="$(value cudanap_idle_seconds "pid=\"$C_pid\"")" 'BEGIN { exit !(v != "" && v < 1) }'; }
check "working again: its idle seconds begin again" eventually 10 busy_c
ask C quit

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
cli2 metrics --textfile "$T/tf" --listen 127.0.0.1:0
is "$rc" 2 "--textfile and --listen: a usage error"

# -- --listen: the text over HTTP, made anew for each request, one at a time
"$CUDANAP" metrics -c "$T/job.ini" --listen 127.0.0.1:0 2> "$T/listen.err" &
srv=$!
said_port() { grep -q "^cudanap: metrics at http://127.0.0.1:[0-9]*/metrics$" "$T/listen.err"; }
check "--listen 127.0.0.1:0: it says where, once listening" eventually 10 said_port
url=$(sed -n 's/^cudanap: metrics at //p' "$T/listen.err")
port=${url#http://127.0.0.1:}
port=${port%/metrics}
get() { curl -s --max-time 10 -o "$T/body" -D "$T/head" -w '%{http_code}' "$@"; }
is "$(get "$url")" 200 "GET /metrics: 200"
like "$(tr -d '\r' < "$T/head")" $'\nContent-Type: text/plain; version=0.0.4; charset=utf-8\n' "in Prometheus' text format"
if command -v promtool > /dev/null; then
	out=$(promtool check metrics < "$T/body" 2>&1); rc=$?
	is "$rc:$out" "0:" "promtool takes it"
fi
is "$(sed -n 's/^# TYPE //p' "$T/body")" "$(metrics | sed -n 's/^# TYPE //p')" "the families cudanap metrics prints"
is "$(grep -c "^cudanap_process_state{pid=\"$A_pid\"" "$T/body")" 1 "A in it"
# raw BYTES...: the server's whole answer to them, its lines without their CRs
raw() {
	local fd
	exec {fd}<> "/dev/tcp/127.0.0.1/$port" || return
	printf "$@" >&"$fd" 2> /dev/null
	timeout 10 cat <&"$fd" | tr -d '\r'
	exec {fd}>&-
}
out=$(raw 'HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
like "$out" "^HTTP/1.1 200 OK
.*Content-Length: [1-9][0-9]*
Connection: close$" "HEAD /metrics: 200, its length, no body"
is "$(get "http://127.0.0.1:$port/")" 200 "GET /: a line that says where"
is "$(get "http://127.0.0.1:$port/nothing")" 404 "another path: 404"
is "$(get -X POST "$url"):$(grep -ci '^Allow: GET, HEAD' "$T/head")" 405:1 "POST: 405, GET and HEAD allowed"
is "$(raw 'nonsense\r\n\r\n' | head -n 1)" "HTTP/1.1 400 Bad Request" "a line that is no request: 400"
is "$(raw 'GET /metrics HTTP/1.1\r\nX: %09000d\r\n\r\n' 0 | head -n 1)" "HTTP/1.1 431 Request Header Fields Too Large" \
	"a head over 8 KiB: 431"
exec {idle}<> "/dev/tcp/127.0.0.1/$port" # a client that says nothing
t0=$(date +%s)
is "$(get "$url")" 200 "while it says nothing, the next request is answered"
check "within the bound on a request, 5 s ($(($(date +%s) - t0)) s)" test $(($(date +%s) - t0)) -le 8
exec {idle}>&-
check "the server runs on" kill -0 "$srv"
cloexec() { # every socket of PID is close-on-exec (its other descriptors are the test's)
	local f n=0
	for f in /proc/$1/fd/*; do
		[[ $(readlink "$f") == socket:* ]] || continue
		n=$((n + 1))
		(($(awk '/^flags:/ { print "0" $2 }' "/proc/$1/fdinfo/${f##*/}") & 02000000)) || return 1
	done
	[ "$n" -gt 0 ]
}
check "its sockets are close-on-exec" cloexec "$srv"
cli2 metrics --listen "127.0.0.1:$port"
is "$rc:$out" "1:cudanap: --listen 127.0.0.1:$port: cannot listen: Address already in use" \
	"a port in use: one line, exit 1"
cli2 metrics --listen nonsense
like "$rc:$out" "^1:cudanap: --listen nonsense: not ADDR:PORT" "not an address: one line, exit 1"
kill "$srv"
wait "$srv" 2> /dev/null
ask A quit
ask B quit
finish
