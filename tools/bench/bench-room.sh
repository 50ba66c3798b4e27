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
# folder, keeps each session's log there. The section "many" (SECTIONS=many) is the defaults'
# test: MANY (8) sessions of MANY_GIB (24) GiB, in turn PyTorch, CuPy, PyTorch allocating at its
# first cell and JAX without preallocation, started at once, with a trainer that never idles
# beside them, [nap] make_room and nothing else in the INI (light naps, host copies kept and made
# ahead by default), ROUNDS rounds; it prints each cell, then the median, p90 and longest cell of
# round 1 and of the rounds after, and whether the trainer was ever napped. FILL_GIB (0) GiB held
# first by a program without cudanap make the GPU smaller (60 on an H200 leaves an H100's 80).
# MANY_TO_DISK, a folder: [nap] to = auto there (a nap the host has no room for goes to disk).
# A cell of "many" still waiting after 2 s prints what its status and log say; CELL_S (600) bounds
# each cell; LOG_LEVEL (info) is the sessions' [log] level.
# Run through `ninja -C build bench-room`.
set -u
ROUNDS=${ROUNDS:-10} MIN_IDLE=${MIN_IDLE:-1} MIXED=${MIXED:-1} CELL_S=${CELL_S:-600}
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

sections=${SECTIONS:-full light kept mixed}
if [[ " $sections " =~ \ (full|light|kept|mixed)\  ]]; then
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
fi

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
# launch NAME CMD...: a session started without waiting for its "ready" line (ready NAME reads it)
launch() {
	local name=$1 fin fout; shift
	rm -f "$T/$name.in" "$T/$name.out"
	mkfifo "$T/$name.in" "$T/$name.out"
	"$CUDANAP" run -c "$T/job.ini" -- "$@" < "$T/$name.in" > "$T/$name.out" 2>> "$T/$name.err" &
	printf -v "${name}_pid" '%s' $!
	exec {fin}> "$T/$name.in"
	exec {fout}< "$T/$name.out"
	printf -v "${name}_in" '%s' "$fin"
	printf -v "${name}_out" '%s' "$fout"
}
ready() { local fout line; eval "fout=\$${1}_out"; read -r -t 600 -u "$fout" line && [ "${line%% *}" = ready ]; }
# stats MS...: median, p90 and longest of the cells, in s
stats() {
	tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END {
		if (!NR) { print "- - -"; exit }
		p = int(NR * 0.9 + 0.999); if (p > NR) p = NR
		printf "%.2f %.2f %.2f", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1000, a[p] / 1000, a[NR] / 1000 }'
}
# many N GIB: the defaults with N sessions of GIB GiB and a busy trainer
many() {
	local count=$1 gib=$2 n s kind pid t0 ms r first1= later= tr_pid wakes fill
	local -a names=() kinds=() all=(torch cupy later jax)
	local -A first=()
	echo "-- many: $count sessions of $gib GiB (PyTorch, CuPy, PyTorch allocating late, JAX without preallocation), a trainer beside them; [nap] make_room = true, min_idle_s = $MIN_IDLE, the rest the defaults"
	local -a disk=()
	[ -z "${MANY_TO_DISK:-}" ] || disk=("to = auto" "[hibernate]" "dir = $MANY_TO_DISK")
	[ -z "${MANY_TO_DISK:-}" ] || echo "[nap] to = auto, [hibernate] dir = $MANY_TO_DISK ($(df -h --output=avail "$MANY_TO_DISK" | tail -n 1 | tr -d ' ') free): a nap the host has no room for goes to disk"
	write_ini "[nap]" "make_room = true" "min_idle_s = $MIN_IDLE" ${disk[@]+"${disk[@]}"} "[log]" "level = ${LOG_LEVEL:-info}"
	if [ "${FILL_GIB:-0}" -gt 0 ]; then # plain, never napped: the GPU is that much smaller
		exec {fill}> >("$py" -c "import sys, torch; x = torch.empty(${FILL_GIB} << 30, dtype=torch.uint8, device='cuda'); print('held', flush=True); sys.stdin.read()" > "$T/fill.out")
		until grep -q held "$T/fill.out" 2> /dev/null; do sleep 0.2; done
		echo "a program without cudanap holds $FILL_GIB GiB"
	fi
	launch TR "$py" "$session" train 4
	ready TR || { echo "bench-room: the trainer did not start" >&2; exit 1; }
	tr_pid=$TR_pid
	t0=$(date +%s%N)
	for ((n = 1; n <= count; n++)); do
		s=M$n kind=${all[$(((n - 1) % 4))]}
		names+=("$s")
		kinds+=("$kind")
		case $kind in
		jax) launch $s env XLA_PYTHON_CLIENT_PREALLOCATE=false "$py" "$session" jax "$gib" ;;
		*) launch $s "$py" "$session" "$kind" "$gib" ;;
		esac
		# one after another, as users come: a session starting where the GPU is full naps one
		# idle for [nap] min_idle_s, and none is while all start at once
		ready "$s" || { echo "bench-room: $s did not start: $(tail -n 2 "$T/$s.err")" >&2; cut_off; }
	done
	printf 'all %d started, one after another, in %.1f s\n' "$count" "$((($(date +%s%N) - t0) / 1000000))e-3"
	printf '%5s %7s %6s %8s %8s\n' round session kind cell_s wake_s
	for ((r = 1; r <= ROUNDS; r++)); do
		for n in "${!names[@]}"; do
			s=${names[$n]} kind=${kinds[$n]}
			eval "pid=\$${s}_pid"
			wakes=$(field "$pid" wakes)
			t0=$(date +%s%N)
			# a cell still waiting after 2 s: what its status and its log say, once
			( sleep 2; w=$(field "$pid" nap_why | cut -c 1-200)
			  echo "      $s still waits after 2 s: nap '$(field "$pid" nap)'${w:+ ($w)}; its log: $(tail -n 1 "$T/$s.err" | cut -c 1-300)" ) &
			local watcher=$!
			ask $s compute "$CELL_S"
			kill "$watcher" 2> /dev/null; wait "$watcher" 2> /dev/null
			ms=$((($(date +%s%N) - t0) / 1000000))
			cells=$((cells + 1))
			[ -n "${first[$s]:-}" ] || first[$s]=$REPLY
			if [ -z "$REPLY" ] || [ "$REPLY" != "${first[$s]}" ]; then
				bad=$((bad + 1))
				echo "round $r $s ($kind): got '$REPLY', its first cell '${first[$s]}'" >&2
			fi
			if [ "$r" = 1 ]; then first1+=" $ms"; else later+=" $ms"; fi
			# its wake's time, once the wake is counted (written after its calls went on)
			for _ in $(seq 25); do [ "$(field "$pid" wakes)" != "$wakes" ] && break; sleep 0.02; done
			[ "$(field "$pid" wakes)" != "$wakes" ] || wakes=none
			printf '%5d %7s %6s %8.2f %8s\n' "$r" "$s" "$kind" "${ms}e-3" \
				"$(awk -v w="$(field "$pid" last_wake_ms)" -v n="$wakes" 'BEGIN { if (n == "none" || w !~ /^[0-9.]+$/) print "-"; else printf "%.2f", w / 1000 }')"
		done
	done
	read -r m1 p1 x1 <<< "$(stats <<< "$first1")"
	read -r m2 p2 x2 <<< "$(stats <<< "$later")"
	printf '%-26s %8s %8s %8s\n' "cells, s" median p90 longest "round 1" "$m1" "$p1" "$x1" "rounds 2-$ROUNDS" "$m2" "$p2" "$x2"
	echo "the trainer: napped $(field "$tr_pid" naps) times, $(field "$tr_pid" naps_room) for others; its steps at the end: $(ask TR compute; echo "${REPLY#result }")"
	echo "out-of-memory errors (many): $(cat "$T"/M*.err | grep -v '^cudanap\[' | grep -c -e OutOfMemoryError -e 'out of memory' -e RESOURCE_EXHAUSTED)"
	echo "naps to disk ([nap] to = auto, the host without room): $(cat "$T"/M*.err | grep -c 'full: to \[hibernate\] dir')"
	echo "naps: $(cat "$T"/M*.err | grep -c 'napped lightly (') light, $(cat "$T"/M*.err | grep -c '^cudanap\[[0-9]*\]: napped (') full; copies made ahead: $(cat "$T"/M*.err | grep -c 'made its host copy ahead'), given back: $(cat "$T"/M*.err | grep -c 'let go of its ready host copy')"
	grep -h "light nap: " "$T"/M*.err | tail -n 3 | sed 's/^/  /'
	[ "$(field "$tr_pid" naps)" = 0 ] || { echo "bench-room: the trainer was napped" >&2; bad=$((bad + 1)); }
	stop TR "${names[@]}"
	[ "${FILL_GIB:-0}" -eq 0 ] || exec {fill}>&-
	[ -z "${BENCH_LOGS:-}" ] || for s in "${names[@]}"; do cp "$T/$s.err" "$BENCH_LOGS/many-$s.log"; done
	rm -f "$T"/M*.err
}
for section in $sections; do
	case $section in
	full) rounds full full torch torch torch ;;
	light) rounds light light torch torch torch ;;
	kept) rounds kept light torch torch torch ;;
	mixed) [ "$MIXED" = 0 ] || rounds mixed light torch cupy later jax ;;
	many) many "${MANY:-8}" "${MANY_GIB:-24}" ;;
	esac
done
echo "cells: $cells, right (each as its session's first, PyTorch's as a session alone): $((cells - bad))"
m() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1000; else print "-" }'; }
printf '%-34s %10s %10s %10s %10s\n' "" "full naps" "light naps" "light, kept" "mixed"
printf '%-34s %10s %10s %10s %10s\n' "median cell, s (every cell)" "$(m <<< "${cell_ms[full]:-}")" "$(m <<< "${cell_ms[light]:-}")" "$(m <<< "${cell_ms[kept]:-}")" "$(m <<< "${cell_ms[mixed]:-}")"
printf '%-34s %10s %10s %10s %10s\n' "median wake that made room, s" "$(m <<< "${wake_ms[full]:-}")" "$(m <<< "${wake_ms[light]:-}")" "$(m <<< "${wake_ms[kept]:-}")" "$(m <<< "${wake_ms[mixed]:-}")"
[ "$bad" -eq 0 ]
