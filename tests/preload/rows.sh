#!/usr/bin/env bash
# cudanap status's rows, with the fake driver: the GPUs of a running process that holds memory,
# the host copy's size while it sleeps (kept by a resume refused for room, on disk when
# hibernated), NAP's idle time begun again by a suspend and a resume, a stopped process's state,
# `cudanap nap` of a napping one, owned memory named as such, a '?' footnote only under a '?', a
# refusal's reason in one colon, columns as wide as their widest word; and no file of a process
# left once it has exited, or been killed and a status has looked.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
mkdir "$T/fake" "$T/hib"
write_ini
st() { "$CUDANAP" status -c "$T/job.ini" "$@"; }
# col TABLE PID HEAD: the cell of PID's row under HEAD, found by where the heads are: a number's
# ends where its head ends (MIB), any other starts where its head starts and ends before the next
# head's start (GPUS, before a number: its first word)
col() {
	awk -v pid="$2" -v head="$3" '
		NR == 1 {
			for (i = 1; i <= length($0); i++)
				if (substr($0, i, 1) != " " && (i == 1 || substr($0, i - 1, 1) == " ")) {
					n++; s[n] = i; w = substr($0, i); sub(/ .*/, "", w); name[n] = w
				}
			for (k = 1; k <= n; k++) if (name[k] == head) c = k
			next
		}
		$1 == pid {
			if (head ~ /MIB$/) {
				v = substr($0, 1, s[c] + length(head) - 1); sub(/.* /, "", v)
			} else {
				v = c < n ? substr($0, s[c], s[c + 1] - s[c]) : substr($0, s[c])
				sub(/ +$/, "", v)
				if (name[c + 1] ~ /MIB$/) sub(/ .*/, "", v)
			}
			print v
		}' <<< "$1"
}
# aligned TABLE: every row's cells are where their heads are: a number's ends where its head ends
# (MIB), any other cell starts where its head starts
aligned() {
	awk 'NR == 1 { h = $0; next }
		/^[0-9]+ / {
			for (i = 1; i <= length(h); i++) {
				c = substr(h, i, 1); p = i > 1 ? substr(h, i - 1, 1) : " "; nx = substr(h, i + 1, 1)
				w = substr(h, i); sub(/ .*/, "", w)
				if (c != " " && p == " " && w !~ /MIB$/ &&
				    ((i > 1 && substr($0, i - 1, 1) != " ") || substr($0, i, 1) == " "))
					bad = 1
				if (c != " " && (nx == " " || nx == "") && substr(h, i - 2, 3) ~ /MIB$/ &&
				    (substr($0, i, 1) == " " || substr($0, i + 1, 1) != " "))
					bad = 1
			}
		}
		END { exit bad }' <<< "$1"
}

# -- a running process's GPUs: where its memory is, as the question found it
CUDANAP_FAKE_COPY_MIB=64 start A "$TARGET"
CUDANAP_FAKE_START_GPU=1 start B "$TARGET"
out=$(st)
is "$(col "$out" "$A_pid" GPUS):$(col "$out" "$B_pid" GPUS)" "0:1" \
	"GPUS of running processes that hold memory: where it is (not '-' before a first suspend)"
is "$(field "$B_pid" gpus)" "1=GPU-face0000-0000-0000-0000-000000000001" "and the status file's gpus, with the UUID"

# -- the host copy's size while it sleeps
"$CUDANAP" suspend -c "$T/job.ini" "$A_pid" > /dev/null
out=$(st)
is "$(col "$out" "$A_pid" HOST_MIB):$(col "$out" "$A_pid" DISK_MIB)" "68:-" \
	"asleep: HOST_MIB is its host copy (64 MiB and the fake driver's 1/16), nothing on disk"
echo 10 > "$T/fake/free.0"
cli2 resume -c "$T/job.ini" "$A_pid"
like "$rc:$out" "^1:.*NO_GPU_MEMORY" "a resume refused for room"
is "$(field "$A_pid" state):$(field "$A_pid" host_mib)" "checkpointed:68.000" "asleep still: its copy is said where it was"
rm "$T/fake/free.0"
"$CUDANAP" resume -c "$T/job.ini" "$A_pid" > /dev/null
is "$(col "$(st)" "$A_pid" HOST_MIB)" "-" "running again: no host copy"
"$CUDANAP" suspend -c "$T/job.ini" --to-disk="$T/hib" "$A_pid" > /dev/null
disk=$(field "$A_pid" disk_mib) host=$(field "$A_pid" host_mib)
check "hibernated: DISK_MIB the copy in its file, HOST_MIB what of it is in RAM ($disk, $host)" \
	awk -v d="$disk" -v h="$host" 'BEGIN { exit !(d >= 64 && d < 80 && h >= 0 && h < 64) }'
"$CUDANAP" resume -c "$T/job.ini" "$A_pid" > /dev/null

# -- `cudanap nap` of a napping process; its footnote-free row
"$CUDANAP" nap -c "$T/job.ini" "$B_pid" > /dev/null
cli nap -c "$T/job.ini" "$B_pid"
is "$rc:$out" "0:$B_pid: already napping" "cudanap nap of a napping process: already napping"
is "$(col "$(st)" "$B_pid" STATE)" napping "its state"
ask B "drv launch export 5"
woke "$B_pid"

# -- stopped processes: the state says so, awake or asleep; --json's halted too
kill -STOP "$B_pid"
eventually 5 stopped "$B_pid"
out=$(st)
is "$(col "$out" "$B_pid" STATE)" stopped "a stopped process's STATE: stopped (not running)"
like "$out" "$B_pid: would refuse: it is stopped \(SIGSTOP or a debugger\); continue it first \(kill -CONT\)" \
	"SUSPEND's line says why it would refuse"
like "$(st --json "$B_pid")" '"halted":"stopped"' "--json: halted"
kill -CONT "$B_pid"
"$CUDANAP" suspend -c "$T/job.ini" "$A_pid" > /dev/null
kill -STOP "$A_pid"
eventually 5 stopped "$A_pid"
is "$(col "$(st)" "$A_pid" STATE)" checkpointed+stopped "asleep and stopped: both"
kill -CONT "$A_pid"
"$CUDANAP" resume -c "$T/job.ini" "$A_pid" > /dev/null
like "$(st --json "$A_pid")" '"halted":""' "running again: halted empty"

# -- a '?' footnote only under a '?': a process stopped before it was ever asked
start C "$TARGET"
kill -STOP "$C_pid"
eventually 5 stopped "$C_pid"
out=$(st "$C_pid")
is "$(col "$out" "$C_pid" NOW_MIB):$(col "$out" "$C_pid" SUSPEND)" "-:no" "never asked, and stopped now: nothing to mark"
unlike "$out" $'\n\\?:' "so no footnote about '?'"
kill -CONT "$C_pid"

# -- owned memory, on one GPU: not peer access
write_ini "[memory]" "own = always"
CUDANAP_FAKE_GPUS=1 start D "$TARGET"
ask D "drv vmm use 0"
ask D "drv alloc export 600"
out=$(st "$D_pid")
like "$out" $'\n'"$D_pid: owned memory: 600 MiB in 3 pieces of 256 MiB at most \(1 allocation, 0 handles\)" \
	"owned memory is said as such"
unlike "$out" "peer access" "and not as peer access"
ask D quit
write_ini

# -- a refusal's reason with one colon: the controller cannot load the driver
CUDANAP_LIBCUDA=/nonexistent/libcuda.so.1 start E "$TARGET"
out=$(st "$E_pid")
like "$out" "$E_pid: would refuse: NO_DRIVER: cannot load the CUDA driver \(/nonexistent/libcuda.so.1\)" \
	"would refuse: the result's name, then why"
unlike "$out" ": :" "no double colon"
ask E quit

# -- columns that hold every word: waiting for room beside other rows
write_ini "[nap]" "wake_on = home"
start F "$TARGET"
"$CUDANAP" nap -c "$T/job.ini" "$F_pid" > /dev/null
echo 500 > "$T/fake/free.0"
ask F "drv launch export 5" 1
check "F waits for room" eventually 20 nap_is "$F_pid" "waiting for room"
out=$(st --no-query)
like "$out" "waiting for room" "its NAP: waiting for room"
aligned "$out" || diag "$out"
check "every row's cells start under their heads" aligned "$out"
check "the command is the row's last cell: its start under COMMAND" \
	awk -v p="$F_pid" 'NR == 1 { c = index($0, "COMMAND") } $1 == p { exit substr($0, c) !~ /fake_target$/ }' <<< "$out"
rm "$T/fake/free.0"
answer F 20
woke "$F_pid"
ask F quit
write_ini

# -- NAP's idle time begins again at a suspend and at a resume
RUN_ARGS=(--nap 600)
start G "$TARGET"
unset RUN_ARGS
ask G "drv launch export 5" # a call the gate sees: its idleness is followed from there
idle_for() { # PID SECONDS: its NAP says idle for SECONDS or more
	local n
	n=$(col "$("$CUDANAP" status -c "$T/job.ini" --no-query "$1")" "$1" NAP)
	[[ $n =~ ^idle\ ([0-9]+)s$ ]] && [ "${BASH_REMATCH[1]}" -ge "$2" ]
}
check "G idles: NAP idle 3s or more" eventually 20 idle_for "$G_pid" 3
cli suspend -c "$T/job.ini" "$G_pid"
is "$rc" 0 "G suspended"
not_idle() { [ -z "$(field "$1" idle_since)" ]; }
check "a suspend ends its idleness" eventually 10 not_idle "$G_pid"
t_resume=$(date -u +%s)
cli resume -c "$T/job.ini" "$G_pid"
since=$(field "$G_pid" idle_since)
check "after the resume it is idle since the resume, not before it ($since)" \
	test -z "$since" -o "$(date -u -d "$since" +%s 2> /dev/null || echo 0)" -ge "$((t_resume - 1))"
not() { ! "$@"; }
check "and NAP says so: not idle 3s" not idle_for "$G_pid" 3
ask G quit

# -- no file of an exited process left: its notes (a refused suspend leaves nccl-led), its status
cli suspend -c "$T/job.ini" --to-disk "$B_pid"
is "$rc" 1 "a suspend refused before its action (no --to-disk directory)"
check "the command line's note for it is there while it lives" test -e "$T/status/$B_pid.nccl-led"
ask B quit
eventually 10 gone "$B_pid"
check "B exited: nothing of it in the status directory" eventually 10 \
	bash -c '! compgen -G "$1/$2.*" > /dev/null' _ "$T/status" "$B_pid"
cli suspend -c "$T/job.ini" --to-disk "$A_pid"
: > "$T/status/.$A_pid.json.tmp" # a write cut short
kill -9 "$A_pid"
eventually 10 gone "$A_pid"
check "A killed: its status and notes stay until a status looks" test -e "$T/status/$A_pid.nccl-led"
st > /dev/null
is "$(cd "$T/status" && ls -A | grep -c "$A_pid")" 0 "cudanap status removes them all, the temporary file too"
ask C quit
finish
