#!/usr/bin/env bash
# [nccl] suspendable, with the fake driver: NCCL's transport variables set before main and
# inherited by every process of the job, a value the user set kept and reported, and the
# preflight's decision for each transport setting of a process with NCCL communicators.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
vars="NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_NET_GDR_LEVEL"
# shellcheck disable=SC2086
unset $vars
cat > "$T/show.py" <<PY
import multiprocessing as mp, os, subprocess, sys
names = "$vars".split()
def show():
    return " ".join(os.environ.get(v, "-") for v in names)
def child(q):
    q.put(show())
if __name__ == "__main__":
    print("main:", show())
    print("subprocess:", subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('NCCL_SHM_DISABLE', '-'))"], capture_output=True, text=True).stdout.strip())
    mp.set_start_method("spawn")
    q = mp.Queue()
    p = mp.Process(target=child, args=(q,))
    p.start()
    print("spawn:", q.get())
    p.join()
PY
preloaded() { LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini "$@"; }

# -- the environment, as Python and its children see it
if command -v python3 > /dev/null; then
	py3=$(real_python)
	write_ini "[nccl]" "suspendable = true"
	out=$(preloaded "$py3" "$T/show.py")
	like "$out" "main: 1 1 0 0 LOC" "the preload sets NCCL's transports before main (Python's os.environ, built before its main, has them)"
	like "$out" "subprocess: 1" "a subprocess inherits them"
	like "$out" "spawn: 1 1 0 0 LOC" "a multiprocessing spawn child (as mp.spawn starts ranks) inherits them"
	out=$(preloaded sh -c 'sh -c "echo \$NCCL_P2P_DISABLE\$NCCL_SHM_DISABLE"')
	is "$out" 11 "a shell's grandchild inherits them"
	out=$(NCCL_SHM_DISABLE=0 NCCL_NET_GDR_LEVEL=PHB preloaded "$py3" "$T/show.py")
	like "$out" "main: 1 0 0 0 PHB" "values the user set are kept, the rest set"
	write_ini
	out=$(preloaded "$py3" "$T/show.py")
	like "$out" "main: - - - - -" "without the switch nothing is set"
else
	diag "no python3: the checks of Python's environment are not run"
fi

write_ini "[nccl]" "suspendable = true"
out=$("$CUDANAP" run -c "$T/job.ini" -- true 2>&1)
is "$out" "cudanap: [nccl] suspendable: NCCL uses sockets between ranks: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0 NCCL_NET_GDR_LEVEL=LOC" \
	"cudanap run says what the switch sets, in one line"
out=$(NCCL_P2P_DISABLE=0 "$CUDANAP" run -c "$T/job.ini" -- sh -c 'echo "P2P=$NCCL_P2P_DISABLE SHM=$NCCL_SHM_DISABLE"' 2>&1)
like "$out" "^cudanap: \[nccl\] suspendable: keeping NCCL_P2P_DISABLE=0, set in the environment: NCCL ranks of this job will be refused at suspend" \
	"cudanap run reports a value the user set that keeps the job from being suspendable"
like "$out" "P2P=0 SHM=1$" "and the job runs with it"

# -- the preflight, for a process with an NCCL communicator (PyTorch's watchdog thread)
# nccl_job NAME ENV...: start the fake target with these variables, and an NCCL thread in it.
nccl_job() {
	local name=$1
	shift
	start "$name" env "$@" "$TARGET" && ask "$name" "thread pt_nccl_watchdg" && [ "$REPLY" = "thread ok" ]
}
nccl_job S
check "suspendable: an NCCL process is suspended and resumed, data intact" cycle S
ask S quit

refused() { # refused DESCRIPTION REGEX ENV...
	local d=$1 want=$2 out rc
	shift 2
	nccl_job R "$@"
	cli suspend "$R_pid"
	like "$out:$rc" "REFUSED: refusing to suspend a process with NCCL communicators whose transports the driver cannot restore: $want.*\[nccl\] suspendable = true.*\(state running\):1$" "$d"
	is "$("$FAKECTL" "$FAKECUDA" state "$R_pid")" "CUDA_SUCCESS 0" "$d: before the lock"
	ask R verify
	ask R quit
}
refused "suspendable, but the user's NCCL_P2P_DISABLE=0: refused, naming it" "NCCL_P2P_DISABLE=0 in its environment \(measured" NCCL_P2P_DISABLE=0
refused "NCCL_SHM_DISABLE=0: refused" "NCCL_SHM_DISABLE=0 in its environment \(measured" NCCL_SHM_DISABLE=0
refused "NCCL_NVLS_ENABLE=1 (NVLink SHARP): refused" "NCCL_NVLS_ENABLE=1 in its environment \(inferred" NCCL_NVLS_ENABLE=1
refused "NCCL_COLLNET_ENABLE=1: refused" "NCCL_COLLNET_ENABLE=1 in its environment \(inferred" NCCL_COLLNET_ENABLE=1
refused "NCCL_NET_GDR_LEVEL=SYS (GPUDirect RDMA): refused" "NCCL_NET_GDR_LEVEL=SYS in its environment \(inferred" NCCL_NET_GDR_LEVEL=SYS

write_ini
refused "no switch, NVLS off by hand but P2P and SHM left on: refused" "NCCL_P2P_DISABLE is unset" NCCL_NVLS_ENABLE=0
if ls -A /sys/class/infiniband 2> /dev/null | grep -q .; then
	ok 0 "# SKIP this machine has an RDMA device: GDR must be turned off by hand too"
else
	nccl_job H NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
	check "no switch, the measured variables set by hand: suspended" cycle H
	ask H quit
fi
write_ini "[preflight]" "allow_nccl = true"
nccl_job A
check "allow_nccl = true: suspended whatever the transports" cycle A
ask A quit
finish
