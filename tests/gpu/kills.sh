#!/usr/bin/env bash
# The real driver under faults: the controller killed in the middle of a checkpoint and of a
# restore, and a multiprocessing child that forks from a PyTorch parent and uses CUDA itself.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ -n "${HOLDMEM:-}" ] && [ -x "$HOLDMEM" ] || skip_all "CUDA test programs not built (no nvcc when meson set up)"
gib=${CUDANAP_GPU_TEST_GIB:-8}
write_ini

# wait_busy PID: until PID's agent has an action in flight.
wait_busy() { for _ in $(seq 500); do [ "$(field "$1" busy)" = true ] && return 0; sleep 0.01; done; return 1; }

# bring_back PID: resume until running (at most 3 tries); says what each try answered.
bring_back() {
	local i out
	for i in 1 2 3; do
		[ "$(field "$1" state)" = running ] && return 0
		out=$("$CUDANAP" resume "$1" 2>&1)
		diag "resume try $i: $out"
	done
	[ "$(field "$1" state)" = running ]
}

start A "$HOLDMEM" "$gib"
ok $? "holdmem ($gib GiB) starts"
pid=$A_pid
"$CUDANAP" suspend "$pid" > /dev/null && "$CUDANAP" resume "$pid" > /dev/null
ok $? "a first cycle starts the controller"

# -- mid-checkpoint
kill -USR1 "$pid"
wait_busy "$pid"
sleep 0.4
kill -9 "$(ctl_of "$pid")"
check "killed 0.4 s into the checkpoint: the agent reports" settle "$pid" 3 300
diag "after the kill: state $(field "$pid" state), result $(field "$pid" result): $(field "$pid" message)"
like "$(field "$pid" state)" "^(running|checkpointed)$" "the state is a known one"
check "the job can be brought back to running" bring_back "$pid"
ask A verify 120
is "$REPLY" "verify ok" "all $gib GiB intact"
cli suspend "$pid"
like "$out:$rc" "suspended in .*:0" "a new controller suspends it"

# -- mid-restore
kill -USR2 "$pid"
wait_busy "$pid"
sleep 0.2
kill -9 "$(ctl_of "$pid")"
seq=$(field "$pid" seq)
settle "$pid" "$seq" 300
diag "after the kill: state $(field "$pid" state), result $(field "$pid" result): $(field "$pid" message)"
like "$(field "$pid" state)" "^(running|checkpointed)$" "killed mid-restore: the state is a known one"
check "the job can be brought back to running" bring_back "$pid"
ask A verify 120
is "$REPLY" "verify ok" "all $gib GiB intact"
ask A quit
wait "$pid"

# -- a child forked from a PyTorch parent that has not touched CUDA, using CUDA itself
if python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
	cat > "$T/fork.py" <<'PY'
import multiprocessing as mp, os, sys, torch

def child(q, go):
    x = torch.arange(256 * 2**20, device="cuda", dtype=torch.float32)  # 1 GiB
    want = float(x.double().sum())
    q.put(os.getpid())
    go.wait()
    q.put("ok" if float(x.double().sum()) == want else "bad")

if __name__ == "__main__":
    print("ready", os.getpid(), flush=True)
    ctx = mp.get_context("fork")
    q, go = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=child, args=(q, go))
    p.start()
    print("child", q.get(), flush=True)
    sys.stdin.readline()
    go.set()
    print("child says", q.get(), flush=True)
    p.join()
PY
	start P python3 "$T/fork.py"
	answer P 120
	child=${REPLY#child }
	held=$(gpu_mib "$child")
	cli suspend "$child"
	like "$out:$rc" "^$child: suspended in .*:0" "a fork child using CUDA under a PyTorch parent is suspended on its own"
	diag "$out; it held $held MiB, now $(gpu_mib "$child") MiB"
	check "its GPU memory is freed" test "$(gpu_mib "$child")" -le 4
	is "$(field "$P_pid" seq)" 0 "the parent did nothing"
	cli resume "$child"
	like "$out:$rc" "^$child: resumed in .*:0" "and resumed"
	ask P go 120
	is "$REPLY" "child says ok" "its tensor is intact"
	wait "$P_pid"
else
	ok 0 "# SKIP PyTorch with CUDA not available"
fi
finish
