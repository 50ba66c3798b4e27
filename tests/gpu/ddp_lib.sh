# Shared by the ddp tests: the job's INI, its steps and losses, its ranks and their GPUs.
# Sourced after lib.sh, with $py set.
nccl_ini() { write_ini "[nccl]" "suspendable = true" "[lock]" "timeout_ms = ${LOCK_MS:-5000}" "$@"; }
losses() { grep '^step' "$1"; }
nsteps() { grep -c '^step' "$1" 2> /dev/null; }
wait_step() { # wait_step FILE N [PID]: until step N is printed (2 minutes at most; not past the
	# job's end, nor PID's)
	for _ in $(seq 1200); do
		grep -q "^step $2 " "$1" 2> /dev/null && return 0
		grep -q '^done' "$1" 2> /dev/null && { diag "the job ended before step $2: give it more steps"; return 1; }
		[ -z "${3:-}" ] || kill -0 "$3" 2> /dev/null || { diag "the job exited before step $2"; return 1; }
		sleep 0.1
	done
	return 1
}
wait_done() { # wait_done FILE PID: until the job prints done or exits
	for _ in $(seq 3000); do
		grep -q '^done' "$1" && { wait "$2"; return 0; }
		kill -0 "$2" 2> /dev/null || return 1
		sleep 0.1
	done
	return 1
}
ranks_of() { awk '/^rank/ { print $4 }' "$1" | tr '\n' ' '; }
gpus_of() { # gpus_of PID...: the GPUs each holds memory on (01 for both 0 and 1, - for none)
	local p g on out= n
	n=$(nvidia-smi -L | wc -l)
	for p in "$@"; do
		on=
		for ((g = 0; g < n; g++)); do [ "$(mib_on "$p" "$g")" -gt 0 ] && on=$on$g; done
		out="$out${on:--} "
	done
	echo "${out% }"
}
gpus_are() { [ "$(gpus_of "$1")" = "$2" ]; } # gpus_are PID GPUS: gpus_of says GPUS (to poll for)
# status_names WORDS: cudanap status has a line naming another job's process beside a restored rank
status_names() { "$CUDANAP" status -c "$T/job.ini" | grep -q "beside another job: $1, not of its NCCL job"; }
states_of() { local p out=; for p in "$@"; do out="$out$(field "$p" state) "; done; echo "${out% }"; }
secs() { sed -n 's/^total: .*, \([0-9.]*\) s$/\1/p' <<< "$1"; }
kill_tree() { pkill -9 -P "$1" 2> /dev/null; kill -9 "$1" 2> /dev/null; wait "$1" 2> /dev/null; }

# job_cmd CMD...: CMD under cudanap with the test's INI (ddpapi.sh's preloads its NCCL too);
# job ARGS...: the training script so
job_cmd() { "$CUDANAP" run -c "$T/job.ini" -- "$@"; }
job() { job_cmd python3 "$py" "$@"; }

# cycles_check OUT ROOT CYCLES WHAT [swap]: the job ROOT, printing to OUT and training steps $steps,
# suspended and resumed with --tree CYCLES times; with swap, each resume moves the ranks: the odd
# ones swap their GPUs (--gpu-map 0=1,1=0), the even ones bring them home (--gpu-map ''). Sets r0
# and r1 to its ranks.
cycles_check() {
	local out=$1 root=$2 cycles=$3 what=$4 swap=${5:-} i n s_out r_out s_rc r_rc home want map
	local good=0 stimes= rtimes= freed=0 retried=0 placed=0
	read -r r0 r1 <<< "$(ranks_of "$out")"
	home=$(gpus_of "$r0" "$r1")
	diag "ranks $r0 $r1 on GPUs $home"
	for i in $(seq "$cycles"); do
		n=$(nsteps "$out")
		[ "$n" -lt $((steps - 30)) ] || { diag "the job is near its end after $((i - 1)) cycles"; break; }
		s_out=$("$CUDANAP" suspend -t 120 --tree "$root"); s_rc=$?
		[ "$(gpus_of "$r0" "$r1")" = "- -" ] && freed=$((freed + 1))
		grep -q '^attempt' <<< "$s_out" && retried=$((retried + 1))
		map=() want=$home
		if [ -n "$swap" ]; then
			map=(--gpu-map '')
			[ $((i % 2)) = 1 ] && map=(--gpu-map '0=1, 1=0') want=$(tr 01 10 <<< "$home")
		fi
		r_out=$("$CUDANAP" resume -t 120 "${map[@]}" --tree "$root"); r_rc=$?
		if [ $s_rc = 0 ] && [ $r_rc = 0 ]; then
			good=$((good + 1))
		else
			diag "cycle $i: suspend rc $s_rc, resume rc $r_rc: $s_out $r_out"
		fi
		if [ "$(gpus_of "$r0" "$r1")" = "$want" ]; then
			placed=$((placed + 1))
		else
			diag "cycle $i: the ranks are on GPUs $(gpus_of "$r0" "$r1"), not $want"
		fi
		stimes="$stimes $(secs "$s_out")" rtimes="$rtimes $(secs "$r_out")"
		wait_step "$out" $((n + 3)) || break
	done
	is "$good" "$cycles" "$cycles whole-job suspend/resume cycles of $what${swap:+, the ranks swapped at every other resume and home at the rest}"
	is "$freed" "$good" "both ranks' GPU memory freed at each suspend (nvidia-smi)"
	is "$placed" "$cycles" "after each resume the ranks are on the GPUs it named (nvidia-smi)"
	diag "suspend s:$stimes"
	diag "resume s:$rtimes"
	diag "$retried suspends needed a second attempt; NCCL: $(field "$r0" nccl)"
}

# swap_check OUT ROOT INI_FN: the ranks of ROOT swap GPUs at a resume with gpu_map 0=1, 1=0, stay
# with the same map again, and go home with the INI's empty map
swap_check() {
	local out=$1 root=$2 ini=$3 before rc n
	before=$(gpus_of "$r0" "$r1")
	"$CUDANAP" suspend -t 120 --tree "$root" > /dev/null
	"$CUDANAP" resume -t 120 --gpu-map "0=1, 1=0" --tree "$root" > /dev/null; rc=$?
	is "$rc:$(gpus_of "$r0" "$r1")" "0:$(tr 01 10 <<< "$before")" \
		"resume --gpu-map 0=1,1=0: the ranks swapped GPUs (nvidia-smi: $before before)"
	n=$(nsteps "$out")
	check "the job trains on after the swap" wait_step "$out" $((n + 3))
	# the map names where the GPUs the ranks started on go: the same map again leaves them there
	"$CUDANAP" suspend -t 120 --tree "$root" > /dev/null
	$ini "[restore]" "gpu_map = 0=1, 1=0"
	"$CUDANAP" resume -t 120 --tree "$root" > /dev/null; rc=$?
	is "$rc:$(gpus_of "$r0" "$r1")" "0:$(tr 01 10 <<< "$before")" "the same map again, from the INI: they stay"
	"$CUDANAP" suspend -t 120 --tree "$root" > /dev/null
	$ini
	"$CUDANAP" resume -t 120 --tree "$root" > /dev/null; rc=$?
	is "$rc:$(gpus_of "$r0" "$r1")" "0:$before" "the INI's map emptied: home"
	n=$(nsteps "$out")
	check "the job trains on" wait_step "$out" $((n + 3))
}

# late_check OUT ROOT INI_FN MS...: one rank's signal late by each MS and a lock timeout of 1 s;
# every attempt must end with both suspended or both running
late_check() {
	local out=$1 root=$2 ini=$3 ms o rc st n whole=0 back=0
	shift 3
	LOCK_MS=1000 $ini
	for ms in "$@"; do
		o=$(CN_SLOW_KILL="$r1:$ms" LD_PRELOAD=$SLOWKILL "$CUDANAP" suspend -t 120 --tree "$root" --retries 1); rc=$?
		st=$(states_of "$r0" "$r1")
		diag "rank $r1 signalled $ms ms late: rc $rc, states $st" "$o"
		case "$rc:$st" in
		"0:checkpointed checkpointed") whole=$((whole + 1)); "$CUDANAP" resume -t 120 --tree "$root" > /dev/null ;;
		"1:running running") back=$((back + 1)) ;;
		esac
		n=$(nsteps "$out")
		wait_step "$out" $((n + 3))
	done
	is "$((whole + back))" $# "a late rank: every attempt ends all suspended or all running"
	diag "$whole suspended whole, $back rolled back"
	$ini
}

# small_checks [swap]: small DDP and FSDP jobs (a pause between steps): FSDP suspended
# FSDP_CYCLES times (3; with swap, moved as cycles_check does), torchrun; every loss compared.
small_checks() {
	local cycles=${FSDP_CYCLES:-3} kind root rc out
	local small=$((cycles * 10 + 40 > 60 ? cycles * 10 + 40 : 60))
	for kind in ddp fsdp; do
		args=(); [ $kind = fsdp ] && args=(--fsdp)
		job $small "${args[@]}" > "$T/$kind.ref" 2> "$T/$kind.err"
	done
	is "$(nsteps "$T/ddp.ref"):$(nsteps "$T/fsdp.ref")" "$small:$small" "small DDP and FSDP references"
	job $small --fsdp > "$T/fsdp.out" 2>> "$T/fsdp.err" &
	root=$!
	wait_step "$T/fsdp.out" 5
	steps=$small cycles_check "$T/fsdp.out" "$root" "$cycles" "an FSDP job" "${1:-}"
	check "it finishes" wait_done "$T/fsdp.out" "$root"
	check "every FSDP loss bit-identical" test "$(losses "$T/fsdp.out")" = "$(losses "$T/fsdp.ref")"

	if ! command -v torchrun > /dev/null; then
		ok 0 "# SKIP torchrun not installed"
		return
	fi
	job_cmd torchrun --nproc-per-node=2 --master-port=29531 "$py" $small > "$T/tr.out" 2> "$T/tr.err" &
	root=$!
	wait_step "$T/tr.out" 5
	cli suspend -t 120 --tree "$root"
	is "$rc" 0 "cudanap run -- torchrun: suspend --tree"
	# The elastic agent loads torch and may initialise CUDA without a context: nothing to do, or
	# an empty checkpoint; either way it must not fail the job's suspend.
	like "$out" "total: 3 processes, [23] suspended, [01] without CUDA, 0 failed" \
		"the elastic agent and both workers: none fails"
	diag "$out"
	cli resume -t 120 --tree "$root"
	is "$rc" 0 "resume --tree"
	check "the torchrun job finishes" wait_done "$T/tr.out" "$root"
	check "every loss bit-identical to the mp.spawn run" test "$(losses "$T/tr.out")" = "$(losses "$T/ddp.ref")"
}

# beside_check PORT: a restored NCCL job shares no GPU with another job's process
# (docs/DISTRIBUTED.md). A small DDP and a small FSDP job on the same two GPUs, both suspended; a
# plain PyTorch program (no cudanap) busy on GPU 0: the DDP job's resume where it slept is refused
# in one line naming it (BESIDE_RESTORED); once it has ended, the DDP job resumes; an idle program
# started on GPU 1 after that is named by the rank's status; the FSDP one's
# resume where it slept, beside the restored DDP ranks, refused, and with its ranks swapped too,
# its ranks still asleep; once the DDP job has finished it resumes, and both jobs end with every
# loss identical to an uninterrupted run. PORT and PORT+1: their rendezvous ports.
beside_check() {
	local port=$1 n=250 k out rc f0 f1 busy idle
	local -A root=() args=([ddp]="" [fsdp]="--fsdp") at=([ddp]=$port [fsdp]=$((port + 1)))
	local refused="^1:.*resume failed: BESIDE_RESTORED: restore: GPU [01] \(GPU-[^)]*\) runs pid [0-9]+, not of this NCCL job"
	for k in ddp fsdp; do
		MASTER_PORT=${at[$k]} job $n ${args[$k]} > "$T/bs$k.ref" 2> "$T/bs$k.rerr" &
	done
	wait
	for k in ddp fsdp; do
		MASTER_PORT=${at[$k]} job $n ${args[$k]} > "$T/bs$k.out" 2> "$T/bs$k.err" &
		root[$k]=$!
	done
	for k in ddp fsdp; do wait_step "$T/bs$k.out" 3 "${root[$k]}"; done
	read -r f0 f1 <<< "$(ranks_of "$T/bsfsdp.out")"
	for k in ddp fsdp; do "$CUDANAP" suspend -t 120 --tree "${root[$k]}" > /dev/null; done
	python3 -c 'import torch
a = torch.randn(2048, 2048, device="cuda:0")
while True: (a @ a).sum().item()' &
	busy=$!
	check "a plain program busy on GPU 0" eventually 60 gpus_are "$busy" 0
	cli resume -t 120 --tree "${root[ddp]}"
	like "$rc:$out" "^1:.*resume failed: BESIDE_RESTORED: restore: GPU 0 \(GPU-[^)]*\) runs pid $busy, not of this NCCL job" \
		"the DDP job's resume where it slept, beside it: refused in one line naming it"
	kill "$busy"
	wait "$busy" 2> /dev/null
	check "it ends and leaves GPU 0" eventually 30 gpus_are "$busy" -
	# a program that starts on a restored rank's GPU asks cudanap nothing: the rank's status
	# names it (idle: it launches no kernel the rank's collectives would wait beside). Python
	# and torch loaded now, its CUDA once the job runs again (the job has ~25 s left).
	python3 -c 'import os, sys, time, torch
while not os.path.exists(sys.argv[1]): time.sleep(0.02)
torch.cuda.set_device(1)
a = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
time.sleep(600)' "$T/idle.go" &
	idle=$!
	"$CUDANAP" resume -t 120 --tree "${root[ddp]}" > /dev/null; rc=$?
	is "$rc" 0 "then the DDP job resumes where it slept"
	touch "$T/idle.go"
	busy=$idle
	check "an idle program starts on GPU 1, beside a restored DDP rank" eventually 60 gpus_are "$busy" 1
	check "cudanap status names it on that rank's line" eventually 20 status_names "GPU 1 runs pid $busy"
	diag "$("$CUDANAP" status -c "$T/job.ini" | grep -m1 'beside another job')"
	kill "$busy"
	wait "$busy" 2> /dev/null
	check "it ends and leaves GPU 1" eventually 30 gpus_are "$busy" -
	cli resume -t 120 --tree "${root[fsdp]}"
	like "$rc:$out" "$refused" "the FSDP job's resume where it slept, beside the restored DDP ranks: refused in one line"
	cli resume -t 120 --gpu-map '0=1, 1=0' --tree "${root[fsdp]}"
	like "$rc:$out" "$refused" "and with its ranks swapped"
	is "$(states_of "$f0" "$f1")" "checkpointed checkpointed" "its ranks still asleep"
	wait_done "$T/bsddp.out" "${root[ddp]}"; rc=$?
	is "$rc" 0 "the DDP job finishes"
	"$CUDANAP" resume -t 120 --tree "${root[fsdp]}" > /dev/null; rc=$?
	is "$rc" 0 "then the FSDP job resumes where it slept"
	wait_done "$T/bsfsdp.out" "${root[fsdp]}"; rc=$?
	is "$rc" 0 "and finishes"
	[ $rc = 0 ] || diag "their stderr ends:"$'\n'"$(tail -n 3 "$T/bsddp.err" "$T/bsfsdp.err" 2> /dev/null)"
	for k in ddp fsdp; do
		check "every $k loss identical to the uninterrupted run" \
			test "$(losses "$T/bs$k.out" 2> /dev/null)" = "$(losses "$T/bs$k.ref")"
	done
}

# sleeps_check PORT: a DDP and an FSDP job, each with a 20 s process-group timeout, the DDP one
# with PyTorch's heartbeat monitor at half the sleep, asleep CUDANAP_SLEEP_S (60) seconds at each
# of CUDANAP_SLEEP_CYCLES (5) whole-job cycles, the ranks swapped at every other resume and home at
# the rest; each finishes with every loss identical to an uninterrupted run, and no watchdog
# speaks. One job after the other: cudanap refuses to put a restored NCCL rank beside another
# job's process ([restore] beside_restored, docs/DISTRIBUTED.md). PORT and PORT+1:
# their rendezvous ports.
sleeps_check() {
	local port=$1 cycles=${CUDANAP_SLEEP_CYCLES:-5} s=${CUDANAP_SLEEP_S:-60} kind good=0 rc said
	local n=$((cycles * 20 + 60)) beat=$((s / 2))
	local -A root=() args=([ddp]="--timeout 20" [fsdp]="--timeout 20 --fsdp") at=([ddp]=$port [fsdp]=$((port + 1)))
	for kind in ddp fsdp; do
		MASTER_PORT=${at[$kind]} job $n ${args[$kind]} > "$T/sl$kind.ref" 2> "$T/sl$kind.rerr" &
	done
	wait
	is "$(nsteps "$T/slddp.ref"):$(nsteps "$T/slfsdp.ref")" "$n:$n" "DDP and FSDP references with a 20 s timeout"
	sleeps_cycles ddp && sleeps_cycles fsdp && good=$cycles
	is "$good" "$cycles" "$cycles whole-job cycles of a DDP and an FSDP job (one after the other) asleep $s s each, past their 20 s process-group timeout, the ranks swapped at every other resume"
	rc=0
	for kind in ddp fsdp; do
		[ -n "${root[$kind]:-}" ] && wait_done "$T/sl$kind.out" "${root[$kind]}" || rc=1
	done
	said=$(grep -h -m1 -E 'Watchdog caught|watchdog got stuck|watchdog thread terminated|Heartbeat monitor timed out|heartbeat' "$T/slddp.err" "$T/slfsdp.err" 2> /dev/null | cut -c1-300)
	is "$rc:$said" "0:" "both finish; no watchdog and no heartbeat monitor spoke (the DDP job's at $beat s)"
	check "every DDP loss identical to the uninterrupted run" test "$(losses "$T/slddp.out" 2> /dev/null)" = "$(losses "$T/slddp.ref")"
	check "every FSDP loss identical to the uninterrupted run" test "$(losses "$T/slfsdp.out" 2> /dev/null)" = "$(losses "$T/slfsdp.ref")"
	[ $rc = 0 ] || diag "their stderr ends:"$'\n'"$(tail -n 3 "$T/slddp.err" "$T/slfsdp.err" 2> /dev/null)" \
		"what they said first:"$'\n'"$(grep -h -m4 -iE 'exception|error|warn|watchdog|abort' "$T/slddp.err" "$T/slfsdp.err" 2> /dev/null | cut -c1-400)"
}

# sleeps_cycles KIND...: sleeps_check's jobs of those kinds started (root[KIND]) and taken through
# its cycles together; 1 at the first cycle that fails (said, and its jobs killed). Uses
# sleeps_check's locals.
sleeps_cycles() {
	local i k ok out step map
	for k in "$@"; do
		if [ "$k" = ddp ]; then
			TORCH_NCCL_ENABLE_MONITORING=1 TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=$beat MASTER_PORT=${at[$k]} \
				job $n ${args[$k]} > "$T/sl$k.out" 2> "$T/sl$k.err" &
		else
			MASTER_PORT=${at[$k]} job $n ${args[$k]} > "$T/sl$k.out" 2> "$T/sl$k.err" &
		fi
		root[$k]=$!
	done
	for k in "$@"; do wait_step "$T/sl$k.out" 3; done
	for i in $(seq "$cycles"); do
		ok=1 out=
		for k in "$@"; do
			out=$out$("$CUDANAP" suspend -t 120 --tree "${root[$k]}" 2>&1) || ok=0
		done
		sleep "$s"
		map=(--gpu-map ''); [ $((i % 2)) = 1 ] && map=(--gpu-map '0=1, 1=0')
		for k in "$@"; do
			out=$out$("$CUDANAP" resume -t 120 "${map[@]}" --tree "${root[$k]}" 2>&1) || ok=0
		done
		for k in "$@"; do
			step=$(nsteps "$T/sl$k.out")
			wait_step "$T/sl$k.out" $((step + 3)) "${root[$k]}" || {
				ok=0
				diag "cycle $i: the $k job went no further than step $step; its stderr ends:"$'\n'"$(tail -n 4 "$T/sl$k.err")"
			}
		done
		if [ $ok = 0 ]; then
			diag "cycle $i: $out"
			for k in "$@"; do kill_tree "${root[$k]}"; done
			return 1
		fi
	done
	for k in "$@"; do wait_done "$T/sl$k.out" "${root[$k]}" || return 1; done
}
