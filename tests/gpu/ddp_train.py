# A two-rank PyTorch DDP job (NCCL) for tests/gpu/ddp.sh: fixed seeds, deterministic algorithms,
# rank 0 prints every step's loss. Usage: python3 ddp_train.py STEPS
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, steps):
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)
    ).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator(device="cuda").manual_seed(rank)
    print(f"rank {rank} pid {os.getpid()}", flush=True)
    for step in range(steps):
        x = torch.randn(512, 256, device="cuda", generator=gen)
        loss = torch.nn.functional.mse_loss(ddp(x), x.sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        value = loss.item()
        if rank == 0:
            print(f"step {step} {value:.10e}", flush=True)
        time.sleep(0.1)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("done", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
