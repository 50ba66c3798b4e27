#!/usr/bin/env bash
# Restores onto one GPU that start together take turns (preload/turns.c), with the fake driver's
# restore spending CUDANAP_FAKE_SETUP_MS in its "setup" before it copies, CUDANAP_FAKE_BLOCK_MS
# on each 2 MiB block of its copy and CUDANAP_FAKE_CLOSE_MS closing: no two setups at once, the
# next setup beside the end of the copy before it, no more than two copies at once, a third
# copying as soon as a copy is done (beside that one's closing), the waits shown in the status,
# every byte back. With copy_threads = 0 no turns are taken, nor with [restore] take_turns = false
# (and the setups overlap, and three copy at once, which shows that the checks can see it). A
# holder that dies lets the next one in; one that never lets go holds a restore up for 10 s at
# most. Processes on different GPUs do not wait for each other; one moved onto a GPU waits for one
# restoring onto it.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake \
	CUDANAP_FAKE_COPY_MIB=64 CUDANAP_FAKE_FOOTPRINT_MIB=64 CUDANAP_FAKE_SETUP_MS=200 \
	CUDANAP_FAKE_BLOCK_MS=20 CUDANAP_FAKE_CLOSE_MS=150 CUDANAP_FAKE_GPUS=2
mkdir "$T/fake"

# overlaps: how many pairs of setup intervals in the events file overlap
overlaps() {
	awk '$1 == "setup" && $3 == "begin" { b[$2] = $4 } $1 == "setup" && $3 == "end" { e[$2] = $4 }
		END { n = 0; for (p in b) for (q in b) if (p < q && b[p] < e[q] && b[q] < e[p]) n++;
		      print n }' "$T/fake/events"
}
setups() { grep -c "^setup [0-9]* end" "$T/fake/events"; }
# pipelined: of the setups in the order they ran, how many began before the copy of the one
# before ended
pipelined() {
	awk '$1 == "setup" && $3 == "begin" { order[n++] = $2; sb[$2] = $4 }
		$1 == "copy" && $3 == "end" { ce[$2] = $4 }
		END { k = 0; for (i = 1; i < n; i++) if (sb[order[i]] < ce[order[i - 1]]) k++; print k }' \
		"$T/fake/events"
}

# at_once: the most copies running at one time (one that ends within 5 ms of another's start
# does not count)
at_once() {
	awk '$1 == "copy" && $3 == "begin" { b[$2] = $4 } $1 == "copy" && $3 == "end" { e[$2] = $4 }
		END { m = 0; for (p in b) { k = 0; for (q in b) if (b[q] <= b[p] && e[q] > b[p] + 5000000) k++
		      if (k > m) m = k }; print m }' "$T/fake/events"
}
# third_copy: where the copy of the third process to set up began against the first one's
# copy and closing (5 ms either way counting as after): "after-copy before-close" when it waited
# for the first's copy only
third_copy() {
	awk '$1 == "setup" && $3 == "begin" { order[n++] = $2 }
		$1 == "copy" && $3 == "begin" { cb[$2] = $4 } $1 == "copy" && $3 == "end" { ce[$2] = $4 }
		$1 == "close" && $3 == "end" { xe[$2] = $4 }
		END { a = order[0]; c = order[2]
		      print (cb[c] >= ce[a] - 5000000 ? "after-copy" : "during-copy"), (cb[c] < xe[a] ? "before-close" : "after-close") }' \
		"$T/fake/events"
}

write_ini "[log]" "level = debug" "target = $T/job.log"
start A "$TARGET"
start B "$TARGET"
start C "$TARGET"
cli suspend --all -c "$T/job.ini"
is "$rc" 0 "three processes suspended"
: > "$T/fake/events"
cli resume --all -c "$T/job.ini"
like "$out:$rc" "total: 3 processes, 3 resumed, 0 without CUDA, 0 failed, [0-9.]+ s:0" "resumed together"
is "$(setups):$(overlaps)" "3:0" "the three setups took turns: none overlapped"
is "$(pipelined)" 2 "each next setup ran beside the end of the copy before it"
is "$(at_once)" 2 "no more than two copied at once"
is "$(third_copy)" "after-copy before-close" "the third copied once the first's copy was done, beside its closing"
like "$(cat "$T/job.log")" "restore: [0-9.]+ ms to the first copy .*, [0-9.]+ ms waiting for a place to copy in, [0-9.]+ ms copying, [0-9.]+ ms after" \
	"the log says how long each waited for a place, and the restore's other phases"
# the fake's setup takes 200 ms, its copy 31.5 blocks of 20 ms to the cue, its closing 150 ms; the
# bounds above them leave room for a loaded machine, and are below what a phase would show with
# another restore's copy (another 630 ms) counted in it
phases=$(grep -o "restore: [0-9.]* ms to the first copy.*" "$T/job.log" |
	awk -F'[ ,]+' '{ print ($2 >= 195 && $2 < 600 && $(NF - 5) >= 600 && $(NF - 5) < 1200 && $(NF - 2) >= 145 && $(NF - 2) < 600) }' | sort | uniq -c | xargs)
is "$phases" "3 1" "each of the three restores' phases as the fake driver spent them" ||
	diag "$(grep -o "restore: [0-9.]* ms to the first copy.*" "$T/job.log")"
waits=0
for p in $A_pid $B_pid $C_pid; do
	w=$(field "$p" wait_ms)
	[ "$w" != null ] && awk -v w="$w" 'BEGIN { exit !(w >= 100) }' && waits=$((waits + 1))
done
is "$waits" 2 "two of them waited for their turn, and the status shows how long"
like "$out" "resumed in [0-9.]+ m?s \(wait [0-9.]+ ms, restore" "the CLI's line names the wait"
like "$(cat "$T/job.log")" "resumed in [0-9.]+ m?s \(wait [0-9.]+ ms, restore" "so does the log's"
for n in A B C; do
	ask $n verify
	is "$REPLY" "verify ok" "$n's data intact"
done
turn=$(ls -d "$T"/status/.restore-turn-GPU-* 2> /dev/null)
is "$(basename "$turn")" ".restore-turn-GPU-face0000-0000-0000-0000-000000000000" \
	"the turn is a hidden file beside the status files, one per GPU"
places=$(cd "$T/status" && ls -d .restore-copy-GPU-* 2> /dev/null | tr '\n' ' ')
is "$places" ".restore-copy-GPU-face0000-0000-0000-0000-000000000000-0 .restore-copy-GPU-face0000-0000-0000-0000-000000000000-1 " \
	"the two places to copy in are hidden files beside it"

# without_turns WHY SECTION KEY: with that INI line, the three resume together without turns
without_turns() {
	write_ini "[log]" "level = debug" "target = $T/job.log" "$2" "$3"
	"$CUDANAP" suspend --all -c "$T/job.ini" > /dev/null
	: > "$T/fake/events"
	cli resume --all -c "$T/job.ini"
	like "$out:$rc" "3 resumed, .*:0" "$1: resumed without turns"
	check "$1: their setups overlapped ($(overlaps) pairs)" test "$(overlaps)" -ge 1
	is "$(at_once)" 3 "$1: all three copied at once"
	for n in A B C; do
		ask $n verify
		is "$REPLY" "verify ok" "$n's data intact"
	done
}
# copy_threads = 0: nothing tells when the copying starts
without_turns "copy_threads = 0" "[performance]" "copy_threads = 0"
without_turns "take_turns = false" "[restore]" "take_turns = false"

# -- a process on the other GPU does not wait for one on this GPU
write_ini "[log]" "level = debug" "target = $T/job.log"
CUDANAP_FAKE_START_GPU=1 start D "$TARGET"
"$CUDANAP" suspend "$A_pid" "$D_pid" > /dev/null
: > "$T/fake/events"
cli resume "$A_pid" "$D_pid"
like "$out:$rc" "2 resumed, .*:0" "two processes on two GPUs resumed together"
is "$(setups):$(overlaps):$(field "$A_pid" wait_ms):$(field "$D_pid" wait_ms)" "2:1:null:null" \
	"their setups overlapped, neither waited"
ask D verify
is "$REPLY" "verify ok" "data intact on the other GPU"
# -- one moved onto the other GPU takes its turn there: A moved to GPU 1 as D restores onto it
"$CUDANAP" suspend "$A_pid" "$D_pid" > /dev/null
: > "$T/fake/events"
"$CUDANAP" resume --gpu-map "0=1, 1=0" "$A_pid" > "$T/moved.out" &
mover=$!
"$CUDANAP" resume "$D_pid" > /dev/null; rc=$?
wait $mover; rc=$rc:$?
ask A gpu
is "$rc:$REPLY:$(setups):$(overlaps)" "0:0:gpu 1:2:0" \
	"A moved onto GPU 1 while D restored there: they took turns (no setups at once)"
ask A verify
is "$REPLY" "verify ok" "A's data intact on GPU 1"
"$CUDANAP" suspend "$A_pid" > /dev/null
"$CUDANAP" resume "$A_pid" > /dev/null
ask A gpu
is "$REPLY" "gpu 0" "and home again"
ask D quit

# -- a holder that dies, and one that never lets go
write_ini "[log]" "level = debug" "target = $T/job.log"
# hold_turn: a process holds the turn (flock -o: the lock is in flock's own descriptor only);
# holder is its pid, sleeper its command's
hold_turn() {
	flock -o "$turn" sleep 60 < /dev/null > /dev/null 2>&1 &
	holder=$!
	for _ in $(seq 50); do sleeper=$(pgrep -P $holder) && break; sleep 0.02; done
}
"$CUDANAP" suspend "$A_pid" > /dev/null
hold_turn
# killed 1 s after the resume began (its status says busy once it is under way)
resuming() { [ "$(field "$A_pid" busy)" = true ]; }
(eventually 20 resuming; sleep 1; kill -9 $holder) &
cli resume "$A_pid"
w=$(field "$A_pid" wait_ms)
check "a holder killed after 1 s: the restore went in then (waited $w ms)" \
	awk -v w="$w" -v rc="$rc" 'BEGIN { exit !(rc == 0 && w >= 700 && w < 5000) }'
ask A verify
is "$REPLY" "verify ok" "data intact"

kill $sleeper
# both places held, their holders killed after 1 s: the copy went on then
"$CUDANAP" suspend "$A_pid" > /dev/null
for i in 0 1; do
	flock -o "$T/status/.restore-copy-GPU-face0000-0000-0000-0000-000000000000-$i" sleep 60 < /dev/null > /dev/null 2>&1 &
	eval "pholder$i=\$!"
done
locked() { ! flock -n "$1" true; } # locked FILE: another process holds FILE's flock
for i in 0 1; do eventually 20 locked "$T/status/.restore-copy-GPU-face0000-0000-0000-0000-000000000000-$i"; done
(eventually 20 resuming; sleep 1; pkill -9 -P $pholder0; pkill -9 -P $pholder1; kill -9 $pholder0 $pholder1) 2> /dev/null &
: > "$T/job.log"
cli resume "$A_pid"
w=$(grep -o "[0-9.]* ms waiting for a place" "$T/job.log" | grep -o "^[0-9.]*" | head -n1)
check "both places held by processes killed after 1 s: the copy went on then (waited ${w:-?} ms)" \
	awk -v w="${w:-0}" -v rc="$rc" 'BEGIN { exit !(rc == 0 && w >= 700 && w < 5000) }'
ask A verify
is "$REPLY" "verify ok" "data intact"

"$CUDANAP" suspend "$A_pid" > /dev/null
hold_turn
cli resume "$A_pid"
w=$(field "$A_pid" wait_ms)
check "a holder that never lets go: the restore goes on after 10 s (waited $w ms)" \
	awk -v w="$w" -v rc="$rc" 'BEGIN { exit !(rc == 0 && w >= 10000 && w < 12000) }'
like "$(cat "$T/job.log")" "restore turn in .* not had after 100[0-9][0-9] ms: restoring without it" \
	"and says so in the log"
ask A verify
is "$REPLY" "verify ok" "data intact"
kill $holder $sleeper
for n in A B C; do ask $n quit; done
finish
