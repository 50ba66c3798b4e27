#!/usr/bin/env bash
# The gate on the app's driver calls (preload/cuda/), with the fake driver: every path a program
# takes to a driver function (its exported name, dlsym on the driver's handle or on RTLD_DEFAULT,
# cuGetProcAddress and cuGetProcAddress_v2 with each version and flag) hands out the gate's entry
# point, with the arguments (on the stack, in vector registers) and the answer intact; a name the
# gate does not know passes and is counted; dlsym of anything else is untouched, RTLD_NEXT too.
# While the process is suspended no call of the app's enters the driver: each waits and runs
# after the resume (the fake driver writes "entered ..." for any call it sees while the process
# is not running, and dies of one while it is checkpointed, as JAX did: a call by the fake's own
# pointer shows that it would); a thread inside a call when the suspend starts is waited for, or
# the suspend gives up and the process runs on. Forked children and exec'd programs have gates
# of their own.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
entered() { grep -c '^entered' "$T/fake/events" 2> /dev/null || true; }
polled() { ask "$1" "drv polled"; set -- $REPLY; echo "${2:-?}"; }
longest() { ask "$1" "drv polled"; set -- $REPLY; echo "${3:-?}"; }
above() { local n=$1 v; shift; v=$("$@"); [ "$v" -gt "$n" ] 2> /dev/null; } # above N CMD...

write_ini "[log]" "level = debug"
start A "$TARGET"

# -- every path leads to the gate's entry point, and the call comes back right
for path in export dlsym default gpa gpa2; do
	ask A "drv fn $path cuStreamQuery"
	is "$REPLY" "fn libcudanap.so cuStreamQuery" "$path: cuStreamQuery is the gate's entry point"
done
ask A "drv fn ptds cuStreamQuery"
is "$REPLY" "fn libcudanap.so cuStreamQuery_ptsz" \
	"cuGetProcAddress_v2 with the per-thread default stream: the _ptsz variant's entry point"
ask A "drv fn gpa cuMemAlloc"
is "$REPLY" "fn libcudanap.so cuMemAlloc_v2" "cuGetProcAddress by version: the _v2 variant's"
ask A "drv fn v13 cuLaunchKernel"
is "$REPLY" "fn libcudanap.so ?" "a variant the driver does not export: an entry point of its own"
ask A "drv fn raw cuStreamQuery"
is "$REPLY" "fn libfakecuda.so cuStreamQuery" "(the fake's own function, for the checks below)"
for path in export dlsym default gpa gpa2 ptds v13; do
	answers=
	for fn in cuStreamQuery cuLaunchKernel cuTexRefSetMipmapLevelBias cuMemAlloc; do
		ask A "drv call $path $fn"
		answers+="${REPLY#call } "
	done
	is "$answers" "0 0 0 0 " \
		"$path: a query, a launch (five arguments on the stack), a float argument, an allocation"
done
ask A "drv fn gpa2 cuFakeNext"
is "$REPLY" "fn libcudanap.so ?" "a function the gate does not know gets an entry point"
ask A "drv call gpa2 cuFakeNext"
is "$REPLY" "call 0" "and passes through as it is"
ask A "drv call dlsym cuGetExportTable"
is "$REPLY" "call 0" "cuGetExportTable answers"

# -- dlsym of anything else is what it was
ask A "drv fn default getpid"
like "$REPLY" "^fn libc.so.6 " "dlsym of a name not the driver's: libc's answer"
ask A "drv fn dlsym fake_register"
is "$REPLY" "fn libfakecuda.so fake_register" "one of the driver's handle that is not a driver call"
ask A "drv fn default cuNoSuchFunction"
is "$REPLY" "fn none" "a driver name that does not exist: none, as before"

# -- while suspended no call enters the driver: each waits, then runs
ask A "drv poll gpa2 5"
eventually 20 above 20 polled A
"$CUDANAP" suspend "$A_pid" > /dev/null
is "$(field "$A_pid" state)" checkpointed "suspended with a poller calling cuStreamQuery every 5 ms"
c1=$(polled A)
sleep 1 # nothing is to happen: the poller's calls wait
c2=$(polled A)
check "the poller's calls waited outside the driver ($c1, then $c2 a second later)" \
	test "$c2" -le $((c1 + 1))
ask A "drv call gpa2 cuFakeNext" 1
is "$REPLY" "" "an unknown function's call waits too"
like "$(cat "$T/A.err")" "driver functions the app took: [0-9]+ \([0-9]+ by exported name, [0-9]+ by dlsym, [0-9]+ by cuGetProcAddress; 1 unknown to cudanap, 0 passed bare for want of an entry point\); export tables taken: 1 \(1 kinds\)" \
	"the suspend's debug line: the paths the app took, the unknown function, the export table"
"$CUDANAP" resume "$A_pid" > /dev/null
answer A
is "$REPLY" "call 0" "after the resume the waiting call ran"
eventually 20 above $((c2 + 20)) polled A
check "and the poller goes on (longest call $(longest A) ms: it waited through the suspend)" \
	test "$(longest A)" -ge 900
like "$(cat "$T/A.err")" "[0-9]+ driver calls of the app's waited while it slept \(the longest [0-9.]+ s\)" \
	"the resume's debug line counts the calls that waited"
is "$(entered)" 0 "no call entered the driver while the process was suspended"
ask A verify
is "$REPLY" "verify ok" "data intact"

# -- several threads, by other paths, at once
ask A "drv storm 4 export 3000"
sleep 0.2
cli suspend "$A_pid"
is "$rc" 0 "suspended under a storm of four threads calling by the exported name"
ask A "drv call v13 cuLaunchKernel" 1
is "$REPLY" "" "a launch by an unexported variant waits"
sleep 0.5 # nothing is to happen
is "$(entered)" 0 "none of them entered the driver"
"$CUDANAP" resume "$A_pid" > /dev/null
answer A
is "$REPLY" "call 0" "the launch ran after the resume"
eventually 20 bash -c "echo 'drv stormed' >&$A_in; read -r -t 5 -u $A_out l; [ \"\${l% *}\" != 'stormed running' ] && [[ \$l =~ ^stormed\ [0-9]+\ 0$ ]]"
check "the storm's threads ran on, no call failed" test $? -eq 0

# -- a thread inside a call when the suspend starts is waited for
ask A "drv launch gpa2 1500"
ask A "drv bgsync gpa2"
cli suspend "$A_pid"
is "$rc:$(field "$A_pid" state)" "0:checkpointed" "a thread inside cuStreamSynchronize for 1.5 s: the suspend waited"
ask A "drv synced"
like "$REPLY" "^synced 0 1[0-9]{3}$" "and the synchronisation returned before the lock"
like "$(cat "$T/A.err")" "the app's driver calls returned in [0-9.]+ ms" "the wait is in the debug log"
"$CUDANAP" resume "$A_pid" > /dev/null
write_ini "[lock]" "timeout_ms = 300"
ask A "drv launch gpa2 3000"
ask A "drv bgsync ptds"
c1=$(polled A)
cli suspend "$A_pid"
like "$out:$rc" "^$A_pid: suspend failed: CUDA_ERROR_NOT_READY: thread [0-9]+ stayed inside cuStreamSynchronize_ptsz for 300 ms \(\[lock\] timeout_ms\): GPU work still running; the process keeps running \(state running\):1$" \
	"one that stays longer than [lock] timeout_ms: the suspend gives up, naming the thread and the call"
eventually 20 above $((c1 + 10)) polled A
check "the gate is open again: the poller runs on" test $? -eq 0
eventually 20 bash -c "echo 'drv synced' >&$A_in; read -r -t 5 -u $A_out l; [[ \$l =~ ^synced\ 0 ]]"
cli suspend "$A_pid"
is "$rc" 0 "once it returned, the process suspends"
"$CUDANAP" resume "$A_pid" > /dev/null
write_ini "[log]" "level = debug"

# -- a forked child's gate is its own
ask A "drv forkpoll gpa2 $T/child.count"
child=${REPLY#forkpoll }
eventually 20 test -s "$T/child.count"
"$CUDANAP" suspend "$A_pid" > /dev/null
n1=$(cat "$T/child.count")
eventually 20 above $((n1 + 20)) cat "$T/child.count"
check "a child forked before its parent's suspend goes on calling the driver through its own gate" \
	test $? -eq 0
"$CUDANAP" resume "$A_pid" > /dev/null
kill "$child"

# -- a program exec'd under the preload, and the counts of CUDANAP_DEBUG=calls
CUDANAP_DEBUG=calls start E bash -c "exec '$TARGET'"
ask E "drv poll dlsym 5"
ask E "drv call gpa2 cuFakeNext"
eventually 20 has "$T/status/$E_pid.calls" "cuFakeNext \(unknown\)"
like "$(cat "$T/status/$E_pid.calls")" "^[0-9]+ cuStreamQuery" \
	"an exec'd program's calls pass its gate, counted per function in <pid>.calls"
check "with the unknown one marked" grep -qx "1 cuFakeNext (unknown)" "$T/status/$E_pid.calls"
"$CUDANAP" suspend "$E_pid" > /dev/null
c1=$(polled E)
sleep 0.5 # nothing is to happen
is "$(polled E)" "$c1" "its poller waits while it is suspended"
"$CUDANAP" resume "$E_pid" > /dev/null
ask E quit
eventually 20 test ! -e "$T/status/$E_pid.calls"
check "the counts go with the process" test $? -eq 0

# -- another interposer after the preload: RTLD_NEXT is its own, lookups before our constructor
LD_PRELOAD=$(readlink -f "$LIBCUDANAP"):$NEXTER NEXTER_DRIVER=$FAKECUDA start N "$TARGET"
ask N "drv nexter"
like "$REPLY" "^nexter libc.so.6 libcudanap.so cuStreamQuery 0 [0-9]+$" \
	"its dlsym(RTLD_NEXT) finds libc's getppid; its constructor's look-up got the gate's entry point"
ask N "drv fn default cuNexterProbe"
is "$REPLY" "fn libnexter.so cuNexterProbe" "a cu name outside the driver comes back bare"
ask N quit

is "$(entered)" 0 "no call entered the driver while any process was suspended"

# -- calibration: a call past cudanap (the fake's own pointer) while checkpointed is caught
start R "$TARGET"
ask R "drv poll raw 5"
"$CUDANAP" suspend "$R_pid" > /dev/null
eventually 20 has "$T/fake/events" "entered cuStreamQuery $R_pid checkpointed"
check "a call that bypasses the gate is seen by the fake driver, which then dies as JAX did" \
	test $? -eq 0
eventually 20 bash -c "! kill -0 $R_pid 2> /dev/null"

ask A quit
finish
