#!/usr/bin/env bash
# bench-nccl: what cudanap costs a DDP job (tests/gpu/ddp_train.py; two ranks unless RANKS says)
# while it runs, in one run. "plain": NCCL's default transports, no cudanap; "again": plain once
# more, whose ratio to plain is this machine's noise between runs of one job (a ratio closer to 1
# than that says nothing); "cudanap": the same under cudanap run (its NCCL interposition and gate;
# suspendable through NCCL's suspend API where the NCCL has it); "sockets": under [nccl]
# suspendable (the socket-only transports), and "wide" the same with NCCL_SOCKET_NTHREADS=4
# NCCL_NSOCKS_PERTHREAD=4. The variants take turns, in an order that rotates each round; it
# prints each one's median step time and its ratio to plain. Run through `ninja -C build
# bench-nccl`; from the environment: RANKS (2; 1 measures the interposition alone, on one GPU),
# REPS (3), STEPS (100), CUDANAP_NCCL_LIB (a libnccl.so.2 every variant preloads, e.g. 2.29.7 or
# later), SOCKETS=0 (leave out the socket variants), JOBS (names of the jobs below to run).
set -u
RANKS=${RANKS:-2} REPS=${REPS:-3} STEPS=${STEPS:-100} SOCKETS=${SOCKETS:-1} JOBS=${JOBS:-}
NCCL=${CUDANAP_NCCL_LIB:-}
py=$(dirname "$0")/../../tests/gpu/ddp_train.py
T=$(mktemp -d "${TMPDIR:-/tmp}/cudanap-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -m 700 "$T/status"
printf '[status]\ndir = %s\n' "$T/status" > "$T/plain.ini"
printf '[status]\ndir = %s\n[nccl]\nsuspendable = true\n' "$T/status" > "$T/sockets.ini"
[ "$(nvidia-smi -L 2> /dev/null | wc -l)" -ge "$RANKS" ] || { echo "bench-nccl: needs $RANKS GPUs" >&2; exit 1; }

. "$(dirname "$0")/bench-lib.sh"
step_ms() { # step_ms plain|again|cudanap|sockets|wide ARGS...: the job's median step time in ms
	local how=$1
	shift
	set -- --ranks "$RANKS" "$@"
	export LD_PRELOAD=$NCCL
	case $how in
	plain | again) env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE python3 "$py" "$STEPS" --time "$@" ;;
	cudanap) "$CUDANAP" run -c "$T/plain.ini" -- python3 "$py" "$STEPS" --time "$@" 2> /dev/null ;;
	sockets) "$CUDANAP" run -c "$T/sockets.ini" -- python3 "$py" "$STEPS" --time "$@" 2> /dev/null ;;
	wide) NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 \
		"$CUDANAP" run -c "$T/sockets.ini" -- python3 "$py" "$STEPS" --time "$@" 2> /dev/null ;;
	esac | awk '/^time/ { print $2 }'
}

# The NCCL the job loads (torch.cuda.nccl.version() is the one PyTorch was built with).
version=$(LD_PRELOAD=$NCCL python3 -c 'import ctypes, torch; v = ctypes.c_int(); ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(v)); v = v.value; print(f"{v // 10000}.{v // 100 % 100}.{v % 100}")' 2> /dev/null)
echo "$RANKS rank(s), $STEPS steps, median step time of $REPS runs each, the variants taking turns, NCCL ${version:-?}${NCCL:+ (preloaded)}"
variants="plain again cudanap"
[ "$SOCKETS" = 0 ] || variants="$variants sockets wide"
turns 20 $variants << 'JOBS'
mlp-4M-fp32 --width 1024 --layers 4 --batch 256 --sleep 0
mlp-200M-bf16 --busy --width 4096 --layers 12 --batch 1024
mlp-200M-bf16-b8192 --busy --width 4096 --layers 12 --batch 8192
mlp-200M-bf16-fsdp --busy --fsdp --width 4096 --layers 12 --batch 1024
JOBS
