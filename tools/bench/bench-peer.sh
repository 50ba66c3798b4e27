#!/usr/bin/env bash
# bench-peer: one process holding GPU memory on two GPUs, peer access on between them, against one
# holding the same on one GPU: the suspend and resume times (the status file's total_ms, the
# agent's wake to the outcome) and the dry run's estimates for each, REPS (3) times after a
# warm-up. GIB (8) is what each GPU of the pair holds; the single GPU holds twice that. Needs two
# GPUs and PyTorch (tests/gpu/hold_gpus.py). Run through `ninja -C build bench-peer`.
set -u
GIB=${GIB:-8} REPS=${REPS:-3}
py=${PYTHON:-python3}
hold=$(dirname "$0")/../../tests/gpu/hold_gpus.py
T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-bench.XXXXXX")
trap 'for p in $(jobs -p); do kill -9 $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
printf '[status]\ndir = %s\n[lock]\ntimeout_ms = 0\n' "$T/status" > "$T/job.ini"
[ "$(nvidia-smi -L 2> /dev/null | wc -l)" -ge 2 ] || { echo "bench-peer: needs two GPUs" >&2; exit 1; }

field() { grep -o "\"$2\":\(\"[^\"]*\"\|[^,}]*\)" "$T/status/$1.json" | head -n 1 | sed 's/^[^:]*://; s/"//g'; }
act() { # act PID suspend|resume: the action's total in seconds
	"$CUDANAP" "$2" -c "$T/job.ini" "$1" > /dev/null || { echo "bench-peer: $2 of $1 failed" >&2; exit 1; }
	awk -v m="$(field "$1" total_ms)" 'BEGIN { printf "%.3f", m / 1000 }'
}
err() { awk -v e="$1" -v m="$2" 'BEGIN { printf "%+.0f%%", (e - m) / m * 100 }'; }

echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1); after one warm-up, $REPS each"
printf '%-16s %-6s %9s %9s %7s %9s %9s %7s  %s\n' layout rep "est s" "took s" error "est s" "took s" error peer
for layout in "$GIB 0,1" "$((2 * GIB)) 0"; do
	set -- $layout
	name=$([ "$2" = 0 ] && echo "1 GPU x $1 GiB" || echo "2 GPUs x $1 GiB")
	mkfifo "$T/in"
	"$CUDANAP" run -c "$T/job.ini" -- "$py" "$hold" "$1" "$2" < "$T/in" > "$T/out" 2>> "$T/err" &
	pid=$!
	exec {fd}> "$T/in"
	until grep -q ready "$T/out" 2> /dev/null; do sleep 0.1; kill -0 $pid 2> /dev/null || exit 1; done
	act $pid suspend > /dev/null
	act $pid resume > /dev/null
	for r in $(seq "$REPS"); do
		"$CUDANAP" suspend --dry-run -c "$T/job.ini" $pid > /dev/null || { echo "bench-peer: $pid would not suspend" >&2; exit 1; }
		es=$(field $pid est_suspend_s) er=$(field $pid est_resume_s) peer=$(field $pid peer)
		s=$(act $pid suspend)
		rs=$(act $pid resume)
		printf '%-16s %-6s %9.2f %9.2f %7s %9.2f %9.2f %7s  %s\n' "$name" "rep $r" "$es" "$s" \
			"$(err "$es" "$s")" "$er" "$rs" "$(err "$er" "$rs")" "${peer:--}"
	done
	echo verify >&$fd
	until grep -q "verify" "$T/out"; do sleep 0.1; done
	grep -q "verify ok" "$T/out" || { echo "bench-peer: $name not intact" >&2; exit 1; }
	echo quit >&$fd
	exec {fd}>&-
	wait $pid
	rm -f "$T/in" "$T/out"
done
