"""Size of a run's JSON report, and of the history it keeps, against the run's length.

For each length, the rows one step each (what a report held before the history was bounded)
against the tracer's bounded ``StepHistory``; with ``--traced N`` also a real traced training
loop of a tiny model for N steps. Prints bytes and the ratio.

    .venv/bin/python benchmarks/bench_report_size.py [--steps 20000 1000000] [--traced 20000]
"""

from __future__ import annotations

import argparse
import math

from diagnose.report import Report, StepRecord
from diagnose.tracer.history import ROW_FIELDS, StepHistory


def _row(step: int) -> tuple:
    loss = 2.0 / math.sqrt(step + 1)
    return (
        step,
        loss,
        0.37 + 1e-3 * (step % 97),
        3.2 + 1e-2 * (step % 13) if step % 16 == 0 else None,  # detailed steps only
        1e-3,
        65536.0,
        False,
        False,
        step % 16 == 0,
        1.5 + 1e-2 * (step % 7),
    )


def _size(history: list[StepRecord], note=None) -> int:
    report = Report(status="clean", script={"path": "train.py"}, history=history, history_note=note)
    return len(report.to_json().encode())


def _simulated(steps: int) -> None:
    bounded = StepHistory()
    for step in range(steps):
        bounded.append(_row(step))
    after = _size(bounded.records(), bounded.note())
    if steps <= 100_000:
        every = [
            StepRecord.model_construct(**dict(zip(ROW_FIELDS, _row(s), strict=True)))
            for s in range(steps)
        ]
        before = _size(every)
    else:  # measured on 100k rows, scaled: every row costs the same
        every = [
            StepRecord.model_construct(**dict(zip(ROW_FIELDS, _row(s), strict=True)))
            for s in range(100_000)
        ]
        before = int(_size(every) * steps / 100_000)
    print(
        f"{steps:>9} steps: one row a step {before / 1e6:8.2f} MB, bounded {after / 1e6:6.2f} MB "
        f"({len(bounded.records())} rows), ratio {before / after:7.1f}x"
    )


def _traced(steps: int) -> None:
    import torch
    from torch import nn

    from diagnose.tracer import Tracer

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with Tracer() as tracer:
        for _ in range(steps):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    report = tracer.report()
    print(
        f"traced {steps} steps: report {len(report.to_json().encode()) / 1e6:.2f} MB, "
        f"{len(report.history)} history rows for {report.steps_recorded} steps"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="*", default=[20_000, 1_000_000])
    parser.add_argument("--traced", type=int, default=0, metavar="N")
    args = parser.parse_args()
    for steps in args.steps:
        _simulated(steps)
    if args.traced:
        _traced(args.traced)


if __name__ == "__main__":
    main()
