#!/usr/bin/env bash
# The app's own handlers for cudanap's signals: whatever the app sets, cudanap stays armed, the
# app's handler runs after ours ([signals] chain), and the signal never kills the app.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
write_ini

for mode in sigaction siginfo signal sysv; do
	start A "$TARGET"
	ask A "handler $mode"
	is "$REPLY" "handler ok" "$mode: the app installs its handler"
	check "$mode: cudanap still suspends and resumes, data intact" cycle A 1
	ask A count
	is "$REPLY" "count 1 1" "$mode: the app's handler ran once per signal, after ours"
	ask A query
	want=same
	[ $mode = sysv ] && want=dfl # SA_RESETHAND: the app's handler is gone after one run
	is "$REPLY" "query $want" "$mode: sigaction() reports back what the app set"
	ask A quit
	wait "$A_pid"
done

for mode in ign dfl; do
	start A "$TARGET"
	ask A "handler $mode"
	check "SIG_${mode^^} from the app: still suspends and resumes" cycle A 1
	check "SIG_${mode^^} from the app: the app lives" kill -0 "$A_pid"
	ask A quit
	wait "$A_pid"
done

# -- an app handler that raises the signal again (faulthandler's chain=True): a second, redundant
# request follows every real one, 20 ms later; the CLI must still print the outcome of the real
# one, and the status file keep it. (Each request waits for the agent to go quiet: a re-raise still
# in the app's handler when the next request is sent would reach the agent after it, as the app
# ordered them. The twin is an action of its own when the agent read the first byte before it
# came, and folded into it when both were in the pipe at its read: under load, at times.)
start A "$TARGET"
ask A "handler reraise"
is "$REPLY" "handler ok" "reraise: the app installs a handler that raises the signal again"
twin() { settle "$1" "$2" 1 || quiet "$1"; } # counted apart within a second, else folded
timed=0
for i in $(seq 20); do
	q=$(field "$A_pid" seq)
	s=$("$CUDANAP" suspend "$A_pid") && twin "$A_pid" $((q + 2)) &&
		r=$("$CUDANAP" resume "$A_pid") && twin "$A_pid" $((q + 4)) &&
		[[ $s =~ suspended\ in\ .*checkpoint && $r =~ resumed\ in\ .*restore ]] && timed=$((timed + 1))
done
is "$timed" 20 "reraise: 20 of 20 suspends and resumes print the real outcome with its timings"
is "$(field "$A_pid" action):$(field "$A_pid" message)" "resume:resumed" \
	"reraise: the status file keeps the real outcome, not the redundant one"
ask A count
is "$REPLY" "count 20 20" "reraise: the app's handler ran once per request"
check "reraise: the redundant requests are counted, or folded into the real ones (seq $(field "$A_pid" seq) >= 40)" \
	test "$(field "$A_pid" seq)" -ge 40
ask A verify
is "$REPLY" "verify ok" "reraise: data intact"
ask A quit
wait "$A_pid"

# -- chain = false: the app's handler is recorded, not called
write_ini "[signals]" "chain = false"
start A "$TARGET"
ask A "handler sigaction"
check "chain = false: suspends and resumes" cycle A 1
ask A count
is "$REPLY" "count 0 0" "chain = false: the app's handler is not called"
ask A query
is "$REPLY" "query same" "chain = false: sigaction() still reports the app's handler"
ask A quit
wait "$A_pid"
write_ini

# -- other signals are the app's: its handlers reach the kernel
# (SIGHUP back to its default first: bash cannot trap a signal ignored when it started, as under
# nohup)
out=$(env --default-signal=HUP LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini bash -c 'trap "echo got" HUP; kill -HUP $$' 2>&1)
is "$out" got "a handler for another signal is the kernel's to run, as without cudanap"
probe='trap "" USR1 INT; exec grep -E "^Sig(Blk|Ign)" /proc/self/status'
plain=$(bash -c "$probe")
with=$(LD_PRELOAD=$PRELOAD CUDANAP_CONFIG=$T/job.ini bash -c "$probe")
is "$(echo "$with" | grep SigBlk)" "$(echo "$plain" | grep SigBlk)" "the signal mask as the app set it"
# The kernel no longer ignores SIGUSR1 (cudanap catches it); every other bit is the app's.
ign() { echo "$1" | awk '/SigIgn/ { print $2 }'; }
is "$(printf '%x' $(( 0x$(ign "$plain") & ~0x200 )))" "$(printf '%x' $(( 0x$(ign "$with") )))" \
	"ignored signals as the app set them, but for cudanap's own"

# -- Python: signal.signal and faulthandler.register
if command -v python3 > /dev/null; then
	cat > "$T/py.py" <<'PY'
import faulthandler, os, signal, sys, time
hits = []
signal.signal(signal.SIGUSR2, lambda s, f: hits.append(s))
faulthandler.register(signal.SIGUSR1, file=open(os.devnull, "w"), chain=False)
print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    if line.startswith("hits"):
        time.sleep(0.2)
        print("hits", len(hits), signal.getsignal(signal.SIGUSR2) is not signal.SIG_DFL, flush=True)
    elif line.startswith("quit"):
        break
PY
	start P "$(real_python)" "$T/py.py"
	kill -USR1 "$P_pid"
	settle "$P_pid" 1
	like "$(field "$P_pid" state)" "no-cuda" "Python with faulthandler.register on SIGUSR1: cudanap still answers"
	kill -USR2 "$P_pid"
	settle "$P_pid" 2
	ask P hits
	is "$REPLY" "hits 1 True" "Python's signal.signal handler ran after cudanap's"
	check "the Python process lives" kill -0 "$P_pid"
	ask P quit
else
	ok 0 "# SKIP python3 not installed"
fi
finish
