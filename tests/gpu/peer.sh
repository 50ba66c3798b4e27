#!/usr/bin/env bash
# One process on two GPUs with peer access between them (PyTorch's model split across the GPUs,
# JAX with both visible). Without an allocation over 256 MiB it is suspended and resumed with its
# peer access on (the GPUs swapped at every other resume), every loss equal to an uninterrupted
# run's; with one, by default ([peer] mode = refuse) its suspend and nap are refused before the
# lock, in one line naming the GPUs, the allocation and the libraries, and it trains on; with
# [peer] mode = off it is suspended, resumed and napped, its peer access off after the first
# resume. Prints the copy bandwidth between the GPUs with peer access and without.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
py=${PYTHON:-python3}
"$py" -c 'import torch; assert torch.cuda.device_count() >= 2' 2> /dev/null || skip_all "no PyTorch seeing two GPUs"
cycles=${CUDANAP_PEER_CYCLES:-20}
# The first two GPUs: PyTorch, once it copies between two GPUs, makes a context on every GPU it
# sees (520 MiB on each of two idle H200s), and a process on every GPU has nowhere to move.
export CUDA_VISIBLE_DEVICES=0,1
steps() { ask "$1" losses 60; echo "${REPLY#losses }"; } # every loss so far
first() { echo "$2" | cut -d' ' -f1-"$1"; }               # first N of the losses
: > "$T/times"
# swapped N STEPS: N suspends and resumes of S (its pid in $pid), the GPUs swapped at every other
# resume, its memory off the GPUs while suspended, 2 steps after each (STEPS before the first);
# sets ok to how many went through
swapped() {
	local c map
	ok=0
	for c in $(seq "$1"); do
		"$CUDANAP" suspend "$pid" >> "$T/times" || break
		[ "$(gpu_mib "$pid")" -le 8 ] || { diag "cycle $c: $(gpu_mib "$pid") MiB left on the GPUs"; break; }
		map=""
		[ $((c % 2)) = 1 ] && map="0=1, 1=0"
		"$CUDANAP" resume --gpu-map "$map" "$pid" >> "$T/times" || break
		ask S "train 2" 120
		[ "$REPLY" = "trained $(($2 + 2 * c))" ] || { diag "cycle $c: $REPLY"; break; }
		ok=$c
	done
}

# -- the reference: the same training, uninterrupted
ref=$("$py" "$here/split_train.py" $((2 * cycles + 22)))
ref=${ref#losses }

# -- peer access on, no allocation over 256 MiB: suspended and resumed with it on, at full speed
write_ini "[log]" "level = info"
start S "$py" "$here/split_train.py" --serve
pid=$S_pid
ask S peer
is "$REPLY" "peer YES" "PyTorch uses peer access between the GPUs"
like "$("$CUDANAP" status --json "$pid" | tr -d '\n')" "\"peer\":\"GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in [^\"]*\"" \
	"status: peer access GPU 0->1 and 1->0, and who turned it on"
swapped "$cycles" 0
is "$ok" "$cycles" "$cycles suspends and resumes with its peer access on, the GPUs swapped at every other, 2 steps after each"
is "$(steps S)" "$(first $((2 * cycles)) "$ref")" "every loss equal to the uninterrupted run's"
like "$(field "$pid" peer)" "^GPU [01]->[01], GPU [01]->[01] by cuCtxEnablePeerAccess" "status: its peer access still on"
spread() { grep -o "$1 in [0-9.]* m\?s" "$T/times" | awk '{ v = $3 * ($4 == "s" ? 1000 : 1); if (NR == 1 || v < lo) lo = v; if (v > hi) hi = v } END { printf "%.0f-%.0f ms", lo, hi }'; }
diag "suspend $(spread suspended), resume $(spread resumed) (the first resume pays for the controller's cuInit if it comes at once)"
: > "$T/times"
n=$((2 * cycles)) # steps trained so far
# train: 2 more steps, woken first if it naps; says whether they went through
train() { ask S "train 2" 120; n=$((n + 2)); [ "$REPLY" = "trained $n" ]; }

# -- napped, woken by its next step: at home (wake_on = home)
est=$("$CUDANAP" suspend --dry-run "$pid" | grep -o 'about [0-9.]* s')
out=$("$CUDANAP" nap "$pid"); rc=$?
is "$rc" 0 "napped with its peer access on ($out; the dry run said ${est#about })"
train
woke "$pid"
is "$REPLY" "trained $n" "its next step wakes it"
like "$(mib_on "$pid" 0) $(mib_on "$pid" 1)" "^[1-9][0-9]* [1-9][0-9]*$" "at home, on GPUs 0 and 1"
if [ "$(nvidia-smi -L | wc -l)" -ge 4 ]; then
	# -- four GPUs: moved 0,1 -> 2,3 and home again; napped beside a full GPU 0 with wake_on = any
	"$CUDANAP" suspend "$pid" > /dev/null && "$CUDANAP" resume --gpu-map "0=2, 1=3, 2=0, 3=1" "$pid" > /dev/null
	train
	is "$REPLY" "trained $n" "gpu_map 0=2, 1=3, 2=0, 3=1: resumed, it trains on"
	is "$(mib_on "$pid" 0) $(mib_on "$pid" 1)" "0 0" "off GPUs 0 and 1"
	like "$(mib_on "$pid" 2) $(mib_on "$pid" 3)" "^[1-9][0-9]* [1-9][0-9]*$" "on GPUs 2 and 3"
	like "$(field "$pid" peer)" "^GPU 2->3, GPU 3->2 by cuCtxEnablePeerAccess in " "its peer access on between them, the status says"
	"$CUDANAP" suspend "$pid" > /dev/null && "$CUDANAP" resume --gpu-map "" "$pid" > /dev/null
	train
	is "$REPLY:$(mib_on "$pid" 2)" "trained $n:0" "and home again"
	write_ini "[nap]" "wake_on = any" "[log]" "level = info"
	"$CUDANAP" nap "$pid" > /dev/null
	free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0)
	CUDA_VISIBLE_DEVICES=0 start F "$HOLDMEM" "$(awk -v f="$free" 'BEGIN { print (f - 700) / 1024 }')"
	train
	woke "$pid"
	is "$REPLY" "trained $n" "wake_on = any, GPU 0 filled while it napped: its next step wakes it"
	is "$(mib_on "$pid" 0)" 0 "not on GPU 0"
	like "$(mib_on "$pid" 1) $(mib_on "$pid" 2)" "^[1-9][0-9]* [1-9][0-9]*$" "its part there on GPU 2, the other still on GPU 1"
	like "$(field "$pid" peer)" "^GPU [12]->[12], GPU [12]->[12] by cuCtxEnablePeerAccess" "its peer access on between GPUs 1 and 2"
	ask F quit 10
	wait "$F_pid"
	write_ini "[log]" "level = info"
	"$CUDANAP" suspend "$pid" > /dev/null && "$CUDANAP" resume --gpu-map "" "$pid" > /dev/null
	train
	is "$REPLY:$(mib_on "$pid" 2)" "trained $n:0" "home again"
else
	skip "four GPUs: 0,1 -> 2,3 and home; wake_on = any beside a full GPU 0" "needs four GPUs"
	n=$((n + 8))
	ask S "train 8" 120
fi
is "$(steps S)" "$(first "$n" "$ref")" "every loss equal to the uninterrupted run's"

# -- with an allocation over 256 MiB (a 512 MiB copy's, kept by PyTorch's allocator): refused
ask S bw 120
bw_peer=${REPLY#bw }
out=$("$CUDANAP" suspend --dry-run "$pid"); rc=$?
like "$rc:$out" "^1:$pid: would refuse: refusing to suspend a process with peer access between its GPUs .* and an allocation over 256 MiB \(512 MiB by cuMemAlloc" \
	"then suspend --dry-run: would refuse"
out=$("$CUDANAP" suspend "$pid"); rc=$?
like "$rc:$out" "^1:$pid: suspend failed: REFUSED: refusing to suspend a process with peer access between its GPUs \(GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in [^)]*\) and an allocation over 256 MiB \(512 MiB by cuMemAlloc[^)]*\): the driver cannot restore it;.*\(state running\)$" \
	"cudanap suspend: refused in one line, naming the GPUs, the allocation and the libraries"
out=$("$CUDANAP" nap "$pid"); rc=$?
like "$rc:$out" "^1:$pid: nap failed: REFUSED" "cudanap nap: refused"
train
is "$REPLY" "trained $n" "it trains on"

# -- [peer] mode = off: its peer access turned off for the suspend, and off after the resume
write_ini "[peer]" "mode = off" "[log]" "level = info"
swapped 4 "$n"
n=$((n + 8))
is "$ok" 4 "[peer] mode = off: 4 suspends and resumes, swapped at every other"
is "$(steps S)" "$(first "$n" "$ref")" "every loss equal to the uninterrupted run's"
like "$(field "$pid" peer)" "^off since the resume: GPU [01]->[01], GPU [01]->[01] by cuCtxEnablePeerAccess" \
	"status: peer access off since the resume"
like "$(cat "$T/S.err")" "peer access between its GPUs stays off after the resume \(.*\): cuCtxEnablePeerAccess: CUDA_ERROR_INVALID_HANDLE" \
	"the log says so, with the driver's answer"
ask S peer
is "$REPLY" "peer NO" "PyTorch is told the GPUs cannot access each other"
ask S bw 120
bw_host=${REPLY#bw }
diag "copy cuda:0 -> cuda:1, 512 MiB: $bw_peer GB/s with peer access (after $cycles resumes with it on), $bw_host GB/s with it off (through the host)"
out=$("$CUDANAP" nap "$pid"); rc=$?
is "$rc" 0 "napped ($out)"
train
woke "$pid"
is "$REPLY" "trained $n" "its next step wakes it"
is "$(steps S)" "$(first "$n" "$ref")" "every loss still equal"
ask S quit 30

# -- JAX with both GPUs: XLA turns peer access on at its start
if "$py" -c 'import jax; assert len(jax.devices("gpu")) >= 2' 2> /dev/null; then
	# XLA's sum across the GPUs is not bit for bit the same from run to run without this (two
	# plain runs differed in the last bits; with it they did not).
	export XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_FLAGS=--xla_gpu_deterministic_ops=true
	jref=$("$py" "$here/jax_shard.py" $((2 * cycles)))
	jref=${jref#losses }
	write_ini "[log]" "level = info"
	start J "$py" "$here/jax_shard.py" --serve
	like "$(field "$J_pid" peer)$("$CUDANAP" status --json "$J_pid" | grep -o '"peer":"[^"]*"')" "GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in xla_cuda_plugin.so" \
		"JAX on two GPUs: XLA turned peer access on"
	ok=0
	for c in $(seq "$cycles"); do
		"$CUDANAP" suspend "$J_pid" > /dev/null && "$CUDANAP" resume "$J_pid" > /dev/null || break
		ask J "train 2" 120
		[ "$REPLY" = "trained $((2 * c))" ] || { diag "cycle $c: $REPLY"; break; }
		ok=$c
	done
	is "$ok" "$cycles" "JAX (its memory is cuMemCreate's): suspended and resumed $cycles times with its peer access on, 2 steps after each"
	is "$(steps J)" "$jref" "every loss equal to the uninterrupted run's"
	ask J quit 30
	unset XLA_PYTHON_CLIENT_PREALLOCATE XLA_FLAGS
else
	skip "JAX on two GPUs" "no JAX seeing two GPUs"
fi
finish
