#!/usr/bin/env bash
# Real workloads under suspend/resume on a real GPU: PyTorch training bit for bit (with the caching
# allocator holding GiBs, suspended twice), CuPy, JAX, CUDA features, and programs the driver cannot
# checkpoint. Each part skips itself when its framework is missing.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${FEATURES:-}" ] && [ -x "$FEATURES" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
py=${PYTHON:-python3}
has() { "$py" -c "import $1" > /dev/null 2>&1; }
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }
write_ini "[log]" "level = info"

# run_steps NAME CMD...: run a training script under cudanap, suspend after step 5 and 15 (3 s
# each), collect every "step" line into $T/NAME.steps; the outcome lines go to $T/NAME.times.
run_steps() {
	local name=$1 line; shift
	start "$name" "$@" || { diag "$name did not start: $(tail -n 3 "$T/$name.err")"; return 1; }
	local pid; eval "pid=\$${name}_pid"
	: > "$T/$name.steps"
	while answer "$name" 300 && [ -n "$REPLY" ]; do
		line=$REPLY
		[ "$line" = done ] && break
		echo "$line" >> "$T/$name.steps"
		case "$line" in
		"step 5 "* | "step 15 "*)
			"$CUDANAP" suspend "$pid" >> "$T/$name.times"
			sleep 3
			"$CUDANAP" resume "$pid" >> "$T/$name.times" ;;
		esac
	done
	wait "$pid"
}

# ---- PyTorch
if has torch; then
	"$py" "$here/torch_train.py" 30 0 100 | grep '^step' > "$T/torch.ref"
	run_steps torch "$py" "$here/torch_train.py" 30 6 100
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
if has cupy; then
	ref=$(echo | "$py" "$here/cupy_work.py" | grep '^result')
	start cupy "$py" "$here/cupy_work.py"
	out=$("$CUDANAP" suspend "$cupy_pid"); sleep 2; out2=$("$CUDANAP" resume "$cupy_pid")
	ask cupy go 120
	is "$REPLY" "$ref" "CuPy: arrays, reduction and custom kernels identical to an uninterrupted run"
	diag "CuPy $("$py" -c 'import cupy; print(cupy.__version__)'): $out; $out2"
else
	skip "CuPy" "cupy not installed"
fi

# ---- JAX: refused by default (the driver crashes it while checkpointed), so training runs on
if has jax; then
	# XLA picks kernels by autotuning: without these two runs differ from step 6 on (measured).
	export XLA_PYTHON_CLIENT_MEM_FRACTION=0.1
	export XLA_FLAGS="--xla_gpu_deterministic_ops=true --xla_gpu_autotune_level=0"
	"$py" "$here/jax_train.py" 80 100 | grep '^step' > "$T/jax.ref"
	run_steps jax "$py" "$here/jax_train.py" 80 100
	is "$(grep -c 'REFUSED: refusing to suspend a JAX process' "$T/jax.times")" 2 \
		"JAX: both suspends refused up front, in one line each"
	check "JAX: training ran on, every loss equal to the uninterrupted run's" \
		cmp -s "$T/jax.ref" "$T/jax.steps"
	diag "JAX $("$py" -c 'import jax; print(jax.__version__)'): $(head -n1 "$T/jax.times")"
	write_ini "[preflight]" "allow_jax = true"
	start jaxallow "$py" "$here/jax_train.py" 400 100
	out=$("$CUDANAP" suspend "$jaxallow_pid")
	diag "JAX with allow_jax, pool 10%: $out"
	like "$out" "suspended in" "JAX with allow_jax = true: cudanap suspends it when told to"
	sleep 4
	# Not an assertion: on driver 580 JAX crashed inside libcuda while checkpointed in most runs
	# and survived in one; which of the two happened is reported.
	if kill -0 "$jaxallow_pid" 2> /dev/null; then
		diag "JAX with allow_jax: alive after 4 s checkpointed; $("$CUDANAP" resume "$jaxallow_pid" 2>&1)"
	else
		diag "JAX with allow_jax: crashed while checkpointed ($(tail -n 1 "$T/jaxallow.err"))"
	fi
	kill -9 "$jaxallow_pid" 2> /dev/null
	unset XLA_PYTHON_CLIENT_MEM_FRACTION XLA_FLAGS
	write_ini "[log]" "level = info"
else
	skip "JAX" "jax not installed"
fi

# ---- CUDA features: graphs, stream-ordered pools, pinned memory, events, work in flight
start feat "$FEATURES"
ask feat prepare 60
is "$REPLY" prepared "features: graph, pool, pinned memory, events ready; 4 streams busy"
out=$("$CUDANAP" suspend "$feat_pid"); rc=$?
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
out=$("$CUDANAP" suspend "$man_pid"); rc=$?
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
out=$("$CUDANAP" suspend "$imps_pid"); rc=$?
like "$out:$rc" "^$imps_pid: suspend failed: $refusal \(1 import, the first by cudaIpcOpenMemHandle in unsupported-shared\): .*\(state running\):1$" \
	"CUDA IPC, importer on the shared runtime: refused before the lock, in one line naming it"
diag "$out"
ask imps verify 60
is "$REPLY" "verify ok" "CUDA IPC: the refused importer runs on, reading the exporter's memory"
ask imps close 60
out=$("$CUDANAP" suspend "$imps_pid"); rc=$?
out="$out / $("$CUDANAP" resume "$imps_pid")"; rc=$rc$?
is "$rc" 00 "CUDA IPC: with its import closed, the same program suspends and resumes"
diag "$out"
ask imps verify 60
is "$REPLY" "verify ok" "CUDA IPC: and its data is intact"
ask imps quit
# torch.multiprocessing: a child that holds its parent's CUDA tensor.
if has torch; then
	start tipc "$py" "$here/torch_ipc.py" || diag "torch_ipc did not start: $(tail -n 3 "$T/tipc.err")"
	kid=${tipc_ready##* }
	ask tipc sum 60; before=$REPLY
	out=$("$CUDANAP" suspend "$kid"); rc=$?
	like "$out:$rc" "^$kid: suspend failed: $refusal \([0-9]+ imports?, the first by cudaIpcOpenMemHandle in lib[^ ]+\): .*:1$" \
		"torch.multiprocessing: the child holding its parent's CUDA tensor is refused, naming the importer"
	diag "$out"
	out=$("$CUDANAP" suspend --tree "$tipc_pid" 2>&1); rc=$?
	like "$out:$rc" "REFUSED.*rolled back.*:1$" "torch.multiprocessing: the whole job's suspend is refused and rolled back"
	diag "$(echo "$out" | tail -n 2)"
	ask tipc sum 60
	is "$REPLY" "$before" "torch.multiprocessing: both run on, the child reading the shared tensor ($before)"
	ask tipc quit
	wait "$tipc_pid"
else
	skip "torch.multiprocessing CUDA IPC" "torch not installed"
fi
# An importer on the static runtime (nvcc's default) is not seen: its calls never leave it.
start imp "$UNSUPPORTED" ipc-import "${exp_ready##* }"
out=$("$CUDANAP" suspend "$exp_pid") && out="$out / $("$CUDANAP" resume "$exp_pid")"
diag "CUDA IPC, exporting side: $out"
ask exp verify 60
is "$REPLY" "verify ok" "CUDA IPC: the exporting program runs on with its data"
out=$("$CUDANAP" suspend "$imp_pid") && out="$out / $("$CUDANAP" resume "$imp_pid")"
diag "CUDA IPC, importing side: $out"
ask imp verify 10
todo "the driver checkpoints an importer, then its restore fails (INVALID_VALUE); cudanap cannot see an import made inside the static runtime" \
	"CUDA IPC: the importing program runs on" test "$REPLY" = "verify ok"
kill -9 "$imp_pid" 2> /dev/null
ask exp quit
finish
