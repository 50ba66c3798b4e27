#!/usr/bin/env bash
# bench-step: what cudanap costs a running training step, all its driver calls passing the gate.
# One PyTorch process trains (tests/gpu/step_time.py) "plain", "again" (plain once more: its
# ratio to plain is this machine's noise between runs of one job, and a ratio closer to 1 than
# that says nothing) and under "cudanap" run; the variants take turns in an order that rotates
# each round, and it prints each one's median step time and its ratio to plain. Run through
# `ninja -C build bench-step` on a GPU machine; REPS (5), STEPS (300) and JOBS (names of the jobs
# below to run; all) from the environment.
set -u
REPS=${REPS:-5} STEPS=${STEPS:-300} JOBS=${JOBS:-}
py=$(dirname "$0")/../../tests/gpu/step_time.py
T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
printf '[status]\ndir = %s\n' "$T/status" > "$T/job.ini"
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-step: needs a GPU" >&2; exit 1; }

. "$(dirname "$0")/bench-lib.sh"
step_ms() { # step_ms plain|again|cudanap ARGS...: the job's median step time in ms
	local how=$1
	shift
	case $how in
	plain | again) python3 "$py" "$STEPS" "$@" ;;
	cudanap) "$CUDANAP" run -c "$T/job.ini" -- python3 "$py" "$STEPS" "$@" 2> /dev/null ;;
	esac | awk '/^time/ { print $2 }'
}

echo "$STEPS steps, median step time of $REPS runs each, the variants taking turns; $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
turns 22 plain again cudanap << 'JOBS'
mlp-1M-fp32-b64 --width 256 --layers 16 --batch 64
mlp-200M-bf16-b1024 --width 4096 --layers 12 --batch 1024 --bf16
mlp-200M-bf16-b8192 --width 4096 --layers 12 --batch 8192 --bf16
JOBS
