# bench-lib: what the benchmark scripts share (sourced): a median, a ratio, and the table of jobs
# whose variants take turns.

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
