#!/usr/bin/env bash
# gpu_map on a fake machine: indices in nvidia-smi (PCI) order, UUIDs, completion with identity
# pairs, and refusals that leave the job restorable.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=3
mkdir "$T/fake"
uuid() { printf 'GPU-face0000-0000-0000-0000-0000000000%02x' "$1"; }
write_ini
start A "$TARGET" || diag "target did not start"
pid=$A_pid
ask A gpu
is "$REPLY" "gpu 0" "starts on GPU 0"

resume_with() { # resume_with GPU_MAP: suspend, set the map, resume; prints cudanap resume's line
	"$CUDANAP" suspend "$pid" > /dev/null
	write_ini "[restore]" "gpu_map = $1"
	"$CUDANAP" resume "$pid"
}

out=$(resume_with "0=1, 1=0"); rc=$?
is "$rc" 0 "resume with gpu_map = 0=1, 1=0"
ask A gpu
is "$REPLY" "gpu 1" "now on GPU 1 (PCI order, not CUDA order)"
ask A verify
is "$REPLY" "verify ok" "data intact after the move"

out=$(resume_with "$(uuid 1)=$(uuid 2), $(uuid 2)=$(uuid 1)"); rc=$?
is "$rc" 0 "resume with a map by UUID (GPU 0 completed as identity)"
ask A gpu
is "$REPLY" "gpu 2" "now on GPU 2"

out=$(resume_with "2=0"); rc=$?
is "$rc" 1 "an ambiguous map is refused"
like "$out" "BAD_GPU_MAP: restore: gpu_map moves GPU 2 onto GPU 0 but says nothing of where GPU 0 goes; add 0=N \(state checkpointed\)" \
	"with a clear line, and the job stays checkpointed"
out=$(resume_with "2=7"); rc=$?
like "$out:$rc" "gpu_map names GPU 7, but this machine has GPUs 0-2 .*:1" "an index beyond the machine is refused"
out=$(resume_with "$(uuid 9)=0"); rc=$?
like "$out:$rc" "gpu_map names GPU-face0000-0000-0000-0000-000000000009, which this machine does not have.*:1" \
	"an unknown UUID is refused"
is "$(field "$pid" state)" checkpointed "still checkpointed after three refusals"
write_ini "[restore]" "gpu_map = 2=0, 0=2"
out=$("$CUDANAP" resume "$pid"); rc=$?
is "$rc" 0 "a good map then resumes"
ask A gpu
is "$REPLY" "gpu 0" "back on GPU 0"
ask A verify
is "$REPLY" "verify ok" "data intact after four restores"

write_ini
out=$(resume_with ""); rc=$?
is "$rc" 0 "an empty map restores in place"
ask A gpu
is "$REPLY" "gpu 0" "still on GPU 0"
ask A quit
finish
