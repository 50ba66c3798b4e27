#!/usr/bin/env bash
# NCCL jobs on NCCL's default transports, with the fake driver and the fake NCCL
# (tests/fakenccl/): the communicators found by the preload's interposition, suspended at a cut
# every rank agrees on (the ranks issue operations at different rates) before the lock and
# resumed after the unlock; the app's NCCL calls held back meanwhile; a group that lacks a rank,
# plain signals to every rank (the ranks lead the cut) or to one, an old NCCL, [nccl] mode, a rank
# whose lock fails after its communicators were suspended (the command line's rollback resumes
# them with the others; by plain signals, the job's resume does), NCCL loaded privately, and the
# LD_PRELOAD order.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake
mkdir "$T/fake"
unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_NET_GDR_LEVEL
# Every job here runs on the fake machine's one GPU, beside the others: cudanap refuses to put a
# restored NCCL rank beside another job's process, unless told (beside.sh tests that refusal).
INI_EXTRA=("[restore]" "beside_restored = true")

# rank NAME COMM RANK NRANKS [LOOP_MS] [local|split]: a target with a communicator of the fake
# NCCL (and, with split, a second one split from it), all-reducing in a loop
rank() {
	local name=$1 comm=$2 r=$3 n=$4 ms=${5:-3} how=${6:-}
	start "$name" "$TARGET" || return 1
	ask "$name" "nccl init $comm $r $n ${how/split/}"
	[ "$REPLY" = "nccl ok" ] || { diag "nccl init: $REPLY"; return 1; }
	if [ "$how" = split ]; then
		ask "$name" "nccl split 7"
		[ "$REPLY" = "nccl ok" ] || { diag "nccl split: $REPLY"; return 1; }
	fi
	ask "$name" "nccl loop $ms"
	[ "$REPLY" = "nccl ok" ]
}
. "$(dirname "$0")/fakerank.sh"
peer() { test -e "$T/fake/$1.peer"; }
both_are() { state_is "$A_pid" "$1" && state_is "$B_pid" "$1"; } # both_are STATE: A's and B's, no action under way

# -- NCCL 2.30.7: suspended and resumed through its suspend API, at an agreed cut
export CUDANAP_FAKE_NCCL=$FAKENCCL
write_ini "[lock]" "timeout_ms = 5000"
# two GPUs: rank 1's communicator is on device 1, as one process per GPU has it
export CUDANAP_FAKE_GPUS=2
rank A job1 0 2 3
rank B job1 1 2 5 # slower: B is behind A at any moment
check "two ranks on the default transports hold peer imports" peer "$A_pid"
kill -USR2 "$A_pid" # running already: the agent looks again, and says so
settle "$A_pid" 1
like "$(field "$A_pid" nccl)" "^suspend-api: 1 communicator \(NCCL 2\.30\.7\)$" "status: suspend-api, 1 communicator, the NCCL version"
like "$("$CUDANAP" status -c "$T/job.ini" "$A_pid" | tail -n 1)" " api +[^ ]*fake_target$" "cudanap status: NCCL api"
cli suspend "$A_pid" "$B_pid"
is "$rc" 0 "the job's two ranks suspended together"
diag "$out"
is "$(field "$A_pid" state):$(field "$B_pid" state)" checkpointed:checkpointed "both checkpointed"
check "their peer imports released" bash -c "! test -e '$T/fake/$A_pid.peer' && ! test -e '$T/fake/$B_pid.peer'"
like "$(field "$A_pid" nccl)" "^suspended: 1 communicator" "the status says the communicators are suspended"
check "no rank was left waiting for an operation its peer never issued" test -z "$(ls "$T/fake/nccl" | grep unmatched)"
sa=$(steps A) sb=$(steps B)
sleep 0.3 # a check that nothing happens: the loops' NCCL calls are held back
is "$(steps A):$(steps B)" "$sa:$sb" "asleep, the app's NCCL calls wait"
cli resume "$A_pid" "$B_pid"
is "$rc" 0 "both resumed"
diag "$out"
check "their peer imports mapped again" bash -c "test -e '$T/fake/$A_pid.peer' && test -e '$T/fake/$B_pid.peer'"
check "A trains on" advancing A
check "B trains on" advancing B
is "$(steps A | cut -d' ' -f2):$(steps B | cut -d' ' -f2):$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "0:0:" \
	"no NCCL call failed, none reached a suspended communicator"
ask A verify
r=$REPLY
ask B verify
is "$r:$REPLY" "verify ok:verify ok" "every byte of both back"

# -- five cycles with --tree-like groups, the ranks at different rates
good=0
for i in 1 2 3 4 5; do
	"$CUDANAP" suspend "$A_pid" "$B_pid" > /dev/null && "$CUDANAP" resume "$A_pid" "$B_pid" > /dev/null &&
		good=$((good + 1))
done
is "$good" 5 "5 more cycles"
check "no unmatched operation in any of them" test -z "$(ls "$T/fake/nccl" | grep unmatched)"
is "$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "" "and no misuse"
# NCCL sets the caller's device back after each call: the agent's own thread was on the
# communicator's device, so rank 1 got no context on device 0 (518 MiB there on an H100)
is "$(cd "$T/fake/nccl" && echo stray.*)" "stray.*" "NCCL set back no device but the communicator's"
unset CUDANAP_FAKE_GPUS

# -- long sleeps: a PyTorch-shaped loop (torch.c) whose watchdog times out any listed collective
# older than 1 s, finished or not, asleep 2.5 s at each cycle; NCCL's operations launch kernels of
# their own, which must go on while the app's are held
export CUDANAP_FAKE_NCCL_KERNELS=1
# torchrank NAME COMM RANK NRANKS MS: a target whose loop makes a collective every MS ms
torchrank() {
	start "$1" "$TARGET" || return 1
	ask "$1" "nccl init $2 $3 $4"
	[ "$REPLY" = "nccl ok" ] || { diag "nccl init: $REPLY"; return 1; }
	ask "$1" "nccl torch start 0 $5 1000"
	[ "$REPLY" = "torch ok" ]
}
tstat() { ask "$1" "nccl torch stat"; echo "${REPLY#torch }"; } # STEPS TIMEOUTS BEATS LISTED OLDEST_MS
tfield() { tstat "$1" | cut -d' ' -f"$2"; }
tadvancing() { # tadvancing NAME: its steps go up
	local a
	a=$(tfield "$1" 1)
	for _ in $(seq 200); do
		[ "$(tfield "$1" 1)" -gt "$a" ] && return 0
		sleep 0.02
	done
	return 1
}
# sleeps ROUTE P Q: three whole-job cycles asleep 2.5 s each
sleeps() {
	local route=$1 p=$2 q=$3 good=0 beating=0 empty=0 b
	for i in 1 2 3; do
		out=$("$CUDANAP" suspend "$p" "$q") || { diag "cycle $i: $out"; continue; }
		case $out in *attempt*) diag "cycle $i: $out" ;; esac
		b=$(tfield P 3)
		sleep 2.5 # the sleep itself: longer than the loop's 1 s timeout
		[ "$(tfield P 3)" -ge $((b + 15)) ] && beating=$((beating + 1))
		[ "$(tfield P 4):$(tfield Q 4)" = 0:0 ] && empty=$((empty + 1))
		out=$("$CUDANAP" resume "$p" "$q") || { diag "cycle $i: $out"; continue; }
		if tadvancing P && tadvancing Q; then
			good=$((good + 1))
		else
			diag "cycle $i: P: $(tstat P), Q: $(tstat Q)"
		fi
	done
	is "$good" 3 "$route: 3 whole-job cycles asleep 2.5 s, both ranks train on after each"
	is "$empty" 3 "$route: asleep, the watchdogs list no collective (each finished one dropped before the lock)"
	is "$beating" 3 "$route: the watchdog's heartbeat goes on while the job sleeps"
	sleep 0.3 # a check that nothing happens: a timeout would be counted at the watchdog's next look
	is "$(tfield P 2):$(tfield Q 2)" 0:0 "$route: no collective timed out"
	is "$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "" "$route: no misuse, none of NCCL's kernels refused"
}
torchrank P job6 0 2 7
torchrank Q job6 1 2 11
sleeps "suspend API" "$P_pid" "$Q_pid"
ask P quit
ask Q quit
# over sockets the ranks stop each at its own point: a collective may wait for a rank that stopped
# before it, and the suspend is tried again; within the bound, so before the 1 s timeout
write_ini "[lock]" "timeout_ms = 400" "[nccl]" "mode = sockets"
torchrank P job7 0 2 7
torchrank Q job7 1 2 11
sleeps sockets "$P_pid" "$Q_pid"
ask P quit
ask Q quit
write_ini "[lock]" "timeout_ms = 5000"
unset CUDANAP_FAKE_NCCL_KERNELS

# -- with a process without a CUDA context among them (a launcher that imported torch): no rank,
# it does not stop the cut
check "a process with libcuda loaded and no CUDA context starts under cudanap" start N "$TARGET" --no-cuda
cli suspend --all -c "$T/job.ini"
like "$rc:$out" "^0:.*$N_pid: no CUDA state, nothing to do.*total: 3 processes, 2 suspended, 1 without CUDA, 0 failed" \
	"suspend --all: the two ranks suspended, the process without CUDA nothing to do"
is "$(field "$N_pid" action)" suspend "(that process was asked, and answered)"
is "$(field "$A_pid" state):$(field "$B_pid" state)" checkpointed:checkpointed "both ranks checkpointed"
cli resume --all -c "$T/job.ini"
is "$rc:$(field "$A_pid" state):$(field "$B_pid" state)" 0:running:running "and all resumed"
check "A trains on" advancing A
ask N quit

# -- one rank alone: refused, both run on
cli suspend "$A_pid"
is "$rc" 1 "one rank of two alone is refused"
like "$out" "^$A_pid: suspend failed: NCCL_NOT_AT_CUT: NCCL: communicator [0-9a-f]+ has 2 ranks and 1 of them are here: suspend and resume the whole job" \
	"in one line saying to take the whole job"
is "$(field "$A_pid" state)" running "A runs on"
check "and trains on" advancing A

# -- plain signals, with no command line to lead the cut (Slurm's own suspend and resume signal
# every process of the job): the ranks lead it themselves
kill -USR1 "$A_pid" "$B_pid"
check "kill -USR1 on both ranks: both suspended" eventually 10 both_are checkpointed
check "their peer imports released" bash -c "! test -e '$T/fake/$A_pid.peer' && ! test -e '$T/fake/$B_pid.peer'"
is "$(field "$A_pid" nccl | cut -d' ' -f1)" "suspended:" "A's communicator suspended"
kill -USR2 "$A_pid" "$B_pid"
check "kill -USR2 on both: both resumed" eventually 10 both_are running
is "$(field "$A_pid" result):$(field "$B_pid" result):$(field "$B_pid" nccl)" "ok:ok:suspend-api: 1 communicator (NCCL 2.30.7)" \
	"both resumed whole, their communicators with them"
check "A trains on" advancing A
check "B trains on" advancing B
is "$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "" "no NCCL call reached a suspended communicator"
# three more, one rank's signal 300 ms after the other's
good=0
for i in 1 2 3; do
	kill -USR1 "$B_pid"; sleep 0.3; kill -USR1 "$A_pid"
	eventually 10 both_are checkpointed || continue
	kill -USR2 "$A_pid"; sleep 0.3; kill -USR2 "$B_pid"
	eventually 10 both_are running && advancing A && good=$((good + 1))
done
is "$good" 3 "three more cycles by plain signals, one rank's 300 ms late at each"
# two jobs in the same status directory, all four ranks signalled at once: each job's ranks meet
# their own, and each job's lowest pid leads its cut
rank C job2 0 2 4
rank D job2 1 2 2
all_are() { both_are "$1" && state_is "$C_pid" "$1" && state_is "$D_pid" "$1"; }
kill -USR1 "$A_pid" "$B_pid" "$C_pid" "$D_pid"
check "two jobs' four ranks signalled at once: all suspended" eventually 10 all_are checkpointed
kill -USR2 "$D_pid" "$C_pid" "$B_pid" "$A_pid"
check "and all resumed" eventually 10 all_are running
check "job2 trains on" advancing C
check "job1 trains on" advancing A
is "$(steps C | cut -d' ' -f2):$(steps D | cut -d' ' -f2):$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "0:0:" \
	"no NCCL call failed in either job, none reached a suspended communicator"
ask C quit
ask D quit
write_ini "[lock]" "timeout_ms = 500"
kill -USR1 "$B_pid"
settle "$B_pid" $(($(field "$B_pid" seq) + 1)) 10
like "$(field "$B_pid" result):$(field "$B_pid" message)" "^NCCL_NOT_AT_CUT:NCCL: communicator [0-9a-f]+ has 2 ranks and 1 of them are here: suspend and resume the whole job" \
	"kill -USR1 on one rank alone: given up after the bound, saying to take the whole job"
check "B trains on" advancing B

# -- a rank whose lock fails after its communicators were suspended: the rollback resumes both
write_ini "[lock]" "timeout_ms = 300"
ask B "kernel 2000"
cli suspend --retries 0 "$A_pid" "$B_pid"
is "$rc" 1 "B's lock times out after the communicators' suspend: the job's suspend fails"
like "$out" "its NCCL communicators stay suspended until the job is resumed" "B says its communicators wait for the job"
like "$out" "rollback: 2 processes resumed in [0-9.]+ s: every process runs again" "the rollback resumes both, B's communicators with A's"
diag "$out"
is "$(field "$A_pid" state):$(field "$B_pid" state):$(field "$B_pid" nccl)" "running:running:suspend-api: 1 communicator (NCCL 2.30.7)" \
	"both run, their communicators resumed"
check "A trains on" advancing A
check "B trains on" advancing B
ask B sync 10
# the same by plain signals (Slurm's): no command line to roll back. A sleeps; B runs with its
# communicators suspended, its app held; the job's resume meets both, and both train on.
ask B "kernel 2000"
kill -USR1 "$A_pid" "$B_pid"
settle "$B_pid" $(($(field "$B_pid" seq) + 1)) 10
like "$(field "$B_pid" result):$(field "$B_pid" message)" "^[A-Z_]+:.*its NCCL communicators stay suspended until the job is resumed" \
	"kill -USR1 on both, B's lock times out after the communicators' suspend: B says they wait for the job"
check "A sleeps" eventually 10 state_is "$A_pid" checkpointed
is "$(field "$B_pid" state):$(field "$B_pid" nccl | cut -d' ' -f1)" "running:suspended:" "B runs, its communicator suspended"
ask B sync 10
kill -USR2 "$A_pid" "$B_pid"
check "kill -USR2 on both: both run" eventually 10 both_are running
is "$(field "$A_pid" nccl):$(field "$B_pid" nccl)" "suspend-api: 1 communicator (NCCL 2.30.7):suspend-api: 1 communicator (NCCL 2.30.7)" \
	"their communicators resumed together"
check "A trains on" advancing A
check "B trains on" advancing B
is "$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "" "no NCCL call reached a suspended communicator"
write_ini "[lock]" "timeout_ms = 5000"

ask A quit
ask B quit

# -- a second communicator, split from the first: both suspended, in the same order on each rank
rank S job5 0 2 3 split
rank U job5 1 2 5 split
cli suspend "$S_pid" "$U_pid"
like "$rc:$(field "$S_pid" nccl)" "^0:suspended: 2 communicators" "two communicators, one split from the other, suspended"
cli resume "$S_pid" "$U_pid"
is "$rc" 0 "and resumed"
check "S trains on" advancing S
check "U trains on" advancing U
is "$(cat "$T/fake/nccl/misuse" 2> /dev/null)$(ls "$T/fake/nccl" | grep unmatched)" "" "no misuse, nothing unmatched"
ask S quit
ask U quit

# -- NCCL loaded privately (RTLD_LOCAL, as a framework's own copy): found by its soname
rank C job2 0 2 3 local
rank D job2 1 2 3 local
cli suspend "$C_pid" "$D_pid"
like "$rc:$(field "$C_pid" nccl)" "^0:suspended: 1 communicator" "a private NCCL's communicators are suspended too"
cli resume "$C_pid" "$D_pid"
is "$rc" 0 "and resumed"
check "C trains on" advancing C
ask C quit
ask D quit

# -- NCCL 2.28.9, without the suspend API: refused, naming the version and the ways out
export CUDANAP_FAKE_NCCL=$FAKENCCL_OLD
write_ini "[lock]" "timeout_ms = 5000"
rank E job3 0 2
rank F job3 1 2
cli suspend "$E_pid" "$F_pid"
is "$rc" 1 "an old NCCL on the default transports is refused"
like "$out" "REFUSED: refusing to suspend NCCL ranks that share memory \(NCCL_P2P_DISABLE is unset .*\): NCCL 2\.28\.9 has no ncclCommSuspend: load NCCL 2\.29\.7 or later to keep NVLink, or set \[nccl\] suspendable = true for sockets \(state running\)" \
	"in one line naming the version and the two ways out"
is "$(field "$E_pid" state):$(field "$F_pid" state)" running:running "both run on"
write_ini "[nccl]" "mode = suspend-api"
cli suspend "$E_pid"
like "$out:$rc" "REFUSED: .*\[nccl\] mode = suspend-api, but NCCL 2\.28\.9 has no ncclCommSuspend: load NCCL 2\.29\.7 or later, or set mode = sockets.*:1" "mode = suspend-api refuses it too"
# what the refusal prevents: the driver cannot restore ranks with peer imports
write_ini "[nccl]" "mode = off"
cli suspend "$E_pid"
is "$rc" 0 "mode = off: suspended as any process"
cli resume "$E_pid"
like "$out:$rc" "CUDA_ERROR_NOT_SUPPORTED.*:1" "and its restore fails: the job is lost, as on driver 580"
kill -9 "$E_pid"
ask F quit

# -- sockets ([nccl] suspendable, or mode = sockets): no imports, no API needed
write_ini "[nccl]" "mode = sockets"
rank G job4 0 2
rank H job4 1 2
check "over sockets the ranks hold no peer imports" bash -c "! test -e '$T/fake/$G_pid.peer'"
out=$("$CUDANAP" suspend "$G_pid" "$H_pid") && out=$("$CUDANAP" resume "$G_pid" "$H_pid"); rc=$?
is "$rc" 0 "mode = sockets: suspended and resumed with an old NCCL"
like "$(field "$G_pid" nccl)" "^sockets: 1 communicator \(NCCL " "the status says sockets, with the count"
ask G quit
ask H quit

# -- a mode that contradicts suspendable
printf '[nccl]\nsuspendable = true\nmode = suspend-api\n' > "$T/both.ini"
cli2 check-config "$T/both.ini"
is "$rc:$out" "78:cudanap: $T/both.ini:3: nccl.mode: suspendable = true makes it sockets; give one of the two" \
	"suspendable = true with another mode is an error"

# -- libnccl preloaded before libcudanap: said at start; cudanap run puts the library first
write_ini
out=$(LD_PRELOAD=$FAKENCCL:$PRELOAD CUDANAP_CONFIG=$T/job.ini "$TARGET" --no-cuda < /dev/null 2>&1)
like "$out" "cudanap: libnccl is preloaded before libcudanap.so: NCCL's communicators cannot be suspended with the job; put libcudanap.so first" \
	"a libnccl preloaded first is said at start"
out=$(LD_PRELOAD=$FAKENCCL "$CUDANAP" run -c "$T/job.ini" -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
is "$out" "$(readlink -f "$LIBCUDANAP"):$FAKENCCL" "cudanap run puts the library before a preloaded libnccl"
finish
