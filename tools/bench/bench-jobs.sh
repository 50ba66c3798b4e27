#!/usr/bin/env bash
# bench-jobs: whole-job suspend and resume. N processes of G GiB each on one GPU, suspended and
# resumed together with `cudanap suspend|resume --all`, against one process of N*G GiB, in the same
# run, and the N processes again without taking turns ([restore] take_turns = false) and without
# the restore's reservation ([restore] reserve = false), to show what each does when they run
# together. Every resume is verified bit for bit. Prints medians of REPS repetitions, the ratios,
# and for the last resume of each set the restore's, the reservation's and the wait's time in each
# process and the bytes all the host copies moved (from the status files), and the resume's ratio
# per byte: each process's CUDA context is in its host copy too.
# Run through `ninja -C build bench-jobs`; N, G and REPS come from the environment (8, 4, 3).
set -u
N=${N:-8} G=${G:-4} REPS=${REPS:-3}
T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-bench.XXXXXX")
trap 'for p in $(jobs -p); do kill -9 $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
ini() { printf '[status]\ndir = %s\n[lock]\ntimeout_ms = 0\n%s\n' "$T/status" "${1:-}" > "$T/job.ini"; }
ini
export CUDANAP_CONFIG=$T/job.ini

fds=()
start_set() { # start_set COUNT GIB
	fds=()
	for i in $(seq "$1"); do
		mkfifo "$T/in$i"
		"$CUDANAP" run -- "$HOLDMEM" "$2" < "$T/in$i" > "$T/out$i" 2>> "$T/err$i" &
		exec {fd}> "$T/in$i"
		fds+=("$fd")
	done
	for i in $(seq "$1"); do
		until grep -q ready "$T/out$i" 2> /dev/null; do sleep 0.1; done
	done
}
stop_set() {
	for fd in "${fds[@]}"; do echo quit >&"$fd"; exec {fd}>&-; done
	wait
	rm -f "$T"/in* "$T"/out*
}
verify_set() { # every process answers "verify ok"
	local i=0 bad=0
	for fd in "${fds[@]}"; do
		i=$((i + 1))
		echo verify >&"$fd"
	done
	for i in $(seq ${#fds[@]}); do
		for _ in $(seq 600); do [ "$(grep -c verify "$T/out$i")" -ge "$1" ] && break; sleep 0.1; done
		[ "$(grep -c 'verify ok' "$T/out$i")" -ge "$1" ] || bad=$((bad + 1))
	done
	return $bad
}
now() { date +%s.%N; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# per_process_values KEY: KEY in each status file, a line each (null or absent counts 0)
per_process_values() {
	local f v=()
	for f in "$T"/status/*.json; do
		v+=("$(grep -o "\"$1\":[0-9.]*" "$f" | cut -d: -f2)")
	done
	printf '%s\n' "${v[@]:-0}" | sed 's/^$/0/'
}
# per_process KEY: "median M max X" of KEY over the status files
per_process() {
	per_process_values "$1" > "$T/per_process"
	printf 'median %s max %s' "$(median < "$T/per_process")" "$(sort -g "$T/per_process" | tail -n1)"
}
# total_gib KEY: KEY (in MiB) summed over the status files, in GiB
total_gib() {
	per_process_values "$1" | awk '{ t += $1 } END { printf "%.2f", t / 1024 }'
}

# measure LABEL COUNT GIB: REPS cycles of suspend --all / resume --all
measure() {
	local s=() r=() t0 t1 t2
	start_set "$2" "$3"
	for rep in $(seq "$REPS"); do
		t0=$(now)
		"$CUDANAP" suspend --all > "$T/s.log" || { cat "$T/s.log" >&2; exit 1; }
		t1=$(now)
		"$CUDANAP" resume --all > "$T/r.log" || { cat "$T/r.log" >&2; exit 1; }
		t2=$(now)
		verify_set "$rep" || { echo "bench-jobs: data NOT intact after resume" >&2; exit 1; }
		s+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
		r+=("$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", b - a }')")
	done
	# the last resume, per process: restore, reservation and wait ms (a step that did not run: 0)
	local restore reserve wait
	restore=$(per_process restore_ms) reserve=$(per_process reserve_ms) wait=$(per_process wait_ms)
	eval "${1}_gib=$(total_gib copy_mib)"
	stop_set
	eval "${1}_s=$(printf '%s\n' "${s[@]}" | median) ${1}_r=$(printf '%s\n' "${r[@]}" | median)"
	printf '%-30s suspend %6.2f s   resume %6.2f s   (all: %s / %s)\n' "$2 x $3 GiB${4:+, $4}" \
		"$(eval echo \$${1}_s)" "$(eval echo \$${1}_r)" "${s[*]}" "${r[*]}"
	printf '%30s last resume, per process: restore ms %s; reservation ms %s; wait for its turn ms %s\n' "" \
		"$restore" "$reserve" "$wait"
	printf '%30s host copies moved: %s GiB in all, %.1f GiB/s over the resume\n' "" \
		"$(eval echo \$${1}_gib)" "$(awk -v g="$(eval echo \$${1}_gib)" -v r="$(eval echo \$${1}_r)" 'BEGIN { print g / r }')"
}

echo "bench-jobs: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1), $REPS reps, medians"
measure one 1 $((N * G))
measure many "$N" "$G"
ini "$(printf '[restore]\ntake_turns = false')"
measure noturns "$N" "$G" "take_turns = false"
ini "$(printf '[restore]\nreserve = false')"
measure nores "$N" "$G" "reserve = false"
awk -v a="$one_s" -v b="$many_s" -v c="$one_r" -v d="$many_r" \
	'BEGIN { printf "ratio %d processes / one process: suspend %.2fx, resume %.2fx the time\n", '"$N"', b / a, d / c }'
# Each process has a CUDA context of its own, and its memory is in the host copy too: the N
# processes move more bytes than the one.
awk -v a="$one_gib" -v b="$many_gib" -v c="$one_r" -v d="$many_r" \
	'BEGIN { printf "per byte: the %d processes moved %.2fx the bytes of the one, resume %.2fx its time per GiB\n", '"$N"', b / a, (d / b) / (c / a) }'
awk -v c="$one_r" -v d="$noturns_r" \
	'BEGIN { printf "without taking turns: resume %.2fx the one process'"'"'s time\n", d / c }'
awk -v c="$one_r" -v d="$nores_r" \
	'BEGIN { printf "without the reservation: resume %.2fx the one process'"'"'s time\n", d / c }'
