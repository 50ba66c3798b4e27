#!/usr/bin/env bash
# bench-estimate: how close the estimates of `cudanap suspend --dry-run` come to the suspend and
# resume that follow. For each size (SIZES, GiB: 1 8 32) one process holds that much (holdmem)
# and, after one warm-up suspend and resume, is asked and then suspended and resumed REPS (3)
# times. Two processes a size: one whose estimates can only come from the defaults (its state
# directory cannot be made), one that learns from this machine's suspends, the sizes before it
# included (its state directory starts empty). Prints each estimate against the measured time
# (the status file's total_ms: the agent's wake to the outcome) and the error, then the median
# and largest absolute error of each column. Run through `ninja -C build bench-estimate`.
set -u
SIZES=${SIZES:-1 8 32} REPS=${REPS:-3}
. "$(dirname "$0")/bench-lib.sh"
bench_job
mkdir -m 700 "$T/learnt"
touch "$T/defaults" # a file where the state directory would go: no rates, ever
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-estimate: needs a GPU" >&2; exit 1; }

settled() { [ "$(field "$1" seq)" -ge "$2" ] 2> /dev/null && [ "$(field "$1" busy)" = false ]; }
stats() { # the median and largest |error| of the lines' percentages
	tr -d '%+-' | sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); printf "median %s%%, largest %s%%", (NR % 2) ? a[m] : (a[m] + a[m + 1]) / 2, a[NR] }'
}

echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1); after one warm-up suspend, $REPS each"
printf '%-9s %5s %-8s %9s %9s %7s %9s %9s %7s  %s\n' estimates GiB "" "est s" "took s" error "est s" "took s" error "source"
printf '%-9s %5s %-8s %29s %29s\n' "" "" "" "---------- suspend ----------" "---------- resume -----------"
for how in defaults learnt; do
	for gib in $SIZES; do
		XDG_STATE_HOME=$T/$how hold "$HOLDMEM" "$gib"
		act $pid suspend
		act $pid resume
		for r in $(seq "$REPS"); do
			estimated $pid
			src=$(field $pid est_source)
			printf '%-9s %5s %-8s %9.2f %9.2f %7s %9.2f %9.2f %7s  %s\n' $how $gib "rep $r" "$es" "$s" "$se" \
				"$er" "$rs" "$re" "$src"
		done | tee -a "$T/$how.lines"
		release "$gib GiB"
	done
done
for how in defaults learnt; do
	echo "$how: suspend $(awk '{ print $7 }' "$T/$how.lines" | stats), resume $(awk '{ print $10 }' "$T/$how.lines" | stats)"
done
