"""A small regression trained with DDP (or FSDP2) on gloo; each failure is a flag away.

Runs as one process too (no process group) so that a single-process diagnosis of the same
script can be compared with the distributed one.
    --nan-rank R --nan-step S   rank R's batch carries a NaN at step S
    --crash-rank R --crash-step S   rank R raises ValueError at step S
    --kill-rank R               rank R is killed outright (SIGKILL) at step --crash-step
    --nan-weight-rank R         after step --nan-step, one weight on rank R turns NaN
    --lr LR                     SGD learning rate (1e4 diverges)
    --fsdp                      shard with torch.distributed.fsdp.fully_shard (DTensor params)
"""

import argparse
import os
import signal

import torch
import torch.distributed as dist
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--nan-rank", type=int, default=-1)
parser.add_argument("--nan-step", type=int, default=3)
parser.add_argument("--crash-rank", type=int, default=-1)
parser.add_argument("--crash-step", type=int, default=2)
parser.add_argument("--kill-rank", type=int, default=-1)
parser.add_argument("--nan-weight-rank", type=int, default=-1)
parser.add_argument("--fsdp", action="store_true")
args = parser.parse_args()

torch.set_num_threads(1)
distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo")
rank = dist.get_rank() if distributed else 0

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
if distributed and args.fsdp:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    # A CPU mesh: the default picks CUDA when torch sees a GPU, one per rank.
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    fully_shard(net[0], mesh=mesh)
    fully_shard(net, mesh=mesh)
    model = net
elif distributed:
    model = nn.parallel.DistributedDataParallel(net)
else:
    model = net
opt = torch.optim.SGD(model.parameters(), lr=args.lr)

gen = torch.Generator().manual_seed(100 + rank)
for step in range(args.steps):
    x = torch.randn(64, 8, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    if rank == args.nan_rank and step == args.nan_step:
        x[5, 2] = float("nan")
    if rank == args.crash_rank and step == args.crash_step:
        raise ValueError(f"bad shard on rank {rank} at step {step}")
    if rank == args.kill_rank and step == args.crash_step:
        os.kill(os.getpid(), signal.SIGKILL)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    if rank == args.nan_weight_rank and step == args.nan_step:
        with torch.no_grad():  # a corrupted local shard (a bad update on one rank)
            weight = net[0].weight
            local = weight.to_local() if hasattr(weight, "to_local") else weight
            local.view(-1)[0] = float("nan")
print(f"rank {rank}: done")
if distributed:
    dist.destroy_process_group()
