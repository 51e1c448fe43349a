"""Tracer overhead, side by side and interleaved: training-step time per watcher.

Compares no watcher, ``diagnose.Tracer()``, the Tracer beside the learning watch (what
``diagnose train.py`` runs), the Tracer with every step detailed
(``detail_every=1``), transformers' ``DebugUnderflowOverflow`` and
``torch.autograd.detect_anomaly`` on a 4-layer MLP, a tiny random T5 and a tiny random
GPT-2 (built from configs, no download). Each watcher trains ``--steps`` steps in turn, for
``--rounds`` rounds: short blocks, so a machine whose speed drifts moves every watcher alike.
Each Tracer is entered again for each of its blocks, so its steps go on counting as in one
long run (it details its first step, then every 16th). Prints, for each, the median and the
mean step time as ratios to the untraced step, the "steady" median (a block's first step
left out, for every watcher: after the switch from another watcher's model the caches are
cold, and a Tracer was attached just before it, which a real run does once), the median
ratio of the thread's CPU time,
the Tracer's host reads per step (its read at exit is not a step's), and the peak-memory
overhead: on CUDA from the allocator's
peak, on CPU from the resident-set high-water mark of a fresh subprocess per watcher (the
training's growth over the process's size before its first step).

    .venv/bin/python benchmarks/bench_tracer.py [--rounds 40] [--steps 4] [--device cpu]
        [--models mlp,t5,gpt2] [--watchers diagnose.Tracer,...] [--no-memory] [--repeat K]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import diagnose


def mlp() -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    model = nn.Sequential(
        nn.Linear(256, 512),
        nn.ReLU(),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, 10),
    )
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    return model, lambda m: nn.functional.cross_entropy(m(x.to(_dev(m))), y.to(_dev(m)))


def t5() -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=256,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    model = T5ForConditionalGeneration(config)
    ids, labels = torch.randint(0, 256, (8, 32)), torch.randint(0, 256, (8, 16))
    return model, lambda m: m(input_ids=ids.to(_dev(m)), labels=labels.to(_dev(m))).loss


def gpt2() -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=256,
        n_positions=64,
        n_embd=64,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=False,
    )
    model = GPT2LMHeadModel(config)
    ids = torch.randint(0, 256, (8, 32))
    return model, lambda m: m(input_ids=ids.to(_dev(m)), labels=ids.to(_dev(m))).loss


def _dev(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


class Runner:
    """One model copy with its own optimizer and the context its watcher needs."""

    def __init__(self, name: str, model: nn.Module, loss_fn: Any) -> None:
        self.name = name
        self.model = model
        self.loss_fn = loss_fn
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        self.times: list[float] = []
        self.steady: list[float] = []  # the steps after a block's first
        self.cpu: list[float] = []
        self.tracer: diagnose.Tracer | None = None
        self.learning: Any = None
        self.steps = 0
        self.syncs = 0
        self.peak = 0
        if name == "DebugUnderflowOverflow":
            from transformers.debug_utils import DebugUnderflowOverflow

            DebugUnderflowOverflow(model)
        elif name == "diagnose.Tracer":
            self.tracer = diagnose.Tracer()
        elif name == "Tracer + learning watch":
            from diagnose.learning.watch import LearningWatch

            self.tracer, self.learning = diagnose.Tracer(), LearningWatch()
        elif name == "Tracer every step":
            self.tracer = diagnose.Tracer(detail_every=1)

    def context(self) -> Any:
        if self.learning is not None:  # what `diagnose train.py` runs: both, side by side
            stack = contextlib.ExitStack()
            stack.enter_context(self.tracer)
            stack.enter_context(self.learning)
            # in a real run the optimizer is built under the watch; this one was built
            # before it, and is handed over as the framework callbacks hand theirs
            self.learning.optimizer_known(self.opt)
            return stack
        if self.tracer is not None:
            return self.tracer  # entered again for each block: its steps go on counting
        if self.name == "detect_anomaly":
            return torch.autograd.detect_anomaly(check_nan=True)
        return contextlib.nullcontext()

    def run(self, steps: int, sync: Callable[[], None]) -> None:
        before = self.tracer.syncs if self.tracer is not None else 0
        with self.context():
            for k in range(steps):
                sync()
                start, cpu = time.perf_counter(), time.thread_time()
                loss = self.loss_fn(self.model)
                loss.backward()
                self.opt.step()
                self.opt.zero_grad(set_to_none=True)
                sync()
                self.times.append(time.perf_counter() - start)
                self.cpu.append(time.thread_time() - cpu)
                if k:
                    self.steady.append(self.times[-1])
            in_loop = self.tracer.syncs - before if self.tracer is not None else 0
        if self.tracer is not None:  # host reads in the loop; the one at exit is not a step's
            self.steps += steps
            self.syncs += in_loop


WATCHERS = [
    "none",
    "diagnose.Tracer",
    "Tracer + learning watch",
    "Tracer every step",
    "DebugUnderflowOverflow",
    "detect_anomaly",
]


def bench(
    model_name: str,
    build: Any,
    rounds: int,
    steps: int,
    device: str,
    watchers: list[str] = WATCHERS,
) -> dict[str, float]:
    """Print one run's table; return each watcher's median step time over the untraced one."""
    torch.manual_seed(0)
    base, loss_fn = build()
    base.to(device)
    runners = [Runner(w, copy.deepcopy(base), loss_fn) for w in ["none", *watchers]]
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    import warnings

    warnings.filterwarnings("ignore")
    for r in runners:  # warm up
        r.run(2, sync)
        r.times.clear()
        r.steady.clear()
        r.cpu.clear()
        r.steps = r.syncs = 0
    for _ in range(rounds):
        for r in runners:
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            r.run(steps, sync)
            if cuda:
                r.peak = max(r.peak, torch.cuda.max_memory_allocated())
    base_time = statistics.median(runners[0].times)
    base_steady = statistics.median(runners[0].steady) if runners[0].steady else base_time
    base_mean = statistics.mean(runners[0].times)
    base_cpu = statistics.median(runners[0].cpu)
    ratios: dict[str, float] = {}
    print(
        f"\n{model_name}: untraced step {base_time * 1e3:.2f} ms"
        f"  (ratios: median, steady median, mean, CPU median)"
    )
    for r in runners:
        med = statistics.median(r.times)
        steady = statistics.median(r.steady) if r.steady else med
        line = (
            f"  {r.name:24s} {med * 1e3:8.2f} ms  {med / base_time:5.2f}x"
            f"  {steady / base_steady:5.2f}x"
            f"  {statistics.mean(r.times) / base_mean:5.2f}x"
            f"  {statistics.median(r.cpu) / base_cpu:5.2f}x"
        )
        if r.tracer is not None:
            line += f"  host reads/step {r.syncs / r.steps:.2f}"
        if cuda and runners[0].peak:
            line += f"  peak mem +{(r.peak / runners[0].peak - 1) * 100:.1f}%"
        print(line)
        ratios[r.name] = med / base_time
    return ratios


def repeated(args: argparse.Namespace) -> None:
    """Run the whole comparison ``--repeat`` times, each in a fresh process, and print each
    watcher's median ratio over the runs with their range.

    One run's ratio moves by a few percent with where its model copies and the tracer's
    objects happen to lie in memory; fresh processes draw new layouts, and the median over
    them is the figure to compare with a target.
    """
    runs: dict[str, dict[str, list[float]]] = {}
    for k in range(args.repeat):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--models",
                args.models,
                "--watchers",
                args.watchers,
                "--rounds",
                str(args.rounds),
                "--steps",
                str(args.steps),
                "--device",
                args.device,
                "--no-memory",
                "--ratios-json",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        print(
            f"run {k + 1}/{args.repeat}: "
            + "; ".join(
                f"{model}: " + ", ".join(f"{w} {r:.3f}x" for w, r in ratios.items() if w != "none")
                for model, ratios in result.items()
            ),
            flush=True,
        )
        for model, ratios in result.items():
            for watcher, ratio in ratios.items():
                runs.setdefault(model, {}).setdefault(watcher, []).append(ratio)
    print(f"\nover {args.repeat} runs (median step time over the untraced step):")
    for model, watchers in runs.items():
        print(f"  {BUILDERS[model][0]}:")
        for watcher, ratios in watchers.items():
            if watcher != "none":
                print(
                    f"    {watcher:24s} median {statistics.median(ratios):6.3f}x"
                    f"  range {min(ratios):.3f}-{max(ratios):.3f}x"
                )


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_child(model_key: str, watcher: str, steps: int) -> None:
    """Train ``steps`` steps in this fresh process; print the peak RSS growth as JSON."""
    torch.manual_seed(0)
    model, loss_fn = BUILDERS[model_key][1]()
    runner = Runner(watcher, model, loss_fn)
    with diagnose.Tracer():  # every variant imports and installs it once: code, not training
        pass
    before = _rss_bytes()
    runner.run(steps, lambda: None)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    print(json.dumps({"growth": peak - before}))


def memory_overhead(model_key: str, steps: int) -> str:
    """Peak RSS growth of a traced run over an untraced one, each in its own process."""
    runs: dict[str, list[int]] = {"none": [], "diagnose.Tracer": []}
    for _ in range(3):  # RSS moves with the allocator's caching: interleave, take medians
        for watcher in runs:
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", model_key, watcher, str(steps)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            runs[watcher].append(json.loads(out.strip().splitlines()[-1])["growth"])
    growth = {w: statistics.median(v) for w, v in runs.items()}
    base, traced = growth["none"], growth["diagnose.Tracer"]
    return (
        f"  peak RSS growth: untraced {base / 2**20:.1f} MiB, traced {traced / 2**20:.1f} MiB"
        f"  (+{(traced / base - 1) * 100:.1f}%)"
    )


BUILDERS = {"mlp": ("4-layer MLP", mlp), "t5": ("tiny T5", t5), "gpt2": ("tiny GPT-2", gpt2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", default="mlp,t5,gpt2")
    parser.add_argument(
        "--watchers",
        default=",".join(WATCHERS[1:]),
        help="compared with no watcher, comma-separated: " + ",".join(WATCHERS[1:]),
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the CPU memory runs")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the comparison this many times, each in a fresh process, "
        "and print the median ratio over the runs (no memory runs)",
    )
    parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--ratios-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat > 1:
        repeated(args)
        return
    torch.set_num_threads(1)
    import warnings

    warnings.filterwarnings("ignore")
    if args.memory_child:
        model_key, watcher, steps = args.memory_child
        memory_child(model_key, watcher, int(steps))
        return
    print(f"load average at start: {os.getloadavg()}")
    results: dict[str, dict[str, float]] = {}
    for key in args.models.split(","):
        name, build = BUILDERS[key]
        watchers = [w for w in args.watchers.split(",") if w and w != "none"]
        unknown = sorted(set(watchers) - set(WATCHERS))
        if unknown:
            parser.error(f"unknown watcher {unknown[0]!r}; known: {', '.join(WATCHERS[1:])}")
        results[key] = bench(name, build, args.rounds, args.steps, args.device, watchers)
        if args.device == "cpu" and not args.no_memory:
            print(memory_overhead(key, 32))  # the first, detailed step and light ones
    print(f"load average at end: {os.getloadavg()}")
    if args.ratios_json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
