#!/usr/bin/env bash
# cudanap metrics, with the fake driver: the processes' states, the GPU memory each holds or gave
# back on each GPU (labels gpu and UUID as dcgm-exporter writes them, and pid), the byte-seconds
# given back (counting up while a process sleeps, kept once it wakes), naps, wakes and the last
# wake's delay, in Prometheus' text format: checked by promtool (Debian's prometheus package) and
# parsed back; --textfile writes cudanap.prom atomically, readable by node_exporter.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
mkdir "$T/fake"
write_ini
metrics() { "$CUDANAP" metrics -c "$T/job.ini"; }
# value NAME LABELS: the sample's value in the last scrape ($T/m), "" when absent
value() { awk -v k="$1{$2}" '$1 == k { print $2 }' "$T/m"; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
uuid0=GPU-face0000-0000-0000-0000-000000000000

start A "$TARGET"
CUDANAP_FAKE_START_GPU=1 start B "$TARGET"
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
is "$(value cudanap_process_state "pid=\"$A_pid\",state=\"checkpointed\""):$(value cudanap_process_state "pid=\"$B_pid\",state=\"running\"")" \
	1:1 "each process's state"
is "$(value cudanap_gpu_memory_bytes "pid=\"$A_pid\",gpu=\"0\",UUID=\"$uuid0\",state=\"released\"")" 1048576000 \
	"the suspended one: the 1000 MiB it held on GPU 0, released, with GPU 0's UUID"
is "$(value cudanap_gpu_memory_bytes "pid=\"$B_pid\",gpu=\"1\",UUID=\"GPU-face0000-0000-0000-0000-000000000001\",state=\"held\"")" 1048576000 \
	"the running one: what it holds on GPU 1"
is "$(value cudanap_naps_total "pid=\"$B_pid\""):$(value cudanap_wakes_total "pid=\"$B_pid\"")" 1:1 "its nap and its wake"
check "the wake's delay, in seconds" gt "$(value cudanap_wake_seconds "pid=\"$B_pid\"")" 0
b1=$(value cudanap_released_byte_seconds_total "pid=\"$B_pid\"")
a1=$(value cudanap_released_byte_seconds_total "pid=\"$A_pid\"")
check "the byte-seconds B gave back while it was suspended and while it napped ($b1)" gt "$b1" 0
sleep 1
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
is "$(value cudanap_gpu_memory_bytes "pid=\"$A_pid\",gpu=\"0\",UUID=\"$uuid0\",state=\"released\"")" "" "and it holds its memory again"

# -- --textfile: cudanap.prom replaced atomically, readable by node_exporter's user
mkdir "$T/tf"
: > "$T/tf/.cudanap.prom.tmp" # left by a run that died: replaced, never appended to
"$CUDANAP" metrics -c "$T/job.ini" --textfile "$T/tf"; rc=$?
is "$rc:$(ls -A "$T/tf"):$(stat -c %a "$T/tf/cudanap.prom")" "0:cudanap.prom:644" \
	"--textfile DIR: DIR/cudanap.prom, 0644, no temporary file left"
if command -v promtool > /dev/null; then
	check "and promtool takes it" promtool check metrics < "$T/tf/cudanap.prom"
fi
out=$("$CUDANAP" metrics --textfile "$T/none" 2>&1); rc=$?
like "$rc:$out" "^1:cudanap: --textfile $T/none: cannot write cudanap.prom: No such file or directory$" "a DIR that is not there: one line"
out=$("$CUDANAP" metrics extra 2>&1); rc=$?
is "$rc" 2 "an argument it does not take: a usage error"
ask A quit
ask B quit
finish
