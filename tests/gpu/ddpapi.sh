#!/usr/bin/env bash
# Two-rank PyTorch jobs on NCCL's default transports (P2P over NVLink, cuMem, shared memory),
# suspended through NCCL's own suspend API (2.29.7 or later, named by CUDANAP_NCCL_LIB and
# preloaded after the library): the NCCL version and the P2P transport checked in NCCL's own log; a
# busy DDP job suspended and resumed with --tree CUDANAP_DDP_CYCLES times (20), GPU memory freed at
# each suspend, every loss bit-identical to an uninterrupted run; the ranks swapped between the GPUs
# and the same map again; a rank's signal late (all suspended or all running); FSDP.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
[ -n "${CUDANAP_NCCL_LIB:-}" ] && [ -f "$CUDANAP_NCCL_LIB" ] ||
	skip_all "CUDANAP_NCCL_LIB does not name a libnccl.so.2 with ncclCommSuspend (NCCL 2.29.7 or later)"
python3 -c 'import torch, torch.distributed; assert torch.cuda.device_count() >= 2 and torch.distributed.is_nccl_available()' 2> /dev/null ||
	skip_all "needs PyTorch with NCCL and two GPUs"
py=$(dirname "$0")/ddp_train.py
busy=(--busy --width 4096 --layers 4 --batch 1024)
steps=400
cycles=${CUDANAP_DDP_CYCLES:-20}
. "$(dirname "$0")/ddp_lib.sh"
api_ini() { write_ini "[lock]" "timeout_ms = ${LOCK_MS:-5000}" "$@"; }
# job ARGS...: the training script under cudanap, with the NCCL named preloaded (cudanap run puts
# the library before it)
job() { LD_PRELOAD=$CUDANAP_NCCL_LIB "$CUDANAP" run -c "$T/job.ini" -- python3 "$py" "$@"; }

# -- the NCCL loaded, and its transports
api_ini
NCCL_DEBUG=INFO job 3 > "$T/info.out" 2> "$T/info.err"
like "$(grep -m1 'NCCL version' "$T/info.err")" "NCCL version 2\.(29\.[7-9]|[3-9][0-9]\.)" \
	"the job loads the NCCL named ($(grep -m1 -o 'NCCL version [0-9.]*' "$T/info.err"))"
like "$(grep -m1 -E 'via P2P/(CUMEM|IPC)' "$T/info.err")" "via P2P" "its channels go over P2P ($(grep -m1 -oE 'via P2P/[A-Z/]+' "$T/info.err"))"

# -- the busy job uninterrupted, under the same INI and NCCL
job $steps "${busy[@]}" > "$T/ref.out" 2> "$T/ref.err"
is "$(nsteps "$T/ref.out")" $steps "uninterrupted busy DDP reference on the default transports: $steps steps"

# -- suspended and resumed $cycles times with --tree
job $steps "${busy[@]}" > "$T/busy.out" 2> "$T/busy.err" &
root=$!
check "the busy job trains under cudanap" wait_step "$T/busy.out" 5
read -r r0 r1 <<< "$(ranks_of "$T/busy.out")"
diag "ranks $r0 $r1 on GPUs $(gpus_of "$r0" "$r1"); $(field "$r0" nccl)"
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
is "$good" $cycles "$cycles whole-job suspend/resume cycles of a busy DDP job on NCCL's default transports"
is "$freed" "$good" "both ranks' GPU memory freed at each suspend (nvidia-smi)"
diag "suspend s:$stimes"
diag "resume s:$rtimes"
diag "$retried suspends needed a second attempt"

# -- the ranks swapped between the GPUs, then the same map again
before=$(gpus_of "$r0" "$r1")
"$CUDANAP" suspend --tree "$root" > /dev/null
out=$("$CUDANAP" resume --tree --gpu-map "0=1, 1=0" "$root"); rc=$?
is "$rc:$(gpus_of "$r0" "$r1")" "0:$(tr 01 10 <<< "$before")" "resume --gpu-map 0=1,1=0: the ranks swapped GPUs ($before before)"
diag "$(tail -n 1 <<< "$out")"
n=$(nsteps "$T/busy.out")
check "the job trains on after the swap (NCCL re-imported its peers' buffers on the new GPUs)" wait_step "$T/busy.out" $((n + 3))
"$CUDANAP" suspend --tree "$root" > /dev/null
out=$("$CUDANAP" resume --tree --gpu-map "0=1, 1=0" "$root"); rc=$?
is "$rc:$(gpus_of "$r0" "$r1")" "0:$(tr 01 10 <<< "$before")" "the same map again: they stay"
"$CUDANAP" suspend --tree "$root" > /dev/null
out=$("$CUDANAP" resume --tree "$root"); rc=$?
is "$rc:$(gpus_of "$r0" "$r1")" "0:$before" "the INI's empty map: home"
n=$(nsteps "$T/busy.out")
wait_step "$T/busy.out" $((n + 3))

# -- one rank's signal late: all suspended or all running
LOCK_MS=1000 api_ini
whole=0 back=0
for ms in 500 2000; do
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
is "$((whole + back))" 2 "a late rank: every attempt ends all suspended or all running"
api_ini
check "the busy job finishes" wait_done "$T/busy.out" "$root"
check "all $steps losses bit-identical to the uninterrupted run" \
	test "$(losses "$T/busy.out")" = "$(losses "$T/ref.out")"

# -- FSDP
small=60
job $small --fsdp > "$T/fsdp.ref" 2> "$T/fsdp.err"
job $small --fsdp > "$T/fsdp.out" 2>> "$T/fsdp.err" &
root=$!
wait_step "$T/fsdp.out" 5
ok_n=0
for i in 1 2 3; do
	n=$(nsteps "$T/fsdp.out")
	"$CUDANAP" suspend --tree "$root" > /dev/null && "$CUDANAP" resume --tree "$root" > /dev/null &&
		ok_n=$((ok_n + 1))
	wait_step "$T/fsdp.out" $((n + 5))
done
is "$ok_n" 3 "an FSDP job on the default transports suspended and resumed 3 times"
check "it finishes" wait_done "$T/fsdp.out" "$root"
check "every FSDP loss bit-identical" test "$(losses "$T/fsdp.out")" = "$(losses "$T/fsdp.ref")"
finish
