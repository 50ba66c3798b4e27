#!/usr/bin/env bash
# bench-peer: one process holding GIB (16) GiB on each of two GPUs, peer access on between them:
# suspended and resumed by cudanap with its memory in allocations of 16 GiB (over the driver's line:
# cudanap owns them, in pieces of 256 MiB) and of 256 MiB (the driver's own), against the driver's
# calls alone on the same process (the 256 MiB layout; the 16 GiB one the driver loses, said once),
# and against the same memory on one GPU; then one GPU's 8 GiB in one allocation, owned and not.
# Each row: the median of REPS (3) suspends and resumes after one warm-up (cudanap's: the status
# file's total_ms, the agent's wake to the outcome; the driver's: its calls), the ratio to the
# first row's, and a copy between the GPUs before the first suspend and after the last resume.
# Needs two GPUs and PyTorch (tests/gpu/hold_gpus.py). Run through `ninja -C build bench-peer`.
set -u
GIB=${GIB:-16} REPS=${REPS:-3}
py=${PYTHON:-python3}
here=$(dirname "$0")/../../tests/gpu
. "$(dirname "$0")/bench-lib.sh"
bench_job
[ "$(nvidia-smi -L 2> /dev/null | wc -l)" -ge 2 ] || { echo "bench-peer: needs two GPUs" >&2; exit 1; }
mib=$((GIB * 1024))
ini() { printf '[status]\ndir = %s\n[lock]\ntimeout_ms = 0\n[memory]\nown = %s\n' "$T/status" "$1" > "$T/job.ini"; }
# ask_bw: the holder's copy between the GPUs, GB/s (the holder's output is only appended to: it
# writes on through its descriptor, so the file is never replaced)
ask_bw() {
	local n
	n=$(grep -c '^bw' "$T/out")
	echo bw >&$fd
	until [ "$(grep -c '^bw' "$T/out")" -gt "$n" ]; do sleep 0.1; done
	grep '^bw' "$T/out" | tail -n 1 | cut -d' ' -f2
}
base_s= base_r=
row() { # row NAME SUSPENDS RESUMES BW_BEFORE BW_AFTER
	local s r
	s=$(median <<< "$2") r=$(median <<< "$3")
	[ -n "$base_s" ] || { base_s=$s base_r=$r; }
	printf '%-70s %8.2f %7s %8.2f %7s %9s %9s\n' "$1" "$s" "$(ratio "$base_s" "$s")" "$r" \
		"$(ratio "$base_r" "$r")" "${4:--}" "${5:--}"
}
# cycles PID: a warm-up, then REPS timed suspends and resumes by cudanap; sets sus and res
cycles() {
	local i
	sus= res=
	act "$1" suspend
	act "$1" resume
	for i in $(seq "$REPS"); do
		sus+=" $(took "$1" suspend)"
		res+=" $(took "$1" resume)"
	done
}
# by_driver LAYOUT...: the holder without cudanap, suspended and resumed by the driver's calls
by_driver() {
	local i s r
	sus= res=
	mkfifo "$T/in"
	"$py" "$here/hold_gpus.py" "$@" < "$T/in" > "$T/out" 2>> "$T/err" &
	pid=$!
	exec {fd}> "$T/in"
	until grep -q ready "$T/out" 2> /dev/null; do sleep 0.1; kill -0 $pid 2> /dev/null || exit 1; done
	b0=$(ask_bw)
	for i in $(seq 0 "$REPS"); do
		s=$("$py" "$here/driver_ckpt.py" "$pid" suspend) || { lost=$s; break; }
		r=$("$py" "$here/driver_ckpt.py" "$pid" resume) || { lost=$r; break; }
		[ "$i" = 0 ] || { sus+=" $s"; res+=" $r"; }
	done
}

echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1); $GIB GiB a GPU; after one warm-up, the median of $REPS"
printf '%-70s %8s %7s %8s %7s %9s %9s\n' "" "suspend" ratio "resume" ratio "GB/s bef" "GB/s aft"

lost=
by_driver "$GIB" 0,1 256
row "the driver alone, 2 GPUs, allocations of 256 MiB" "$sus" "$res" "$b0" "$([ -z "$lost" ] && ask_bw)"
release "driver, 256 MiB"

for layout in "$mib owned, 256 MiB pieces" "256 the driver's own"; do
	ini auto
	hold "$py" "$here/hold_gpus.py" "$GIB" 0,1 "${layout%% *}"
	b0=$(ask_bw)
	cycles "$pid"
	row "cudanap, 2 GPUs, allocations of ${layout%% *} MiB (${layout#* })" "$sus" "$res" "$b0" "$(ask_bw)"
	release "cudanap, ${layout%% *} MiB"
done

ini auto
hold "$py" "$here/hold_gpus.py" "$((2 * GIB))" 0 "$mib"
cycles "$pid"
row "cudanap, 1 GPU, $((2 * GIB)) GiB in allocations of $mib MiB (owned)" "$sus" "$res"
release "one GPU"

for own in never always; do
	ini $own
	CUDA_VISIBLE_DEVICES=0 hold "$py" "$here/hold_gpus.py" 8 0 8192
	cycles "$pid"
	row "cudanap, 1 GPU, 8 GiB in one allocation, [memory] own = $own" "$sus" "$res"
	release "8 GiB, own = $own"
done

lost=
by_driver "$GIB" 0,1 "$mib"
echo "the driver alone, 2 GPUs, allocations of $mib MiB: ${lost:-restored (not expected)}"
kill -9 $pid 2> /dev/null
