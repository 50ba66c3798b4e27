#!/usr/bin/env bash
# Forks: a child forked without exec gets an agent of its own. It is suspended on its own if it
# uses CUDA, answers "no CUDA" if it does not, and never reaches its parent's controller. C fork,
# and Python's multiprocessing (fork, spawn, forkserver) and subprocess.
. "$(dirname "$0")/../lib.sh"
# ASan's fork() interceptor holds its own locks across fork(), inside which cudanap starts a
# forked child's agent thread: the child deadlocks under the ASan runtime only.
[ -z "${CN_SANITIZER_RUNTIME:-}" ] || skip_all "forks under the ASan runtime"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake T
mkdir "$T/fake"
write_ini

# -- C: a forked child that initialises CUDA itself
start A "$TARGET"
ask A "fork cuda $T/child.out"
child=${REPLY#child }
for _ in $(seq 100); do [ -s "$T/child.out" ] && break; sleep 0.05; done
like "$(cat "$T/child.out")" "^ok" "the forked child uses CUDA on its own"
cli suspend "$child"
like "$out:$rc" "^$child: suspended in .*:0" "the forked child is suspended on its own"
is "$(field "$child" state)" checkpointed "its status file says so"
is "$(field "$A_pid" seq):$(field "$A_pid" state)" "0:running" "the parent did nothing and runs on"
ask A verify
is "$REPLY" "verify ok" "the parent's CUDA works while its child sleeps"
is "$(ctl_of "$child" | wc -w)" 1 "the child started a controller of its own"
# a check that nothing happens: the child checks every 50 ms when it runs
n1=$(cut -d' ' -f2 "$T/child.out"); sleep 0.3; n2=$(cut -d' ' -f2 "$T/child.out")
is "$n2" "$n1" "the suspended child's CUDA calls wait"
cli resume "$child"
like "$out:$rc" "^$child: resumed in .*:0" "and resumed"
checked_since() { [ "$(cut -d' ' -f2 "$T/child.out")" -gt "$1" ] 2> /dev/null; }
eventually 20 checked_since "$n2"
like "$(cat "$T/child.out")" "^ok" "its memory intact, its checks running again"
kill -USR1 "$A_pid"
settle "$A_pid" 1
is "$(field "$A_pid" state)" checkpointed "the parent is still suspended on its own signal"
kill -USR2 "$A_pid"
settle "$A_pid" 2
kill "$child"
ask A quit
wait "$A_pid"

# -- a grandchild: forked from a forked child
out=$(LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini bash -c '( ( sleep 0.5; echo $BASHPID > '"$T"'/gc ) & wait ) & wait; echo done' 2>&1)
is "$out" done "a forked grandchild runs and exits"
gc=$(cat "$T/gc")
is "$(ls "$T/status" | grep -c "^$gc.json")" 0 "and leaves no status file behind"

# -- Python
if ! command -v python3 > /dev/null; then
	ok 0 "# SKIP python3 not installed"
	finish
fi
py=$(dirname "$0")/mp_child.py
for how in fork spawn forkserver subprocess; do
	start M python3 "$py" "$how" cuda
	answer M 30
	child=${REPLY#child }
	[[ $child =~ ^[0-9]+$ ]] || { ok 1 "$how: child started"; diag "$REPLY"; ask M quit; continue; }
	cli suspend "$child"
	like "$out:$rc" "^$child: suspended in .*:0" "python $how: the child using CUDA is suspended on its own"
	is "$(field "$M_pid" seq)" 0 "python $how: the parent did nothing"
	cli resume "$child"
	like "$out:$rc" "^$child: resumed in .*:0" "python $how: and resumed"
	ask M stop 30
	is "$REPLY" "child says ok" "python $how: the child's memory is intact"
	ask M quit
	wait "$M_pid"

	start M python3 "$py" "$how" none
	answer M 30
	child=${REPLY#child }
	cli suspend "$child"
	like "$out" "nothing to suspend" "python $how: a child without CUDA answers no CUDA"
	check "python $how: and keeps running" kill -0 "$child"
	ask M stop 30
	is "$REPLY" "child says ok" "python $how: it finishes its work"
	ask M quit
	wait "$M_pid"
done
finish
