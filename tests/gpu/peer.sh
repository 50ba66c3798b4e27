#!/usr/bin/env bash
# One process on two GPUs with peer access between them (PyTorch's model split across the GPUs,
# JAX with both visible): by default ([peer] mode = refuse) its suspend and nap are refused before
# the lock, in one line naming the GPUs and the library, and it trains on; with [peer] mode = off
# it is suspended and resumed (the GPUs swapped at every other resume) and napped, every loss equal
# to an uninterrupted run's, its peer access off after the first resume. Prints the copy
# bandwidth between the GPUs before (peer access) and after (through the host).
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || skip_all "needs two GPUs"
py=${PYTHON:-python3}
"$py" -c 'import torch; assert torch.cuda.device_count() >= 2' 2> /dev/null || skip_all "no PyTorch seeing two GPUs"
cycles=${CUDANAP_PEER_CYCLES:-20}
steps() { ask "$1" losses 60; echo "${REPLY#losses }"; } # every loss so far
first() { echo "$2" | cut -d' ' -f1-"$1"; }               # first N of the losses
: > "$T/times"

# -- the reference: the same training, uninterrupted
ref=$("$py" "$here/split_train.py" $((2 * cycles + 4)))
ref=${ref#losses }

# -- [peer] mode = refuse: refused, trains on
write_ini "[log]" "level = info"
start S "$py" "$here/split_train.py" --serve
pid=$S_pid
ask S bw 120
bw_peer=${REPLY#bw }
ask S peer
is "$REPLY" "peer YES" "PyTorch uses peer access between the GPUs"
like "$("$CUDANAP" status --json "$pid" | tr -d '\n')" "\"peer\":\"GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in [^\"]*\"" \
	"status: peer access GPU 0->1 and 1->0, and who turned it on"
out=$("$CUDANAP" suspend --dry-run "$pid"); rc=$?
like "$rc:$out" "^1:$pid: would refuse: refusing to suspend a process with peer access between its GPUs" \
	"suspend --dry-run: would refuse"
out=$("$CUDANAP" suspend "$pid"); rc=$?
like "$rc:$out" "^1:$pid: suspend failed: REFUSED: refusing to suspend a process with peer access between its GPUs \(GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in .*\) \(state running\)$" \
	"cudanap suspend: refused in one line, naming the GPUs and the library"
out=$("$CUDANAP" nap "$pid"); rc=$?
like "$rc:$out" "^1:$pid: nap failed: REFUSED" "cudanap nap: refused"
ask S "train 2" 120
is "$REPLY" "trained 2" "it trains on"
check "still on both GPUs ($(mib_on "$pid" 0) and $(mib_on "$pid" 1) MiB)" \
	test "$(mib_on "$pid" 0)" -gt 0 -a "$(mib_on "$pid" 1)" -gt 0

# -- [peer] mode = off: suspended, resumed (swapped at every other resume), napped
write_ini "[peer]" "mode = off" "[log]" "level = info"
ok=0
for c in $(seq "$cycles"); do
	"$CUDANAP" suspend "$pid" >> "$T/times" || break
	[ "$(gpu_mib "$pid")" -le 8 ] || { diag "cycle $c: $(gpu_mib "$pid") MiB left on the GPUs"; break; }
	map=""
	[ $((c % 2)) = 1 ] && map="0=1, 1=0"
	"$CUDANAP" resume --gpu-map "$map" "$pid" >> "$T/times" || break
	ask S "train 2" 120
	[ "$REPLY" = "trained $((2 * c + 2))" ] || { diag "cycle $c: $REPLY"; break; }
	ok=$c
done
is "$ok" "$cycles" "[peer] mode = off: $cycles suspends and resumes, the GPUs swapped at every other, 2 steps after each"
is "$(steps S)" "$(first $((2 * cycles + 2)) "$ref")" "every loss equal to the uninterrupted run's"
like "$(field "$pid" peer)" "^off since the resume: GPU [01]->[01], GPU [01]->[01] by cuCtxEnablePeerAccess" \
	"status: peer access off since the resume"
like "$(cat "$T/S.err")" "peer access between its GPUs stays off after the resume \(.*\): cuCtxEnablePeerAccess: CUDA_ERROR_INVALID_HANDLE" \
	"the log says so, with the driver's answer"
ask S peer
is "$REPLY" "peer NO" "PyTorch is told the GPUs cannot access each other"
ask S bw 120
bw_host=${REPLY#bw }
diag "copy cuda:0 -> cuda:1, 512 MiB: $bw_peer GB/s with peer access, $bw_host GB/s after a resume (through the host)"
diag "suspend $(grep -o 'suspended in [0-9.]* m\?s' "$T/times" | awk '{print $3 $4}' | sort -n | sed -n '1p;$p' | tr '\n' ' ')(min max); resume $(grep -o 'resumed in [0-9.]* m\?s' "$T/times" | awk '{print $3 $4}' | sort -n | sed -n '1p;$p' | tr '\n' ' ')"
out=$("$CUDANAP" nap "$pid"); rc=$?
is "$rc" 0 "napped ($out)"
ask S "train 2" 120
woke "$pid"
is "$REPLY" "trained $((2 * cycles + 4))" "its next step wakes it"
is "$(steps S)" "$(first $((2 * cycles + 4)) "$ref")" "every loss still equal"
ask S quit 30

# -- JAX with both GPUs: XLA turns peer access on at its start
if "$py" -c 'import jax; assert len(jax.devices("gpu")) >= 2' 2> /dev/null; then
	export XLA_PYTHON_CLIENT_PREALLOCATE=false
	jref=$("$py" "$here/jax_shard.py" 6)
	jref=${jref#losses }
	write_ini "[log]" "level = info"
	start J "$py" "$here/jax_shard.py" --serve
	out=$("$CUDANAP" suspend "$J_pid"); rc=$?
	like "$rc:$out" "^1:$J_pid: suspend failed: REFUSED: refusing to suspend a process with peer access between its GPUs" \
		"JAX on two GPUs: refused, not lost"
	ask J "train 2" 120
	is "$REPLY" "trained 2" "and trains on"
	write_ini "[peer]" "mode = off" "[log]" "level = info"
	out=$("$CUDANAP" suspend "$J_pid") && out=$("$CUDANAP" resume "$J_pid")
	diag "JAX, [peer] mode = off: $out"
	ask J "train 4" 120
	todo "XLA's collectives may read the other GPU's memory directly, which needs the peer access the resume cannot give back" \
		"JAX, [peer] mode = off: it trains on after a resume, every loss equal" \
		test "$REPLY:$(steps J)" = "trained 6:$jref"
	ask J quit 30
	unset XLA_PYTHON_CLIENT_PREALLOCATE
else
	skip "JAX on two GPUs" "no JAX seeing two GPUs"
fi
finish
