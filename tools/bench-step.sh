#!/usr/bin/env bash
# bench-step: what cudanap costs a running training step, all its driver calls passing the gate.
# One PyTorch process trains (tests/gpu/step_time.py) "plain", "again" (plain once more: its
# ratio to plain is this machine's noise between runs of one job, and a ratio closer to 1 than
# that says nothing) and under "cudanap" run; the variants take turns in an order that rotates
# each round, and it prints each one's median step time and its ratio to plain. Run through
# `ninja -C build bench-step` on a GPU machine; REPS (5), STEPS (300) and ONLY (a regex: the jobs
# whose names match; all) from the environment.
set -u
REPS=${REPS:-5} STEPS=${STEPS:-300} ONLY=${ONLY:-.}
py=$(dirname "$0")/../tests/gpu/step_time.py
T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
printf '[status]\ndir = %s\n' "$T/status" > "$T/job.ini"
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-step: needs a GPU" >&2; exit 1; }

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); print (NR % 2) ? a[m] : (a[m] + a[m + 1]) / 2 }'; }
step_ms() { # step_ms plain|again|cudanap ARGS...: the job's median step time in ms
	local how=$1
	shift
	case $how in
	plain | again) python3 "$py" "$STEPS" "$@" ;;
	cudanap) "$CUDANAP" run -c "$T/job.ini" -- python3 "$py" "$STEPS" "$@" 2> /dev/null ;;
	esac | awk '/^time/ { print $2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3fx", b / a; else print "-" }'; }

echo "$STEPS steps, median step time of $REPS runs each, the variants taking turns; $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
variants="plain again cudanap"
printf '%-22s' job
for v in $variants; do printf ' %11s' "$v ms"; [ $v = plain ] || printf ' %7s' ratio; done
echo
while read -r name args; do
	[[ $name =~ $ONLY ]] || continue
	declare -A t=()
	set -- $variants
	for _ in $(seq "$REPS"); do
		for v in "$@"; do t[$v]="${t[$v]:-} $(step_ms $v $args)"; done
		set -- "${@:2}" "$1"
	done
	printf '%-22s' "$name"
	for v in $variants; do
		m=$(median <<< "${t[$v]}")
		[ $v = plain ] && base=$m
		printf ' %11s' "$m"
		[ $v = plain ] || printf ' %7s' "$(ratio "$base" "$m")"
	done
	echo
	unset t
done << 'JOBS'
mlp-1M-fp32-b64 --width 256 --layers 16 --batch 64
mlp-200M-bf16-b1024 --width 4096 --layers 12 --batch 1024 --bf16
mlp-200M-bf16-b8192 --width 4096 --layers 12 --batch 8192 --bf16
JOBS
