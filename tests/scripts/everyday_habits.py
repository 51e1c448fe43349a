"""A healthy training loop doing what everyday training code does with its objects.

EMA and best-model copies (``copy.deepcopy``), a copy of the optimizer and the scheduler,
``pickle`` and whole-module checkpoints (``torch.save(model)`` / ``torch.load``), a state-dict
checkpoint of model, optimizer and scheduler, and a look at every hook dict torch keeps on
the modules and the optimizer. What it saw, at several points of the run (before the first
step, inside the first step, on the first steps and around the tracer's 16th step, at the
end), goes as JSON to the file named by its first argument, so that a run under the tracer
can be compared with a plain one.

    python everyday_habits.py OUT.json [--steps N]
"""

from __future__ import annotations

import copy
import io
import json
import pickle
import sys

import torch
from torch import nn

STEPS = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 20
LOOK_AT = {0, 1, 15, 16, 17}

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1)
)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
probe = torch.linspace(-1, 1, 32).reshape(8, 4)
seen: dict[str, object] = {}


def hook_dicts(obj: object) -> dict[str, object]:
    """The length of every hook dict on ``obj``, and the names in its ``__dict__``."""
    found: dict[str, object] = {
        k: len(v) for k, v in vars(obj).items() if "hook" in k and hasattr(v, "__len__")
    }
    found["__dict__"] = sorted(vars(obj))
    return found


def look(module: nn.Module) -> dict[str, object]:
    return {name or "<root>": hook_dicts(m) for name, m in module.named_modules()}


def outputs(module: nn.Module) -> list[float]:
    """What a copy computes in eval mode (the copy, not the model, is put in eval)."""
    module.eval()
    with torch.no_grad():
        return [round(v, 6) for v in module(probe).flatten().tolist()]


def state_of(module: nn.Module) -> dict[str, float]:
    return {k: round(float(v.float().sum()), 5) for k, v in module.state_dict().items()}


def habits(when: str) -> None:
    ema = copy.deepcopy(model)
    best = pickle.loads(pickle.dumps(model))
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    whole = torch.load(buffer, weights_only=False)
    buffer = io.BytesIO()
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        },
        buffer,
    )
    buffer.seek(0)
    checkpoint = torch.load(buffer)
    restored = copy.deepcopy(model)
    restored.load_state_dict(checkpoint["model"])
    optimizer_copy = copy.deepcopy(optimizer)
    scheduler_copy = copy.deepcopy(scheduler)
    seen[when] = {
        "model": look(model),
        "optimizer": hook_dicts(optimizer),
        "scheduler": sorted(vars(scheduler)),
        "state": state_of(model),
        "deepcopy": [look(ema), outputs(ema)],
        "pickle": [look(best), outputs(best)],
        "torch.load": [look(whole), outputs(whole)],
        "checkpoint": {
            "model": sorted(checkpoint["model"]),
            "optimizer": [
                sorted(checkpoint["optimizer"]),
                sorted(checkpoint["optimizer"]["param_groups"][0]),
            ],
            "scheduler": sorted(checkpoint["scheduler"]),
            "restored": outputs(restored),
        },
        "optimizer copy": [
            hook_dicts(optimizer_copy),
            optimizer_copy.state_dict()["param_groups"][0]["lr"],
        ],
        "scheduler copy": scheduler_copy.get_last_lr(),
    }


habits("before the first step")
losses = []
for step in range(STEPS):
    x = torch.randn(32, 4)
    loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
    optimizer.zero_grad()
    loss.backward()
    if step == 0:
        habits("between backward and the first optimizer step")
    optimizer.step()
    scheduler.step()
    losses.append(round(loss.item(), 6))
    if step in LOOK_AT:
        habits(f"after step {step}")
habits("at the end")
seen["losses"] = losses
with open(sys.argv[1], "w") as out:
    json.dump(seen, out, indent=1, sort_keys=True)
