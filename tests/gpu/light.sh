#!/usr/bin/env bash
# Light naps on a real GPU ([nap] depth = light): a notebook-like session of each framework with
# its defaults (PyTorch's caching allocator, CuPy's pool, JAX with its pool preallocated, and JAX
# without preallocation) naps lightly when idle: what cudanap owns goes to the host, nvidia-smi
# shows only its context left, and its next cell wakes it and answers bit for bit. PyTorch and
# CuPy then nap lightly with [nap] keep_host_copy, twice (the second nap into the copy the first
# wake kept). Then each naps with the defaults but idle_s: its host copy made ahead while it idles
# and its nap into it, or, where its light copy would be over [memory] host_cache (JAX's default
# pool on a host of less than twice its size), a full nap said as auto's choice. Then the same
# session naps fully (the INI says depth = full, read again at the nap) and wakes, for the
# figures beside each other. The first light nap has keep_host_copy and copy_ahead off: a fresh
# host copy. CUDANAP_GPU_TEST_GIB (default 8) GiB of arrays
# each. Each cell is compared with the session's first: JAX's result differs between processes by
# its autotuning (the gemm it times fastest at the start), so a session alone is the reference
# for PyTorch and CuPy only.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
py=${PYTHON:-python3}
gib=${CUDANAP_GPU_TEST_GIB:-8}
full_napped() { nap_whole "$1" && [ "$(field "$1" nap_depth)" = full ]; }
# cell NAME: one cell, its time in ms in $ms
cell() {
	local t0
	t0=$(date +%s%N)
	ask "$1" compute 300
	ms=$((($(date +%s%N) - t0) / 1000000))
}

# kept NAME PID REF FRESH_MS: with [nap] keep_host_copy, session s napped lightly and woken (its
# host copy kept), then napped into the kept copy and woken; bit for bit each time
kept() {
	local name=$1 pid=$2 ref=$3 fresh=$4 into
	write_ini "[nap]" "idle_s = 3" "depth = light" "keep_host_copy = true" "copy_ahead = false" \
		"[log]" "level = info"
	check "$name: keep_host_copy: idle, it naps lightly" eventually 60 light_napped "$pid"
	cell s
	is "$REPLY" "$ref" "$name: woken, right"
	woke "$pid"
	check "$name: its pinned host copy kept after the wake ($(field "$pid" host_kept_mib) MiB)" \
		test "$(field "$pid" host_kept_mib | cut -d. -f1)" -gt 0
	check "$name: idle, it naps into the kept copy" eventually 60 light_napped "$pid"
	into=$(field "$pid" total_ms)
	like "$(grep -o 'light nap: .*' "$T/s.err" | tail -n 1)" "to the host copy made ready before it" \
		"$name: the log says the copy went to the kept copy"
	diag "$(grep -o 'light nap: .*' "$T/s.err" | tail -n 1)"
	cell s
	is "$REPLY" "$ref" "$name: its next cell answers bit for bit"
	woke "$pid"
	diag "$name kept: napped into the kept copy in $(in_s "$into") s (a fresh copy: $(in_s "$fresh") s); the next cell answered in $ms ms, the wake $(in_s "$(field "$pid" last_wake_ms)") s"
}

# defaults NAME ARGS...: a session started with the INI's defaults but idle_s (6 s: its copy made
# ahead after 3 s idle): its first nap into the copy made ahead, light; or full, said as auto's
# choice, where its light copy is over [memory] host_cache (50 % of the host); woken bit for bit
defaults() {
	local name=$1 pid ref share
	shift
	share=$(awk '/^MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
	: > "$T/s.err" # its own log alone
	write_ini "[nap]" "idle_s = 6" "[log]" "level = info"
	start s "$py" "$here/nap_session.py" "$@"
	pid=$s_pid
	cell s
	ref=$REPLY
	check "$name, the defaults: idle, it naps" eventually 90 nap_whole "$pid"
	if [ "$(field "$pid" nap_depth)" = full ]; then
		is "$(field "$pid" depth_why)" "host cache" "$name, the defaults: fully, as auto chose: its copy is over [memory] host_cache ($share MiB)"
		diag "$name defaults: napped fully in $(in_s "$(field "$pid" total_ms)") s"
	else
		check "$name, the defaults: lightly, its host copy made ahead" grep -q "made its host copy ahead" "$T/s.err"
		like "$(grep -o 'light nap: .*' "$T/s.err" | tail -n 1)" "to the host copy made ready before it" \
			"$name, the defaults: its first nap went into the copy made ahead"
		diag "$name defaults: $(grep -o 'light nap: .*' "$T/s.err" | tail -n 1)"
	fi
	cell s
	is "$REPLY" "$ref" "$name, the defaults: its next cell answers bit for bit"
	woke "$pid"
	diag "$name defaults: the next cell answered in $ms ms, the wake $(in_s "$(field "$pid" last_wake_ms)") s"
	exec {s_in}>&-
	timeout 60 tail --pid="$pid" -f /dev/null
}

# session NAME ARGS...: the session napped lightly, woken, napped fully, woken
session() {
	local name=$1 ref alone pid held left lm napms full_ms
	shift
	write_ini "[nap]" "idle_s = 3" "depth = light" "keep_host_copy = false" "copy_ahead = false" \
		"[log]" "level = info"
	alone=$(echo compute | "$py" "$here/nap_session.py" "$@" | grep '^result')
	start s "$py" "$here/nap_session.py" "$@"
	pid=$s_pid
	cell s
	ref=$REPLY
	if [ "$1" = jax ]; then
		like "$ref" "^result " "$name: its first cell (alone: ${alone#result })"
	else
		is "$ref" "$alone" "$name: its first cell, as a session alone"
	fi
	held=$(gpu_mib "$pid")
	check "$name: idle 3 s, it naps lightly (it held $held MiB)" eventually 60 light_napped "$pid"
	left=$(gpu_mib "$pid")
	lm=$(field "$pid" light_mib)
	napms=$(field "$pid" total_ms)
	check "$name: nvidia-smi shows $left MiB left of $held (its context and what cudanap does not own)" \
		test "$left" -lt $((held - ${lm%.*} + 64))
	cell s
	is "$REPLY" "$ref" "$name: its next cell wakes it and answers bit for bit"
	woke "$pid"
	diag "$(grep -o 'light nap: .*' "$T/s.err" | tail -n 1)"
	diag "$name light: $held MiB held, ${lm%.*} MiB to the host in $(in_s "$napms") s (light_ms $(field "$pid" light_ms)), $left MiB kept; the next cell answered in $ms ms, the wake $(in_s "$(field "$pid" last_wake_ms)") s"
	[ "$1" = jax ] || kept "$name" "$pid" "$ref" "$napms"
	write_ini "[nap]" "idle_s = 3" "depth = full" "[log]" "level = info"
	check "$name: with depth = full, it naps to the driver's checkpoint" eventually 60 full_napped "$pid"
	full_ms=$(field "$pid" total_ms)
	check "$name: nvidia-smi shows its GPU memory free" test "$(gpu_mib "$pid")" -le 4
	[ "$1" = jax ] || like "$(field "$pid" host_kept_mib)" "^0(\.0+)?$" "$name: the full nap let its kept host copy go"
	cell s
	is "$REPLY" "$ref" "$name: its next cell wakes it, right"
	woke "$pid"
	diag "$name full: napped in $(in_s "$full_ms") s; the next cell answered in $ms ms, the wake $(in_s "$(field "$pid" last_wake_ms)") s"
	exec {s_in}>&- # its input ends: the session ends
	timeout 60 tail --pid="$pid" -f /dev/null
}

if importable torch; then
	session PyTorch torch "$gib"
	defaults PyTorch torch "$gib"
else
	skip "PyTorch" "torch not installed"
fi
if importable cupy; then
	session CuPy cupy "$gib"
	defaults CuPy cupy "$gib"
else
	skip "CuPy" "cupy not installed"
fi
if importable jax; then
	session "JAX, its pool preallocated" jax "$gib"
	defaults "JAX, its pool preallocated" jax "$gib"
	export XLA_PYTHON_CLIENT_PREALLOCATE=false
	session "JAX, XLA_PYTHON_CLIENT_PREALLOCATE=false" jax "$gib"
	defaults "JAX, XLA_PYTHON_CLIENT_PREALLOCATE=false" jax "$gib"
	unset XLA_PYTHON_CLIENT_PREALLOCATE
else
	skip "JAX" "jax not installed"
fi
finish
