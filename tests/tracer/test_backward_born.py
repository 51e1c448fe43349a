"""Values finite all through forward whose *gradient* is born non-finite.

The event names the op whose backward made inf/nan from a finite incoming gradient (not just
the parameter the gradient reached), and the user's line that created that autograd node,
whether the op runs in functional code between modules or inside a module's forward.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from diagnose.facts.extract import extract_facts
from diagnose.tracer import NonFiniteDetected, Tracer

ZERO_ROWS = 3  # the first rows of each batch are zero vectors after the first layer


def _norm_sqrt(e):
    return e / (e**2).sum(-1, keepdim=True).sqrt().clamp_min(1e-6)  # HAZARD


def _pow_half(e):
    return e / torch.pow((e * e).sum(-1, keepdim=True), 0.5).clamp_min(1e-6)  # HAZARD


def _dunder_half(e):
    return e / ((e * e).sum(-1, keepdim=True) ** 0.5).clamp_min(1e-6)  # HAZARD


def _acos_at_one(e):
    return e + torch.acos(torch.cos(e[:, :1] * 0))  # HAZARD


def _asin_at_minus_one(e):
    return e + torch.asin(-torch.cos(e[:, :1] * 0))  # HAZARD


def _tiny_divisor(e):
    return (e / (e * 0 + 1e-20)).clamp(-1, 1)  # HAZARD: d/db (a/b) = -a/b**2 overflows


def _where_discarded_log(e):
    return torch.where(e != 0, torch.log(e.abs()), 0.0)  # HAZARD: where sends log(0) 0 * inf


def _tanh_of_overflowed_exp(e):
    return torch.tanh(torch.exp(e * 1e3))  # HAZARD: tanh(inf) = 1, its exp's gradient 0 * inf


# (torch.norm / linalg.vector_norm of a zero vector and atan2(0, 0) have masked, finite
# gradients in this torch: no event, nothing to name.)
CASES: dict[str, tuple[Callable, str]] = {
    "log discarded by where": (_where_discarded_log, "log"),
    "exp overflow under tanh": (_tanh_of_overflowed_exp, "exp"),
    "sqrt": (_norm_sqrt, "sqrt"),
    "pow(x, 0.5)": (_pow_half, "pow"),
    "x ** 0.5": (_dunder_half, "pow"),
    "acos(1)": (_acos_at_one, "acos"),
    "asin(-1)": (_asin_at_minus_one, "asin"),
    "tiny divisor": (_tiny_divisor, "div"),
}


def _hazard_line(fn: Callable) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if "# HAZARD" in text)


def _batch() -> torch.Tensor:
    torch.manual_seed(0)
    x = torch.randn(8, 4)
    x[:ZERO_ROWS] = 0.0
    return x


def _run_functional(fn: Callable) -> NonFiniteDetected:
    torch.manual_seed(0)
    first = nn.Linear(4, 6, bias=False)
    head = nn.Linear(6, 2)
    opt = torch.optim.SGD([*first.parameters(), *head.parameters()], lr=0.1)
    x, y = _batch(), torch.randn(8, 2)
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        for _ in range(3):
            opt.zero_grad()
            loss = F.mse_loss(head(fn(first(x))), y)
            loss.backward()
            opt.step()
    return caught.value


@pytest.mark.parametrize("name", list(CASES))
def test_the_op_whose_gradient_is_born_nonfinite_is_named_with_its_line(name):
    fn, op = CASES[name]
    event = _run_functional(fn).event
    assert event.phase == "backward" and event.step == 0
    assert event.op == op, event.message
    assert event.location is not None and event.location.file == __file__
    assert event.location.line == _hazard_line(fn)
    assert event.module is None  # born in code outside any module
    assert "its gradient" in event.message and "Backward" in event.message


class _Normalise(nn.Module):
    """A module whose own forward takes the norm of possibly-zero vectors."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4, bias=False)

    def forward(self, x):
        e = self.proj(x)
        n = (e * e).sum(-1, keepdim=True).sqrt()  # INSIDE
        return e / n.clamp_min(1e-6)


def test_a_gradient_born_inside_a_module_names_the_op_and_line_in_its_forward():
    torch.manual_seed(0)
    model = nn.Sequential(_Normalise(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = _batch(), torch.randn(8, 1)
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        F.mse_loss(model(x), y).backward()
        opt.step()
    event = caught.value.event
    assert event.phase == "backward" and event.op == "sqrt"
    lines, start = inspect.getsourcelines(_Normalise.forward)
    line = start + next(i for i, text in enumerate(lines) if "# INSIDE" in text)
    assert (event.location.file, event.location.line) == (__file__, line)
    assert (event.module, event.module_type) == ("0", "_Normalise")  # the op ran in its forward


def test_the_facts_read_it_as_sqrt_at_zero_in_backward():
    detected = _run_functional(_norm_sqrt)
    tracer_report = detected  # the exception carries what the report is built from
    from diagnose.report import Report, ScriptInfo

    report = Report(status="nonfinite", script=ScriptInfo(path="t.py"), event=tracer_report.event)
    facts, _ = extract_facts(report)
    assert facts["event.op_family"] == "sqrt" and facts["event.in_backward"] is True
    assert facts["op_input.has_zero"] is True and facts["op_input.has_negative"] is False


def test_a_hazardous_op_off_the_path_to_the_bad_gradients_is_not_named():
    # sqrt at 0 on a branch that reaches only a tensor the optimizer does not update comes
    # later in forward order (so backward meets it first), yet the producer is acos at 1.
    torch.manual_seed(0)
    lin = nn.Linear(4, 4)
    stray = nn.Parameter(torch.zeros(4))  # not given to the optimizer
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x = _batch()
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        h = lin(x)
        real = torch.acos(torch.cos(h * 0)).mean()
        side = (stray**2).sum().sqrt()
        (h.mean() + real + side).backward()
        opt.step()
    assert caught.value.event.op == "acos"


def test_a_cross_entropy_over_ignored_targets_counts_them():
    torch.manual_seed(0)
    head = nn.Linear(4, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    x = _batch()
    labels = torch.full((8,), -1)
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        F.cross_entropy(head(x), labels, ignore_index=-1).backward()
        opt.step()
    event = caught.value.event
    assert event.phase == "loss" and event.op == "cross_entropy"
    assert (event.ignore_index, event.targets_total, event.targets_ignored) == (-1, 8, 8)
    assert "8 of 8 targets equal ignore_index=-1" in " ".join(event.details)


FIX_FOR = {
    "log discarded by where": "stabilize-log",
    "exp overflow under tanh": "stabilize-exp",
    "sqrt": "guard-sqrt",
    "pow(x, 0.5)": "clamp-into-domain",
    "x ** 0.5": "clamp-into-domain",
    "acos(1)": "clamp-into-domain",
    "asin(-1)": "clamp-into-domain",
    "tiny divisor": "guard-division",
}


@pytest.mark.parametrize("name", list(FIX_FOR))
def test_the_engine_ranks_the_guard_for_that_op_first(name):
    from diagnose.engine import analyze
    from diagnose.report import Report, ScriptInfo

    detected = _run_functional(CASES[name][0])
    report = analyze(
        Report(
            status="nonfinite",
            script=ScriptInfo(path="t.py"),
            event=detected.event,
            frames=detected.frames,
            history=detected.history,
        )
    )
    assert [f.id for f in report.fixes][:1] == [FIX_FOR[name]], report.symptoms


@pytest.mark.parametrize("detail_every", [1, 16])
def test_a_gradient_event_frames_its_own_step_and_marks_the_module_it_names(detail_every):
    torch.manual_seed(0)
    model = nn.Sequential(_Normalise(), nn.Linear(4, 4), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    y = torch.randn(8, 1)
    with pytest.raises(NonFiniteDetected) as caught, Tracer(detail_every=detail_every):
        for step in range(4):
            x = _batch() if step == 3 else torch.randn(8, 4)
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    event, frames = caught.value.event, caught.value.frames
    assert (event.step, event.phase) == (3, "backward")
    marked = [f for f in frames if f.producer]
    assert [(f.step, f.module) for f in marked] == [(3, event.module)]
    # The forward calls after the one it names ran before the backward that met the value.
    assert frames[-1].step == 3 and frames[-1].module != event.module
