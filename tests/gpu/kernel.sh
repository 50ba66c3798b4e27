#!/usr/bin/env bash
# A Jupyter kernel that naps, on a real GPU: `cudanap kernel install` wraps a Python kernel, a real
# Jupyter client (jupyter_client's KernelManager) starts it and runs PyTorch cells (5 GiB of
# tensors), interrupts one, lets the kernel nap (nvidia-smi shows its memory free), and its next
# cell wakes it and computes the same product, bit for bit; then it shuts down. The same again with
# [nap] depth = light (the context kept). Each cell's time is printed. Skips itself where the
# Python with PyTorch cannot import jupyter_client and ipykernel.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
py=$(command -v "${PYTHON:-python3}")
why=$("$py" -c 'import torch, jupyter_client, ipykernel' 2>&1) ||
	skip_all "$py cannot import torch, jupyter_client and ipykernel: $(tail -n 1 <<< "$why")"
# the interpreter itself, not a version manager's shim: root runs no script in a Python's place
pyexe=$("$py" -c 'import sys; print(sys.executable)')
export JUPYTER_DATA_DIR=$T/jupyter JUPYTER_CONFIG_DIR=$T/jupyter-config JUPYTER_RUNTIME_DIR=$T/jupyter-run
export JUPYTER_PATH=$T/jupyter IPYTHONDIR=$T/ipython PYDEVD_DISABLE_FILE_VALIDATION=1
mkdir -p "$T/jupyter/kernels/torchpy"
cat > "$T/jupyter/kernels/torchpy/kernel.json" << EOF
{ "argv": ["$py", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
  "display_name": "PyTorch", "language": "python" }
EOF
say() { echo "$1" >&"${KC[1]}"; REPLY=; read -r -t 300 REPLY <&"${KC[0]}"; }
took() { say time; echo "${REPLY#time }"; }

# kernel DEPTH: the wrapped kernel's life with [nap] depth = DEPTH
kernel() {
	local depth=$1 pid first held sum out
	write_ini "[log]" "level = info" "[nap]" "depth = $depth"
	out=$(CUDANAP_PYTHON=$pyexe "$CUDANAP" kernel install --from torchpy --nap 3 -c "$T/job.ini" 2>&1)
	like "$out" "^installed kernel 'torchpy-cudanap' \(PyTorch under cudanap, naps after 3 s idle\)" \
		"$depth: cudanap kernel install"
	coproc KC { "$py" "$here/../preload/kernel_client.py" torchpy-cudanap 2>> "$T/client.err"; }
	say start
	pid=${REPLY#started }
	like "$REPLY" "^started [0-9]+$" "$depth: KernelManager starts the wrapped kernel"
	say "cell torch_work"
	first=$REPLY
	like "$first" "^cell torch_work ok sum [-0-9.e+]+ [0-9]+$" \
		"$depth: a PyTorch cell: 4 GiB of weights and their product (${first##* } MiB allocated)"
	diag "$depth: first cell (CUDA's start, 5 GiB filled, 3 products): $(took) s"
	held=$(gpu_mib "$pid")
	say interrupt
	like "$REPLY" "^interrupt KeyboardInterrupt [0-9.]+$" "$depth: an interrupt stops a running cell (${REPLY##* } s)"
	if [ "$depth" = light ]; then
		check "$depth: idle 3 s, the kernel naps lightly (it held $held MiB)" eventually 60 light_napped "$pid"
		check "$depth: nvidia-smi shows its context kept, the rest given back ($(gpu_mib "$pid") MiB left)" \
			test "$(gpu_mib "$pid")" -lt $((held / 2))
	else
		check "$depth: idle 3 s, the kernel naps (it held $held MiB)" napped "$pid" 60
		check "$depth: nvidia-smi shows its GPU memory free ($(gpu_mib "$pid") MiB left)" test "$(gpu_mib "$pid")" -le 4
	fi
	say "cell torch_verify"
	sum=${first#cell torch_work ok }
	is "$REPLY" "cell torch_verify ok ${sum% *} same True" "$depth: the next cell wakes it: the same product, bit for bit"
	diag "$depth: the cell that woke it: $(took) s, of which the wake $(in_s "$(field "$pid" last_wake_ms)") s"
	say "cell torch_verify"
	diag "$depth: the same cell, awake: $(took) s"
	is_field "$pid" naps:wakes "1:1" "$depth: one nap, one wake"
	check "$depth: napped again when idle" napped "$pid" 60
	say shutdown
	is "$REPLY" "exited 0" "$depth: a shutdown asleep: the kernel exits 0"
	exec {KC[1]}>&-
	wait "$KC_PID" 2> /dev/null
	[ ! -s "$T/client.err" ] || diag "$depth: the client's stderr: $(cat "$T/client.err")"
	: > "$T/client.err"
}
kernel full
kernel light
finish
