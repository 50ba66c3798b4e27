#!/usr/bin/env bash
# bench-nap: what a napping process's waking call waits, against a plain resume of the same size
# in the same run. For each size (SIZES, GiB: 1 8 32) one process holds that much (holdmem) and,
# REPS (3) times each, in turn: suspended and resumed by the CLI (the resume's total_ms: the
# agent's wake to the outcome), then napped (cudanap nap) and woken by its next CUDA call (the
# status's last_wake_ms: from the call's arrival at the gate to the gate opening). A warm-up
# suspend and resume come first. Prints the medians and their ratio, wake / resume. Run through
# `ninja -C build bench-nap`.
set -u
SIZES=${SIZES:-1 8 32} REPS=${REPS:-3}
. "$(dirname "$0")/bench-lib.sh"
bench_job
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-nap: needs a GPU" >&2; exit 1; }

echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1); medians of $REPS"
printf '%5s %12s %12s %7s %14s\n' GiB "resume ms" "wake ms" ratio "call waited ms"
for gib in $SIZES; do
	hold "$HOLDMEM" "$gib"
	act $pid suspend
	act $pid resume
	res='' wake='' waited=''
	for _ in $(seq "$REPS"); do
		act $pid suspend
		act $pid resume
		res+=" $(field $pid total_ms)"
		act $pid nap
		n=$(grep -c '^work' "$T/out")
		t0=$(date +%s%N)
		echo work >&$fd
		until [ "$(grep -c '^work' "$T/out")" -gt "$n" ]; do sleep 0.001; done
		waited+=" $((($(date +%s%N) - t0) / 1000000))"
		wake+=" $(field $pid last_wake_ms)"
	done
	grep -q "work bad" "$T/out" && { echo "bench-nap: $gib GiB: work bad" >&2; exit 1; }
	r=$(median <<< "$res") w=$(median <<< "$wake") c=$(median <<< "$waited")
	printf '%5s %12.1f %12.1f %7s %14s\n' "$gib" "$r" "$w" "$(awk -v a="$r" -v b="$w" 'BEGIN { printf "%.2fx", b / a }')" "$c"
	release "$gib GiB"
done
