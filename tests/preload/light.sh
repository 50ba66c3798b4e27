#!/usr/bin/env bash
# Light naps ([nap] depth), with the fake driver: what cudanap owns (every allocation of 2 MiB or
# more where light naps are allowed, on one GPU too) is copied into pinned host memory and given
# back, the context and the driver's own small allocations kept; the next call that needs the GPU
# puts it back at the same addresses, intact, with the access it had (another GPU's too). auto
# deepens a light nap to the driver's checkpoint after [nap] full_after_s, a suspend signal does
# at once, and either wakes whole. Without room on its GPU the wake waits and says so (a resume
# fails in one line, the process still napping); without the host memory for the copy the nap is
# refused and the process runs on, its memory untouched; a copy out that fails puts everything
# back, one back that fails is tried again; two wakes at once each put back their own; making room
# for a light nap's wake naps lightly, the copy out beside the copy in, one that does not nap
# replaced by the next; a napping process that exits is not woken for its libraries' teardown (a
# destructor's work wakes it), nor napped while it exits. [nap] keep_host_copy keeps the pinned
# host copy after the wake for the next nap while the host keeps the margin and a quarter of its
# memory free, never in a forked child.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
export CUDANAP_FAKE_GPU_MIB=4000 # memory counted: what is freed shows
mkdir "$T/fake"
pinned_mib() { echo $(($(cat "$T/fake/$1.pinned" 2> /dev/null || echo 0) >> 20)); }
owned_of() { field "$1" peer | grep -o 'owned: [^(;]*'; }
# words NAME: the words the target wrote, read back through its allocation (A) and its range (V)
words() {
	local got= w
	for w in "A 0" "A 300" "A 599" "V 100"; do
		ask "$1" "drv vmm word $w"
		got+="${REPLY#vmm word 0 } "
	done
	echo "${got% }"
}
# fill NAME: 600 MiB by cuMemAlloc and a range of 300 MiB as XLA makes its pool's (both owned),
# 1 MiB by cuMemAlloc (the driver's own), words written into both, GPU 1 given access to both
fill() {
	ask "$1" "drv vmm use 0"
	ask "$1" "drv alloc export 1"
	ask "$1" "drv vmm make 300"
	ask "$1" "drv vmm word V 100 42"
	ask "$1" "drv vmm share 1"
	ask "$1" "drv alloc export 600"
	local off
	for off in 0 300 599; do ask "$1" "drv vmm word A $off $((off + 7))"; done
	ask "$1" "drv peer export on 1 0"
}
# started NAME: a target started and filled; its pid in $pid, what it holds on its GPU in $before
started() {
	start "$1" "$TARGET"
	eval "pid=\$${1}_pid"
	fill "$1"
	before=$(held "$pid")
}

# -- depth = light: the owned memory on the host, the rest kept
write_ini "[nap]" "keep_host_copy = false" "depth = light" "[log]" "level = info"
start A "$TARGET"
pid=$A_pid
fill A
"$CUDANAP" status "$pid" > /dev/null
like "$(owned_of "$pid")" "^owned: 900 MiB in 5 pieces" "light naps allowed: 600 MiB of cuMemAlloc's and a handle of 300 MiB owned, 1 MiB left to the driver"
before=$(held "$pid")
cli2 nap "$pid"
is "$rc" 0 "napped ($out)"
check "its status: napping, lightly" eventually 10 light_napped "$pid"
like "$(field "$pid" light_mib)" "^900(\.0+)?$" "900 MiB on the host"
is "$(held "$pid")" $((before - 900)) "the GPU has the owned 900 MiB back; the context and the 1 MiB stay"
is "$(pinned_mib "$pid")" 900 "the host copy pinned"
cli2 status "$pid"
like "$out" $'\n'"$pid +napping" "cudanap status: napping"
log_like "$T/A.err" "napped lightly \(cudanap nap\): 900 MiB it owns moved to the host" "its log says so"
like "$("$CUDANAP" metrics -c "$T/job.ini")" $'\n'"cudanap_light_host_bytes\\{pid=\"$pid\",[^}]*\\} 943718400"$'\n' \
	"cudanap metrics: 900 MiB on the host by a light nap"
ask A "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it and works"
check "woken" woke "$pid"
is "$(words A)" "7 307 606 42" "every word back at the same addresses"
is "$(held "$pid")" "$before" "its memory back on the GPU"
is "$(pinned_mib "$pid")" 0 "the host copy let go"
ask A "drv vmm touch A 1 300"
is "$REPLY" "vmm touch 0" "GPU 1 reaches the allocation again"
ask A "drv vmm touch V 1 100"
is "$REPLY" "vmm touch 0" "and the range"
like "$(field "$pid" message)" "^woken: 900 MiB back from the host" "the wake's line"

# a copy out that fails: everything put back, the process runs on
touch "$T/fake/$pid.failcopyout"
cli2 nap "$pid"
like "$rc:$out" "^1:$pid: nap failed: REFUSED: light nap: copying its memory to the host: [^;]*\(999\); the process keeps running" \
	"a copy out that fails: the nap fails in one line"
ask A "drv launch export 5" 10
is "$REPLY" "launch 0" "it runs on"
is "$(words A)" "7 307 606 42" "its memory as it was"
is "$(held "$pid")" "$before" "all of it on the GPU"

# ... and one that fails at its third copy, once the first two pieces (a copy each: 256 MiB, where
# the host copy's chunks are) were given back beside the copies: those put back too
echo 2 > "$T/fake/$pid.failcopyout"
: > "$T/fake/$pid.trace"
cli2 nap "$pid"
like "$rc:$out" "^1:$pid: nap failed: REFUSED: light nap: copying its memory to the host: [^;]*\(999\); the process keeps running" \
	"a copy out that fails at the third copy: the nap fails in one line"
got=$(awk '{ print $1 }' "$T/fake/$pid.trace" | sort | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
rm -f "$T/fake/$pid.trace"
is "$got" "copyout x2, unmapped x2" "the two pieces copied before it were given back"
ask A "drv launch export 5" 10
is "$REPLY" "launch 0" "it runs on"
is "$(words A)" "7 307 606 42" "its memory as it was"
is "$(held "$pid")" "$before" "all of it on the GPU"

# a copy back that fails: said, tried again a second later (what was mapped is copied again, not
# made anew), and the waiting call answers
cli2 nap "$pid"
check "napped lightly" eventually 10 light_napped "$pid"
touch "$T/fake/$pid.failcopy"
ask A "drv launch export 5" 10
is "$REPLY" "launch 0" "a copy back that fails once: the call waits for the next try, then answers"
log_like "$T/A.err" "copying its memory back to the GPU: [^;]*\(999\)" "the failure said in the log"
is "$(words A)" "7 307 606 42" "every word back"
is "$(held "$pid")" "$before" "all of it on the GPU, nothing twice"

# cudanap resume wakes it too; a second nap asked while it naps says so
cli2 nap "$pid"
check "napped again" eventually 10 light_napped "$pid"
cli2 nap "$pid"
like "$rc:$out" "^0:$pid: already" "a nap of a napping process: asleep already"
cli2 resume "$pid"
is "$rc" 0 "cudanap resume wakes it ($out)"
check "running" woke "$pid"
is "$(words A)" "7 307 606 42" "intact"

# a suspend signal deepens it: the driver's checkpoint takes the rest, the resume brings all back
cli2 nap "$pid"
check "napped lightly" eventually 10 light_napped "$pid"
cli2 suspend "$pid"
is "$rc" 0 "suspended from the light nap ($out)"
is "$(field "$pid" nap_depth)" full "deepened to the driver's checkpoint"
is "$(pinned_mib "$pid")" 0 "the host copy unpinned for the checkpoint"
cli2 resume "$pid"
is "$rc" 0 "resumed ($out)"
is "$(words A)" "7 307 606 42" "restored and put back: every word"
is "$(held "$pid")" "$before" "all of it on the GPU"
ask A quit
wait "$pid" 2> /dev/null
rm -f "$T/fake/$pid".* # the fake counts a process's memory on its GPU while its files stay

# -- depth = auto, naps on (an idle nap an hour away): light first, the driver's checkpoint after
# full_after_s
write_ini "[nap]" "keep_host_copy = false" "depth = auto" "idle_s = 3600" "full_after_s = 2" "[log]" "level = info"
started B
cli2 nap "$pid"
check "auto: napped lightly first" eventually 10 light_napped "$pid"
is_field "$pid" nap_depth full "deepened after full_after_s (2 s)"
is "$(pinned_mib "$pid")" 0 "its host copy unpinned for the checkpoint"
log_like "$T/B.err" "its light nap deepened after 2 s" "the log says it"
ask B "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it"
check "woken" woke "$pid"
is "$(words B)" "7 307 606 42" "every word back"
is "$(held "$pid")" "$before" "its memory back"

# -- no room on its GPU: the wake waits, says so, and goes on once there is room (4000 MiB: its
# context's 1000 and 1 MiB, another process's 1000 and 1500 leave 499)
write_ini "[nap]" "keep_host_copy = false" "depth = light" "[log]" "level = info"
cli2 nap "$pid"
check "napped lightly" eventually 10 light_napped "$pid"
start C "$TARGET"
ask C "drv vmm use 0"
ask C "drv alloc export 1500"
is "$REPLY" "alloc 0" "another process takes the GPU's room"
ask B "drv launch export 5" 1
is "$REPLY" "" "the call that wakes it waits"
check "its status says what the wake waits for" eventually 10 nap_is "$pid" "waiting for room"
like "$(field "$pid" nap_why)" "no room on GPU 0 for its [0-9]+ MiB still on the host" "in one line"
cli2 resume "$pid"
like "$rc:$out" "^1:$pid: resume failed: NO_GPU_MEMORY: no room on GPU 0 for its [0-9]+ MiB still on the host \(state napping\)" \
	"cudanap resume without room: fails in one line, still napping"
ask C "drv free export"
is "$REPLY" "free 0" "the other process frees its 1500 MiB"
answer B 30
is "$REPLY" "launch 0" "the room freed: it wakes and the call answers"
check "running" woke "$pid"
is "$(words B)" "7 307 606 42" "intact"
ask C quit
ask B quit
wait "$pid" "$C_pid" 2> /dev/null
rm -f "$T/fake/$pid".* "$T/fake/$C_pid".*

# -- two wakes at once: each puts its own memory back
write_ini "[nap]" "keep_host_copy = false" "depth = light" "[log]" "level = info"
start G "$TARGET"
start H "$TARGET"
fill G
fill H
for p in "$G_pid" "$H_pid"; do
	cli2 nap "$p"
	check "napped lightly ($p)" eventually 10 light_napped "$p"
done
echo "drv launch export 5" >&"$G_in"
echo "drv launch export 5" >&"$H_in"
answer G 30
g=$REPLY
answer H 30
is "$g:$REPLY" "launch 0:launch 0" "both woken by their calls at once"
is "$(words G):$(words H)" "7 307 606 42:7 307 606 42" "each with its own memory"
for p in G H; do ask $p quit; done
wait "$G_pid" "$H_pid" 2> /dev/null
rm -f "$T/fake/$G_pid".* "$T/fake/$H_pid".*

# -- make_room with light naps: the process napped for a wake copies out while the wake copies in
# (one GPU of 4000 MiB: P's context while it naps, Q's 1600 and 1000 more leave 400 of the 600 P
# needs)
export CUDANAP_FAKE_GPUS=1
write_ini "[nap]" "keep_host_copy = false" "depth = light" "make_room = true" "min_idle_s = 1" "[restore]" "margin_mib = 0" \
	"[log]" "level = info"
fill1() { # fill1 NAME: 600 MiB by cuMemAlloc, owned, words written
	local off
	ask "$1" "drv vmm use 0"
	ask "$1" "drv alloc export 600"
	for off in 0 300 599; do ask "$1" "drv vmm word A $off $((off + 7))"; done
}
words1() { # words1 NAME: fill1's words read back
	local got= off
	for off in 0 300 599; do
		ask "$1" "drv vmm word A $off"
		got+="${REPLY#vmm word 0 } "
	done
	echo "${got% }"
}
start P "$TARGET"
start Q "$TARGET"
fill1 P
fill1 Q
cli2 nap "$P_pid"
check "P napped lightly" eventually 10 light_napped "$P_pid"
ask Q "drv alloc export 1000"
is "$REPLY" "alloc 0" "Q takes the room P gave back"
for off in 0 300 599; do ask Q "drv vmm word A $off $((off + 7))"; done # A: its 1000 MiB now
idle_q() { [ -n "$(field "$Q_pid" idle_since)" ] && [ "$(field "$Q_pid" light_able_mib)" = 1600.000 ]; }
check "Q's status says what its light nap would give back" eventually 10 idle_q
sleep 1.2 # Q idle for min_idle_s
ask P "drv launch export 5" 30
is "$REPLY" "launch 0" "P's call wakes it: room made by napping Q"
check "P woken" woke "$P_pid"
is "$(words1 P)" "7 307 606" "P's memory back, intact"
check "Q napped lightly for it" eventually 10 light_napped "$Q_pid"
is "$(field "$Q_pid" nap_for_pid)" "$P_pid" "Q's status: for P"
log_like "$T/P.err" "made room on GPU 0 for [0-9]+ MiB \(its wake\): napped $Q_pid \(1600 MiB, idle [0-9]+ s\) in [0-9.]+ s, lightly, as it copied in" \
	"P's log: Q napped lightly while P copied in"
is "$(field "$P_pid" rooms_made)" 1 "P's status: room made once"
sleep 1.2 # P idle for min_idle_s
ask Q "drv launch export 5" 30
is "$REPLY" "launch 0" "Q's call wakes it, napping P in turn"
is "$(words1 Q)" "7 307 606" "Q's memory back, intact"
check "P napped lightly for Q" eventually 10 light_napped "$P_pid"
for p in P Q; do ask $p quit; done
wait "$P_pid" "$Q_pid" 2> /dev/null
rm -f "$T/fake/$P_pid".* "$T/fake/$Q_pid".*
export CUDANAP_FAKE_GPUS=2

# -- make_room with light naps, one asked that does not nap (its copy out fails): the next idle
# process is asked instead while the wake copies in (one GPU of 5000 MiB: three contexts of 1000
# and 600 owned each, Q's 400 more leave 400 of the 600 P needs)
export CUDANAP_FAKE_GPUS=1 CUDANAP_FAKE_GPU_MIB=5000
start P "$TARGET"
start Q "$TARGET"
start R "$TARGET"
fill1 P
fill1 Q
cli2 nap "$P_pid"
check "P napped lightly" eventually 10 light_napped "$P_pid"
ask Q "drv alloc export 400"
is "$REPLY" "alloc 0" "Q takes 400 MiB of what P gave back"
# Q seen idle before R works: its idle_since (a tick's look) then comes before R's under load too
q_idle() { [ -n "$(field "$Q_pid" idle_since)" ]; }
check "Q idle" eventually 10 q_idle
fill1 R # R worked last: Q, idle the longest, is asked first
idle_qr() { [ -n "$(field "$Q_pid" idle_since)" ] && [ -n "$(field "$R_pid" idle_since)" ]; }
check "Q and R idle" eventually 10 idle_qr
sleep 1.2 # both idle for min_idle_s
touch "$T/fake/$Q_pid.failcopyout"
ask P "drv launch export 5" 30
is "$REPLY" "launch 0" "P's call wakes it"
check "P woken" woke "$P_pid"
is "$(words1 P)" "7 307 606" "P's memory back, intact"
check "R napped lightly for it, asked instead of Q" eventually 10 light_napped "$R_pid"
is "$(field "$R_pid" nap_for_pid)" "$P_pid" "R's status: for P"
is "$(field "$Q_pid" state)" running "Q, whose copy out failed, runs on"
log_like "$T/P.err" "made room on GPU 0 for [0-9]+ MiB \(its wake\): napped $Q_pid did not nap, $R_pid \(600 MiB, idle [0-9]+ s\) in [0-9.]+ s, lightly, as it copied in" \
	"P's log: one making of room, Q did not nap, R did in its place"
for p in P Q R; do ask $p quit; done
wait "$P_pid" "$Q_pid" "$R_pid" 2> /dev/null
rm -f "$T/fake/$P_pid".* "$T/fake/$Q_pid".* "$T/fake/$R_pid".*
export CUDANAP_FAKE_GPUS=2 CUDANAP_FAKE_GPU_MIB=4000

# -- a napping process that exits: its libraries' teardown (a free, made by an exit handler) is
# answered CUDA_ERROR_DEINITIALIZED (4) as by a driver shutting down, without a wake; a call that
# works the GPU (a destructor's) still wakes it and runs
# exit_napping DEPTH CALL: X, whose exit handler makes the drv CALL, napped and told to quit, until
# it is gone; the handler's answer in $got, X's log in $log, the MiB it left pinned in $left (a
# light nap's host copy stays pinned until its wake puts it back)
exit_napping() {
	write_ini "[nap]" "keep_host_copy = false" "depth = $1" "[log]" "level = info"
	TARGET_TEARDOWN=$T/teardown TARGET_TEARDOWN_CALL=$2 start X "$TARGET"
	fill X
	cli2 nap "$X_pid"
	check "$1: napped" napped "$X_pid"
	echo quit >&"$X_in"
	check "$1: the napping process exits" eventually 10 gone "$X_pid"
	got=$(cat "$T/teardown" 2> /dev/null)
	log=$(cat "$T/X.err")
	left=$(pinned_mib "$X_pid")
	wait "$X_pid" 2> /dev/null
	rm -f "$T/teardown" "$T/X.err" "$T/fake/$X_pid".*
}
for depth in light full; do
	exit_napping "$depth" "free export"
	is "$got" "free 4" "$depth: its teardown's free answered without the GPU"
	unlike "$log" "woke|waits for the GPU" "$depth: never woken"
	[ "$depth" = full ] || is "$left" 900 "light: its host copy still held at its end, never put back"
done
exit_napping light "launch export 1"
is "$got" "launch 0" "a launch in its exit handler wakes it and runs"
is "$left" 0 "its host copy put back for it (the wake's log line may come after the exit)"
# ... and one asked to nap while it exits says so
write_ini "[nap]" "keep_host_copy = false" "depth = light" "[log]" "level = info"
TARGET_TEARDOWN=$T/teardown TARGET_TEARDOWN_MS=3000 start X "$TARGET"
fill X
echo quit >&"$X_in"
sleep 0.5 # in its exit handlers
cli2 nap "$X_pid"
like "$rc:$out" "^1:$X_pid: nap failed: REFUSED: not napped: it is exiting" "a nap asked while it exits: refused in one line"
check "it exits" eventually 10 gone "$X_pid"
is "$(cat "$T/teardown" 2> /dev/null)" "free 0" "its teardown's free, awake, went to the driver"
wait "$X_pid" 2> /dev/null
rm -f "$T/teardown" "$T/fake/$X_pid".*

# -- [nap] keep_host_copy: the wake keeps its host copy pinned, the next nap copies into it; a
# larger footprint gets a new one, a full nap lets it go
write_ini "[nap]" "depth = light" "keep_host_copy = true" "[log]" "level = info"
started K
cli2 nap "$pid"
check "keep_host_copy: napped lightly ($out)" eventually 10 light_napped "$pid"
ask K "drv launch export 5" 30
check "woken by its next call" woke "$pid"
is "$(words K)" "7 307 606 42" "every word back"
is "$(pinned_mib "$pid")" 900 "the host copy kept, pinned, after the wake"
like "$(field "$pid" message)" "^woken: 900 MiB back from the host .*; its host copy kept for the next nap" "the wake's line says so"
like "$(field "$pid" host_kept_mib)" "^900(\.0+)?$" "the status says what it keeps"
like "$("$CUDANAP" metrics -c "$T/job.ini")" $'\n'"cudanap_host_kept_bytes\\{pid=\"$pid\",[^}]*\\} 943718400"$'\n' \
	"cudanap metrics: 900 MiB kept"
ask K "drv vmm word A 0 11"
# the copies out issued while the pieces are given back beside them: with each release slowed to
# 300 ms, every piece's copy is issued before the first release ends (into the kept copy there is
# no chunk to wait for; one thread doing both would issue two more at most)
echo 300 > "$T/fake/$pid.slowunmap"
: > "$T/fake/$pid.trace"
cli2 nap "$pid"
check "napped again ($out)" eventually 10 light_napped "$pid"
log_like "$T/K.err" "light nap: 900 MiB in 5 pieces to the host copy made ready before it in [0-9.]+ ms: .*waiting for 0 threads" \
	"into the kept copy, no fault threads"
rm -f "$T/fake/$pid.slowunmap"
order=$(awk '{ print $1 }' "$T/fake/$pid.trace" | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
like "$order" "^copyout x[5-9], unmapped x5$" "every copy out issued before the first release ended ($order)"
rm -f "$T/fake/$pid.trace"
is "$(pinned_mib "$pid")" 900 "no more host memory pinned"
ask K "drv launch export 5" 30
check "woken" woke "$pid"
is "$(words K)" "11 307 606 42" "the word written between the naps is what came back"
ask K "drv alloc export 100" # the target's A is this one from now on
ask K "drv vmm word A 99 5"
cli2 nap "$pid"
check "a nap of 1000 MiB ($out)" eventually 10 light_napped "$pid"
like "$(grep "light nap: 1000 MiB" "$T/K.err")" "to the host in" "the kept 900 MiB too small: a new copy"
is "$(pinned_mib "$pid")" 1000 "the old copy let go, the new one pinned"
ask K "drv launch export 5" 30
check "woken" woke "$pid"
like "$(words K)" " 42$" "the range's word back"
ask K "drv vmm word A 99"
is "$REPLY" "vmm word 0 5" "the new allocation's too"
no_pin() { [ "$(pinned_mib "$1")" = 0 ]; }
write_ini "[nap]" "depth = light" "keep_host_copy = true" "[preflight]" "host_margin_mib = 16000000" "[log]" "level = info"
cli2 nap "$pid" # the INI read again
like "$rc:$out" "^1:$pid: nap failed: NO_HOST_MEMORY" "a nap then: refused, the host has too little memory for the copy and the margin"
check "the host without the margin free: the kept copy let go" eventually 10 no_pin "$pid"
log_like "$T/K.err" "let go of its ready host copy \(1000 MiB\): the host has less than \[preflight\] host_margin_mib \(16000000 MiB\) free" "the log says so"
check "the status says none is kept" eventually 10 fields_are "$pid" host_kept_mib 0.000
write_ini "[nap]" "depth = light" "keep_host_copy = true" "[log]" "level = info"
cli2 nap "$pid"
check "napped lightly again ($out)" eventually 10 light_napped "$pid"
# wake_lets_go WHAT: K woken by its next call lets its copy go itself (the once-a-second trim,
# which logs its let-go, did not); kept_again WHAT: napped and woken with keep_host_copy on, it keeps
wake_lets_go() {
	ask K "drv launch export 5" 30
	check "woken" woke "$pid"
	check "$1" eventually 10 no_pin "$pid"
	is "$(grep -c "let go of its ready host copy" "$T/K.err")" 1 "by the wake itself, not the trim"
}
kept_again() {
	write_ini "[nap]" "depth = light" "keep_host_copy = true" "[log]" "level = info"
	cli2 nap "$pid"
	ask K "drv launch export 5" 30
	check "$1" eventually 10 fields_are "$pid" host_kept_mib 1000.000
}
write_ini "[nap]" "depth = light" "keep_host_copy = true" "[preflight]" "host_margin_mib = 16000000" "[log]" "level = info"
wake_lets_go "a wake without the margin free lets its copy go"
kept_again "napped and woken: its copy kept"
vm_kb() { awk '/^VmSize/ { print $2 }' "/proc/$1/status"; }
if [ -z "${CN_SANITIZER_RUNTIME:-}" ]; then # ASan's shadow maps its own share of both
	ask K fork
	child=${REPLY#child }
	like "$REPLY" "^child [0-9]+$" "it forks while it keeps its copy"
	is "$(($(vm_kb "$pid") - $(vm_kb "$child") >= 1000 * 1024))" 1 \
		"the kept copy is not in the child (MADV_DONTFORK): the child maps 1000 MiB less"
	kill "$child" 2> /dev/null
fi
write_ini "[nap]" "keep_host_copy = false" "depth = light" "[log]" "level = info"
cli2 nap "$pid"
check "keep_host_copy off: napped, into the copy it kept ($out)" eventually 10 light_napped "$pid"
wake_lets_go "the wake let its copy go"
kept_again "keep_host_copy on again: napped and woken, its copy kept"
cli2 suspend "$pid"
is "$rc" 0 "a suspend ($out)"
is "$(pinned_mib "$pid")" 0 "the driver's checkpoint: the kept copy let go before it"
check "none kept now" eventually 10 fields_are "$pid" host_kept_mib 0.000
cli2 resume "$pid"
is "$rc" 0 "resumed ($out)"
ask K "drv vmm word A 99"
is "$REPLY" "vmm word 0 5" "every word back"
ask K quit
wait "$pid" 2> /dev/null
# ... and a wake does not wait for its copy to be let go: the call goes on first
write_ini "[nap]" "keep_host_copy = false" "depth = light" "[log]" "level = info"
FAKE_UNPIN_MS=500 started W
cli2 nap "$pid"
check "unpinning slowly (half a second a chunk): napped lightly ($out)" eventually 10 light_napped "$pid"
ask W "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it and runs"
is "$(($(pinned_mib "$pid") > 0))" 1 "the call answered before its host copy was let go"
check "then the copy let go" eventually 15 no_pin "$pid"
is "$(words W)" "7 307 606 42" "every word back"
# one that quits right after its wake: its exit waits for the copy's letting go, or stops it
cli2 nap "$pid"
check "napped lightly again ($out)" eventually 10 light_napped "$pid"
ask W "drv launch export 5" 30
is "$REPLY" "launch 0" "woken by its next call"
echo quit >&"$W_in"
check "it quits at once, its copy being let go" eventually 15 gone "$pid"
wait "$pid"
is "$?" 0 "its exit is clean"
unlike "$(cat "$T/W.err")" "entered while|abort|Segmentation" "no driver call after its teardown"
rm -f "$T/fake/$pid".* # what it held on the fake GPU
# ... and its copy is let go in the pauses of the app's GPU work: an unpin holds the driver's lock
# the app's calls need (the fake's too, with FAKE_UNPIN_MS), which the unpinning thread takes back
# first, so unpins one after another would hold a call up for all of them; an app launching
# without pause gets its calls in between each two unpins (the agent thread's let-go at once
# before this change: the four unpins back to back)
FAKE_UNPIN_MS=200 started P
cli2 nap "$pid"
check "napped lightly ($out)" eventually 10 light_napped "$pid"
: > "$T/fake/$pid.trace"
ask P "drv busy export 6000"
is "$REPLY" "busy ok" "a thread launching 1 ms kernels without pause"
check "its first launch woke it" woke "$pid"
check "its copy let go beside the launches" eventually 20 no_pin "$pid"
log_like "$T/P.err" "let go of its host copy \(900 MiB\) in [0-9]+ ms beside the app's calls \([0-9]+ ms of it giving way to them\)" \
	"the log says so"
unpins=$(grep -c '^unpinned' "$T/fake/$pid.trace")
back_to_back=$(awk '$1 == "unpinned" && prev == "unpinned" { n++ } { prev = $1 } END { print n + 0 }' "$T/fake/$pid.trace")
is "$unpins:$back_to_back" "4:0" "its four chunks unpinned, a launch between each two ($(awk '{ print $1 }' "$T/fake/$pid.trace" | uniq -c | tr -s ' \n' ' '))"
rm -f "$T/fake/$pid.trace"
busied() { ask P "drv busied"; [[ $REPLY =~ ^busied\ [0-9]+\ 0$ ]]; }
check "the launches ended, none failed" eventually 15 busied
is "$(words P)" "7 307 606 42" "every word back"
ask P quit
wait "$pid"
is "$?" 0 "its exit is clean"
rm -f "$T/fake/$pid".*
# ... while it is let go, what is still pinned counts as its copy (its status, the next nap's host
# check), and a nap that comes meanwhile waits for the old copy to be gone before it pins its new
# one: never both pinned at once (unpins of 500 ms: two seconds to let 900 MiB go)
FAKE_UNPIN_MS=500 started Q
cli2 nap "$pid"
check "napped lightly ($out)" eventually 10 light_napped "$pid"
ask Q "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it"
check "its copy being let go is still its held copy in its status" eventually 2 fields_are "$pid" host_kept_mib 900.000
is "$(($(pinned_mib "$pid") > 0))" 1 "... while it is still pinned"
cli2 nap "$pid"
check "napped again meanwhile ($out)" eventually 10 light_napped "$pid"
is "$(($(cat "$T/fake/$pid.pinnedpeak") >> 20))" 900 "never more than one copy pinned at once (900 MiB)"
ask Q "drv launch export 5" 30
is "$REPLY" "launch 0" "woken again"
log_like "$T/Q.err" "let go of its host copy \(900 MiB\) in [0-9]+ ms beside the app's calls" \
	"the copy the nap waited for, said once awake"
is "$(words Q)" "7 307 606 42" "every word back"
check "its copy let go again, said in its status" eventually 15 fields_are "$pid" host_kept_mib 0.000
ask Q quit
wait "$pid"
is "$?" 0 "its exit is clean"
rm -f "$T/fake/$pid".*
# ... and the app resetting its GPU's primary context, the one its copy was pinned through, while
# the copy is being let go: the rest is let go first, at once, then the reset goes on
FAKE_UNPIN_MS=500 started R
cli2 nap "$pid"
check "napped lightly ($out)" eventually 10 light_napped "$pid"
ask R "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it"
: > "$T/fake/$pid.trace"
check "its copy being let go" eventually 2 fields_are "$pid" host_kept_mib 900.000
ask R "drv call export cuDevicePrimaryCtxReset" 30
is "$REPLY" "call 0" "the app resets GPU 0's primary context"
is "$(pinned_mib "$pid")" 0 "by then every chunk of its copy let go"
order=$(awk '{ print $1 }' "$T/fake/$pid.trace" | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
like "$order" "^(unpinned x[1-4], )?(unmapped x[0-9]+, )?reset x1$" \
	"the unpins before the reset (and the owned memory's unmapping), none after ($order)"
rm -f "$T/fake/$pid.trace"
ask R quit
wait "$pid"
is "$?" 0 "its exit is clean"
unlike "$(cat "$T/R.err")" "entered while|abort|Segmentation" "no driver call after its teardown"
rm -f "$T/fake/$pid".*

# -- the host lacks room for the copy: refused, nothing moved
write_ini "[nap]" "keep_host_copy = false" "depth = light" "[preflight]" "host_margin_mib = 16000000"
started D
cli2 nap "$pid"
like "$rc:$out" "^1:$pid: nap failed: NO_HOST_MEMORY: its light nap copies 900 MiB, but the host copy can have only [0-9]+ MiB \(.*\) less the 16000000 MiB margin \(\[preflight\] host_margin_mib\); the process keeps running" \
	"a nap whose copy the host cannot hold: refused in one line, by the copy's size (what it owns, not its footprint with the context)"
is "$(held "$pid")" "$before" "nothing moved"
ask D "drv launch export 5" 10
is "$REPLY" "launch 0" "it runs on"
is "$(words D)" "7 307 606 42" "its memory untouched"
ask D quit
wait "$pid" 2> /dev/null

# -- the default depth (auto) with naps off: cudanap owns nothing of it, the driver's checkpoint;
# a bad value is one line
write_ini "[log]" "level = info"
start E "$TARGET"
pid=$E_pid
ask E "drv vmm use 0"
ask E "drv alloc export 100"
cli2 nap "$pid"
is "$rc" 0 "the default: napped ($out)"
is_field "$pid" nap_depth:depth_why "full:naps off" "by the driver's checkpoint: its naps are off ([nap] idle_s, make_room)"
ask E quit
wait "$pid" 2> /dev/null
printf '[nap]\ndepth = deep\n' > "$T/bad.ini"
cli2 check-config "$T/bad.ini"
is "$rc:$out" "78:cudanap: $T/bad.ini:2: nap.depth: 'deep' is not full, light or auto" "check-config: a bad depth, in one line"
finish
