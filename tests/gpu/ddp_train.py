# A two-rank (or --ranks N) PyTorch job (NCCL) for tests/gpu/ddp.sh and tools/bench_nccl.py: DDP or FSDP, fixed
# seeds, deterministic algorithms; rank 0 prints every step's loss. Started by torchrun (RANK in
# the environment) or, without it, spawns its two ranks itself (mp.spawn).
#   python3 ddp_train.py STEPS [--fsdp] [--busy] [--width N] [--layers N] [--sleep S] [--time]
#                              [--ranks N] [--timeout S]
# --busy: no pause between steps and bf16 autocast, so that a collective is nearly always in
# flight; --time: print the median step time instead of losses (the benchmark); --timeout: the
# process group's timeout in seconds (PyTorch's default 10 minutes).
import argparse
import datetime
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def model_for(args):
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.GELU()]
    layers.append(torch.nn.Linear(args.width, 1))
    return torch.nn.Sequential(*layers)


def run(rank, world, args):
    torch.cuda.set_device(rank % torch.cuda.device_count())
    timeout = datetime.timedelta(seconds=args.timeout) if args.timeout else None
    dist.init_process_group("nccl", rank=rank, world_size=world, timeout=timeout)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    model = model_for(args).cuda()
    if args.fsdp:
        from torch.distributed.fsdp import FullyShardedDataParallel

        net = FullyShardedDataParallel(model, device_id=torch.cuda.current_device())
    else:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(rank)
    print(f"rank {rank} pid {os.getpid()} gpu {torch.cuda.current_device()}", flush=True)
    times = []
    for step in range(args.steps):
        t0 = time.perf_counter()
        x = torch.randn(args.batch, args.width, device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.busy):
            out = net(x)
        loss = torch.nn.functional.mse_loss(out.float(), x.sum(1, keepdim=True) / args.width)
        opt.zero_grad()
        loss.backward()
        opt.step()
        value = loss.item()
        times.append(time.perf_counter() - t0)
        if rank == 0 and not args.time:
            print(f"step {step} {value:.10e}", flush=True)
        if not args.busy:
            time.sleep(args.sleep)
    dist.barrier()
    if rank == 0 and args.time:
        warm = times[len(times) // 5:]
        print(f"time {statistics.median(warm) * 1e3:.3f} ms", flush=True)
    dist.destroy_process_group()
    if rank == 0:
        print("done", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("steps", type=int)
    p.add_argument("--fsdp", action="store_true")
    p.add_argument("--busy", action="store_true")
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--sleep", type=float, default=0.1)
    p.add_argument("--time", action="store_true")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--timeout", type=float, default=0)
    args = p.parse_args()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if "RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    mp.spawn(run, args=(args.ranks, args), nprocs=args.ranks)


if __name__ == "__main__":
    main()
