#!/usr/bin/env bash
# Asking before a suspend, with the fake driver: cudanap status and suspend --dry-run say, for a
# process never suspended, its GPU memory now, the host copy a suspend needs and the room for it,
# whether it would suspend (or why not: an importer of another's memory, managed memory, NCCL, a
# broken INI, no room, a stopped process, a thread inside a call longer than [lock] timeout_ms, an
# action under way) and the estimated times, first from defaults, then from this machine's own
# suspends; a dry run changes nothing. cudanap pick chooses the cheapest processes to suspend on
# two fake GPUs.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
mkdir "$T/fake"
json() { "$CUDANAP" status --json "$1"; }
# key PID KEY: one field of the answer, from status --json (the query asked anew)
key() {
	local v
	v=$(json "$1" | grep -o "\"$2\":\(\"[^\"]*\"\|[^,}]*\)" | head -n 1)
	v=${v#*:}
	v=${v#\"}
	echo "${v%\"}"
}
# dry PID: the dry run's line and exit status, "LINE:RC"
dry() { local out rc; out=$("$CUDANAP" suspend --dry-run "$1" 2>&1); rc=$?; echo "$out:$rc"; }
snapshot() { # what a dry run must not change: the status file but for the answer (the GPUs a running
	# process is on among it), the driver's state
	sed -E 's/"(query_[a-z]+|suspendable|why_not|gpu_now[a-z_]*|gpu_model|host_[a-z]+_mib|host_bound|est_[a-z_]+|inside|gpus|home_gpus)":("[^"]*"|[^,}]*),?//g' \
		"$T/status/$1.json"
	"$FAKECTL" "$FAKECUDA" state "$1"
}

write_ini
start A "$TARGET"
pid=$A_pid
ask A "handler sigaction"

# -- a process never suspended: its memory now, yes, and the estimate from the defaults
before=$(snapshot "$pid")
t0=$(date +%s%3N)
out=$("$CUDANAP" status)
when=$(field "$pid" query_time)
like "$when" '^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z$' "the answer's time, UTC to the ms"
check "and it is the question's ($when)" test "$t0" -le "$(date -d "$when" +%s%3N)" -a "$(date -d "$when" +%s%3N)" -le "$(date +%s%3N)"
like "$out" "NOW_MIB +SUSPEND" "cudanap status has the columns NOW_MIB and SUSPEND"
like "$out" "
$pid +running +start .* +1000 +yes 0\.3/0\.2 " \
	"a fresh process: 1000 MiB on its GPU now, it would suspend, in about 0.3 s and resume in 0.2 s"
is "$(key "$pid" suspendable)" yes "--json: suspendable"
is "$(key "$pid" gpu_now)" 0:1000 "--json: gpu_now, MiB by GPU index"
like "$(key "$pid" gpu_now_mib)" "^1000(\.0+)?$" "--json: gpu_now_mib"
is "$(key "$pid" gpu_model)" "Fake GPU 80GB" "--json: the GPU's model"
like "$(key "$pid" host_need_mib)" "^2086\.50*$" "--json: the host copy needs its memory, 1/16 more and [preflight] host_margin_mib"
like "$(key "$pid" host_room_mib)" "^[0-9.]+$" "--json: the room for it"
like "$(key "$pid" host_bound)" "^(MemAvailable|cgroup)" "--json: what bounds the room"
like "$(key "$pid" est_source)" "^defaults \(0\.20 s and 0\.080 s a GiB" "--json: the estimate comes from the defaults"
CUDANAP_FAKE_MODEL="NVIDIA H200" CUDANAP_FAKE_FOOTPRINT_MIB=61440 start H "$TARGET"
dry "$H_pid" > /dev/null
is "$(key "$H_pid" est_source):$(key "$H_pid" est_suspend_s):$(key "$H_pid" est_resume_s)" \
	"defaults (0.12 s and 0.062 s a GiB, an H200's):3.840:1.890" \
	"on an H200, the H200's defaults: 60 GiB in about 3.84 s, back in 1.89 s"
ask H quit
out=$(dry "$pid")
like "$out" "^$pid: would suspend: 1000 MiB on GPU 0; host copy 2086 MiB of [0-9]+ MiB free \(.*\); about 0\.3 s, resume 0\.2 s \(defaults .*\):0$" \
	"suspend --dry-run: would suspend, its memory, the host copy and its room, the times; exit 0"
like "$("$CUDANAP" suspend --dry-run --json "$pid" | tr -d '\n')" "^\{\"action\":\"dry-run\",\"processes\":\[ *\{.*\"pid\":$pid.*\"ok\":true.*\"would_suspend\":1\}\}$" \
	"suspend --dry-run --json"
is "$(snapshot "$pid")" "$before" "four questions changed nothing: the state, the last action, the driver's state"
ask A verify
is "$REPLY" "verify ok" "its GPU memory is intact"
ask A count
is "$REPLY" "count 0 0" "the app's own handler never saw the questions"
seq=$(field "$pid" query_seq)
"$CUDANAP" status --no-query > /dev/null
is "$(field "$pid" query_seq)" "$seq" "status --no-query asks nothing"

# -- estimates from this machine's own suspends; the cold ones are not kept: the process's first
# suspend and resume, and the first suspend since the machine booted
for i in 1 2 3; do
	"$CUDANAP" suspend "$pid" > /dev/null && "$CUDANAP" resume "$pid" > /dev/null
done
like "$(key "$pid" est_source)" "^this machine: 1 suspend \(Fake GPU 80GB\)$" \
	"after three suspends the estimate is this machine's: the process's first and the boot's first left out"
is "$(grep -c '^resume ' "$T/state/cudanap/rates")" 2 "two of three resumes kept: the process's first left out"
# every question answered before the suspend: one its asker gave up on (5 s, under load) would be
# answered after it, and that answer is not stale
t0=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
"$CUDANAP" status "$pid" > /dev/null
answered_since() { [[ $(field "$pid" query_time) > $t0 ]]; }
check "a question answered" eventually 10 answered_since
"$CUDANAP" suspend "$pid" > /dev/null
out=$("$CUDANAP" status --no-query "$pid")
like "$out" "
$pid +checkpointed .* 1000\? +yes 0\.[0-9]/0\.[0-9]\? .*
\?: as answered before the process's last action" \
	"status --no-query after a suspend: the answer from before it marked stale, not taken for now"
like "$("$CUDANAP" status --no-query --json "$pid")" '"query_stale":true,' "--json: query_stale"
is "$(key "$pid" suspendable)" asleep "asleep: suspendable says so"
out=$("$CUDANAP" status "$pid")
like "$out" "
$pid +checkpointed .* asleep +" "asked again: asleep"
check "and nothing marked" test "${out//\?/}" = "$out"
like "$(dry "$pid")" "^$pid: suspended already:0$" "a dry run of a sleeper: nothing to do"
"$CUDANAP" resume "$pid" > /dev/null
like "$("$CUDANAP" status --no-query "$pid")" "
$pid +running .* asleep\? .*
\?: as answered before" "resumed, status --no-query: running, and the old 'asleep' marked, not a contradiction"

# -- refused, each with the reason, and yes again once it is gone
ask A "drv call gpa2 cuMemAllocManaged"
like "$(dry "$pid")" "^$pid: would refuse: refusing to suspend a process that holds managed memory \(1 allocation, the first by cuMemAllocManaged in fake_target\).*:1$" \
	"managed memory: would refuse, naming the allocation; exit 1"
like "$("$CUDANAP" status)" "
$pid +running .* no +.*
$pid: would refuse: refusing to suspend a process that holds managed memory" \
	"cudanap status: no, and a line after the table says why"
ask A "drv call gpa2 cuMemFree"
like "$(dry "$pid")" "would suspend.*:0$" "freed: would suspend again"
cli suspend "$pid"
is "$rc" 0 "and does ($out)"
"$CUDANAP" resume "$pid" > /dev/null
ask A "ipc open"
like "$(dry "$pid")" "^$pid: would refuse: refusing to suspend a process that holds GPU memory imported from another process.*:1$" \
	"an IPC importer: would refuse"
ask A "ipc close"
start N "$TARGET"
ask N "thread pt_nccl_watchdg"
like "$(dry "$N_pid")" "^$N_pid: would refuse: refusing to suspend a process with NCCL communicators whose transports the driver cannot restore.*:1$" \
	"NCCL with transports that share memory: would refuse"
ask N quit
cp "$T/job.ini" "$T/good.ini"
echo "[lock" >> "$T/job.ini"
like "$(dry "$pid")" "^$pid: would refuse: .*job.ini.*:1$" "a broken INI: would refuse, naming it"
write_ini "[preflight]" "host_margin_mib = 16000000"
like "$(dry "$pid")" "^$pid: would refuse: its host copy needs [0-9]+ MiB with the margin, and .* has [0-9]+ MiB:1$" \
	"too little host memory for the host copy: would refuse"
cp "$T/good.ini" "$T/job.ini"
kill -STOP "$pid"
eventually 10 stopped "$pid" # a signal is delivered later, under load after the next command
like "$(dry "$pid")" "^$pid: would refuse: .*stopped.*:1$" "a stopped process: would refuse, at once"
like "$("$CUDANAP" status "$pid")" "
$pid +stopped .* 1000\? +no .*
$pid: would refuse: it is stopped \(SIGSTOP or a debugger\); continue it first \(kill -CONT\)
\?: as answered before" \
	"cudanap status of a stopped process: no, as the dry run says; its NOW_MIB as last asked, marked"
like "$(json "$pid")" '"suspendable":"no","why_not":"it is stopped .*"query_stale":true,"halted":"stopped"\}' \
	"--json: suspendable no, why_not, query_stale, halted"
kill -CONT "$pid"
before=$(snapshot "$pid")
like "$(dry "$pid")" "would suspend.*:0$" "all well again"
is "$(snapshot "$pid")" "$before" "refusals asked changed nothing either"

# -- a thread inside a call longer than [lock] timeout_ms
write_ini "[lock]" "timeout_ms = 300"
ask A "drv launch gpa2 6000"
ask A "drv bgsync gpa2"
is "$(key "$pid" suspendable)" yes "a thread just inside a call: yes"
like "$(key "$pid" inside)" "^thread [0-9]+ inside cuStreamSynchronize for at least 0\.[0-9] s$" "and inside says so"
sleep 0.5 # the call goes on: the next question knows it has lasted since the last one
# asked again while it says yes (3 s at most, the call lasts 6): under load a question's look may
# be the first to see the thread
long_inside="^$pid: would refuse: thread [0-9]+ inside cuStreamSynchronize for at least (0\.[3-9]|[1-9][0-9]*\.[0-9]) s, longer than \[lock\] timeout_ms \(300 ms\): a suspend would wait for it and fail:1$"
for ((i = 0; i < 10; i++)); do
	out=$(dry "$pid")
	[[ $out =~ $long_inside ]] && break
	sleep 0.3
done
like "$out" "$long_inside" "a thread inside a call longer than timeout_ms: would refuse"
eventually 20 synced A
like "$(dry "$pid")" "would suspend.*:0$" "the call ended: would suspend"
write_ini

# -- an action under way: not asked, refused at once
echo 2000 > "$T/fake/delay_checkpoint"
"$CUDANAP" suspend "$pid" > "$T/slow.out" &
slow=$!
eventually 20 has "$T/fake/events" "delay_checkpoint $pid"
t0=$(date +%s%N)
out=$(dry "$pid")
ms=$((($(date +%s%N) - t0) / 1000000))
like "$out" "^$pid: would refuse: an action is under way \(suspend, since .*\):1$" "an action in flight: would refuse"
check "without waiting for it ($ms ms)" test "$ms" -lt 1500
like "$("$CUDANAP" status --no-query "$pid")" "
$pid +running\* .* busy " "cudanap status: busy"
eventually 60 gone "$slow" || diag "the slow suspend still runs after 60 s: $(cat "$T/slow.out")"
wait $slow
rm "$T/fake/delay_checkpoint"
is "$(field "$pid" state)" checkpointed "the action went on as if never asked"
"$CUDANAP" resume "$pid" > /dev/null

# -- a process without CUDA
start B "$TARGET" --no-cuda
like "$(dry "$B_pid")" "^$B_pid: no CUDA state: nothing to suspend:0$" "no CUDA: nothing to do"
is "$(key "$B_pid" suspendable)" no-cuda "suspendable no-cuda"
ask B quit

# -- pick: the cheapest set that frees enough, on two GPUs (estimates from the defaults)
export XDG_STATE_HOME=$T/state2
CUDANAP_FAKE_FOOTPRINT_MIB=3000 start P "$TARGET"
CUDANAP_FAKE_FOOTPRINT_MIB=1000 start Q "$TARGET"
CUDANAP_FAKE_FOOTPRINT_MIB=2500 CUDANAP_FAKE_START_GPU=1 start R "$TARGET"
CUDANAP_FAKE_FOOTPRINT_MIB=9000 CUDANAP_FAKE_START_GPU=1 start S "$TARGET"
ask S "ipc open"
ask A quit
eventually 60 gone "$A_pid" || { echo "Bail out! A did not quit in 60 s (state $(field "$A_pid" state))"; exit 1; }
wait "$A_pid" # gone, not exiting: pick would count it
cli pick -c "$T/job.ini" --free 2G --gpu 0
is "$rc:$out" "0:$P_pid: frees 3000 MiB on GPU 0, about 0.4 s
total: 3000 MiB freed on GPU 0 in about 0.4 s
cudanap suspend $P_pid" "pick --free 2G --gpu 0: the one that frees enough"
cli pick -c "$T/job.ini" --free 3500 --gpu 0
like "$rc:$out" "^0:.*total: 4000 MiB freed on GPU 0 in about 0\.7 s
cudanap suspend ($P_pid $Q_pid|$Q_pid $P_pid)$" "3500 MiB: both"
cli pick -c "$T/job.ini" --free 2G
like "$rc:$out" "^0:$S_pid: would refuse: refusing to suspend a process that holds GPU memory imported from another process.*
$R_pid: frees 2500 MiB on GPU 1.*
cudanap suspend $R_pid$" "any GPU: GPU 1's 2500 MiB cost less than GPU 0's 3000 (the importer of 9000 cannot suspend, and is said first)"
cli pick -c "$T/job.ini" --free 8G --gpu 1
like "$rc:$out" "^1:$S_pid: would refuse: .*
cannot free 8192 MiB on GPU 1: the processes that would suspend hold less$" \
	"more than the suspendable hold: exit 1"
like "$("$CUDANAP" pick -c "$T/job.ini" --free 2G --json)" "^\{\"gpu\":1,\"free_mib\":2048,\"possible\":true,\"processes\":\[\{\"pid\":$R_pid,\"mib\":2500,\"est_s\":0\.3[0-9]+\}\],\"total_mib\":2500,\"total_s\":0\.3[0-9]+,\"command\":\"cudanap suspend $R_pid\"\}$" \
	"pick --json"
cli2 pick -c "$T/job.ini" --free x
like "$rc:$out" "^2:cudanap: --free wants a size" "a bad size: usage error"
"$CUDANAP" suspend $("$CUDANAP" pick -c "$T/job.ini" --free 3500 --gpu 0 | tail -n 1 | cut -d' ' -f3-) > /dev/null
is "$(field "$P_pid" state):$(field "$Q_pid" state)" checkpointed:checkpointed "its command suspends them"
finish
