#!/usr/bin/env bash
# Two-rank PyTorch jobs (NCCL) on two GPUs. With NCCL's default transports a suspend is refused in
# one line and the job trains on. Under [nccl] suspendable = true: a busy DDP job suspended and
# resumed with --tree 20 times, its ranks swapped between the GPUs, suspends whose one rank's
# signal comes late (all suspended or all running, never half), FSDP and torchrun; every loss is
# compared with an uninterrupted run of the same job.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
python3 -c 'import torch, torch.distributed; assert torch.cuda.device_count() >= 2 and torch.distributed.is_nccl_available()' 2> /dev/null ||
	skip_all "needs PyTorch with NCCL and two GPUs"
py=$(dirname "$0")/ddp_train.py
# ~67M parameters, bf16, no pause: an all-reduce of 268 MB is in flight most of the time.
busy=(--busy --width 4096 --layers 4 --batch 1024)
steps=400
cycles=20

. "$(dirname "$0")/ddp_lib.sh"

# -- the reference: the busy job uninterrupted, under the same INI
nccl_ini
t0=$(date +%s)
"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" $steps "${busy[@]}" > "$T/ref.out" 2> "$T/ref.err"
is "$(nsteps "$T/ref.out")" $steps "uninterrupted busy DDP reference: $steps steps"
diag "in $(( $(date +%s) - t0 )) s"
like "$(cat "$T/ref.err")" "\[nccl\] suspendable: NCCL uses sockets between ranks: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1" \
	"cudanap run says which NCCL variables it sets"

# -- default transports: refused before the lock, the job trains on
write_ini
"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" 1000 > "$T/def.out" 2> "$T/def.err" &
root=$!
check "a DDP job with NCCL's default transports trains under cudanap" wait_step "$T/def.out" 3
out=$("$CUDANAP" suspend --tree "$root"); rc=$?
is "$rc" 1 "suspend --tree of it fails"
# NCCL older than 2.29.7 (the one PyTorch ships) has no suspend API: the line names its version
is "$(grep -cE 'REFUSED: refusing to suspend (NCCL ranks that share memory|a process with NCCL communicators).*NCCL_P2P_DISABLE is unset.*\[nccl\] suspendable = true' <<< "$out")" 2 \
	"both ranks refuse in one line that names [nccl] suspendable"
diag "$(head -n 1 <<< "$out")"
n=$(nsteps "$T/def.out")
check "the job trains on" wait_step "$T/def.out" $((n + 3))
kill_tree "$root"

# -- the busy job, suspended and resumed $cycles times with --tree
nccl_ini
"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" $steps "${busy[@]}" > "$T/busy.out" 2> "$T/busy.err" &
root=$!
check "the busy job trains under [nccl] suspendable" wait_step "$T/busy.out" 5
read -r r0 r1 <<< "$(ranks_of "$T/busy.out")"
diag "ranks $r0 $r1 on GPUs $(gpus_of "$r0" "$r1")"
good=0 stimes= rtimes= freed=0 retried=0
for i in $(seq $cycles); do
	n=$(nsteps "$T/busy.out")
	[ "$n" -lt $((steps - 30)) ] || { diag "the job is near its end after $((i - 1)) cycles"; break; }
	s_out=$("$CUDANAP" suspend --tree "$root"); s_rc=$?
	[ "$(gpus_of "$r0" "$r1")" = "- -" ] && freed=$((freed + 1))
	grep -q '^attempt' <<< "$s_out" && retried=$((retried + 1))
	r_out=$("$CUDANAP" resume --tree "$root"); r_rc=$?
	if [ $s_rc = 0 ] && [ $r_rc = 0 ]; then
		good=$((good + 1))
	else
		diag "cycle $i: suspend rc $s_rc, resume rc $r_rc: $s_out $r_out"
	fi
	stimes="$stimes $(secs "$s_out")" rtimes="$rtimes $(secs "$r_out")"
	wait_step "$T/busy.out" $((n + 3)) || break
done
is "$good" $cycles "$cycles whole-job suspend/resume cycles of a busy DDP job"
is "$freed" "$good" "both ranks' GPU memory freed at each suspend (nvidia-smi)"
diag "suspend s:$stimes"
diag "resume s:$rtimes"
diag "$retried suspends needed a second attempt"

# -- the two ranks swap GPUs at a resume
before=$(gpus_of "$r0" "$r1")
"$CUDANAP" suspend --tree "$root" > /dev/null
nccl_ini "[restore]" "gpu_map = 0=1, 1=0"
out=$("$CUDANAP" resume --tree "$root"); rc=$?
is "$rc" 0 "resume --tree with gpu_map = 0=1, 1=0"
is "$(gpus_of "$r0" "$r1")" "$(tr 01 10 <<< "$before")" "the ranks swapped GPUs (nvidia-smi: $before before)"
n=$(nsteps "$T/busy.out")
check "the job trains on after the swap" wait_step "$T/busy.out" $((n + 3))
# the map names where the GPUs the ranks started on go: the same map again leaves them there
"$CUDANAP" suspend --tree "$root" > /dev/null
out=$("$CUDANAP" resume --tree "$root"); rc=$?
is "$rc:$(gpus_of "$r0" "$r1")" "0:$(tr 01 10 <<< "$before")" "the same map again: the ranks stay swapped"
n=$(nsteps "$T/busy.out")
wait_step "$T/busy.out" $((n + 3))

# -- one rank's signal late by 0.5-2 s and a lock timeout of 1 s: the first rank's lock waits
# for its collective, the peer then launches the next one, which spins until the peer's own
# signal comes; its lock times out. Each attempt must end with both suspended or both running.
LOCK_MS=1000 nccl_ini
whole=0 back=0
for ms in 500 1000 2000; do
	out=$(CN_SLOW_KILL="$r1:$ms" LD_PRELOAD=$SLOWKILL "$CUDANAP" suspend --tree "$root" --retries 1); rc=$?
	st=$(states_of "$r0" "$r1")
	diag "rank $r1 signalled $ms ms late: rc $rc, states $st" "$out"
	case "$rc:$st" in
	"0:checkpointed checkpointed") whole=$((whole + 1)); "$CUDANAP" resume --tree "$root" > /dev/null ;;
	"1:running running") back=$((back + 1)) ;;
	esac
	n=$(nsteps "$T/busy.out")
	wait_step "$T/busy.out" $((n + 3))
done
is "$((whole + back))" 3 "a late rank: every attempt ends all suspended or all running"
diag "$whole suspended whole, $back rolled back"
nccl_ini
check "the busy job finishes" wait_done "$T/busy.out" "$root"
check "all $steps losses bit-identical to the uninterrupted run" \
	test "$(losses "$T/busy.out")" = "$(losses "$T/ref.out")"

# -- FSDP and torchrun (a small model, a pause between steps)
small=60
for kind in ddp fsdp; do
	args=(); [ $kind = fsdp ] && args=(--fsdp)
	"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" $small "${args[@]}" > "$T/$kind.ref" 2> "$T/$kind.err"
done
is "$(nsteps "$T/ddp.ref"):$(nsteps "$T/fsdp.ref")" "$small:$small" "small DDP and FSDP references"
"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" $small --fsdp > "$T/fsdp.out" 2>> "$T/fsdp.err" &
root=$!
wait_step "$T/fsdp.out" 5
ok_n=0
for i in 1 2 3; do
	n=$(nsteps "$T/fsdp.out")
	"$CUDANAP" suspend --tree "$root" > /dev/null && "$CUDANAP" resume --tree "$root" > /dev/null &&
		ok_n=$((ok_n + 1))
	wait_step "$T/fsdp.out" $((n + 5))
done
is "$ok_n" 3 "an FSDP job suspended and resumed 3 times"
check "it finishes" wait_done "$T/fsdp.out" "$root"
check "every FSDP loss bit-identical" test "$(losses "$T/fsdp.out")" = "$(losses "$T/fsdp.ref")"

if command -v torchrun > /dev/null; then
	"$CUDANAP" run -c "$T/job.ini" -- torchrun --nproc-per-node=2 --master-port=29531 "$py" $small > "$T/tr.out" 2> "$T/tr.err" &
	root=$!
	wait_step "$T/tr.out" 5
	out=$("$CUDANAP" suspend --tree "$root"); rc=$?
	is "$rc" 0 "cudanap run -- torchrun: suspend --tree"
	# The elastic agent loads torch and may initialise CUDA without a context: nothing to do, or
	# an empty checkpoint; either way it must not fail the job's suspend.
	like "$out" "total: 3 processes, [23] suspended, [01] without CUDA, 0 failed" \
		"the elastic agent and both workers: none fails"
	diag "$out"
	out=$("$CUDANAP" resume --tree "$root"); rc=$?
	is "$rc" 0 "resume --tree"
	check "the torchrun job finishes" wait_done "$T/tr.out" "$root"
	check "every loss bit-identical to the mp.spawn run" test "$(losses "$T/tr.out")" = "$(losses "$T/ddp.ref")"
else
	ok 0 "# SKIP torchrun not installed"
fi

finish
