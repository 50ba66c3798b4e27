#!/usr/bin/env bash
# bench-room: three notebook-like PyTorch sessions (tests/gpu/nap_session.py, fed through pipes) of
# GIB GiB each on one GPU that holds two of them (GIB: 38 % of the GPU, 30 on an 80 GB H100).
# Without [nap] make_room the third one's allocation fails; with it, ROUNDS (10) rounds of one cell
# per session, in turn, each session napping another to make room for its wake: first with full
# naps (the driver's checkpoint), then with light naps ([nap] depth = light: what cudanap owns
# moved to the host, the context kept), the medians side by side at the end. Every cell's result
# is compared with a session that had the GPU alone; each cell's time, its wake's and whom it
# napped are printed. Run through `ninja -C build bench-room`.
set -u
ROUNDS=${ROUNDS:-10} MIN_IDLE=${MIN_IDLE:-1}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../tests/lib.sh"
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-room: needs a GPU" >&2; exit 1; }
py=${PYTHON:-python3}
"$py" -c 'import torch' 2> /dev/null || { echo "bench-room: needs PyTorch" >&2; exit 1; }
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)
GIB=${GIB:-$((total * 38 / 100 / 1024))}
session="$here/../../tests/gpu/nap_session.py"
stop() { # stop NAME...: a session ends at the end of its input
	local s fd pid
	for s in "$@"; do
		eval "fd=\$${s}_in pid=\$${s}_pid"
		exec {fd}>&-
		timeout 60 tail --pid="$pid" -f /dev/null
	done
}
echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1); $total MiB; 3 sessions of $GIB GiB"

# the reference: one session with the GPU to itself
write_ini
start R "$py" "$session" torch "$GIB"
ask R compute 300
ref=$REPLY
stop R
echo "alone: $ref"

# without make_room: the third does not fit
start N1 "$py" "$session" torch "$GIB"
start N2 "$py" "$session" torch "$GIB"
start N3 "$py" "$session" torch "$GIB" 2> /dev/null
if [ -n "${N3_ready:-}" ]; then
	echo "without make_room: the third session started (the GPU holds three): nothing to show" >&2
	exit 1
fi
echo "without make_room: the third session's start fails: $(grep -m 1 -o 'OutOfMemoryError: .*' "$T/N3.err" | cut -c 1-110)"
stop N1 N2

# with make_room, naps of DEPTH
bad=0 cells=0
declare -A cell_ms wake_ms
rounds() {
local depth=$1 r s pid before t0 ms victim wake
echo "-- [nap] depth = $depth"
write_ini "[nap]" "make_room = true" "min_idle_s = $MIN_IDLE" "depth = $depth" "[log]" "level = info"
for s in S1 S2 S3; do
	t0=$(date +%s%N)
	start $s "$py" "$session" torch "$GIB"
	eval "pid=\$${s}_pid"
	printf 'start %s (%d): %.2f s\n' "$s" "$pid" "$((($(date +%s%N) - t0) / 1000000))e-3"
done
printf '%5s %7s %8s %8s %8s  %s\n' round session cell_s wake_s naps "napped for it"
for r in $(seq "$ROUNDS"); do
	for s in S1 S2 S3; do
		eval "pid=\$${s}_pid"
		before=$(grep -c "made room" "$T/$s.err")
		t0=$(date +%s%N)
		ask $s compute 300
		ms=$((($(date +%s%N) - t0) / 1000000))
		cells=$((cells + 1))
		[ "$REPLY" = "$ref" ] || { bad=$((bad + 1)); echo "round $r $s: got '$REPLY'" >&2; }
		victim=$(grep "made room" "$T/$s.err" | tail -n +$((before + 1)) | grep -o 'napped [0-9]* ([0-9]* MiB' | tr '\n' ' ')
		wake=$(field "$pid" last_wake_ms)
		cell_ms[$depth]+=" $ms"
		[ "$r" -eq 1 ] || [ -z "$victim" ] || wake_ms[$depth]+=" $wake"
		printf '%5d %7s %8.2f %8s %8s  %s\n' "$r" "$s" "${ms}e-3" \
			"$(awk -v w="${wake:-}" 'BEGIN { if (w == "" || w == "null") print "-"; else printf "%.2f", w / 1000 }')" \
			"$(field "$pid" naps_room)/$(field "$pid" wakes)" "${victim:--}"
	done
done
echo "out-of-memory errors ($depth): $(cat "$T"/S?.err | grep -c OutOfMemoryError)"
stop S1 S2 S3
rm -f "$T"/S?.err
}
rounds full
rounds light
echo "cells: $cells, results equal to the session alone: $((cells - bad))"
m() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1000; else print "-" }'; }
printf '%-34s %10s %10s\n' "" "full naps" "light naps"
printf '%-34s %10s %10s\n' "median cell, s (every cell)" "$(m <<< "${cell_ms[full]}")" "$(m <<< "${cell_ms[light]}")"
printf '%-34s %10s %10s\n' "median wake that made room, s" "$(m <<< "${wake_ms[full]:-}")" "$(m <<< "${wake_ms[light]:-}")"
[ "$bad" -eq 0 ]
