"""The tracer is invisible to the script it runs.

Whatever it does to watch a run, a script's copies, pickles, checkpoints and hook dicts are
exactly what they are in a plain run: each script below is run plainly and under
``diagnose_script``, and what it saw of its own objects is compared.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from diagnose import diagnose_script
from diagnose.tracer import NonFiniteDetected, Tracer

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
HABITS = SCRIPTS / "everyday_habits.py"


def run_plainly(script: Path, *argv: str) -> BaseException | None:
    """Run ``script`` as ``python script ARGV`` would, with no tracer; what it raised."""
    saved, sys.argv = sys.argv[:], [str(script), *argv]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except BaseException as exc:  # a script's failure is what is compared
        return exc
    finally:
        sys.argv = saved
    return None


@pytest.fixture(scope="module")
def habits(tmp_path_factory) -> tuple[dict, dict, object]:
    folder = tmp_path_factory.mktemp("habits")
    assert run_plainly(HABITS, str(folder / "plain.json")) is None
    report = diagnose_script(HABITS, [str(folder / "traced.json")])
    plain = json.loads((folder / "plain.json").read_text())
    written = folder / "traced.json"  # not when the tracer broke one of the habits
    traced = json.loads(written.read_text()) if written.exists() else {}
    return plain, traced, report


def test_a_healthy_run_with_everyday_habits_is_clean_and_traced_on_light_steps(habits):
    _, _, report = habits
    assert report.status == "clean" and report.event is None, report.event
    detailed = [row.detailed for row in report.history]
    assert len(detailed) == 20 and detailed[0] and detailed[16] and not any(detailed[1:16])


@pytest.mark.parametrize(
    "habit",
    [
        "model",
        "optimizer",
        "scheduler",
        "state",
        "deepcopy",
        "pickle",
        "torch.load",
        "checkpoint",
        "optimizer copy",
        "scheduler copy",
    ],
)
def test_each_habit_sees_what_it_sees_in_a_plain_run(habits, habit):
    """At every point the script looked: before the first step, between its backward and its
    optimizer step, after the first steps, around the tracer's 16th (detailed) step, at the end."""
    plain, traced, _ = habits
    whens = [when for when in plain if when != "losses"]
    assert len(whens) == 8
    assert {w: traced.get(w, {}).get(habit) for w in whens} == {w: plain[w][habit] for w in whens}


def test_the_traced_run_trains_exactly_as_the_plain_one(habits):
    plain, traced, _ = habits
    assert traced.get("losses") == plain["losses"]


def test_a_model_hooked_by_the_script_keeps_exactly_its_own_hooks():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    mine = model.register_forward_hook(lambda m, a, out: None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Tracer():
        for _ in range(3):  # the first step is detailed, the next ones light
            model(torch.randn(5, 3)).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
            assert list(model._forward_hooks) == [mine.id]
            assert not model._forward_pre_hooks and not model[0]._forward_hooks
            assert not optimizer._optimizer_step_pre_hooks
    assert type(model).__call__ is nn.Module.__call__  # the class is given back its own


def _nonfinite_at_a_light_step(tmp_path: Path) -> Path:
    """A run whose model turns inf at step 5, a light step: the tracer replays the step with
    every module watched; the script's handler then checkpoints what it has."""
    script = tmp_path / "handler_checkpoint.py"
    script.write_text("""
import copy, io, json, math, sys, torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn, self.drop, self.out = (nn.Linear(4, 8), nn.BatchNorm1d(8),
                                                 nn.Dropout(0.5), nn.Linear(8, 1))

    def forward(self, x, scale):
        return self.out(self.drop(self.bn(self.fc(x)))) * scale

torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for step in range(8):
        loss = model(torch.randn(16, 4), 1e39 if step == 5 else 1.0).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"loss is {loss.item()} at step {step}")
except BaseException:
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    ema = copy.deepcopy(model)
    seen = {
        "hooks": [(n, len(m._forward_hooks), len(m._forward_pre_hooks))
                  for n, m in [*model.named_modules(), *loaded.named_modules(),
                               *ema.named_modules()]],
        "bn": [model.bn.running_mean.tolist(), model.bn.running_var.tolist(),
               int(model.bn.num_batches_tracked)],
        "rng": torch.rand(4).tolist(),
    }
    json.dump(seen, open(sys.argv[1], "w"))
    raise
""")
    return script


def test_a_handler_that_checkpoints_after_the_stop_finds_its_model_as_in_a_plain_run(tmp_path):
    script = _nonfinite_at_a_light_step(tmp_path)
    raised = run_plainly(script, str(tmp_path / "plain.json"))
    assert isinstance(raised, FloatingPointError)
    report = diagnose_script(script, [str(tmp_path / "traced.json")])
    assert report.status == "nonfinite" and report.event.step == 5
    assert len(report.history) == 5 and not any(row.detailed for row in report.history[1:])
    plain = json.loads((tmp_path / "plain.json").read_text())
    traced = json.loads((tmp_path / "traced.json").read_text())
    # The replays that named the producer updated no running statistics and drew no
    # dropout mask the script would see.
    assert traced == plain


def test_the_python_api_leaves_a_caught_run_with_its_model_as_it_was():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(NonFiniteDetected), Tracer():
        for step in range(6):
            loss = (model(torch.randn(16, 4)) * (1e39 if step == 4 else 1.0)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            stats = model[1].running_mean.clone(), int(model[1].num_batches_tracked)
            optimizer.step()
    assert torch.equal(model[1].running_mean, stats[0])
    assert int(model[1].num_batches_tracked) == stats[1] == 5
    assert not model._forward_hooks and not model._forward_pre_hooks
    assert __import__("copy").deepcopy(model)(torch.ones(2, 4)).shape == (2, 1)


def test_a_compiled_model_copies_and_checkpoints_as_in_a_plain_run(tmp_path):
    """``torch.compile`` with the eager backend: dynamo's wrapper module, without a C
    compiler (inductor's CPU code generation is out of reach of a quick test)."""
    script = tmp_path / "compiled.py"
    script.write_text("""
import copy, io, json, sys, torch
from torch import nn

torch.manual_seed(0)
model = torch.compile(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)),
                      backend="eager")
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
seen = {}
for step in range(18):
    x = torch.randn(16, 4)
    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step in (0, 1, 16, 17):
        ema = copy.deepcopy(model)
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=False)
        seen[step] = {
            "hooks": [(n, len(m._forward_hooks), len(m._forward_pre_hooks), sorted(vars(m)))
                      for n, m in [*model.named_modules(), *ema.named_modules()]],
            "outputs": [round(v, 5) for m in (ema, loaded)
                        for v in m(torch.ones(2, 4)).flatten().tolist()],
            "state": sorted(model.state_dict()),
        }
json.dump(seen, open(sys.argv[1], "w"))
""")
    assert run_plainly(script, str(tmp_path / "plain.json")) is None
    report = diagnose_script(script, [str(tmp_path / "traced.json")])
    assert report.status == "clean"
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert json.loads((tmp_path / "traced.json").read_text()) == plain
