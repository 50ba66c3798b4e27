#!/usr/bin/env bash
# [nap] make_room, with the fake driver given a GPU of 4000 MiB (CUDANAP_FAKE_GPU_MIB; each
# process holds 1000 MiB, and what it allocates): an allocation the GPU cannot hold naps the
# user's idle process that was least recently active, and the call, tried again, succeeds; the
# napped one wakes at its next call by napping the next idle one, its memory intact; a process
# active less than min_idle_s ago is never napped (the wake waits, as without make_room, and goes
# on once one is idle), nor one with a thread inside a driver call; one that cannot nap (managed
# memory) refuses and the next is napped; two wakes at once take turns; without make_room the
# allocation fails as before, and so does one whose naps the host has no memory for; the status
# says who was napped for whom, and counts naps by cause.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPU_MIB=4000
mkdir "$T/fake"
room_ini() { write_ini "[nap]" "make_room = true" "min_idle_s = $1" "[restore]" "margin_mib = 0" "[log]" "level = info"; }
room_ini 1
idle_since_for() { # idle_since_for PID T0_MS S: idle S seconds at least, since after T0
	local since
	since=$(field "$1" idle_since)
	[ -n "$since" ] && [ "$(date -d "$since" +%s%3N)" -ge "$2" ] &&
		[ $(($(date +%s%3N) - $(date -d "$since" +%s%3N))) -ge $(($3 * 1000)) ]
}
idle_for() { idle_since_for "$1" 0 "$2"; } # idle_for PID S: idle S seconds at least
works() { # works NAME PID DESCRIPTION: NAME works the GPU once, then is idle for a second since
	local t0
	t0=$(date +%s%3N)
	ask "$1" "drv launch export 5"
	check "$3" eventually 20 idle_since_for "$2" "$t0" 1
}

start A "$TARGET"
start B "$TARGET"
ask B "drv launch export 5"
is "$REPLY" "launch 0" "B works the GPU once"
sleep 1.5
ask A "drv alloc export 1000"
is "$REPLY" "alloc 0" "A allocates 1000 MiB: 3000 of 4000 MiB taken"
start C "$TARGET"
check "B and A idle for a second (B the longer)" eventually 20 idle_for "$A_pid" 1

# -- an allocation the GPU cannot hold: the least recently active idle process naps
ask C "drv alloc export 1000" 60
is "$REPLY" "alloc 0" "C's allocation of 1000 MiB, refused by the driver, succeeds once room is made"
check "B, idle the longest, napped for it" napped "$B_pid" 5
is "$(field "$A_pid" state):$(field "$A_pid" naps)" "running:0" "A, idle for less time, was left alone"
is "$(field "$B_pid" nap_for_pid):$(field "$B_pid" nap_for_mib):$(field "$B_pid" naps_room)" "$C_pid:1000.000:1" \
	"B's status: napped for C, which needed 1000 MiB; one nap to make room"
is "$(field "$C_pid" rooms_made)" 1 "C's status: room made once"
log_like "$T/C.err" "cudanap\[$C_pid\]: made room on GPU 0 for 1000 MiB \(cuMemAlloc_v2\): napped $B_pid \(1000 MiB, idle [0-9]+ s\) in [0-9.]+ s" \
	"C's log: one line for the room it made"
log_like "$T/B.err" "cudanap\[$B_pid\]: napped \(for $C_pid, which needs 1000 MiB on GPU 0\): 1000 MiB of GPU memory freed" \
	"B's log: for whom it napped"
like "$("$CUDANAP" status --no-query "$B_pid")" $'\n'"$B_pid: napped for $C_pid: 1.0 GiB" "cudanap status says who was napped for whom"

# -- the napped one's next call: it wakes by napping the next idle one
check "A and C idle for a second" eventually 20 idle_for "$C_pid" 1
ask B "drv launch export 5" 60
is "$REPLY" "launch 0" "B's next call wakes it"
check "A, now the least recently active, napped for it" napped "$A_pid" 5
is "$(field "$A_pid" nap_for_pid):$(field "$C_pid" state)" "$B_pid:running" "for B; C runs on"
ask B verify
is "$REPLY" "verify ok" "B's memory came back intact"
log_like "$T/B.err" "made room on GPU 0 for 1000 MiB \(its wake\): napped $A_pid \(2000 MiB" "B's log says it"

# -- nobody idle long enough: the wake waits, as without make_room, until someone is
room_ini 60
echo "drv launch export 5" >&"$A_in" # A needs 2000 MiB; B and C are not idle for 60 s
check "A's wake waits for room" eventually 10 nap_is "$A_pid" "waiting for room"
like "$(field "$A_pid" nap_why)" "." "its status says what it waits for ($(field "$A_pid" nap_why))"
is "$(field "$B_pid" state):$(field "$C_pid" state)" "running:running" "B and C, idle for less than min_idle_s, are not napped"
log_like "$T/A.err" "no room made for its wake: GPU 0 has [0-9]+ MiB free, 2000 MiB wanted .*no process of this user there idle for \[nap\] min_idle_s to nap" \
	"A's log says why no room was made, once"
room_ini 1
read -r -t 30 -u "$A_out" REPLY || REPLY=
is "$REPLY" "launch 0" "once they are idle long enough, room is made and A's call goes on"
ask A verify
is "$REPLY" "verify ok" "A's memory intact"
napped_one() { [ "$(field "$B_pid" state)" = napping ] || [ "$(field "$C_pid" state)" = napping ]; }
check "B or C napped for it" napped_one

# -- two wakes at once take turns
asleep=() ; awake=()
for p in B C; do
	eval "pid=\$${p}_pid"
	if [ "$(field "$pid" state)" = napping ]; then asleep+=("$p"); else awake+=("$p"); fi
done
"$CUDANAP" nap -c "$T/job.ini" "$A_pid" > /dev/null
check "A napped by hand" napped "$A_pid" 10
check "the other one idle for a second" eventually 20 idle_for "$(eval echo "\$${awake[0]}_pid")" 1
send() { local fin; eval "fin=\$${1}_in"; echo "$2" >&"$fin"; } # the answer read later
send A "drv launch export 5"
send "${asleep[0]}" "drv launch export 5"
read -r -t 20 -u "$A_out" ra || ra=
eval "read -r -t 20 -u \"\$${asleep[0]}_out\" rb" || rb=
[ "$ra:$rb" = "launch 0:launch 0" ] || for p in A B C; do diag "$p: $(tail -n 6 "$T/$p.err")"; done
is "$ra:$rb" "launch 0:launch 0" "A and ${asleep[0]} woken at once: both answer (one took its turn after the other)"
ask A verify
is "$REPLY" "verify ok" "A intact"
ask "${asleep[0]}" verify
is "$REPLY" "verify ok" "${asleep[0]} intact"

# -- a process with a thread inside a driver call is not napped, however old its last call
[ "$(field "$B_pid" state)" = napping ] && Y=B || Y=C
[ "$Y" = B ] && X=C || X=B
eval "x_pid=\$${X}_pid y_pid=\$${Y}_pid"
ask A "drv launch export 6000"
ask A "drv bgsync export"
is "$REPLY" "bgsync ok" "A: a thread inside cuStreamSynchronize for 6 s"
sleep 0.3
works "$X" "$x_pid" "$X works, then is idle for a second"
ask "$Y" "drv launch export 5" 30
is "$REPLY" "launch 0" "$Y's wake needs room"
is "$(field "$A_pid" state):$(field "$x_pid" state)" "running:napping" \
	"$X was napped for it; A, whose last call is older but whose thread is inside one, was not"
synced_done() { ask A "drv synced"; [[ $REPLY =~ ^synced\ 0 ]]; }
check "A's call ends, right" eventually 15 synced_done

# -- a process that cannot nap (managed memory) refuses, and the next one is napped
ask A "drv call export cuMemAllocManaged"
is "$REPLY" "call 0" "A holds managed memory: it cannot nap"
sleep 1.2
works "$Y" "$y_pid" "$Y works, then is idle for a second (A the longer)"
ask "$X" "drv launch export 5" 60
is "$REPLY" "launch 0" "$X's wake needs room"
is "$(field "$A_pid" state):$(field "$y_pid" state)" "running:napping" \
	"A, idle the longest, refused (managed memory); $Y was napped instead"
like "$(cat "$T/$X.err")" "made room on GPU 0 for [0-9]+ MiB \(its wake\): napped $A_pid did not nap, $y_pid \(" \
	"$X's log names the one that did not nap"

# -- a new context the GPU cannot hold: room made, the retain tried again
eval "x_pid=\$${X}_pid"
check "$X idle for a second" eventually 20 idle_for "$x_pid" 1
CUDANAP_FAKE_CTX_MIB=500 start E "$TARGET"
ask E "drv call export cuDevicePrimaryCtxRetain" 60
is "$REPLY" "call 0" "E's first context (500 MiB), refused as out of memory, is made once room is"
is "$(field "$x_pid" state):$(field "$x_pid" nap_for_pid)" "napping:$E_pid" "$X napped for it"
log_like "$T/E.err" "made room on GPU 0 for 512 MiB \(cuDevicePrimaryCtxRetain\): napped $x_pid" \
	"E's log: a context is asked 512 MiB"

# -- counts by cause, in the status
is "$(field "$A_pid" naps_room):$(field "$A_pid" naps_asked):$(field "$A_pid" naps_idle)" "1:1:0" \
	"A's naps by cause: 1 to make room, 1 asked, none idle"

# -- without make_room: the allocation fails, nobody napped
write_ini "[restore]" "margin_mib = 0"
start D "$TARGET"
ask D "drv alloc export 3000" 20
is "$REPLY" "alloc 2" "without make_room an allocation beyond the GPU fails (CUDA_ERROR_OUT_OF_MEMORY)"
naps=0
for p in "$A_pid" "$B_pid" "$C_pid"; do [ "$(field "$p" state)" = napping ] && naps=$((naps + 1)); done
is "$naps" 2 "and no one else napped for it (B and C napped before)"

# -- room no nap can make: nobody napped, the call fails at once
room_ini 1
check "E idle for a second, its 1500 MiB the room a nap could give" eventually 20 idle_for "$E_pid" 1
start F "$TARGET"
ask F "drv alloc export 9000" 20
is "$REPLY" "alloc 2" "9000 MiB on a GPU of 4000: out of memory, as without make_room"
is "$(field "$E_pid" state)" running "E was not napped for it"
log_like "$T/F.err" "GPU 0 has [0-9]+ MiB free and its idle processes would give back [0-9]+ MiB by napping, 9000 MiB wanted \(\[restore\] margin_mib included\): no process napped" \
	"F's log says why, in one line"

# -- room whose naps the host cannot hold: nobody napped, the call fails at once and says why
write_ini "[nap]" "make_room = true" "min_idle_s = 1" "[restore]" "margin_mib = 0" \
	"[preflight]" "host_margin_mib = 16000000" "[log]" "level = info"
start G "$TARGET"
ask G "drv alloc export 1500" 20
is "$REPLY" "alloc 2" "1500 MiB that a nap of E would free, but not the host's memory: out of memory"
is "$(field "$E_pid" state)" running "E was not napped for it"
log_like "$T/G.err" "GPU 0 has [0-9]+ MiB free and its idle processes would give back 0 MiB by napping, 1500 MiB wanted \(\[restore\] margin_mib included\); [0-9]+ MiB more are held by idle processes whose nap's copy the host has no memory for \(\[preflight\] host_margin_mib included; \[nap\] to = auto with a \[hibernate\] dir would nap them to disk\): no process napped" \
	"G's log says why, in one line"
for p in A B C D E F G; do ask "$p" quit 10; done

# -- a wake that waits for a process to be idle long enough is tried again when it is (a GPU of
# its own: the fake counts the memory of processes gone)
export CUDANAP_FAKE_DIR=$T/fake2
mkdir "$T/fake2"
write_ini "[nap]" "make_room = true" "min_idle_s = 3" "[restore]" "margin_mib = 0" "[log]" "level = debug"
start P "$TARGET"
start Q "$TARGET"
ask P "drv alloc export 1000"
is "$REPLY" "alloc 0" "P holds 2000 MiB"
"$CUDANAP" nap -c "$T/job.ini" "$P_pid" > /dev/null
check "P napped by hand" napped "$P_pid" 10
ask Q "drv alloc export 1500"
is "$REPLY" "alloc 0" "Q takes 1500 MiB more: 1500 of 4000 MiB free, P's 2000 no longer fit"
ask Q "drv launch export 5"
ask P "drv launch export 5" 60
is "$REPLY" "launch 0" "P's call, whose wake needs Q napped, goes on once Q has been idle 3 s"
log_like "$T/P.err" "its wake tried again in [0-9.]+ s, when $Q_pid will have been idle \[nap\] min_idle_s" \
	"P's try was set for the moment Q would be idle long enough (debug log)"
log_like "$T/P.err" "made room on GPU 0 for 2000 MiB \(its wake\): napped $Q_pid \(2500 MiB, idle [0-9]+ s\)" \
	"Q napped for it"
ask P verify
is "$REPLY" "verify ok" "P's memory intact"

# -- a nap asked for another by a process that worked since: refused in one line, the process runs
# on
printf '%s 100 0 30\n' "$Q_pid" > "$T/status/$P_pid.nap-for"
cli nap -c "$T/job.ini" "$P_pid"
is "$rc:$(field "$P_pid" state)" "1:running" "P, asked to nap for Q but working less than Q's min_idle_s (30 s) ago, refuses and runs on"
log_like "$T/P.err" "not napped for $Q_pid: it worked its GPU [0-9.]+ s ago, less than that process's \[nap\] min_idle_s \(30 s\)" \
	"P's log says why, in one line"
for p in P Q; do ask "$p" quit 10; done
finish
