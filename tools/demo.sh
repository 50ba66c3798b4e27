#!/usr/bin/env bash
# The quick-start demo: run a bundled CUDA program holding CUDANAP_DEMO_GIB (default 4) GiB, suspend
# it, show the GPU freed, resume it, verify every byte, print the timings. Without a GPU the same
# steps run on the test suite's fake driver, every line saying so, and the last line says how to
# run the real one. CUDANAP_DEMO_FAKE=1 takes the fake driver on a GPU machine too.
# Usage (through meson): ninja -C build demo; installed (cudanap-demo), lib.sh is beside it.
lib=$(dirname "$0")/../tests/lib.sh
[ -f "$lib" ] || lib=$(dirname "$0")/lib.sh
. "$lib"
gib=${CUDANAP_DEMO_GIB:-4}
fail() { printf '%s: %s\n' "$tag" "$*" >&2; exit 1; }

if [ -z "${CUDANAP_DEMO_FAKE:-}" ] && command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
	tag=demo
	[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] ||
		fail "the CUDA demo program was not built: put nvcc on PATH (export PATH=/usr/local/cuda/bin:\$PATH) and run meson setup --reconfigure build"
	prog=("$HOLDMEM" "$gib")
	what="a CUDA program that fills $gib GiB of GPU memory with a pattern"
	held() { echo "$(gpu_mib "$1") MiB"; }
	gpu="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)"
else
	tag="demo (fake driver: no GPU here)"
	[ -n "${FAKECUDA:-}" ] && [ -f "$FAKECUDA" ] && [ -x "${TARGET:-}" ] ||
		fail "no GPU here, and the fake driver is not built: run ninja -C build first"
	# The fake driver: its "GPU memory" is a file per process, its NVML counts what tests set;
	# the checkpoint's host copy is made inside the program as the real driver's is.
	export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
	export CUDANAP_FAKE_FOOTPRINT_MIB=$((gib * 1024)) CUDANAP_FAKE_COPY_MIB=256
	mkdir "$T/fake"
	prog=("$TARGET")
	held() { [ -e "$T/fake/$1.gpu" ] && echo "$CUDANAP_FAKE_FOOTPRINT_MIB MiB" || echo "0 MiB"; }
	gpu="no NVIDIA GPU or driver found: cudanap's own fake driver stands in for libcuda and NVML"
	what="a test program whose fake GPU memory holds a pattern (counted as $gib GiB; its host copy is 256 MiB)"
fi
say() { printf '%s: %s\n' "$tag" "$*"; }

write_ini
say "$gpu"
say "starting $what"
start A "${prog[@]}" || fail "the CUDA program did not start: $(cat "$T/A.err")"
say "pid $A_pid holds $(held "$A_pid") on the GPU"
say "\$ cudanap suspend $A_pid"
"$CUDANAP" suspend "$A_pid" | sed "s/^/$tag: /"
[ "${PIPESTATUS[0]}" = 0 ] || fail "suspend failed"
say "pid $A_pid now holds $(held "$A_pid") on the GPU; its memory is in host RAM"
say "\$ cudanap status"
"$CUDANAP" status -c "$T/job.ini" | sed "s/^/$tag: /"
sleep 2
say "\$ cudanap resume $A_pid"
"$CUDANAP" resume "$A_pid" | sed "s/^/$tag: /"
[ "${PIPESTATUS[0]}" = 0 ] || fail "resume failed"
say "pid $A_pid holds $(held "$A_pid") on the GPU again"
ask A verify 300
[ "$REPLY" = "verify ok" ] || fail "data check: $REPLY"
say "every byte verified after the resume"
ask A quit
if [ "$tag" != demo ] && [ -n "${CUDANAP_DEMO_INSTALLED:-}" ]; then
	say "that was the fake driver; on a machine with an NVIDIA GPU, a source tree runs a real CUDA program:"
	say "  meson setup build && ninja -C build demo (nvcc on PATH)"
elif [ "$tag" != demo ]; then
	say "that was the fake driver; on a machine with an NVIDIA GPU and nvcc, the same command runs a real CUDA program:"
	say "  meson setup --reconfigure build && ninja -C build demo"
fi
