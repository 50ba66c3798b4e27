#!/usr/bin/env bash
# bench-room: notebook-like sessions (tests/gpu/nap_session.py, fed through pipes) of GIB GiB each
# on one GPU that holds two of them (GIB: 38 % of the GPU, 30 on an 80 GB H100). Without [nap]
# make_room the third one's allocation fails; with it, ROUNDS (10) rounds of one cell per session,
# in turn, each session napping another to make room for its wake: three PyTorch sessions with
# full naps (the driver's checkpoint), the same with light naps ([nap] depth = light: what cudanap
# owns moved to the host, the context kept, the napped session's copy out beside the waking one's
# copy in), the same with [nap] keep_host_copy (each session's pinned host copy kept between naps:
# the napped session copies out at the bus's speed, where the host holds a copy of each session and
# a quarter of its memory free: GIB=24 on a 128 GiB host), then four sessions of mixed frameworks with
# light naps (PyTorch; CuPy; PyTorch that allocates at its first cell; JAX, its pool preallocated
# at that size by XLA_PYTHON_CLIENT_MEM_FRACTION) of MIXED_GIB (34 % of the GPU) each, two napped
# on the host beside one waking; the medians side by side at the end. A PyTorch cell of GIB is
# compared with a session that had the GPU alone, every cell with its session's first; each
# cell's time, its wake's and whom it napped are printed. MIXED=0 leaves the mixed sessions out,
# MIXED_ROUNDS (ROUNDS) is their rounds, SECTIONS (full light kept mixed) picks; BENCH_LOGS, a
# folder, keeps each session's log there. Run through `ninja -C build bench-room`.
set -u
ROUNDS=${ROUNDS:-10} MIN_IDLE=${MIN_IDLE:-1} MIXED=${MIXED:-1}
MIXED_ROUNDS=${MIXED_ROUNDS:-$ROUNDS}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../tests/lib.sh"
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-room: needs a GPU" >&2; exit 1; }
py=${PYTHON:-python3}
"$py" -c 'import torch' 2> /dev/null || { echo "bench-room: needs PyTorch" >&2; exit 1; }
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)
GIB=${GIB:-$((total * 38 / 100 / 1024))}
# The mixed sessions: two fit, three do not, and the host holds two napped beside one waking
MIXED_GIB=${MIXED_GIB:-$((total * 34 / 100 / 1024))}
session="$here/../../tests/gpu/nap_session.py"
stop() { # stop NAME...: the sessions end at the end of their input (one still there after 60 s, said)
	local s fd pid t0
	t0=$(date +%s%N)
	# Every input closed first: a session started after another holds the other's input open
	# too (the shell's descriptors are inherited), so one closed alone would not end.
	for s in "$@"; do
		eval "fd=\$${s}_in"
		exec {fd}>&-
	done
	for s in "$@"; do
		eval "pid=\$${s}_pid"
		timeout 60 tail --pid="$pid" -f /dev/null ||
			echo "$s ($pid) still there 60 s after its input ended: $(tail -n 3 "$T/$s.err" | tr '\n' ' ')" >&2
	done
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 10000 ] ||
		echo "$* took $((($(date +%s%N) - t0) / 1000000)) ms to end" >&2
}
# Cut off (a time limit): what each session said last, and its whole log in BENCH_LOGS.
cut_off() {
	local f
	for f in "$T"/*.err; do
		echo "== $f"
		tail -n 6 "$f" | cut -c 1-400
		[ -z "${BENCH_LOGS:-}" ] || cp "$f" "$BENCH_LOGS/cut-$(basename "$f" .err).log"
	done >&2
	exit 1
}
trap cut_off TERM INT
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

# with make_room: rounds LABEL DEPTH KIND...: a session per KIND (nap_session.py's, "jax" with its
# pool at GIB), ROUNDS rounds of a cell each, with naps of DEPTH
bad=0 cells=0
declare -A cell_ms wake_ms
rounds() {
local label=$1 depth=$2 r s pid t0 ms n=0 kind gib=$GIB frac before wakes
shift 2
[ "$label" != mixed ] || gib=$MIXED_GIB
frac=$(awk -v g="$gib" -v t="$total" 'BEGIN { printf "%.3f", g * 1024 / t }')
local -a names=() kinds=("$@")
local -A first=()
echo "-- $label: [nap] depth = $depth, sessions of $gib GiB: $*"
write_ini "[nap]" "make_room = true" "min_idle_s = $MIN_IDLE" "depth = $depth" \
	"keep_host_copy = $([ "$label" = kept ] && echo true || echo false)" "[log]" "level = info"
for kind in "${kinds[@]}"; do
	n=$((n + 1))
	s=S$n
	names+=("$s")
	t0=$(date +%s%N)
	case $kind in
	jax) start $s env XLA_PYTHON_CLIENT_MEM_FRACTION="$frac" "$py" "$session" jax $((gib / 2)) ;;
	*) start $s "$py" "$session" "$kind" "$gib" ;;
	esac
	eval "pid=\$${s}_pid"
	printf 'start %s %s (%d): %.2f s\n' "$s" "$kind" "$pid" "$((($(date +%s%N) - t0) / 1000000))e-3"
done
printf '%5s %7s %6s %8s %8s %8s  %s\n' round session kind cell_s wake_s naps "napped for it"
# each row printed once the next cell answered (or the section ended): a wake's "made room" line
# is logged once the processes it napped have answered, and its time and counts written to the
# status once its calls went on, both of which may be after its cell answers (the section's last
# row, flush_row last: until its session's count of wakes moved, 10 s at most; a cell that woke
# nothing shows no wake time)
local row=
flush_row() {
	local r s kind ms wake n at victim pid was i
	[ -n "$row" ] || return 0
	read -r r s kind ms pid at was <<< "$row"
	for ((i = 0; i < 100; i++)); do
		[ "${1:-}" = last ] && [ "$(field "$pid" wakes)" = "$was" ] || break
		sleep 0.1
	done
	wake=$(field "$pid" last_wake_ms)
	[ "$(field "$pid" wakes)" != "$was" ] || wake= # no wake in this cell: an older one's time
	wake=${wake:-null}
	n="$(field "$pid" naps_room)/$(field "$pid" wakes)"
	victim=$(grep "made room" "$T/$s.err" | tail -n +$((at + 1)) | grep -o 'napped [0-9]* ([0-9]* MiB' | tr '\n' ' ')
	[ "$r" -eq 1 ] || [ -z "$victim" ] || [ "$wake" = null ] || wake_ms[$label]+=" $wake"
	printf '%5d %7s %6s %8.2f %8s %8s  %s\n' "$r" "$s" "$kind" "${ms}e-3" \
		"$(awk -v w="$wake" 'BEGIN { if (w == "null") print "-"; else printf "%.2f", w / 1000 }')" "$n" "${victim:--}"
	row=
}
for r in $(seq "$([ "$label" = mixed ] && echo "$MIXED_ROUNDS" || echo "$ROUNDS")"); do
	for n in "${!names[@]}"; do
		s=${names[$n]} kind=${kinds[$n]}
		eval "pid=\$${s}_pid"
		before=$(grep -c "made room" "$T/$s.err")
		wakes=$(field "$pid" wakes)
		t0=$(date +%s%N)
		ask $s compute 300
		ms=$((($(date +%s%N) - t0) / 1000000))
		cells=$((cells + 1))
		[ -n "${first[$s]:-}" ] || first[$s]=$REPLY
		if [ "$REPLY" != "${first[$s]}" ] || [ -z "$REPLY" ] ||
			{ [ "$kind" = torch ] && [ "$gib" = "$GIB" ] && [ "$REPLY" != "$ref" ]; }; then
			bad=$((bad + 1))
			echo "round $r $s ($kind): got '$REPLY', its first cell '${first[$s]}'" >&2
		fi
		cell_ms[$label]+=" $ms"
		flush_row
		row="$r $s $kind $ms $pid $before ${wakes:-0}"
	done
done
flush_row last
echo "out-of-memory errors ($label): $(cat "$T"/S?.err | grep -c -e OutOfMemoryError -e 'out of memory' -e RESOURCE_EXHAUSTED)"
grep -h "light nap: " "$T"/S?.err | tail -n 2 | sed 's/^/  /'
stop "${names[@]}"
[ -z "${BENCH_LOGS:-}" ] || for s in "${names[@]}"; do cp "$T/$s.err" "$BENCH_LOGS/$label-$s.log"; done
rm -f "$T"/S?.err
}
for section in ${SECTIONS:-full light kept mixed}; do
	case $section in
	full) rounds full full torch torch torch ;;
	light) rounds light light torch torch torch ;;
	kept) rounds kept light torch torch torch ;;
	mixed) [ "$MIXED" = 0 ] || rounds mixed light torch cupy later jax ;;
	esac
done
echo "cells: $cells, right (each as its session's first, PyTorch's as a session alone): $((cells - bad))"
m() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1000; else print "-" }'; }
printf '%-34s %10s %10s %10s %10s\n' "" "full naps" "light naps" "light, kept" "mixed"
printf '%-34s %10s %10s %10s %10s\n' "median cell, s (every cell)" "$(m <<< "${cell_ms[full]:-}")" "$(m <<< "${cell_ms[light]:-}")" "$(m <<< "${cell_ms[kept]:-}")" "$(m <<< "${cell_ms[mixed]:-}")"
printf '%-34s %10s %10s %10s %10s\n' "median wake that made room, s" "$(m <<< "${wake_ms[full]:-}")" "$(m <<< "${wake_ms[light]:-}")" "$(m <<< "${wake_ms[kept]:-}")" "$(m <<< "${wake_ms[mixed]:-}")"
[ "$bad" -eq 0 ]
