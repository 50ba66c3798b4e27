#!/usr/bin/env bash
# One process on two GPUs with peer access between them, run with the frameworks' defaults. A
# physical allocation over 256 MiB that another GPU may reach is lost at the driver's restore
# (docs/DRIVER.md, One process on several GPUs); cudanap owns such memory ([memory] own = auto, the
# default) in pieces the driver restores. A PyTorch model split across the GPUs (its default
# allocator, then expandable segments), CuPy with a kernel of one GPU reading the other's memory
# directly, and JAX with its defaults (its pool preallocated, one handle of cuMemCreate's a GPU
# mapped to the other) are suspended and resumed CYCLES (20) times, the GPUs swapped at every other
# resume, and napped and woken by their next step: every loss and sum equal to an uninterrupted
# run's, and the copies between the GPUs as fast after as before (printed). With [memory] own =
# never the same PyTorch process is refused in one line, before the lock.
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
# swapped NAME N BASE: N suspends and resumes of NAME's process, the GPUs swapped at every other
# resume, its memory off the GPUs while suspended, 2 steps after each (BASE before the first);
# sets ok to how many went through
swapped() {
	local c map p
	eval "p=\$${1}_pid"
	ok=0
	for c in $(seq "$2"); do
		"$CUDANAP" suspend "$p" >> "$T/times" || break
		[ "$(gpu_mib "$p")" -le 8 ] || { diag "cycle $c: $(gpu_mib "$p") MiB left on the GPUs"; break; }
		map=""
		[ $((c % 2)) = 1 ] && map="0=1, 1=0"
		"$CUDANAP" resume --gpu-map "$map" "$p" >> "$T/times" || break
		ask "$1" "train 2" 300
		[ "$REPLY" = "trained $(($3 + 2 * c))" ] || { diag "cycle $c: $REPLY"; break; }
		ok=$c
	done
}
spread() { grep -o "$1 in [0-9.]* m\?s" "$T/times" | awk '{ v = $3 * ($4 == "s" ? 1000 : 1); if (NR == 1 || v < lo) lo = v; if (v > hi) hi = v } END { printf "%.0f-%.0f ms", lo, hi }'; }
bw_of() { ask "$1" bw 120; echo "${REPLY#bw }"; }
# kept BEFORE AFTER: the copies as fast after, within noise: at least half (through the host they
# are about ten times slower), both printed
kept() { awk -v b="$1" -v a="$2" 'BEGIN { exit !(b > 0 && a >= b / 2) }'; }
ratio() { awk -v b="$1" -v a="$2" 'BEGIN { printf "%.2fx", a / b }'; }

# -- PyTorch, a model split across the GPUs, its default allocator
ref=$("$py" "$here/split_train.py" $((2 * cycles + 2)))
ref=${ref#losses }
write_ini "[log]" "level = info"
start S "$py" "$here/split_train.py" --serve
ask S peer
is "$REPLY" "peer YES" "PyTorch uses peer access between the GPUs"
bw0=$(bw_of S) # its 512 MiB tensors: allocations over the line, owned
"$CUDANAP" status "$S_pid" > /dev/null
like "$(field "$S_pid" peer)" "^GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in [^;]*; owned: [0-9]+ MiB in [0-9]+ pieces of 256 MiB at most" \
	"status: its peer access on, and what cudanap owns ($(field "$S_pid" peer | sed 's/.*owned: //'))"
swapped S "$cycles" 0
is "$ok" "$cycles" "$cycles suspends and resumes, the GPUs swapped at every other, 2 steps after each"
is "$(steps S)" "$(first $((2 * cycles)) "$ref")" "every loss equal to the uninterrupted run's"
bw1=$(bw_of S)
check "its copies between the GPUs as fast after as before: $bw0 GB/s before, $bw1 GB/s after ($(ratio "$bw0" "$bw1"))" kept "$bw0" "$bw1"
diag "split model: suspend $(spread suspended), resume $(spread resumed)"
n=$((2 * cycles))
cli nap "$S_pid"
is "$rc" 0 "napped ($out)"
ask S "train 2" 300
n=$((n + 2))
woke "$S_pid"
is "$REPLY" "trained $n" "its next step wakes it"
like "$(mib_on "$S_pid" 0) $(mib_on "$S_pid" 1)" "^[1-9][0-9]* [1-9][0-9]*$" "on GPUs 0 and 1"
is "$(steps S)" "$(first "$n" "$ref")" "every loss equal"
ask S quit 30

# -- the same with PyTorch's expandable segments (cuMemCreate chunks of 20 MiB, mapped to the peer)
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
ref=$("$py" "$here/split_train.py" $((2 * cycles)))
ref=${ref#losses }
: > "$T/times"
start E "$py" "$here/split_train.py" --serve
bw0=$(bw_of E)
swapped E "$cycles" 0
is "$ok" "$cycles" "expandable segments: $cycles suspends and resumes, swapped at every other"
is "$(steps E)" "$ref" "every loss equal to the uninterrupted run's"
bw1=$(bw_of E)
check "its copies as fast after: $bw0 GB/s before, $bw1 GB/s after ($(ratio "$bw0" "$bw1"))" kept "$bw0" "$bw1"
diag "expandable segments: suspend $(spread suspended), resume $(spread resumed)"
ask E quit 30
unset PYTORCH_CUDA_ALLOC_CONF

# -- [memory] own = never: the driver's own allocation over the line, peer access on: refused
write_ini "[memory]" "own = never" "[log]" "level = info"
start N "$py" "$here/split_train.py" --serve
bw_of N > /dev/null
cli suspend --dry-run "$N_pid"
like "$rc:$out" "^1:$N_pid: would refuse: refusing to suspend a process with peer access between its GPUs .* and an allocation over 256 MiB \(512 MiB by cuMemAlloc" \
	"own = never: suspend --dry-run would refuse"
cli suspend "$N_pid"
like "$rc:$out" "^1:$N_pid: suspend failed: REFUSED: refusing to suspend a process with peer access between its GPUs \(GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in [^)]*\) and an allocation over 256 MiB \(512 MiB by cuMemAlloc[^)]*\): the driver cannot restore it; \[memory\] own = auto owns such memory.*\(state running\)$" \
	"cudanap suspend: refused in one line, naming the GPUs, the allocation and the libraries"
cli nap "$N_pid"
like "$rc:$out" "^1:$N_pid: nap failed: REFUSED" "cudanap nap: refused"
ask N "train 2" 120
is "$REPLY" "trained 2" "it trains on"
ask N quit 30

# -- CuPy: a kernel of GPU 1 reads GPU 0's memory directly, across resumes
if "$py" -c 'import cupy' 2> /dev/null; then
	write_ini "[log]" "level = info"
	start K "$py" "$here/peer_kernel.py"
	ask K sum 120
	sum=$REPLY
	like "$sum" "^sum [0-9a-f]+$" "CuPy: a kernel of GPU 1 sums 1 GiB of GPU 0's ($sum)"
	bw0=$(bw_of K)
	ok=0
	for c in $(seq "$cycles"); do
		map=""
		[ $((c % 2)) = 1 ] && map="0=1, 1=0"
		"$CUDANAP" suspend "$K_pid" > /dev/null && "$CUDANAP" resume --gpu-map "$map" "$K_pid" > /dev/null || break
		ask K sum 120
		[ "$REPLY" = "$sum" ] || { diag "cycle $c: $REPLY"; break; }
		ok=$c
	done
	is "$ok" "$cycles" "$cycles suspends and resumes, swapped at every other: the kernel reads the other GPU's memory, the same sum each time"
	bw1=$(bw_of K)
	check "its peer copies as fast after: $bw0 GB/s before, $bw1 GB/s after ($(ratio "$bw0" "$bw1"))" kept "$bw0" "$bw1"
	ask K quit 30
else
	skip "CuPy with peer access" "no CuPy"
fi

# -- JAX with its defaults on both GPUs: XLA turns peer access on and preallocates its pool, one
# handle of cuMemCreate's a GPU mapped to the other. The pool's fraction is cut to 20 % to keep
# twenty cycles short; it is still one handle over the line a GPU (the full 75 % is tried below).
if "$py" -c 'import jax; assert len(jax.devices("gpu")) >= 2' 2> /dev/null; then
	# XLA's sum across the GPUs is not bit for bit the same from run to run without this (two
	# plain runs differed in the last bits; with it they did not).
	export XLA_FLAGS=--xla_gpu_deterministic_ops=true XLA_PYTHON_CLIENT_MEM_FRACTION=.2
	jref=$("$py" "$here/jax_shard.py" $((2 * cycles + 2)))
	jref=${jref#losses }
	: > "$T/times"
	write_ini "[log]" "level = info"
	start J "$py" "$here/jax_shard.py" --serve
	"$CUDANAP" status "$J_pid" > /dev/null
	like "$(field "$J_pid" peer)" "^GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in xla_cuda_plugin.so; mapped: .*; owned: [0-9]+ MiB in [0-9]+ pieces of 256 MiB at most \(0 allocations, 2 handles\)" \
		"JAX: XLA's pool, a handle a GPU over the line, owned in pieces ($(field "$J_pid" peer | sed 's/.*owned: //'))"
	swapped J "$cycles" 0
	is "$ok" "$cycles" "JAX with its pool preallocated: $cycles suspends and resumes, swapped at every other"
	is "$(steps J)" "$(first $((2 * cycles)) "$jref")" "every loss equal to the uninterrupted run's"
	diag "JAX, pool of 20 %: suspend $(spread suspended), resume $(spread resumed)"
	cli nap "$J_pid"
	is "$rc" 0 "napped ($out)"
	ask J "train 2" 300
	woke "$J_pid"
	is "$REPLY" "trained $((2 * cycles + 2))" "its next step wakes it"
	is "$(steps J)" "$jref" "every loss equal"
	ask J quit 60
	# the full default (75 % of each GPU), and without preallocation: two cycles each
	for variant in "XLA_PYTHON_CLIENT_MEM_FRACTION" "XLA_PYTHON_CLIENT_PREALLOCATE=false"; do
		unset XLA_PYTHON_CLIENT_MEM_FRACTION
		[ "$variant" = XLA_PYTHON_CLIENT_MEM_FRACTION ] || export "$variant"
		jref=$("$py" "$here/jax_shard.py" 4)
		jref=${jref#losses }
		: > "$T/times"
		start V "$py" "$here/jax_shard.py" --serve
		swapped V 2 0
		is "$ok:$(steps V)" "2:$jref" "JAX, ${variant/XLA_PYTHON_CLIENT_MEM_FRACTION/its full default pool}: 2 cycles, swapped, every loss equal"
		diag "JAX, ${variant/XLA_PYTHON_CLIENT_MEM_FRACTION/full default}: suspend $(spread suspended), resume $(spread resumed)"
		ask V quit 60
		wait "$V_pid" 2> /dev/null
	done
	unset XLA_FLAGS XLA_PYTHON_CLIENT_PREALLOCATE
else
	skip "JAX on two GPUs" "no JAX seeing two GPUs"
fi
finish
