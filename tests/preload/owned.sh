#!/usr/bin/env bash
# [memory] own, with the fake driver modelling driver 580's line (fakevmm.c, fakepeer.c): memory
# over 256 MiB that another GPU may access is lost at the restore, as one handle or one allocation
# of cuMemAlloc's. In a process that sees two GPUs, cudanap serves a large cuMemAlloc (and a pitched
# one, and a handle of cuMemCreate's) from pieces of 256 MiB at most: the process is suspended,
# resumed (onto swapped GPUs too) and napped with peer access on, its memory at the same addresses,
# intact, the other GPU's access kept, and what the app asks of it (its range, a free inside it, a
# CUDA IPC export) answered as the driver answers for its own. What cudanap does not own and the
# driver cannot restore (own = never, a pool another GPU may access) is
# refused before the lock by the suspend, the nap and the dry run alike, in one line; the fake
# driver shows what the refusal saves: the same process checkpointed anyway is lost.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=2
export CUDANAP_FAKE_GPU_MIB=80000 # memory counted: what is freed shows
mkdir "$T/fake"
owned_of() { field "$1" peer | grep -o 'owned: [^(;]*'; }

# -- the driver's line, as the fake models it: one handle of 600 MiB mapped to the other GPU
write_ini "[memory]" "own = never"
start L "$TARGET"
ask L "drv vmm use 0"
ask L "drv vmm make 600"
is "$REPLY" "vmm make 0" "own = never: a handle of 600 MiB, as XLA makes its pool's"
ask L "drv vmm share 1"
is "$REPLY" "vmm share 0" "mapped to the other GPU"
cli2 suspend --dry-run "$L_pid"
like "$rc:$out" "^1:$L_pid: would refuse: refusing to suspend a process with an allocation over 256 MiB mapped to another GPU \(GPU 0->1: 600 MiB of cuMemCreate's in fake_target\): the driver cannot restore it; \[memory\] own = auto owns such memory$" \
	"the dry run refuses it, naming the GPUs, the allocation and the library"
cli2 suspend "$L_pid"
like "$rc:$out" "^1:$L_pid: suspend failed: REFUSED: refusing to suspend a process with an allocation over 256 MiB mapped to another GPU .* \(state running\)$" \
	"the suspend: refused before the lock, the process runs"
cli2 nap "$L_pid"
like "$rc:$out" "^1:$L_pid: nap failed: REFUSED: refusing to suspend a process with an allocation over 256 MiB mapped" "the nap too"
for step in lock checkpoint; do "$FAKECTL" "$FAKECUDA" $step "$L_pid" > /dev/null; done
is "$("$FAKECTL" "$FAKECUDA" restore "$L_pid"):$("$FAKECTL" "$FAKECUDA" restore "$L_pid")" \
	CUDA_ERROR_INVALID_VALUE:CUDA_ERROR_OPERATING_SYSTEM "checkpointed by the driver's calls anyway, it is lost, as on driver 580"
kill -9 "$L_pid"
wait "$L_pid" 2> /dev/null

# -- own = auto, two GPUs: a large cuMemAlloc is owned, the small one is the driver's
write_ini "[log]" "level = info"
start A "$TARGET"
pid=$A_pid
ask A "drv vmm use 0"
ask A "drv alloc export 200"
is "$REPLY" "alloc 0" "200 MiB by cuMemAlloc: under the line, the driver's own"
is "$(owned_of "$pid")" "" "nothing owned"
ask A "drv alloc export 600"
is "$REPLY" "alloc 0" "600 MiB by cuMemAlloc"
cli2 status "$pid"
like "$out" $'\n'"$pid: owned memory: 600 MiB in 3 pieces of 256 MiB at most \(1 allocation, 0 handles\)" \
	"cudanap status: 600 MiB owned, in 3 pieces"
ask A "drv vmm range A 300"
is "$REPLY" "vmm range 0 0 600" "cuMemGetAddressRange inside it: its start and 600 MiB, as the driver answers for its own"
ask A "drv vmm attr A 599"
is "$REPLY" "vmm attr 0 0 600" "cuPointerGetAttribute's range too"
ask A "drv vmm freeat 100"
is "$REPLY" "vmm freeat 1" "a free of an interior pointer: INVALID_VALUE, as the driver's"
for off in 0 300 599; do ask A "drv vmm word A $off $((off + 7))"; done
is "$REPLY" "vmm word 0 606" "words written at 0, 300 and 599 MiB"
ask A "drv vmm touch A 1 300"
is "$REPLY" "vmm touch 700" "GPU 1 has no access yet: ILLEGAL_ADDRESS, as without peer access"
ask A "drv peer export on 1 0"
is "$REPLY" "peer 0" "peer access: GPU 1 may access GPU 0's memory"
ask A "drv vmm touch A 1 300"
is "$REPLY" "vmm touch 0" "and reads the owned allocation: the access mirrored"
ask A "drv peer export on 0 1"
base=$(field "$pid" peer)

# suspended and resumed with peer access on, onto the same and onto swapped GPUs
for map in "" "0=1, 1=0"; do
	cli2 suspend "$pid"
	is "$rc" 0 "suspended with peer access on and 600 MiB owned ($out)"
	cli2 resume --gpu-map "$map" "$pid"
	is "$rc" 0 "resumed${map:+ onto the swapped GPUs} ($out)"
	got=
	for off in 0 300 599; do
		ask A "drv vmm word A $off"
		got+="${REPLY#vmm word 0 } "
	done
	is "$got" "7 307 606 " "every word back, at the same addresses"
	ask A "drv vmm touch A 1 450"
	is "$REPLY" "vmm touch 0" "GPU 1 still reaches it"
	ask A "drv vmm range A 10"
	is "$REPLY" "vmm range 0 0 600" "its range as before"
done
ask A "drv alloc export 700"
is "$REPLY" "alloc 0" "after the resumes, 700 MiB more"
ask A "drv vmm touch A 1 650"
is "$REPLY" "vmm touch 0" "the new allocation is mapped to GPU 1 too (peer access was on before it)"
"$CUDANAP" status "$pid" > /dev/null
like "$(owned_of "$pid")" "^owned: 1300 MiB in 6 pieces" "both owned"
ask A "drv vmm ipc"
is "$REPLY" "vmm ipc 1" "a CUDA IPC export of owned memory: refused, as the driver refuses its own pieces'"
ask A "drv free export"
is "$REPLY" "free 0" "the 700 MiB freed"
"$CUDANAP" status "$pid" > /dev/null
like "$(owned_of "$pid")" "^owned: 600 MiB in 3 pieces" "and no longer owned"
like "$(field "$pid" peer)$("$CUDANAP" status --json "$pid" | grep -o '"peer":"[^"]*"')" "1 export of owned memory refused" \
	"the status says the refused export"

# a nap: napped, woken by the next call that works the GPU
cli2 nap "$pid"
is "$rc" 0 "napped with owned memory ($out)"
ask A "drv launch export 5" 30
is "$REPLY" "launch 0" "the next call wakes it and works"
check "woken" woke "$pid"
like "$(cat "$T/A.err")" "woke for a driver call" "its log says the wake"
ask A quit
wait "$pid" 2> /dev/null

# -- a pitched allocation, and a handle of cuMemCreate's over the line
write_ini
start B "$TARGET"
ask B "drv vmm use 0"
ask B "drv vmm pitch 20000 20000"
is "$REPLY" "vmm pitch 0 20480" "cuMemAllocPitch of 20000 x 20000: the driver's pitch for that width"
ask B "drv vmm range A 200"
is "$REPLY" "vmm range 0 0 390" "owned: pitch times rows"
ask B "drv vmm create 600"
is "$REPLY" "vmm create 0" "a handle of 600 MiB by cuMemCreate"
ask B "drv vmm props"
is "$REPLY" "vmm props 0 0" "its properties: GPU 0"
ask B "drv vmm export"
is "$REPLY" "vmm export 801" "an export of it: NOT_SUPPORTED (it is no one handle now)"
ask B "drv vmm map"
is "$REPLY" "vmm map 0" "mapped whole into a range"
ask B "drv vmm release"
is "$REPLY" "vmm release 0" "and released (its mapping keeps it)"
ask B "drv vmm share 1"
is "$REPLY" "vmm share 0" "mapped to the other GPU"
ask B "drv vmm word V 500 42"
cli2 suspend --dry-run "$B_pid"
like "$rc:$out" "^0:$B_pid: would suspend" "the dry run says yes: the handle is in pieces"
cli2 suspend "$B_pid"
is "$rc" 0 "suspended ($out)"
cli2 resume "$B_pid"
is "$rc" 0 "resumed ($out)"
ask B "drv vmm word V 500"
is "$REPLY" "vmm word 0 42" "its word back"
ask B "drv vmm touch V 1 599"
is "$REPLY" "vmm touch 0" "GPU 1 reaches it"
ask B "drv vmm drop"
is "$REPLY" "vmm drop 0" "unmapped and freed"
"$CUDANAP" status "$B_pid" > /dev/null
like "$(field "$B_pid" peer)" "owned: 392 MiB in 2 pieces of 256 MiB at most \(1 allocation, 0 handles\)" \
	"the handle's pieces gone, the pitched allocation left (390 MiB, in whole 2 MiB granules)"
before=$(held "$B_pid")
ask B "drv vmm create 600"
ask B "drv vmm map"
is "$(held "$B_pid")" $((before + 600)) "another handle of 600 MiB, mapped: 600 MiB more on the GPU"
ask B "drv vmm ncclfree"
is "$REPLY" "vmm ncclfree 0 600" "freed as NCCL frees its own: retained at its address, its range 600 MiB, unmapped, released, the range freed"
is "$(held "$B_pid")" "$before" "every piece given back"

# -- a pool another GPU may access: refused until the access is taken back
ask B "drv vmm pool 1 on"
cli2 suspend "$B_pid"
like "$rc:$out" "^1:$B_pid: suspend failed: REFUSED: refusing to suspend a process with a memory pool another GPU may access \(GPU 0->1 by cuMemPoolSetAccess in fake_target\): the driver restores the pool without that access, and that GPU's next use of it faults; free its memory or take the access back first \(state running\)$" \
	"a pool another GPU may access: refused in one line"
ask B "drv vmm pool 1 off"
cli2 suspend "$B_pid"
is "$rc" 0 "the access taken back: suspended"
"$CUDANAP" resume "$B_pid" > /dev/null
ask B quit
wait "$B_pid" 2> /dev/null

# -- who owns: auto needs two GPUs, always owns on one
export CUDANAP_FAKE_GPUS=1
write_ini
start C "$TARGET"
ask C "drv vmm use 0"
ask C "drv alloc export 600"
is "$(owned_of "$C_pid")" "" "one GPU, own = auto: the driver's own"
ask C quit
write_ini "[memory]" "own = always"
start D "$TARGET"
ask D "drv vmm use 0"
ask D "drv alloc export 600"
"$CUDANAP" status "$D_pid" > /dev/null
like "$(owned_of "$D_pid")" "^owned: 600 MiB" "own = always: owned on one GPU too"
ask D quit
printf '[memory]\nown = sometimes\n' > "$T/bad.ini"
cli2 check-config "$T/bad.ini"
is "$rc:$out" "78:cudanap: $T/bad.ini:2: memory.own: 'sometimes' is not auto, always or never" "check-config: a bad value, in one line"
finish
