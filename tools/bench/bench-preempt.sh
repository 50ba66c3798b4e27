#!/usr/bin/env bash
# bench-preempt: whether the GPU still takes turns between a restored process and another one. A
# spins kernels of MS (1000) ms each; B launches tiny kernels and prints, each second, the longest
# it waited for one. Each case acts on A (nothing; cudanap suspend and resume; a light nap and its
# wake, [nap] depth = light; the driver's calls alone: lock, checkpoint, restore, unlock; lock and
# unlock only), then takes B's longest wait over
# the next WINDOW (5) seconds, against the first case's in the same run. A context the GPU still
# preempts keeps B's wait at a time slice (milliseconds); one it does not makes B wait for A's
# whole kernel (docs/DISTRIBUTED.md). Run through `ninja -C build bench-preempt`.
set -u
MS=${MS:-1000} WINDOW=${WINDOW:-5}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../tests/lib.sh"
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-preempt: needs a GPU" >&2; exit 1; }
[ -x "${SPINPROBE:-}" ] || { echo "bench-preempt: spinprobe not built (no nvcc at meson setup)" >&2; exit 1; }
write_ini "[nap]" "depth = light" "[lock]" "timeout_ms = $((MS * 3))"
mv "$T/job.ini" "$T/light.ini"
write_ini "[lock]" "timeout_ms = $((MS * 3))"
lines() { grep -c '^probe ' "$1" 2> /dev/null; }
probing() { [ "$(lines "$1")" -ge 3 ]; } # B has printed its first three seconds
# one NAME ACTION: A and B started, B's first seconds let by, ACTION on A, B's longest wait after
one() {
	local a b n0 worst failed out
	if [ "$2" = cudanap ] || [ "$2" = light ]; then
		"$CUDANAP" run -c "$T/$([ "$2" = light ] && echo light || echo job).ini" -- \
			"$SPINPROBE" spin "$MS" > "$T/$1.a" 2>&1 &
	else
		"$SPINPROBE" spin "$MS" > "$T/$1.a" 2>&1 &
	fi
	a=$!
	"$SPINPROBE" probe > "$T/$1.b" 2>&1 &
	b=$!
	eventually 60 probing "$T/$1.b" || echo "$1: the probe printed nothing in 60 s" >&2
	n0=$(lines "$T/$1.b")
	case $2 in
	cudanap) out=$("$CUDANAP" suspend -t 60 "$a" 2>&1 && "$CUDANAP" resume -t 60 "$a" 2>&1) ;;
	light) out=$("$CUDANAP" nap -c "$T/light.ini" -t 60 "$a" 2>&1 &&
		"$CUDANAP" resume -c "$T/light.ini" -t 60 "$a" 2>&1) ;;
	restore | lock) out=$("$SPINPROBE" "$2" "$a" 2>&1) ;;
	esac || echo "$1: the $2 on A failed: $(echo "$out" | tail -n 1)" >&2
	[ "$2" != light ] || echo "$1: $(echo "$out" | head -n 1)" >&2
	sleep "$WINDOW" # the window B's waits are taken over
	worst=$(grep '^probe ' "$T/$1.b" | tail -n +$((n0 + 1)) | awk '$2 > w { w = $2 } END { print w + 0 }')
	kill -9 "$a" "$b" 2> /dev/null
	wait "$a" "$b" 2> /dev/null
	failed=$(grep -hE '^(spin|probe) ' "$T/$1.a" "$T/$1.b" | grep -v -e '^probe [0-9.]* ms$' -e ' no error$' | head -n 1)
	[ -z "$failed" ] || echo "$1: $failed" >&2
	echo "$worst"
}
echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1); A's kernels $MS ms, B's waits over $WINDOW s"
base=$(one plain none)
printf '%-40s %9s ms\n' "nothing done to A" "$base"
for c in "cudanap suspend and resume:cudanap" "cudanap light nap and wake:light" \
	"the driver's restore alone:restore" "the driver's lock and unlock:lock"; do
	w=$(one "${c##*:}" "${c##*:}")
	printf '%-40s %9s ms  (%s x)\n' "${c%%:*}" "$w" "$(awk -v w="$w" -v b="$base" 'BEGIN { printf "%.0f", (b > 0 ? w / b : 0) }')"
done
