#!/usr/bin/env bash
# bench-peer: one process holding GPU memory on two GPUs, peer access on between them, against one
# holding the same on one GPU: the suspend and resume times (the status file's total_ms, the
# agent's wake to the outcome) and the dry run's estimates for each, REPS (3) times after a
# warm-up. GIB (8) is what each GPU of the pair holds; the single GPU holds twice that. Needs two
# GPUs and PyTorch (tests/gpu/hold_gpus.py). Run through `ninja -C build bench-peer`.
set -u
GIB=${GIB:-8} REPS=${REPS:-3}
py=${PYTHON:-python3}
holder=$(dirname "$0")/../../tests/gpu/hold_gpus.py
. "$(dirname "$0")/bench-lib.sh"
bench_job
[ "$(nvidia-smi -L 2> /dev/null | wc -l)" -ge 2 ] || { echo "bench-peer: needs two GPUs" >&2; exit 1; }

echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1); after one warm-up, $REPS each"
printf '%-16s %-6s %9s %9s %7s %9s %9s %7s  %s\n' layout rep "est s" "took s" error "est s" "took s" error peer
for layout in "$GIB 0,1" "$((2 * GIB)) 0"; do
	set -- $layout
	name=$([ "$2" = 0 ] && echo "1 GPU x $1 GiB" || echo "2 GPUs x $1 GiB")
	hold "$py" "$holder" "$1" "$2"
	act $pid suspend
	act $pid resume
	for r in $(seq "$REPS"); do
		estimated $pid
		peer=$(field $pid peer)
		printf '%-16s %-6s %9.2f %9.2f %7s %9.2f %9.2f %7s  %s\n' "$name" "rep $r" "$es" "$s" \
			"$se" "$er" "$rs" "$re" "${peer:--}"
	done
	release "$name"
done
