#!/usr/bin/env bash
# idle-calls: which driver calls idle GPU programs make, counted by the gate (CUDANAP_DEBUG=calls):
# a PyTorch, a JAX, a CuPy and a Hugging Face transformers process (tests/gpu/idle_probe.py) warm
# up, sit idle for IDLE seconds (60) side by side, then each does its work once more. It prints,
# per program, the calls made while idle and those of the first work after it. Run through
# `ninja -C build idle-calls` on a GPU machine.
set -u
IDLE=${IDLE:-60}
py=$(dirname "$0")/../../tests/gpu/idle_probe.py
T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-idle.XXXXXX")
trap 'kill $(jobs -p) 2> /dev/null; rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
printf '[status]\ndir = %s\n' "$T/status" > "$T/job.ini"
kinds="torch jax cupy hf"
declare -A pid in out
for k in $kinds; do
	mkfifo "$T/$k.in" "$T/$k.out"
	CUDANAP_DEBUG=calls XLA_PYTHON_CLIENT_PREALLOCATE=false "$CUDANAP" run -c "$T/job.ini" -- \
		python3 "$py" $k < "$T/$k.in" > "$T/$k.out" 2> "$T/$k.err" &
	exec {fd}> "$T/$k.in"; in[$k]=$fd
	exec {fd}< "$T/$k.out"; out[$k]=$fd
done
for k in $kinds; do
	read -r -t 300 -u "${out[$k]}" word p || { echo "$k did not start: $(tail -n 2 "$T/$k.err")"; continue; }
	pid[$k]=$p
done
sleep 2 # the counts are rewritten every second
for k in "${!pid[@]}"; do cp "$T/status/${pid[$k]}.calls" "$T/$k.before" 2> /dev/null || : > "$T/$k.before"; done
sleep "$IDLE"
for k in "${!pid[@]}"; do cp "$T/status/${pid[$k]}.calls" "$T/$k.idle" 2> /dev/null || : > "$T/$k.idle"; done
for k in "${!pid[@]}"; do echo step >&"${in[$k]}"; read -r -t 120 -u "${out[$k]}" _; done
sleep 2
for k in "${!pid[@]}"; do cp "$T/status/${pid[$k]}.calls" "$T/$k.after" 2> /dev/null || : > "$T/$k.after"; done
# diff A B: "COUNT NAME" lines of what B counts beyond A
diff_calls() { awk 'NR == FNR { a[$2] = $1; next } { d = $1 - a[$2]; if (d > 0) printf "%8d %s\n", d, $2 }' "$1" "$2" | sort -rn; }
for k in $kinds; do
	[ -n "${pid[$k]:-}" ] || continue
	echo "== $k: driver calls while idle for $IDLE s"
	diff_calls "$T/$k.before" "$T/$k.idle"
	echo "== $k: the first work after it"
	diff_calls "$T/$k.idle" "$T/$k.after"
done
