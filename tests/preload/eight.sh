#!/usr/bin/env bash
# Eight GPUs, with the fake driver modelling driver 580 on an eight-GPU machine (fakepeer.c,
# fakevmm.c, fakemem.c: each GPU's memory counted on its own, the process's GPUs moved one by one
# by the restore's pairs). One process over all eight, as JAX with its defaults is: an allocation
# on each GPU (owned: served in pieces of 256 MiB at most), peer access on between all 56 ordered
# pairs, mirrored into every piece's mapping, and a pool on each GPU (a handle of cuMemCreate's,
# split into pieces) mapped to the seven others; suspended and resumed 12 times, the GPUs permuted at
# every other resume, each time every word and byte back at the same addresses, the 56 directions
# on, every GPU reaching every allocation, each GPU's memory on the GPU its permutation names (the
# controller's holds, NVML's per-GPU figures), the status saying it in one short line; a pool
# another GPU may access beside the 112 directions of access, a map that is no permutation and a
# target GPU without room refused in one line before the lock or the driver, the process running
# or still restorable; napped and woken by its next call. With the driver's own memory ([memory]
# own = never) the refusal names the 56 directions in one line, and [peer] mode = off suspends
# with all 56 off, which stay off, said once. A light nap over eight GPUs and its wake. A job of
# eight single-GPU ranks of the fake NCCL (its suspend API, NCCL's default transports) suspended
# and resumed as one, the ranks permuted over the GPUs. What the fake cannot show (the driver's
# checkpoint of that many mappings, its speed, NVLink) is for the gpu suite on a machine of eight.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=8
# memory counted, each GPU's on its own; a small footprint, so that the host copy the preflight
# asks for (what the GPUs hold, the fake's copy is none) stays within a shared machine's memory
export CUDANAP_FAKE_GPU_MIB=80000 CUDANAP_FAKE_FOOTPRINT_MIB=100
mkdir "$T/fake"
all8=0,1,2,3,4,5,6,7
uuid() { printf 'GPU-face0000-0000-0000-0000-0000000000%02x' "$1"; }
peers_on() { sort -u "$T/fake/$1.peers" 2> /dev/null | wc -l; }
mesh="all 56 directions between GPUs $all8 by cuCtxEnablePeerAccess in fake_target"
# The permutations, by the GPU each GPU the job started on goes to: gpu_map's "0=P0, 1=P1, ...".
perms=("1 2 3 4 5 6 7 0" "7 6 5 4 3 2 1 0" "3 0 7 1 6 2 5 4" "1 0 3 2 5 4 7 6" "3 4 5 6 7 0 1 2"
	"5 7 0 6 1 4 2 3")
home="0 1 2 3 4 5 6 7"
map_of() { # map_of "P0 ... P7": the gpu_map
	local i=0 p out=
	for p in $1; do out+="${out:+, }$i=$p"; i=$((i + 1)); done
	echo "$out"
}

# -- one process over eight GPUs. CUDA device d is GPU 7-d (the fake's numbering, not PCI's);
# on device d it allocates 258 + 40 d MiB by cuMemAlloc (2 pieces, 3 on device 7), each GPU's its
# own, and a pool of 260 MiB (2 pieces) as XLA makes its pool: reserved, a handle made and mapped,
# every other GPU given access
write_ini "[log]" "level = info"
size_of() { echo $((258 + 40 * $1)); } # size_of DEV: MiB
pool=260
# offsets DEV [MIB]: MiB into its allocation (or a range of MIB) where words are written: each
# piece's first and last
offsets() {
	local s=${2:-$(size_of "$1")} k off=
	for ((k = 0; k * 256 < s; k++)); do
		off+="$((k * 256)) $(((k + 1) * 256 - 1 < s - 1 ? (k + 1) * 256 - 1 : s - 1)) "
	done
	echo "$off"
}
CUDANAP_FAKE_START_GPU=$all8 start A "$TARGET"
pid=$A_pid
good=0
for d in 0 1 2 3 4 5 6 7; do
	ask A "drv vmm use $d"
	ask A "drv slot $d"
	ask A "drv alloc export $(size_of "$d")"
	[ "$REPLY" = "alloc 0" ] || { diag "device $d: $REPLY"; continue; }
	for off in $(offsets "$d"); do ask A "drv vmm word A $off $((d * 100000 + off))"; done
	ask A "drv vmm make $pool"
	[ "$REPLY" = "vmm make 0" ] || { diag "device $d, pool: $REPLY"; continue; }
	for e in 0 1 2 3 4 5 6 7; do
		[ "$e" = "$d" ] || ask A "drv vmm share $e"
	done
	[ "$REPLY" = "vmm share 0" ] || { diag "device $d, pool shared: $REPLY"; continue; }
	for off in $(offsets "$d" $pool); do ask A "drv vmm word V $off $((d * 100000 + 50000 + off))"; done
	good=$((good + 1))
done
is "$good" 8 "on each of the 8 GPUs an allocation and a pool mapped to the 7 others, 5264 MiB in all, words in every piece"
ask A "drv peer export on all 8"
is "$REPLY" "peer all 0:56" "peer access turned on between all 56 ordered pairs (cuCtxEnablePeerAccess)"
is "$(peers_on "$pid")" 56 "the driver has the 56 directions on"
"$CUDANAP" status "$pid" > /dev/null
owned="owned: 5264 MiB in 33 pieces of 256 MiB at most (8 allocations, 8 handles)"
status_peer="$mesh; mapped: all 56 directions between GPUs $all8 by cuMemSetAccess in fake_target; $owned"
is "$(field "$pid" peer)" "$status_peer" \
	"the status: peer access and the pools' mappings over all 56 directions in a few words, what cudanap owns"
# a pool another GPU may access (cuMemPoolSetAccess) beside the 56 mappings: refused before the lock
ask A "drv vmm pool 1 on"
cli2 suspend "$pid"
like "$rc:$out" "^1:$pid: suspend failed: REFUSED: refusing to suspend a process with a memory pool another GPU may access \(GPU 6->0 by cuMemPoolSetAccess in fake_target\)" \
	"and a pool that another GPU may access, the 113th grant: refused in one line, before the lock"
ask A "drv vmm pool 1 off"
is "$(field "$pid" state)" running "the access taken back, it runs on"
# words A: every word of every allocation, "DEV:OFF=VALUE" where one is not what was written
words() {
	local d off bad=
	for d in 0 1 2 3 4 5 6 7; do
		ask "$1" "drv slot $d"
		for off in $(offsets "$d"); do
			ask "$1" "drv vmm word A $off"
			[ "$REPLY" = "vmm word 0 $((d * 100000 + off))" ] || bad+="$d:$off=${REPLY#vmm word } "
		done
		for off in $(offsets "$d" $pool); do
			ask "$1" "drv vmm word V $off"
			[ "$REPLY" = "vmm word 0 $((d * 100000 + 50000 + off))" ] || bad+="$d:V$off=${REPLY#vmm word } "
		done
	done
	echo "${bad:-all}"
}
# reach A: every GPU reads every allocation and pool, at its last piece; "FROM->DEV=RC" where one
# cannot
reach() {
	local d e bad=
	for d in 0 1 2 3 4 5 6 7; do
		ask "$1" "drv slot $d"
		for e in 0 1 2 3 4 5 6 7; do
			ask "$1" "drv vmm touch A $e $(($(size_of "$d") - 1))"
			[ "$REPLY" = "vmm touch 0" ] || bad+="$e->$d=${REPLY#vmm touch } "
			ask "$1" "drv vmm touch V $e $((pool - 1))"
			[ "$REPLY" = "vmm touch 0" ] || bad+="$e->V$d=${REPLY#vmm touch } "
		done
	done
	echo "${bad:-all}"
}
is "$(reach A)" all "every GPU reaches every other's allocation (the access mirrored) and pool, in its last piece"
# The GPUs P: what the status, NVML and the controller's holds must say, each GPU the job started
# on (k: its CUDA device 7-k, 100 MiB and its allocation) where P puts it
gpus_of() { local p out=''; for p in $1; do out+="${out:+,}$p=$(uuid "$p")"; done; echo "$out"; }
on_gpu() { echo $((100 + pool + $(size_of $((7 - $1))))); } # on_gpu K: MiB of the GPU it started on as K
holds_of() { local k=0 p; for p in $1; do echo "reserve $p $(on_gpu $k)"; k=$((k + 1)); done; }
now_of() { local k=0 p; for p in $1; do echo "$p:$(on_gpu $k)"; k=$((k + 1)); done | sort -n | paste -sd,; }
# placed A P: where A's memory is once resumed onto P: "" when all is where P says, else what is not
placed() {
	local p=$2 why='' got
	got=$(field "$pid" gpus | tr , '\n' | sort -n | paste -sd,)
	[ "$got" = "$(gpus_of "$p" | tr , '\n' | sort -n | paste -sd,)" ] || why+="status gpus $got; "
	got=$(grep '^reserve' "$T/fake/events" | sort -n -k2 | paste -sd' ')
	[ "$got" = "$(holds_of "$p" | sort -n -k2 | paste -sd' ')" ] || why+="holds $got; "
	"$CUDANAP" status "$pid" > /dev/null
	got=$(field "$pid" gpu_now | tr , '\n' | sort -n | paste -sd,)
	[ "$got" = "$(now_of "$p")" ] || why+="NVML $got; "
	ask "$1" gpu
	[ "$REPLY" = "gpu ${p%% *}" ] || why+="$REPLY; "
	echo "$why"
}
is "$(field "$pid" host_need_mib | cut -d. -f1)" $((6064 + 6064 / 16 + 1024)) \
	"the host copy the preflight asks for: the 8 GPUs' 6064 MiB, a sixteenth more and the margin"

# 12 cycles, a new permutation at every other resume, home at the others; all checked after each
cycles=12 ok=0 peerok=0 placedok=0 times=
for c in $(seq $cycles); do
	p=$home
	[ $((c % 2)) = 1 ] && p=${perms[$(((c - 1) / 2 % ${#perms[@]}))]}
	out=$("$CUDANAP" suspend "$pid") || { diag "cycle $c: $out"; break; }
	times+="${out#*: suspended in } / "
	[ "$(held "$pid")" = 5264 ] && [ ! -e "$T/fake/$pid.gpu" ] || { diag "cycle $c: not off the GPUs"; break; }
	: > "$T/fake/events"
	out=$("$CUDANAP" resume --gpu-map "$(map_of "$p")" "$pid") || { diag "cycle $c: $out"; break; }
	times+="${out#*: resumed in }; "
	[ "$p" = "$home" ] || line=$out
	why=$(placed A "$p")
	if [ -z "$why" ]; then placedok=$((placedok + 1)); else diag "cycle $c, onto $p: $why"; fi
	ask A verify
	v=$REPLY
	w=$(words A)
	[ "$v:$w" = "verify ok:all" ] || { diag "cycle $c: $v, words: $w"; break; }
	ask A "drv peer export on all 8"
	on=$REPLY
	ask A "drv peer export can all 8"
	r=$(reach A)
	"$CUDANAP" status "$pid" > /dev/null
	if [ "$on:$REPLY:$(peers_on "$pid"):$r:$(field "$pid" peer)" = "peer all 704:56:peer all 1:56:56:all:$status_peer" ]; then
		peerok=$((peerok + 1))
	else
		diag "cycle $c: $on, $REPLY, $(peers_on "$pid") on, reach: $r, status: $(field "$pid" peer)"
	fi
	ok=$c
done
diag "suspend / resume: ${times%; }"
is "$ok" $cycles "$cycles suspends and resumes, permuted at every other: every byte and word back at its address"
is "$placedok" "$ok" "after each, each GPU's memory where the permutation put it (status, NVML, the controller's holds, gpu)"
is "$peerok" "$ok" "after each, the 56 directions on (already enabled, told so), every GPU reaching every allocation, the status"
is "${line#*) on }" "GPUs 5,7,0,6,1,4,2,3 (it started on GPUs $all8)" \
	"the last permuted resume's line: where each of the eight GPUs it started on went"

# a map that is no permutation, and a target GPU without room: refused before the driver, the
# process still restorable
"$CUDANAP" suspend "$pid" > /dev/null
cli2 resume --gpu-map "0=8" "$pid"
like "$rc:$out" "^1:.*gpu_map names GPU 8, but this machine has GPUs 0-7" "a map naming a ninth GPU: refused in one line"
cli2 resume --gpu-map "0=1, 1=2" "$pid"
like "$rc:$out" "^1:.*BAD_GPU_MAP: .*says nothing of where GPU 2 goes" "a map that is no permutation: refused"
is "$(field "$pid" state)" checkpointed "still checkpointed"
CUDANAP_FAKE_START_GPU=5 start F "$TARGET"
ask F "drv vmm use 2"
ask F "drv alloc export 79700"
is "$REPLY" "alloc 0" "another process takes GPU 5 (CUDA device 2) but 200 MiB"
: > "$T/fake/events"
cli2 resume --gpu-map "$(map_of "${perms[1]}")" "$pid"
like "$rc:$out" "^1:$pid: resume failed: NO_GPU_MEMORY: restore: GPU 5 \($(uuid 5)\) has 200 MiB free; the job needs 818 MiB there plus a 256 MiB margin .*\(state checkpointed\)$" \
	"a permutation putting 818 MiB on GPU 5 (what the GPU it started on as 2 holds): refused in one line"
is "$(grep -c '^restore' "$T/fake/events")" 0 "before the driver's restore"
ask F quit
eventually 10 gone "$F_pid"
rm -f "$T/fake/$F_pid".*
: > "$T/fake/events"
cli2 resume --gpu-map "$(map_of "${perms[1]}")" "$pid"
is "$rc" 0 "the room back: resumed onto that permutation ($out)"
is "$(placed A "${perms[1]}"):$(words A)" ":all" "where it says, every word back"

# a nap, woken by its next call
cli2 nap "$pid"
is "$rc" 0 "napped over eight GPUs ($out)"
ask A "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it"
check "woken" woke "$pid"
ask A "drv peer export on all 8"
is "$REPLY:$(words A):$(reach A)" "peer all 704:56:all:all" "its memory, its 56 directions, every GPU's reach"
ask A quit
wait "$pid" 2> /dev/null
rm -f "$T/fake/$pid".*

# -- [memory] own = never: the driver's own allocation over 256 MiB with the 56 directions on is
# refused in one line naming them; [peer] mode = off turns all 56 off for the suspend, and after
# the restore the driver gives none back: said once, the app told its GPUs cannot reach each other
write_ini "[memory]" "own = never" "[log]" "level = info"
CUDANAP_FAKE_START_GPU=$all8 start B "$TARGET"
ask B "drv vmm use 0"
ask B "drv alloc export 512"
ask B "drv peer export on all 8"
is "$REPLY" "peer all 0:56" "own = never: 512 MiB of the driver's own, the 56 directions on"
cli2 suspend "$B_pid"
is "$rc:$out" "1:$B_pid: suspend failed: REFUSED: refusing to suspend a process with peer access between its GPUs ($mesh) and an allocation over 256 MiB (512 MiB by cuMemAlloc_v2 in fake_target): the driver cannot restore it; [memory] own = auto owns such memory, [peer] mode = off turns the access off (state running)" \
	"refused before the lock, in one line naming the 56 directions"
write_ini "[memory]" "own = never" "[peer]" "mode = off" "[log]" "level = info"
cli2 suspend "$B_pid"
is "$rc:$(peers_on "$B_pid")" "0:0" "[peer] mode = off: suspended, the driver had none of the 56 on at the checkpoint ($out)"
cli2 resume --gpu-map "$(map_of "${perms[2]}")" "$B_pid"
is "$rc" 0 "resumed onto a permutation ($out)"
ask B verify
is "$REPLY" "verify ok" "its memory intact"
is "$(field "$B_pid" peer)" "off since the resume: $mesh" "the status: all 56 off since the resume"
log_like "$T/B.err" "peer access between its GPUs stays off after the resume \(off since the resume: $mesh\): cuCtxEnablePeerAccess: CUDA_ERROR_INVALID_HANDLE \(400\)" \
	"said in the log, in one line"
ask B "drv peer export can all 8"
r=$REPLY
ask B "drv peer export on all 8"
is "$r:$REPLY" "peer all 0:56:peer all 217:56" "the app is told none of the 56 can be, and turning one on answers PEER_ACCESS_UNSUPPORTED"
ask B quit
wait "$B_pid" 2> /dev/null
rm -f "$T/fake/$B_pid".*

# -- a light nap over eight GPUs: what cudanap owns on each (258 MiB on the even CUDA devices, in
# two pieces, 34 on the odd ones) copied to the host and back, the access each piece had given
# again
write_ini "[nap]" "depth = light" "keep_host_copy = false" "[log]" "level = info"
lsize() { echo $(($1 % 2 ? 34 : 258)); }
CUDANAP_FAKE_START_GPU=$all8 start L "$TARGET"
for d in 0 1 2 3 4 5 6 7; do
	ask L "drv vmm use $d"
	ask L "drv slot $d"
	ask L "drv alloc export $(lsize "$d")"
	ask L "drv vmm word A 0 $((d + 1))"
	ask L "drv vmm word A $(($(lsize "$d") - 1)) $((d + 11))"
done
ask L "drv peer export on all 8"
is "$REPLY" "peer all 0:56" "a second process, on all 8 GPUs, the 56 directions on"
# lwords L: its words, "D:FIRST,LAST" for each device
lwords() {
	local d out=
	for d in 0 1 2 3 4 5 6 7; do
		ask "$1" "drv slot $d"
		ask "$1" "drv vmm word A 0"
		out+="$d:${REPLY#vmm word 0 },"
		ask "$1" "drv vmm word A $(($(lsize "$d") - 1))"
		out+="${REPLY#vmm word 0 } "
	done
	echo "${out% }"
}
want="0:1,11 1:2,12 2:3,13 3:4,14 4:5,15 5:6,16 6:7,17 7:8,18"
before=$(held "$L_pid")
cli2 nap "$L_pid"
is "$rc" 0 "napped ($out)"
check "lightly, its context kept" eventually 10 light_napped "$L_pid"
is "$(held "$L_pid")" $((before - 1168)) "the 1168 MiB it owned on the 8 GPUs given back"
like "$(field "$L_pid" light_mib)" "^1168(\.0+)?$" "on the host"
is "$(cat "$T/fake/$L_pid.pinned" 2> /dev/null)" $((1168 << 20)) "pinned"
"$CUDANAP" status "$L_pid" > /dev/null
is "$(field "$L_pid" gpu_now | tr , '\n' | sort -n | paste -sd,)" "0:100,1:100,2:100,3:100,4:100,5:100,6:100,7:100" \
	"each of the 8 GPUs left with its context's 100 MiB (NVML, as cudanap status asks it)"
is "$(field "$L_pid" state):$(field "$L_pid" nap)" "napping:napping" "and asking did not wake it"
ask L "drv launch export 5" 30
is "$REPLY" "launch 0" "its next call wakes it"
check "woken" woke "$L_pid"
is "$(lwords L)" "$want" "every word back on each GPU, at the same addresses"
is "$(held "$L_pid"):$(cat "$T/fake/$L_pid.pinned" 2> /dev/null)" "$before:0" "its memory back on the GPUs, the host copy let go"
lreach() {
	local d e bad=
	for d in 0 1 2 3 4 5 6 7; do
		ask "$1" "drv slot $d"
		for e in 0 1 2 3 4 5 6 7; do
			ask "$1" "drv vmm touch A $e 0"
			[ "$REPLY" = "vmm touch 0" ] || bad+="$e->$d=${REPLY#vmm touch } "
		done
	done
	echo "${bad:-all}"
}
is "$(lreach L)" all "every GPU reaches every allocation again"
ask L "drv peer export on all 8"
is "$REPLY:$(peers_on "$L_pid")" "peer all 704:56:56" "the 56 directions still on"
ask L quit
wait "$L_pid" 2> /dev/null
rm -f "$T/fake/$L_pid".*

# -- a job of eight ranks, one a GPU (rank r on CUDA device r: GPU 7-r), on NCCL's default
# transports through its suspend API, suspended and resumed as one, permuted at every other resume
export CUDANAP_FAKE_NCCL=$FAKENCCL
unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_NET_GDR_LEVEL
. "$(dirname "$0")/fakerank.sh"
write_ini "[lock]" "timeout_ms = 10000"
ranks=() started=0
for r in 0 1 2 3 4 5 6 7; do
	CUDANAP_FAKE_START_GPU=$((7 - r)) start "R$r" "$TARGET" || continue
	ask "R$r" "nccl init job8 $r 8"
	[ "$REPLY" = "nccl ok" ] || { diag "rank $r: $REPLY"; continue; }
	ranks+=("$(eval echo "\$R${r}_pid")")
done
for r in 0 1 2 3 4 5 6 7; do
	ask "R$r" "nccl loop 10"
	[ "$REPLY" = "nccl ok" ] && started=$((started + 1))
done
is "${#ranks[@]}:$started" "8:8" "eight ranks, a communicator of 8, all-reducing"
stepped() { local n; n=$(steps "$1"); [ "${n%% *}" -gt "$2" ]; } # stepped NAME N: past N steps
# ranks_on P: "" when rank r is on the GPU P puts its GPU (7-r) on, else where each is
ranks_on() {
	local -a to
	local r bad=
	read -ra to <<< "$1"
	for r in 0 1 2 3 4 5 6 7; do
		ask "R$r" gpu
		[ "$REPLY" = "gpu ${to[$((7 - r))]}" ] || bad+="rank $r $REPLY; "
	done
	echo "$bad"
}
jcycles=4 jok=0
for c in $(seq $jcycles); do
	p=$home
	[ $((c % 2)) = 1 ] && p=${perms[$((c % ${#perms[@]}))]}
	out=$("$CUDANAP" suspend "${ranks[@]}" 2>&1) || { diag "job cycle $c: $out"; break; }
	bad=
	for q in "${ranks[@]}"; do
		[ "$(field "$q" state)" = checkpointed ] && [ ! -e "$T/fake/$q.peer" ] || bad+="$q "
	done
	[ -z "$bad" ] || { diag "job cycle $c: not all checkpointed, their imports released: $bad"; break; }
	out=$("$CUDANAP" resume --gpu-map "$(map_of "$p")" "${ranks[@]}" 2>&1) || { diag "job cycle $c: $out"; break; }
	why=$(ranks_on "$p")
	for q in "${ranks[@]}"; do
		[ -e "$T/fake/$q.peer" ] || why+="$q without its peer imports; "
	done
	[ -z "$why" ] || { diag "job cycle $c, onto $p: $why"; break; }
	for r in 0 1 2 3 4 5 6 7; do
		n=$(steps "R$r")
		eventually 30 stepped "R$r" "${n%% *}" || bad+="rank $r stalled at ${n%% *}; "
		ask "R$r" verify
		[ "$REPLY" = "verify ok" ] || bad+="rank $r $REPLY; "
	done
	[ -z "$bad" ] || { diag "job cycle $c: $bad"; break; }
	jok=$c
done
is "$jok" $jcycles "$jcycles whole-job suspends and resumes, the 8 ranks permuted over the GPUs at every other: on the GPUs the map names, their peer imports back, all training on, every byte back"
fails=0
for r in 0 1 2 3 4 5 6 7; do fails=$((fails + $(steps "R$r" | cut -d' ' -f2))); done
is "$fails:$(cat "$T/fake/nccl/misuse" 2> /dev/null)" "0:" "no NCCL call failed, none reached a suspended communicator"
check "no rank waited for an operation a peer never issued" bash -c "! compgen -G '$T/fake/nccl/*unmatched*'"
is "$(cd "$T/fake/nccl" && echo stray.*)" "stray.*" "NCCL set back no device but each communicator's"
for r in 0 1 2 3 4 5 6 7; do ask "R$r" quit; done
unset CUDANAP_FAKE_NCCL

# -- the size the issue's machines have: 100 GiB on each of the 8 GPUs, 3,200 owned pieces, each
# mapped for the 8 GPUs once the 56 directions are on; the host copy, 800 GiB, refused in one line
# where the host has less (the fake's checkpoint copies nothing, so the times are cudanap's own)
export CUDANAP_FAKE_GPU_MIB=110000
write_ini
CUDANAP_FAKE_START_GPU=$all8 start S "$TARGET"
t0=$(date +%s%N)
made=0
for d in 0 1 2 3 4 5 6 7; do
	ask S "drv vmm use $d"
	ask S "drv slot $d"
	ask S "drv alloc export 102400" 120
	[ "$REPLY" = "alloc 0" ] && made=$((made + 1))
	ask S "drv vmm word A 102399 $d"
done
ask S "drv peer export on all 8" 120
t1=$(date +%s%N)
is "$made:$REPLY" "8:peer all 0:56" "100 GiB on each GPU, then the 56 directions on"
"$CUDANAP" status "$S_pid" > /dev/null
like "$(field "$S_pid" peer)" "^$mesh; owned: 819200 MiB in 3200 pieces of 256 MiB at most \(8 allocations, 0 handles\)$" \
	"3,200 pieces, said in one line"
bad=
for d in 0 7; do
	ask S "drv slot $d"
	for e in 0 1 2 3 4 5 6 7; do
		ask S "drv vmm touch A $e 102399"
		[ "$REPLY" = "vmm touch 0" ] || bad+="$e->$d "
	done
done
is "${bad:-all}" all "the access mirrored into the last piece of each: every GPU reaches it"
avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
t2=$(date +%s%N)
cli2 suspend "$S_pid"
t3=$(date +%s%N)
if [ "$avail" -lt 900000 ]; then
	like "$rc:$out" "^1:$S_pid: suspend failed: NO_HOST_MEMORY: the process holds 820000 MiB on its GPUs, but the host copy can have only [0-9]+ MiB" \
		"the host copy of 8 x 100 GiB: refused in one line where the host has less ($avail MiB)"
	is "$(field "$S_pid" state)" running "it runs on"
else
	is "$rc" 0 "a host with the memory: suspended ($out)"
	"$CUDANAP" resume "$S_pid" > /dev/null
fi
ask S "drv slot 3"
ask S "drv vmm word A 102399"
is "$REPLY" "vmm word 0 3" "its memory as it was"
t4=$(date +%s%N)
ask S "drv free export" 60
for d in 0 1 2 3 4 5 6 7; do ask S "drv slot $d"; ask S "drv free export" 60; done
t5=$(date +%s%N)
"$CUDANAP" status "$S_pid" > /dev/null
is "$(held "$S_pid"):$(field "$S_pid" peer)" "0:$mesh" "all freed, every piece given back"
diag "$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" -v f="$t5" 'BEGIN {
	printf "8 x 100 GiB made and mirrored in %.2f s, the suspend answered in %.2f s, freed in %.2f s", (b - a) / 1e9, (d - c) / 1e9, (f - e) / 1e9 }')"
ask S quit
finish
