#!/usr/bin/env bash
# Naps on a real GPU, with the defaults but idle_s: a PyTorch session fed through a pipe like a
# notebook (CUDANAP_GPU_TEST_GIB, default 8, GiB of tensors) naps lightly when idle, nvidia-smi
# shows its memory free but its context, and its next cell wakes it and answers right; an idle JAX process naps and its poller neither keeps it awake nor
# wakes it; a Hugging Face transformers server naps between requests and its tokens equal those of
# a run without naps; a kernel longer than idle_s is not napped (the static-runtime holdmem), and
# naps once it ends; a nap to disk leaves the sleeper at most 2 % of its footprint in RSS. Each
# part skips itself when its framework is missing.
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
py=${PYTHON:-python3}
gib=${CUDANAP_GPU_TEST_GIB:-8}
write_ini "[nap]" "idle_s = 3" "[log]" "level = info"

# -- a PyTorch session through a pipe: idle, it naps; the next cell wakes it, right
if importable torch; then
	ref=$(echo compute | "$py" "$here/nap_session.py" torch "$gib" | grep '^result')
	start nb "$py" "$here/nap_session.py" torch "$gib"
	pid=$nb_pid
	ask nb compute 120
	is "$REPLY" "$ref" "PyTorch session ($gib GiB of tensors): its first cell"
	held=$(gpu_mib "$pid")
	check "idle for 3 s, it naps (it held $held MiB)" napped "$pid" 60
	is "$(field "$pid" nap_depth)" light "the defaults nap lightly ([nap] depth = auto)"
	check "nvidia-smi shows its GPU memory free but its context ($(gpu_mib "$pid") MiB left)" \
		test "$(gpu_mib "$pid")" -le 1024
	t0=$(date +%s%N)
	ask nb compute 300
	ms=$((($(date +%s%N) - t0) / 1000000))
	is "$REPLY" "$ref" "its next cell wakes it and answers as before"
	woke "$pid"
	is_field "$pid" wakes:state "1:running" "one wake"
	diag "PyTorch $gib GiB: napped lightly in $(grep -o 'napped lightly ([^)]*): [0-9]* MiB it owns moved to the host in [0-9.]* ms' "$T/nb.err" | head -n 1 | sed 's/.* in //'); the cell after it answered in $ms ms, of which the wake $(in_s "$(field "$pid" last_wake_ms)") s"
	check "and it naps again when idle" napped "$pid" 60
	ask nb compute 300
	woke "$pid"
	is "$REPLY:$(field "$pid" wakes)" "$ref:2" "and wakes again, right"
	ask nb quit 5
else
	skip "PyTorch session" "torch not installed"
fi

# -- JAX idle: XLA's poller neither keeps it awake nor wakes it
if importable jax; then
	export XLA_PYTHON_CLIENT_PREALLOCATE=false
	ref=$(echo compute | "$py" "$here/nap_session.py" jax | grep '^result')
	start jx "$py" "$here/nap_session.py" jax
	check "idle JAX naps, its poller running" napped "$jx_pid" 60
	sleep 12 # nothing is to happen: XLA's poller runs every ~5 s, answered at the gate
	is "$(field "$jx_pid" state):$(field "$jx_pid" wakes)" "napping:0" "12 s later it still naps: the poller did not wake it"
	ask jx compute 120
	is "$REPLY" "$ref" "JAX: the next computation wakes it and answers bit for bit"
	check "and it naps again" napped "$jx_pid" 60
	ask jx compute 120
	woke "$jx_pid"
	is "$REPLY:$(field "$jx_pid" wakes)" "$ref:2" "twice"
	ask jx quit 5
	unset XLA_PYTHON_CLIENT_PREALLOCATE
else
	skip "JAX" "jax not installed"
fi

# -- a transformers server napping between requests
if importable transformers; then
	ref=$(printf 'compute\ncompute\n' | "$py" "$here/nap_session.py" hf | grep '^result' | head -n 1)
	start hf "$py" "$here/nap_session.py" hf
	ok=0
	for i in 1 2 3; do
		napped "$hf_pid" 60 || break
		ask hf compute 120
		[ "$REPLY" = "$ref" ] && ok=$((ok + 1))
	done
	woke "$hf_pid"
	is "$ok:$(field "$hf_pid" naps):$(field "$hf_pid" wakes)" "3:3:3" \
		"transformers server: napped between 3 requests, woken by each, tokens equal a run without naps"
	diag "transformers: the last request woke it in $(in_s "$(field "$hf_pid" last_wake_ms)") s"
	ask hf quit 5
else
	skip "transformers server" "transformers not installed"
fi

# -- a kernel longer than idle_s (the static runtime): not napped, then napped once it ends
write_ini "[nap]" "idle_s = 1" "[log]" "level = info"
start K "$HOLDMEM" 2
ask K "spin 6000"
why_set() { [ -n "$(field "$K_pid" nap_why)" ]; }
check "a 6 s kernel: after idle_s the nap's lock gives up" eventually 30 why_set
like "$(field "$K_pid" state):$(field "$K_pid" nap_why)" "^running:CUDA_ERROR_NOT_READY.*a nap's lock" \
	"the process runs on untouched: $(field "$K_pid" nap_why)"
check "once the kernel ends it naps" napped "$K_pid" 60
ask K work 120
is "$REPLY" "work ok" "a static-runtime program woken by its next call works"
ask K verify 120
is "$REPLY" "verify ok" "its memory intact"
ask K quit 5

# -- a nap to disk: the sleeper holds almost nothing in RAM
hib=${CUDANAP_HIBERNATE_DIR:-/var/tmp}/cudanap-nap.$$
mkdir -p "$hib"
write_ini "[nap]" "to = disk" "[hibernate]" "dir = $hib"
start H "$HOLDMEM" "$gib"
cli nap "$H_pid"
is "$rc" 0 "cudanap nap to disk: $out"
rss=$(awk '/^VmRSS/ { print int($2 / 1024) }' "/proc/$H_pid/status")
foot=$(field "$H_pid" footprint_mib)
check "it holds $rss MiB in RSS, at most 2 % of its $foot MiB footprint" test "$rss" -le "$(awk -v f="$foot" 'BEGIN { print int(f * 0.02) }')"
ask H verify 300
is "$REPLY" "verify ok" "woken from disk by its next call, every byte back"
diag "woken from disk in $(in_s "$(field "$H_pid" last_wake_ms)") s"
ask H quit 5
rm -rf "$hib"
finish
