#!/usr/bin/env bash
# What the preload costs a process that never uses CUDA (shell scripts, data-loader workers):
# N short processes, each started and waited for, with and without libcudanap.so preloaded.
# Runs `ninja -C build bench-procs`; N (default 1000) and REPS (default 5, median) from the
# environment. Baseline and preloaded runs alternate, so that both see the same machine.
set -u
N=${N:-1000} REPS=${REPS:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
printf '[status]\ndir = %s\n' "$T/status" > "$T/job.ini"

# loop PRELOAD CMD...: N runs of CMD; prints the wall time in ns.
loop() {
	local pre=$1 t0 i; shift
	t0=$(date +%s%N)
	if [ -n "$pre" ]; then
		for ((i = 0; i < N; i++)); do LD_PRELOAD=$pre CUDANAP_CONFIG=$T/job.ini "$@"; done
	else
		for ((i = 0; i < N; i++)); do "$@"; done
	fi
	echo $(($(date +%s%N) - t0))
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

printf '%-28s %12s %14s %12s\n' "$N processes of" "without" "with cudanap" "added each"
for cmd in /bin/true "/bin/sh -c :"; do
	base=() with=()
	for ((r = 0; r < REPS; r++)); do
		base+=("$(loop "" $cmd)")
		with+=("$(loop "$PRELOAD" $cmd)")
	done
	b=$(printf '%s\n' "${base[@]}" | median) w=$(printf '%s\n' "${with[@]}" | median)
	awk -v n="$N" -v b="$b" -v w="$w" -v c="$cmd" 'BEGIN {
		printf "%-28s %9.3f ms %11.3f ms %9.3f ms  (%.2fx)\n", c, b / n / 1e6, w / n / 1e6,
			(w - b) / n / 1e6, w / b }'
done
left=$(ls "$T/status" | wc -l)
echo "status files left behind: $left"
