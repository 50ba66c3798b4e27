#!/usr/bin/env bash
# [nap] make_room through the node pager (cudanap-pager, run here by the test's user), on the fake
# driver's GPU of 4000 MiB (each process holds 1000, and what it allocates; a GPU of its own for
# each part): an allocation the GPU cannot hold is made room for by the pager, which naps the
# idle process, and the call, tried again, succeeds; the napped one's status says for whom, the
# asker's what the pager did; the napped one's next call wakes it through the pager in turn;
# make_room = auto asks the pager where its socket is; no room: the call fails at once with the
# pager's one line, or, with when_full = wait, waits until a process is idle long enough; no
# pager, or the pager stopped: the programs make room among their own, saying so once, and use
# the pager again once it is back; cudanap pager status and metrics say what it did.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_GPU_MIB=4000
mkdir "$T/run"
me=$(id -un)
INI_EXTRA=("[nap]" "make_room = node" "min_idle_s = 1" "pager_socket = $T/run/pager.sock"
	"[restore]" "margin_mib = 0" "[log]" "level = info")
write_ini
gpu=0
fresh_gpu() { gpu=$((gpu + 1)); export CUDANAP_FAKE_DIR=$T/fake$gpu; mkdir "$CUDANAP_FAKE_DIR"; }
# policy [KEY=VALUE...]: the pager's [pager] section, these keys over the test's defaults
policy() {
	local -A k=([min_idle_s]=1 [margin_mib]=0 [log]=debug)
	local kv
	for kv in "$@"; do k[${kv%%=*}]=${kv#*=}; done
	{
		printf '[pager]\nsocket = %s\nstate = %s\n' "$T/run/pager.sock" "$T/run/pager.state"
		for kv in "${!k[@]}"; do printf '%s = %s\n' "$kv" "${k[$kv]}"; done
	} > "$T/pager.ini"
}
pager_pid=
pager_start() {
	"$PAGER" -c "$T/pager.ini" 2>> "$T/pager.log" &
	pager_pid=$!
	eventually 20 test -S "$T/run/pager.sock"
}
pager_stop() {
	[ -n "$pager_pid" ] && kill "$pager_pid" 2> /dev/null && wait "$pager_pid" 2> /dev/null
	pager_pid=
}
idle_for() { # idle_for PID S: idle S seconds at least, as its status says
	local since
	since=$(field "$1" idle_since)
	[ -n "$since" ] && [ $(($(date +%s%3N) - $(date -d "$since" +%s%3N))) -ge $(($2 * 1000)) ]
}
# holder NAME MIB: NAME started, holding 1000 + MIB MiB (what it allocates in its primary
# context: cudanap's own, which a light nap moves), then idle a second
holder() {
	start "$1" "$TARGET"
	ask "$1" "drv vmm use 0"
	ask "$1" "drv alloc export $2"
	[ "$REPLY" = "alloc 0" ] && eval "eventually 20 idle_for \$${1}_pid 1"
}
quit_all() { local p; for p in "$@"; do ask "$p" quit 10; rm -f "$T/$p.err"; done; }

# -- no pager: make_room = node makes room among the user's own, and says so once
fresh_gpu
check "A holds 2000 MiB, idle" holder A 1000
start B "$TARGET"
ask B "drv alloc export 1500" 60
is "$REPLY" "alloc 0" "no pager: B's allocation is made room for among the user's own"
check "A napped for it" napped "$A_pid" 10
log_like "$T/B.err" "the node pager cannot be asked \($T/run/pager.sock: No such file or directory\): room is made among this user's own programs" \
	"B's log says the pager is not there"
log_like "$T/B.err" "made room on GPU 0 for 1500 MiB \(cuMemAlloc_v2\): napped $A_pid" "and the room its own way"
quit_all A B

# -- the pager: B's allocation, then A's wake, each through it
fresh_gpu
policy
pager_start
check "A holds 2000 MiB, idle" holder A 1000
start B "$TARGET"
ask B "drv vmm use 0"
ask B "drv alloc export 1500" 60
is "$REPLY" "alloc 0" "B's allocation, refused by the driver, made room for by the pager"
check "A napped for it" napped "$A_pid" 10
like "$(field "$A_pid" nap_for_pid):$(field "$A_pid" nap_for_user)" "^$B_pid:$me$" \
	"A's status: napped for B, a process of $me's, by the node pager"
log_like "$T/A.err" "napped (lightly )?\(for $B_pid of $me, by the node pager, which needs 1500 MiB on GPU 0\)" \
	"A's log says for whom"
# the call may find the room before the pager's last word: that word is heard at the agent's ticks
b_room() { [[ $(field "$B_pid" room_last) == "made room on GPU 0 for 1500 MiB"* ]]; }
check "B's status says the room made once the pager's word came" eventually 10 b_room
like "$(field "$B_pid" room_last)" "^made room on GPU 0 for 1500 MiB \(cuMemAlloc_v2\) through the node pager: napped $A_pid \($me, 1000 MiB, idle [0-9]+ s, lightly\)" \
	"B's status: what the pager did for it (A napped lightly: its 1000 MiB moved, its context kept)"
log_like "$T/pager.log" "for $B_pid \($me, cuMemAlloc_v2, 1500 MiB on GPU 0\): napped $A_pid \($me, 1000 MiB, idle [0-9]+ s, lightly\) in [0-9.]+ s" \
	"the pager's log: its choice, in one line"
out=$("$CUDANAP" status --no-query -c "$T/job.ini" "$A_pid" "$B_pid")
like "$out" $'\n'"$A_pid: napped for $B_pid \($me's, by the node pager\): 1.5 GiB"$'\n' "cudanap status says for whom A napped"
like "$out" $'\n'"$B_pid: made room on GPU 0 for 1500 MiB \(cuMemAlloc_v2\) through the node pager: napped $A_pid" \
	"and what the pager did for B"
check "B idle for a second" eventually 20 idle_for "$B_pid" 1
ask A "drv launch export 5" 60
is "$REPLY" "launch 0" "A's next call wakes it, through the pager"
check "B napped for A's wake" napped "$B_pid" 10
log_like "$T/A.err" "made room on GPU 0 for [0-9]+ MiB \(its wake\) through the node pager: napped $B_pid \($me, [0-9]+ MiB, idle [0-9]+ s, lightly\) in [0-9.]+ s, lightly, as it copied in" \
	"A's light wake copied in as B's light nap gave its memory back (the pager said coming)"
grep -q "(its wake) through the node pager" "$T/A.err" || diag "the pager's log: $(tail -n 12 "$T/pager.log")"
ask A verify
is "$REPLY" "verify ok" "A's memory intact"
ask B "drv launch export 5" 60
ask B verify
is "$REPLY" "verify ok" "B, woken in turn, intact"
unlike "$(cat "$T/A.err" "$T/B.err")" "cannot be asked" "neither says the pager is missing"

# -- no room the pager can make: the call fails at once, in one line
start C "$TARGET"
ask C "drv alloc export 9000" 20
is "$REPLY" "alloc 2" "9000 MiB on a GPU of 4000: out of memory, as without make_room"
log_like "$T/C.err" "cuMemAlloc_v2: out of memory, and no room could be made \(the node pager: 9000 MiB is more than GPU 0 has \(4000 MiB\)\): the call fails as it would have" \
	"C's log has the pager's line"
like "$(field "$C_pid" room_last)" "^no room made for 9000 MiB \(cuMemAlloc_v2\) by the node pager: 9000 MiB is more than" \
	"and C's status"
quit_all A B C

# -- when_full = wait: a need waits until a process is idle long enough
pager_stop
fresh_gpu
policy
pager_start
policy min_idle_s=3 when_full=wait wait_s=30
kill -HUP "$pager_pid"
log_like "$T/pager.log" "the policy read again from $T/pager.ini" "SIGHUP: the pager reads its policy again"
check "A holds 2000 MiB, idle" holder A 1000
ask A "drv launch export 5" # it works again: idle 3 s only in 3 s
start C "$TARGET"
t0=$(date +%s%3N)
echo "drv alloc export 1500" >&"$C_in"
c_waits() { [[ $(field "$C_pid" room_last) == "cuMemAlloc_v2: the node pager waits for room"* ]]; }
check "while it waits, C's status says so (room_last)" eventually 10 c_waits
answer C 60
t=$(($(date +%s%3N) - t0))
is "$REPLY" "alloc 0" "C's allocation waits until A has been idle 3 s, then gets its room"
check "it waited a second or more ($t ms)" test "$t" -ge 1000
log_like "$T/C.err" "cuMemAlloc_v2: the node pager waits for room on that GPU, [0-9]+ s at most: .*worked less than \[pager\] min_idle_s \(3 s\) ago" \
	"C's log says it waits, and for what"
like "$(field "$C_pid" room_last)" "^made room on GPU 0 for 1500 MiB \(cuMemAlloc_v2\) through the node pager: napped $A_pid " \
	"then the room made"
eventually 5 grep -q "waits=[1-9]" "$T/run/pager.state"
like "$("$CUDANAP" pager status --state "$T/run/pager.state")" $'\n'"$me +[0-9]+ +[0-9]+ +[0-9]+ +1 +[0-9]+\.[0-9] " \
	"cudanap pager status counts the wait, and its time"
quit_all A C

# -- the pager stopped: the user's own make room, said once; back, it is used again
fresh_gpu
pager_stop
policy
check "A holds 2000 MiB, idle" holder A 1000
start B "$TARGET"
ask B "drv alloc export 1500" 60
is "$REPLY" "alloc 0" "the pager stopped: B's allocation made room for among the user's own"
like "$(grep -c 'the node pager cannot be asked' "$T/B.err")" "^1$" "B says the pager is gone, once"
pager_start
ask A "drv launch export 5" 60
is "$REPLY" "launch 0" "the pager back: A's wake"
log_like "$T/A.err" "made room on GPU 0 for [0-9]+ MiB \(its wake\) through the node pager" "is made room for by it"
quit_all A B

# -- the pager killed while a need is in flight: the asker makes room among its own at once,
# nothing lost (A's nap for it slowed: each pin of its host copy takes 2 s)
fresh_gpu
policy
pager_start
FAKE_PIN_MS=2000 holder A 1000
ok $? "A holds 2000 MiB, idle"
start B "$TARGET"
ask B "drv vmm use 0"
echo "drv alloc export 1500" >&"$B_in"
a_asked() { [ "$(field "$A_pid" busy)" = true ] || [ -e "$T/status/$A_pid.nap-for" ]; }
check "A asked by the pager for B" eventually 20 a_asked
kill -9 "$pager_pid"
wait "$pager_pid" 2> /dev/null
pager_pid=
answer B 60
log_like "$T/B.err" "the node pager cannot be asked \(the node pager went away" "B's log says the pager went away"
check "A napped" napped "$A_pid" 20
# made room for among its own at once; or, A still napping for the dead pager then (a slow run),
# failed as without cudanap, in one line, and its next try finds the memory A's nap gave
if [ "$REPLY" = "alloc 2" ]; then
	log_like "$T/B.err" "cuMemAlloc_v2: out of memory, and no room could be made" \
		"B's allocation, A still napping then, failed in one line as without cudanap"
	ask B "drv alloc export 1500" 60
fi
is "$REPLY" "alloc 0" "the pager killed as A naps for B: B's allocation made room for all the same"
ask A "drv launch export 5" 60
is "$REPLY" "launch 0" "A wakes at its next call, no pager there"
ask A verify
is "$REPLY" "verify ok" "its memory intact"
ask B verify
is "$REPLY" "verify ok" "and B's"
check "no note of the pager's left beside A's status" eventually 5 test ! -e "$T/status/$A_pid.nap-for"
quit_all A B
rm -f "$T/run/pager.sock" # a killed pager leaves its socket: pager_start waits for the next one's

# -- make_room = auto: the pager where its socket is
fresh_gpu
pager_stop
pager_start
sed -i 's/^make_room = node$/make_room = auto/' "$T/job.ini"
check "A holds 2000 MiB, idle" holder A 1000
start D "$TARGET"
ask D "drv alloc export 1500" 60
is "$REPLY" "alloc 0" "make_room = auto, the pager's socket there: D's allocation made room for"
log_like "$T/D.err" "through the node pager" "by the pager"
quit_all A D

# -- what it did, as cudanap pager status and metrics say
eventually 5 grep -q "naps_for_self=[1-9]" "$T/run/pager.state"
out=$("$CUDANAP" pager status --state "$T/run/pager.state")
like "$out" $'\n'"$me +[1-9][0-9]* +[1-9][0-9]* +[0-9]+ +0 " \
	"cudanap pager status: this user's needs and rooms made (since the pager started)"
"$CUDANAP" metrics -c "$T/job.ini" --pager-state "$T/run/pager.state" > "$T/m"
like "$(cat "$T/m")" $'\n'"cudanap_pager_naps_for_self_total\{user=\"$me\"\} [1-9]" "cudanap metrics: the naps it made"
if command -v promtool > /dev/null; then
	out=$(promtool check metrics < "$T/m" 2>&1)
	is "$?:$out" "0:" "promtool check metrics: the pager's figures too, no error, no lint"
else
	skip "promtool check metrics" "no promtool (Debian's prometheus package)"
fi
pager_stop
finish
