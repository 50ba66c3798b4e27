#!/usr/bin/env bash
# Placement on a fake machine of three GPUs: gpu_map names where the GPUs the job started on go,
# by index in nvidia-smi (PCI) order or by UUID; the same map twice leaves the job where it is, an
# empty map brings it home, resume --gpu-map applies to one resume; refusals leave it restorable;
# the status says where the job is, where it started and where a resume will put it.
. "$(dirname "$0")/../lib.sh"
export CUDANAP_LIBCUDA=$FAKECUDA CUDANAP_LIBNVML=$FAKECUDA CUDANAP_FAKE_DIR=$T/fake CUDANAP_FAKE_GPUS=3
mkdir "$T/fake"
uuid() { printf 'GPU-face0000-0000-0000-0000-0000000000%02x' "$1"; }
write_ini
start A "$TARGET" || diag "target did not start"
pid=$A_pid
ask A gpu
is "$REPLY" "gpu 0" "starts on GPU 0"
is "$(field "$pid" gpus)" "" "before its first suspend the status does not know its GPUs"

resume_with() { # resume_with GPU_MAP: suspend, set the map, resume; prints cudanap resume's line
	"$CUDANAP" suspend "$pid" > /dev/null
	write_ini "[restore]" "gpu_map = $1"
	"$CUDANAP" resume "$pid"
}

out=$(resume_with "0=1, 1=0"); rc=$?
is "$rc" 0 "resume with gpu_map = 0=1, 1=0"
like "$out" "^$pid: resumed in .*\) on GPU 1 \(it started on GPU 0\)$" "its line names where it went"
ask A gpu
is "$REPLY" "gpu 1" "now on GPU 1 (PCI order, not CUDA order)"
ask A verify
is "$REPLY" "verify ok" "data intact after the move"
is "$(field "$pid" gpus)|$(field "$pid" home_gpus)|$(field "$pid" restore_gpus)" "1=$(uuid 1)|0=$(uuid 0)|" \
	"the status: on GPU 1, started on GPU 0"

# -- the same map again: the job stays (it used to bounce back to GPU 0)
"$CUDANAP" suspend "$pid" > /dev/null
is "$(field "$pid" gpus)|$(field "$pid" restore_gpus)" "1=$(uuid 1)|1=$(uuid 1)" \
	"asleep with the map unchanged: slept from GPU 1, a resume puts it on GPU 1"
like "$("$CUDANAP" status -c "$T/job.ini")" "(^|
)$pid +checkpointed .* 1 +[0-9]+ " "cudanap status shows GPU 1"
cli resume "$pid"
ask A gpu
is "$rc:$REPLY" "0:gpu 1" "the same map applied twice leaves the job where it is"

out=$(resume_with "$(uuid 0)=$(uuid 2), $(uuid 2)=$(uuid 0)"); rc=$?
is "$rc" 0 "a map by UUID (GPU 1 completed as identity)"
ask A gpu
is "$REPLY" "gpu 2" "now on GPU 2: the map names the GPU the job started on"

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
cli resume "$pid"
is "$rc" 0 "a good map then resumes"
ask A gpu
is "$REPLY" "gpu 2" "on GPU 2: 0=2 puts the GPU it started on there"
ask A verify
is "$REPLY" "verify ok" "data intact after four restores"

write_ini
"$CUDANAP" suspend "$pid" > /dev/null
like "$("$CUDANAP" status -c "$T/job.ini")" "(^|
)$pid +checkpointed .* 2>0 +[0-9]+ " "cudanap status: asleep on GPU 2, to GPU 0 by the INI read at the suspend"
is "$(field "$pid" restore_gpus)" "0=$(uuid 0)" "restore_gpus in the status file"
cli resume "$pid"
is "$rc" 0 "an empty map"
ask A gpu
is "$REPLY" "gpu 0" "brings the job home to GPU 0"
out=$(resume_with ""); rc=$?
ask A gpu
is "$rc:$REPLY" "0:gpu 0" "and keeps it there"
like "$out" "^$pid: resumed in [^)]*\)$" "home, no map given: nothing to say of where"

# -- one resume elsewhere, for a scheduler: the INI unchanged
"$CUDANAP" suspend "$pid" > /dev/null
cli resume --gpu-map "0=2, 2=0" "$pid"
ask A gpu
is "$rc:$REPLY" "0:gpu 2" "resume --gpu-map 0=2,2=0 moves it for this resume"
like "$out" "^$pid: resumed in .*\) on GPU 2 \(it started on GPU 0\)$" "its line names where it went"
check "the request is taken" test ! -e "$T/status/$pid.gpu-map"
out=$(resume_with ""); rc=$?
ask A gpu
is "$rc:$REPLY" "0:gpu 0" "the next resume follows the INI again: home"
write_ini "[restore]" "gpu_map = 0=1, 1=0"
"$CUDANAP" suspend "$pid" > /dev/null
cli resume --gpu-map "" "$pid"
ask A gpu
is "$rc:$REPLY" "0:gpu 0" "resume --gpu-map '' keeps the job home whatever the INI says"
like "$out" "^$pid: resumed in .*\) on GPU 0 \(it started on GPU 0\)$" "a map given: the line says where, home too"
"$CUDANAP" suspend "$pid" > /dev/null
printf '0=x\n' > "$T/status/$pid.gpu-map"
cli resume "$pid"
like "$out:$rc" "resume failed: BAD_GPU_MAP: --gpu-map: '0=x': .*still suspended.*:1" \
	"a broken one-shot map refuses the resume in one line"
cli resume "$pid"
ask A verify
is "$rc:$REPLY" "0:verify ok" "the next resume works, data intact"
ask A quit
finish
