#!/usr/bin/env bash
# The quick-start demo: run a bundled CUDA program holding CUDANAP_DEMO_GIB (default 4) GiB, suspend
# it, show the GPU freed, resume it, verify every byte, print the timings.
# Usage (through meson): ninja -C build demo
. "$(dirname "$0")/../tests/lib.sh"
gib=${CUDANAP_DEMO_GIB:-4}
say() { printf 'demo: %s\n' "$*"; }
fail() { printf 'demo: %s\n' "$*" >&2; exit 1; }

command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 ||
	fail "no NVIDIA GPU or driver here: the demo needs one. The tests run without: meson test -C build"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] ||
	fail "the CUDA demo program was not built: put nvcc on PATH (export PATH=/usr/local/cuda/bin:\$PATH) and run meson setup --reconfigure build"

write_ini
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)"
say "starting a CUDA program that fills $gib GiB of GPU memory with a pattern"
start A "$HOLDMEM" "$gib" || fail "the CUDA program did not start: $(cat "$T/A.err")"
say "pid $A_pid holds $(gpu_mib "$A_pid") MiB on the GPU"
say "\$ cudanap suspend $A_pid"
"$CUDANAP" suspend "$A_pid" || fail "suspend failed"
say "pid $A_pid now holds $(gpu_mib "$A_pid") MiB on the GPU; its memory is in host RAM"
sleep 2
say "\$ cudanap resume $A_pid"
"$CUDANAP" resume "$A_pid" || fail "resume failed"
say "pid $A_pid holds $(gpu_mib "$A_pid") MiB on the GPU again"
ask A verify 300
[ "$REPLY" = "verify ok" ] || fail "data check: $REPLY"
say "all $gib GiB verified bit for bit after resume"
ask A quit
