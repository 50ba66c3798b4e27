#!/usr/bin/env bash
# bench-pool: the dry run's estimates for large processes against the suspends and resumes that
# follow: an idle JAX process holding a pool of POOL_MIB (61446, JAX's default share of an H100;
# XLA_PYTHON_CLIENT_MEM_FRACTION is set to give it on any GPU), then holdmem with each of SIZES
# GiB (8 32 60), then JAX again; REPS (3) suspends and resumes each, the resume at once after the
# suspend, the estimate asked before each. The state directory starts empty: the first JAX process
# is estimated from the defaults, the rest from what this machine has learnt. Needs a GPU with
# room for the largest, JAX and holdmem. Run through `ninja -C build bench-pool`.
set -u
POOL_MIB=${POOL_MIB:-61446} SIZES=${SIZES:-8 32 60} REPS=${REPS:-3}
py=${PYTHON:-python3}
holder=$(dirname "$0")/../../tests/gpu/jax_hold.py
. "$(dirname "$0")/bench-lib.sh"
bench_job
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-pool: needs a GPU" >&2; exit 1; }
mkdir -m 700 "$T/state"
export XDG_STATE_HOME=$T/state CUDA_VISIBLE_DEVICES=0
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0)

# run NAME CMD...: REPS suspends and resumes of the holder CMD starts, a line each
run() {
	local name=$1 r src
	shift
	hold "$@"
	for r in $(seq "$REPS"); do
		estimated $pid 29 # 60 GiB given back counts as available seconds later: 30 tries
		src=$(field $pid est_source)
		printf '%-10s %8.0f %-6s %7.2f %7.2f %6s %7.2f %7.2f %6s  %s\n' "$name" "$(field $pid footprint_mib)" "rep $r" \
			"$es" "$s" "$se" "$er" "$rs" "$re" "$src"
	done
	release "$name"
}
echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1); $REPS each, the state directory empty at the start"
printf '%-10s %8s %-6s %7s %7s %6s %7s %7s %6s  %s\n' holder MiB "" "est s" "took s" error "est s" "took s" error source
printf '%-10s %8s %-6s %22s %22s\n' "" "" "" "------- suspend ------" "------- resume -------"
pool=$(awk -v p="$POOL_MIB" -v t="$total" 'BEGIN { printf "%.4f", p / t }')
XLA_PYTHON_CLIENT_MEM_FRACTION=$pool run jax-pool "$py" "$holder"
for gib in $SIZES; do run "holdmem" "$HOLDMEM" "$gib"; done
XLA_PYTHON_CLIENT_MEM_FRACTION=$pool run jax-pool "$py" "$holder"
