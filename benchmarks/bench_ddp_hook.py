"""Cost of diagnose's DDP comm hook (local-gradient aminmax, then the default all-reduce).

One process, gloo, world size 1 (the all-reduce still runs through gloo), two identical DDP
models trained side by side and interleaved: one built with the hook (GradWatch installed),
one without. Prints the median step time of each and their ratio.

    .venv/bin/python benchmarks/bench_ddp_hook.py [--width 1024] [--steps 60]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn

from diagnose.distributed.ddp import GradWatch


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _model(width: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(width, width),
        nn.ReLU(),
        nn.Linear(width, width),
        nn.ReLU(),
        nn.Linear(width, width),
        nn.ReLU(),
        nn.Linear(width, 1),
    )


def _step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> float:
    start = time.perf_counter()
    model(x).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_port()}", rank=0, world_size=1)
    plain = nn.parallel.DistributedDataParallel(_model(args.width))
    watch = GradWatch()
    watch.install()
    hooked = nn.parallel.DistributedDataParallel(_model(args.width))
    watch.uninstall()
    opts = [torch.optim.SGD(m.parameters(), lr=1e-4) for m in (plain, hooked)]
    x = torch.randn(32, args.width)
    times: list[list[float]] = [[], []]
    for i in range(args.steps + 5):
        for j in (0, 1) if i % 2 else (1, 0):
            t = _step((plain, hooked)[j], opts[j], x)
            if i >= 5:
                times[j].append(t)
    base, hook = (statistics.median(t) for t in times)
    params = sum(p.numel() for p in plain.parameters())
    print(f"DDP MLP {params / 1e6:.1f}M params, gloo world 1, {args.steps} steps interleaved")
    print(f"  no hook   {base * 1e3:8.2f} ms/step")
    print(f"  diagnose  {hook * 1e3:8.2f} ms/step   ratio {hook / base:.3f}")
    print(f"  buckets per step: {len(watch.iterations[-1]) if watch.iterations else 0}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
