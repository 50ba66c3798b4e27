# bench-lib: what the benchmark scripts share (sourced): a median, a ratio, the table of jobs
# whose variants take turns, and a holder of GPU memory driven through the CLI.

# median: the median of the numbers on stdin (spaces or newlines between them)
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); print (NR % 2) ? a[m] : (a[m] + a[m + 1]) / 2 }'; }
# ratio BASE X: X / BASE as "1.234x" ("-" where either is missing)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3fx", b / a; else print "-" }'; }

# turns WIDTH VARIANT...: for each "NAME ARGS..." line on stdin whose NAME is in $JOBS (every line
# when JOBS is empty), $REPS runs of each variant by the caller's `step_ms VARIANT ARGS...` (one
# number), in an order that rotates each round; prints a header, then per job each variant's median
# and its ratio to the first variant's. WIDTH: the job column's.
turns() {
	local width=$1 name args v m base _
	shift
	local variants=("$@")
	printf "%-${width}s" job
	for v in "${variants[@]}"; do printf ' %11s' "$v ms"; [ "$v" = "${variants[0]}" ] || printf ' %7s' ratio; done
	echo
	while read -r name args; do
		[ -z "${JOBS:-}" ] || [[ " $JOBS " == *" $name "* ]] || continue
		local -A t=()
		set -- "${variants[@]}"
		for _ in $(seq "$REPS"); do
			for v in "$@"; do t[$v]="${t[$v]:-} $(step_ms "$v" $args < /dev/null)"; done
			set -- "${@:2}" "$1"
		done
		printf "%-${width}s" "$name"
		for v in "${variants[@]}"; do
			m=$(median <<< "${t[$v]}")
			[ "$v" = "${variants[0]}" ] && base=$m
			printf ' %11s' "$m"
			[ "$v" = "${variants[0]}" ] || printf ' %7s' "$(ratio "$base" "$m")"
		done
		echo
		unset t
	done
}

# The holders' benches (nap, estimate, peer). bench_job makes $T (removed at exit, with every
# holder still running), its status directory and a job INI that points there; a holder is a
# program run under `cudanap run` that reads commands (verify, work, quit) from the fifo $T/in,
# writes its answers to $T/out and says "ready" once it holds its memory.
bench=${0##*/} bench=${bench%.sh}
bench_job() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-bench.XXXXXX")
	trap 'for p in $(jobs -p); do kill -9 $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
	mkdir -m 700 "$T/status"
	printf '[status]\ndir = %s\n[lock]\ntimeout_ms = 0\n' "$T/status" > "$T/job.ini"
}
# field PID KEY: KEY's value in PID's status file
field() { grep -o "\"$2\":\(\"[^\"]*\"\|[^,}]*\)" "$T/status/$1.json" | head -n 1 | sed 's/^[^:]*://; s/"//g'; }
# act PID ACTION: the CLI's ACTION (suspend, resume, nap) on PID; the bench stops if it fails
act() { "$CUDANAP" "$2" -c "$T/job.ini" "$1" > /dev/null || { echo "$bench: $2 of $1 failed" >&2; exit 1; }; }
# took PID ACTION: act, then the action's total in seconds (the status file's total_ms)
took() { act "$1" "$2"; awk -v m="$(field "$1" total_ms)" 'BEGIN { printf "%.3f", m / 1000 }'; }
# err ESTIMATE MEASURED: the estimate's error as a signed percentage
err() { awk -v e="$1" -v m="$2" 'BEGIN { printf "%+.0f%%", (e - m) / m * 100 }'; }
# estimated PID [WAIT_S]: the dry run's estimates for PID, then its suspend and resume; sets es and
# er (the estimates, s), s and rs (what they took, s), se and re (the errors); the bench stops if
# the dry run does not say it would suspend, within WAIT_S seconds (default 0: the host memory a
# resume gave back may take a few seconds to count as available)
estimated() {
	local w out
	for w in $(seq 0 "${2:-0}"); do
		out=$("$CUDANAP" suspend --dry-run -c "$T/job.ini" "$1") && break
		[ "$w" -lt "${2:-0}" ] || { echo "$bench: $out" >&2; exit 1; }
		sleep 1
	done
	es=$(field "$1" est_suspend_s) er=$(field "$1" est_resume_s)
	s=$(took "$1" suspend)
	rs=$(took "$1" resume)
	se=$(err "$es" "$s") re=$(err "$er" "$rs")
}
# hold CMD...: starts the holder; sets pid (cudanap run's) and fd (the fifo's writing end) and
# returns once the holder is ready; the bench stops if it dies first
hold() {
	mkfifo "$T/in"
	"$CUDANAP" run -c "$T/job.ini" -- "$@" < "$T/in" > "$T/out" 2>> "$T/err" &
	pid=$!
	exec {fd}> "$T/in"
	until grep -q ready "$T/out" 2> /dev/null; do sleep 0.1; kill -0 $pid 2> /dev/null || exit 1; done
}
# release WHAT: the holder checks its memory and quits; the bench stops unless it was intact
release() {
	echo verify >&$fd
	until grep -q "verify" "$T/out"; do sleep 0.1; done
	grep -q "verify ok" "$T/out" || { echo "$bench: $1 not intact" >&2; exit 1; }
	echo quit >&$fd
	exec {fd}>&-
	wait $pid
	rm -f "$T/in" "$T/out"
}
