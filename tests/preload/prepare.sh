#!/usr/bin/env bash
# cudanap prepare with the fake driver making its host copy inside the target as the real one does
# (CUDANAP_FAKE_COPY_MIB): the copy faulted in ahead and shown in the status, used by the next
# suspend (every byte back), given back unused after [performance] prepare_s, refused by the host
# memory check before anything is mapped, credited to the suspend's own check; the queued signal
# never reaching the app's handler, [signals] prepare, and the cases with nothing to prepare.
. "$(dirname "$0")/../lib.sh"
copy=256 # MiB the "GPU" holds; the driver's copy is 1.0625 x that
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake \
	CUDANAP_FAKE_COPY_MIB=$copy CUDANAP_FAKE_FOOTPRINT_MIB=$copy
mkdir "$T/fake"
mkdir -m 700 "$T/hib"

rss_mib() { awk '/^VmRSS/ { print int($2 / 1024) }' "/proc/$1/status"; }
avail_mib() { awk '/^MemAvailable/ { print int($2 / 1024) }' /proc/meminfo; }
log_has() { grep -c -- "$1" "$T/job.log"; }

write_ini "[log]" "level = debug" "target = $T/job.log"
start A "$TARGET"
pid=$A_pid
ask A "handler sigaction"
base=$(rss_mib "$pid")

# -- prepare, then a suspend that only copies
cli prepare "$pid"
like "$rc:$out" "^0:$pid: prepared: 2[78][0-9] MiB of host memory held for 60 s in [0-9.]+ m?s$" \
	"cudanap prepare: one line with the memory and the time it is held"
is "$(field "$pid" prepared):$(field "$pid" state):$(field "$pid" action)" "true:running:prepare" \
	"status: prepared, still running"
like "$(field "$pid" host_mib):$(field "$pid" prepare_ms)" "^2[78][0-9](\.[0-9]+)?:[0-9.]+$" \
	"status: the host memory it holds and the time it took"
grown=$(( $(rss_mib "$pid") - base ))
check "the copy is faulted in: RSS +$grown MiB" test "$grown" -ge "$copy"
like "$("$CUDANAP" status "$pid")" "(^|
)$pid +running\+prep .* 2[78][0-9] " "cudanap status: running+prep with the host MiB"
ask A count
is "$REPLY" "count 0 0" "the queued signal never reached the app's own handler"
ask A verify
is "$REPLY" "verify ok" "the process ran on"

cli suspend "$pid"
is "$rc" 0 "the suspend after it"
is "$(log_has 'kept or prepared')" 1 "the driver's copy went into the prepared buffer"
is "$(field "$pid" prepared)" false "the prepared state ends with the suspend"
ask A count
is "$REPLY" "count 1 0" "the suspend's own signal still reaches the app's handler"
cli prepare "$pid"
is "$rc:$out" "0:$pid: already suspended: nothing to prepare" "prepare while suspended: nothing to do"
"$CUDANAP" resume "$pid" > /dev/null
ask A verify
is "$REPLY" "verify ok" "every byte back (the fake driver checks the whole copy too)"
buffer_gone() { [ $(($(rss_mib "$pid") - base)) -lt $((copy / 2)) ]; } # given back after the calls go on
check "after the resume the buffer is gone (base $base MiB)" eventually 10 buffer_gone

# -- not used in time: given back
write_ini "[log]" "level = debug" "target = $T/job.log" "[performance]" "prepare_s = 1"
"$CUDANAP" prepare "$pid" > /dev/null
is "$(field "$pid" prepared)" true "prepared for 1 s"
given_back() { [ "$(field "$pid" prepared)" = false ]; }
eventually 20 given_back
is "$(field "$pid" prepared)" false "after prepare_s it is given back"
like "$(field "$pid" message)" "^prepared host copy \(2[78][0-9] MiB\) given back after 1 s without a suspend$" \
	"the status says so"
check "its memory is back: RSS $(rss_mib "$pid") MiB" test $(( $(rss_mib "$pid") - base )) -lt $((copy / 2))
"$CUDANAP" suspend "$pid" > /dev/null
is "$(log_has 'kept or prepared')" 1 "a suspend afterwards stages a copy of its own"
"$CUDANAP" resume "$pid" > /dev/null
ask A verify
is "$REPLY" "verify ok" "data intact"

# -- the host memory check: refused before anything is mapped
write_ini "[preflight]" "host_margin_mib = 16000000"
cli prepare "$pid"
like "$rc:$out" "^1:$pid: prepare failed: NO_HOST_MEMORY: the process holds 256 MiB on its GPUs, but the host copy can have only [0-9]+ MiB .*; nothing prepared \(state running\)$" \
	"too little host memory: refused in one line"
check "nothing mapped: RSS $(rss_mib "$pid") MiB" test $(( $(rss_mib "$pid") - base )) -lt $((copy / 2))

# -- the suspend's own check counts the prepared buffer as room already taken for the copy: a
# margin that leaves less than the copy free once it is prepared, but not less than nothing
write_ini
"$CUDANAP" prepare "$pid" > /dev/null
margin=$(( $(avail_mib) - copy + 100 ))
write_ini "[preflight]" "host_margin_mib = $margin"
cli suspend "$pid"
is "$rc" 0 "a prepared suspend passes the host check its own buffer would fail (margin $margin MiB)"
diag "$out"
"$CUDANAP" resume "$pid" > /dev/null
ask A verify
is "$REPLY" "verify ok" "data intact"

# -- nothing to prepare
write_ini "[performance]" "prepare_s = 0"
cli prepare "$pid"
like "$rc:$out" "^1:.*REFUSED: prepare is off \(\[performance\] prepare_s = 0\)" "prepare_s = 0 turns it off"
write_ini "[hibernate]" "dir = $T/hib"
cli prepare "$pid"
like "$rc:$out" "^1:.*REFUSED: the host copy goes to disk \(\[hibernate\] dir\): nothing to prepare in RAM" \
	"hibernating: nothing to prepare in RAM"

# -- [signals] prepare: a plain signal that prepares, for schedulers that can send only one
write_ini "[signals]" "prepare = SIGUSR1"
cli2 check-config "$T/job.ini"
like "$rc:$out" "^78:.*job.ini:2: signals.prepare: is the suspend or resume signal too" \
	"the suspend signal cannot prepare too"
ask A quit
wait "$pid"
write_ini "[signals]" "prepare = SIGRTMIN+4"
start B "$TARGET"
kill -s RTMIN+4 "$B_pid"
settle "$B_pid" 1
is "$(field "$B_pid" prepared):$(field "$B_pid" result)" true:ok "SIGRTMIN+4 prepares"
kill -USR1 "$B_pid"
settle "$B_pid" 2
is "$(field "$B_pid" state):$(field "$B_pid" prepared)" checkpointed:false "SIGUSR1 still suspends"
"$CUDANAP" resume "$B_pid" > /dev/null
ask B verify
is "$REPLY" "verify ok" "data intact"
ask B quit
finish
