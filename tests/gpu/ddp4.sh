#!/usr/bin/env bash
# Four PyTorch DDP ranks (NCCL, [nccl] suspendable) on four GPUs, suspended with --tree and each
# moved one GPU over by gpu_map at the resume; every loss against an uninterrupted 4-rank run.
. "$(dirname "$0")/../lib.sh"
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || skip_all "no NVIDIA GPU or driver"
[ "$(nvidia-smi -L | wc -l)" -ge 4 ] || skip_all "needs four GPUs"
python3 -c 'import torch, torch.distributed; assert torch.cuda.device_count() >= 4 and torch.distributed.is_nccl_available()' 2> /dev/null ||
	skip_all "needs PyTorch with NCCL and four GPUs"
py=$(dirname "$0")/ddp_train.py
. "$(dirname "$0")/ddp_lib.sh"
small=60
nccl_ini
"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" $small --ranks 4 > "$T/r4.ref" 2> "$T/r4.err"
"$CUDANAP" run -c "$T/job.ini" -- python3 "$py" $small --ranks 4 > "$T/r4.out" 2>> "$T/r4.err" &
root=$!
wait_step "$T/r4.out" 5
read -r -a r4 <<< "$(ranks_of "$T/r4.out")"
before=$(gpus_of "${r4[@]}")
"$CUDANAP" suspend --tree "$root" > /dev/null
nccl_ini "[restore]" "gpu_map = 0=1, 1=2, 2=3, 3=0"
cli resume --tree "$root"
want=
for g in $before; do
	[[ $g =~ ^[0-3]$ ]] && want="$want$(( (g + 1) % 4 )) " || want="${want}? "
done
is "$rc:$(gpus_of "${r4[@]}")" "0:${want% }" "4 ranks rotated one GPU over (from $before)"
# the map names where the GPUs the ranks started on go: applied again, nothing moves
"$CUDANAP" suspend --tree "$root" > /dev/null
cli resume --tree "$root"
is "$rc:$(gpus_of "${r4[@]}")" "0:${want% }" "the same map again: the ranks stay where they are"
nccl_ini
check "the 4-rank job finishes" wait_done "$T/r4.out" "$root"
check "every loss bit-identical to the uninterrupted run" test "$(losses "$T/r4.out")" = "$(losses "$T/r4.ref")"
finish
