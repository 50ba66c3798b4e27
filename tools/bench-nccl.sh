#!/usr/bin/env bash
# bench-nccl: the price of [nccl] suspendable. The same two-rank DDP job (tests/gpu/ddp_train.py)
# with NCCL's default transports (NVLink/CUDA IPC, shared memory) and under cudanap with the
# socket-only transports the switch sets, alternating, in one run. Prints the median step time of
# each and the ratio, for a small and a larger model, and with more socket threads. Run through `ninja -C build bench-nccl`;
# REPS (3) and STEPS (60) come from the environment.
set -u
REPS=${REPS:-3} STEPS=${STEPS:-60}
py=$(dirname "$0")/../tests/gpu/ddp_train.py
T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
printf '[status]\ndir = %s\n[nccl]\nsuspendable = true\n' "$T/status" > "$T/job.ini"
[ "$(nvidia-smi -L 2> /dev/null | wc -l)" -ge 2 ] || { echo "bench-nccl: needs two GPUs" >&2; exit 1; }

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); print (NR % 2) ? a[m] : (a[m] + a[m + 1]) / 2 }'; }
step_ms() { # step_ms default|sockets|wide ARGS...: the job's median step time in ms
	local how=$1; shift
	case $how in
	default) env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE python3 "$py" "$STEPS" --time "$@" ;;
	sockets) "$CUDANAP" run -c "$T/job.ini" -- python3 "$py" "$STEPS" --time "$@" 2> /dev/null ;;
	wide) NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 \
		"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" "$STEPS" --time "$@" 2> /dev/null ;;
	esac | awk '/^time/ { print $2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }'; }

echo "2 ranks, $STEPS steps, median step time of $REPS runs; sockets: [nccl] suspendable;"
echo "4x4: the same with NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4"
printf '%-20s %11s %11s %7s %11s %7s\n' job "default ms" "sockets ms" ratio "4x4 ms" ratio
while read -r name args; do
	d= s= w=
	for _ in $(seq "$REPS"); do
		d="$d $(step_ms default $args)"
		s="$s $(step_ms sockets $args)"
		w="$w $(step_ms wide $args)"
	done
	d=$(median <<< "$d") s=$(median <<< "$s") w=$(median <<< "$w")
	printf '%-20s %11s %11s %7s %11s %7s\n' "$name" "$d" "$s" "$(ratio "$d" "$s")" "$w" "$(ratio "$d" "$w")"
done << 'JOBS'
mlp-4M-fp32 --width 1024 --layers 4 --batch 256 --sleep 0
mlp-200M-bf16 --busy --width 4096 --layers 12 --batch 1024
mlp-200M-bf16-fsdp --busy --fsdp --width 4096 --layers 12 --batch 1024
JOBS
