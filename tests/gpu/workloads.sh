#!/usr/bin/env bash
# Real workloads under suspend/resume on a real GPU: PyTorch training bit for bit (with the caching
# allocator holding GiBs, suspended twice), CuPy, JAX, CUDA features, and programs the driver cannot
# checkpoint. Each part skips itself when its framework is missing.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${FEATURES:-}" ] && [ -x "$FEATURES" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
py=${PYTHON:-python3}
write_ini "[log]" "level = info"

# run_steps NAME "AT..." SECONDS CMD...: run a training script under cudanap, suspend it after each
# step of AT for SECONDS, collect every "step" line into $T/NAME.steps; the outcome lines go to
# $T/NAME.times.
run_steps() {
	local name=$1 at=" $2 " secs=$3 line; shift 3
	start "$name" "$@" || { diag "$name did not start: $(tail -n 3 "$T/$name.err")"; return 1; }
	local pid; eval "pid=\$${name}_pid"
	: > "$T/$name.steps"
	while answer "$name" 300 && [ -n "$REPLY" ]; do
		line=$REPLY
		[ "$line" = done ] && break
		echo "$line" >> "$T/$name.steps"
		set -- $line
		if [ "$1" = step ] && [[ $at == *" $2 "* ]]; then
			"$CUDANAP" suspend "$pid" >> "$T/$name.times"
			sleep "$secs"
			"$CUDANAP" resume "$pid" >> "$T/$name.times"
		fi
	done
	wait "$pid"
}

# spread FILE WORD: "MIN-MAX s" of the times in FILE's lines that say WORD in N ms|s.
spread() {
	grep -o "$2 in [0-9.]* m\?s" "$1" | awk '{ v = $3; if ($4 == "ms") v /= 1000; if (NR == 1 || v < lo) lo = v; if (v > hi) hi = v } END { printf "%.2f-%.2f s", lo, hi }'
}

# ---- PyTorch
if importable torch; then
	"$py" "$here/torch_train.py" 30 0 100 | grep '^step' > "$T/torch.ref"
	run_steps torch "5 15" 3 "$py" "$here/torch_train.py" 30 6 100
	is "$(grep -c suspended "$T/torch.times")$(grep -c resumed "$T/torch.times")" 22 \
		"PyTorch: suspended and resumed twice mid-training"
	like "$torch_ready" "reserved_mib=(6[0-9]{3}|[7-9][0-9]{3}|[0-9]{5,})" \
		"PyTorch: the caching allocator holds 6 GiB while training"
	check "PyTorch: every step's loss equals the uninterrupted run's bit for bit" \
		cmp -s "$T/torch.ref" "$T/torch.steps"
	like "$(head -c 300 "$T/torch.err")$(cat "$T/torch.times")" "suspended in" "PyTorch: timings"
	diag "PyTorch (caching allocator holding 6 GiB): $(tr '\n' ';' < "$T/torch.times")"
	diag "torch $("$py" -c 'import torch; print(torch.__version__)')"
else
	skip "PyTorch" "torch not installed"
fi

# ---- CuPy
if importable cupy; then
	ref=$(echo | "$py" "$here/cupy_work.py" | grep '^result')
	start cupy "$py" "$here/cupy_work.py"
	out=$("$CUDANAP" suspend "$cupy_pid"); sleep 2; out2=$("$CUDANAP" resume "$cupy_pid")
	ask cupy go 120
	is "$REPLY" "$ref" "CuPy: arrays, reduction and custom kernels identical to an uninterrupted run"
	diag "CuPy $("$py" -c 'import cupy; print(cupy.__version__)'): $out; $out2"
else
	skip "CuPy" "cupy not installed"
fi

# ---- JAX: XLA's driver calls (its poller's cuStreamQuery among them) wait at the gate while the
# process sleeps; without the gate it died inside libcuda in every run (docs/DRIVER.md, The lock)
if importable jax; then
	# XLA picks kernels by autotuning: without these two runs differ from step 6 on (measured).
	export XLA_FLAGS="--xla_gpu_deterministic_ops=true --xla_gpu_autotune_level=0"
	export XLA_PYTHON_CLIENT_PREALLOCATE=false
	"$py" "$here/jax_train.py" 130 20 | grep '^step' > "$T/jax.ref"
	run_steps jax "$(seq -s ' ' 5 6 119)" 0.5 "$py" "$here/jax_train.py" 130 20
	is "$(grep -c 'suspended in' "$T/jax.times"):$(grep -c 'resumed in' "$T/jax.times")" 20:20 \
		"JAX, jitted training with Adam: suspended and resumed 20 times mid-training"
	check "JAX: every step's loss equals the uninterrupted run's bit for bit" \
		cmp -s "$T/jax.ref" "$T/jax.steps"
	diag "JAX $("$py" -c 'import jax; print(jax.__version__)'), XLA_PYTHON_CLIENT_PREALLOCATE=false: suspend $(spread "$T/jax.times" suspended), resume $(spread "$T/jax.times" resumed); $(head -n 1 "$T/jax.times")"
	# Idle: only XLA's own threads run while it sleeps, five times.
	ref=$(echo go | "$py" "$here/jax_train.py" --idle 20 | grep '^result')
	start jaxidle "$py" "$here/jax_train.py" --idle 20
	: > "$T/jaxidle.times"
	for _ in 1 2 3 4 5; do
		"$CUDANAP" suspend "$jaxidle_pid" >> "$T/jaxidle.times"
		sleep 6 # longer than the ~5 s between the bursts of XLA's poller
		"$CUDANAP" resume "$jaxidle_pid" >> "$T/jaxidle.times"
	done
	is "$(grep -c 'suspended in' "$T/jaxidle.times"):$(grep -c 'resumed in' "$T/jaxidle.times")" 5:5 \
		"JAX, idle (XLA's poller alone running): suspended and resumed 5 times"
	ask jaxidle go 120
	is "$REPLY" "$ref" "JAX, idle: alive, and its next steps' losses equal an uninterrupted run's"
	diag "JAX idle, XLA_PYTHON_CLIENT_PREALLOCATE=false: suspend $(spread "$T/jaxidle.times" suspended), resume $(spread "$T/jaxidle.times" resumed)"
	# JAX's default: a pool of 75 % of the GPU, all of which moves.
	unset XLA_PYTHON_CLIENT_PREALLOCATE
	start jaxpool "$py" "$here/jax_train.py" --idle 20
	cli suspend "$jaxpool_pid"
	sleep 1
	out="$out / $("$CUDANAP" resume "$jaxpool_pid")"; rc=$rc$?
	is "$rc" 00 "JAX with its default pool (75 % of the GPU): suspended and resumed"
	ask jaxpool go 300
	is "$REPLY" "$ref" "JAX with its default pool: its next steps' losses equal an uninterrupted run's"
	diag "JAX, default preallocation ($(field "$jaxpool_pid" footprint_mib) MiB): $out"
	unset XLA_FLAGS
else
	skip "JAX" "jax not installed"
fi

# ---- CUDA features: graphs, stream-ordered pools, pinned memory, events, work in flight
start feat "$FEATURES"
ask feat prepare 60
is "$REPLY" prepared "features: graph, pool, pinned memory, events ready; 4 streams busy"
cli suspend "$feat_pid"
is "$rc" 0 "features: suspended with work in flight on 4 streams"
diag "$out"
sleep 2
"$CUDANAP" resume "$feat_pid" > /dev/null
ask feat check 120
like "$REPLY" "^check ok graph pool pinned streams events" \
	"features: in-flight work done, graph replays, pool and pinned memory intact, events time it"
diag "$REPLY"
ask feat quit

# ---- what the driver cannot checkpoint: a clear line, and the program runs on
start man "$UNSUPPORTED" managed
diag "/dev/nvidia-uvm mappings: managed program $(grep -c nvidia-uvm /proc/"$man_pid"/maps), features program $(grep -c nvidia-uvm /proc/"$feat_pid"/maps 2>/dev/null || echo gone)"
cli suspend "$man_pid"
is "$rc" 1 "managed memory: the suspend fails"
like "$out" "^$man_pid: suspend failed: [A-Z_]+: .*managed memory.*\(state running\)$" "managed memory: one clear line"
diag "$out"
ask man verify 60
is "$REPLY" "verify ok" "managed memory: the program runs on with its data"
ask man quit

start exp "$UNSUPPORTED" ipc-export
# An importer on the shared runtime is seen: refused before the lock; its import closed, it
# suspends. (The exporter's own suspend, below, is what the driver supports.)
refusal='REFUSED: refusing to suspend a process that holds GPU memory imported from another process'
start imps "$UNSUPPORTED_SHARED" ipc-import "${exp_ready##* }"
cli suspend "$imps_pid"
like "$out:$rc" "^$imps_pid: suspend failed: $refusal \(1 import, the first by cudaIpcOpenMemHandle in unsupported-shared\): .*\(state running\):1$" \
	"CUDA IPC, importer on the shared runtime: refused before the lock, in one line naming it"
diag "$out"
ask imps verify 60
is "$REPLY" "verify ok" "CUDA IPC: the refused importer runs on, reading the exporter's memory"
ask imps close 60
cli suspend "$imps_pid"
out="$out / $("$CUDANAP" resume "$imps_pid")"; rc=$rc$?
is "$rc" 00 "CUDA IPC: with its import closed, the same program suspends and resumes"
diag "$out"
ask imps verify 60
is "$REPLY" "verify ok" "CUDA IPC: and its data is intact"
ask imps quit
# torch.multiprocessing: a child that holds its parent's CUDA tensor.
if importable torch; then
	start tipc "$py" "$here/torch_ipc.py" || diag "torch_ipc did not start: $(tail -n 3 "$T/tipc.err")"
	kid=${tipc_ready##* }
	ask tipc sum 60; before=$REPLY
	cli suspend "$kid"
	like "$out:$rc" "^$kid: suspend failed: $refusal \([0-9]+ imports?, the first by cudaIpcOpenMemHandle in lib[^ ]+\): .*:1$" \
		"torch.multiprocessing: the child holding its parent's CUDA tensor is refused, naming the importer"
	diag "$out"
	cli2 suspend --tree "$tipc_pid"
	like "$out:$rc" "REFUSED.*rolled back.*:1$" "torch.multiprocessing: the whole job's suspend is refused and rolled back"
	diag "$(echo "$out" | tail -n 2)"
	ask tipc sum 60
	is "$REPLY" "$before" "torch.multiprocessing: both run on, the child reading the shared tensor ($before)"
	ask tipc quit
	wait "$tipc_pid"
else
	skip "torch.multiprocessing CUDA IPC" "torch not installed"
fi
# An importer on the static runtime (nvcc's default): its runtime takes the driver's functions by
# cuGetProcAddress, which the gate wraps, so its import is seen and refused too.
start imp "$UNSUPPORTED" ipc-import "${exp_ready##* }"
out=$("$CUDANAP" suspend "$exp_pid") && out="$out / $("$CUDANAP" resume "$exp_pid")"
diag "CUDA IPC, exporting side: $out"
ask exp verify 60
is "$REPLY" "verify ok" "CUDA IPC: the exporting program runs on with its data"
cli suspend "$imp_pid"
like "$out:$rc" "^$imp_pid: suspend failed: $refusal \(1 import, the first by cuIpcOpenMemHandle[_a-z0-9]* in unsupported\): .*\(state running\):1$" \
	"CUDA IPC, importer on the static runtime: refused before the lock, in one line naming it"
diag "$out"
ask imp verify 60
is "$REPLY" "verify ok" "CUDA IPC: the refused static importer runs on"
ask imp quit
ask exp quit
finish
