"""Light steps: between detailed steps only the root calls carry hooks, and an event found
there is named by replaying the step's forward with every module watched."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.modules import module as module_hooks

from diagnose.tracer import NonFiniteDetected, Tracer


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))


def _run(
    tracer: Tracer,
    steps: int,
    bad_step: int | None = None,
    dropout: bool = False,
    mutate: bool = False,
) -> list[bool]:
    """Train; at ``bad_step`` a batch of huge finite values makes the first Linear overflow."""
    model = _mlp()
    with torch.no_grad():
        model[0].weight.abs_().add_(0.5)  # a positive sum of 3e38s: +inf
    if dropout:
        model.insert(1, nn.Dropout(0.5))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    global_hooks = []
    with tracer:
        for step in range(steps):
            batch = torch.full_like(x, 3e38) if step == bad_step else x.clone()
            global_hooks.append(bool(module_hooks._global_forward_hooks))
            nn.functional.mse_loss(model(batch), y).backward()
            if mutate:
                batch.zero_()  # the script reuses its input buffer before the step
            opt.step()
            opt.zero_grad()
    return global_hooks


def _train(
    tracer: Tracer,
    model: nn.Module,
    steps: int,
    zeros_at: int | None = None,
    predict=None,
    each_step=None,
) -> None:
    """SGD on one regression batch (shifted by 1, so a Linear without bias never outputs exact
    zeros); at step ``zeros_at`` the batch is all zeros instead. ``predict`` picks the
    prediction from the model's output; ``each_step(tracer)`` runs after every step."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with tracer:
        for step in range(steps):
            out = model(torch.zeros_like(x) if step == zeros_at else x + 1)
            nn.functional.mse_loss(predict(out) if predict else out, y).backward()
            opt.step()
            opt.zero_grad()
            if each_step is not None:
                each_step(tracer)


def _detailed_and_light(run, *args, **kwargs):
    """Tracers of the same failing run, one with every step detailed and one with light steps
    (the failure falls on a light one)."""
    tracers = []
    for every in (1, 16):
        tracer = Tracer(detail_every=every)
        with pytest.raises(NonFiniteDetected):
            run(tracer, *args, **kwargs)
        tracers.append(tracer)
    return tracers


def test_only_the_first_and_every_kth_step_hook_every_module():
    tracer = Tracer(detail_every=4, detail_first=2)
    global_hooks = _run(tracer, 9)
    assert global_hooks == [True, True, False, False, True, False, False, False, True]
    assert [h.detailed for h in tracer.history] == global_hooks
    assert all(h.max_output and h.grad_norm for h in tracer.history)
    # the largest activation is measured where every module is watched, and only there
    assert [h.max_activation is not None for h in tracer.history] == global_hooks
    assert tracer.syncs == 9 + 1  # one read per step, one at exit


def test_an_event_on_a_light_step_names_the_same_producer_as_a_detailed_step():
    tracers = _detailed_and_light(_run, 8, bad_step=5)
    detailed, light = (t.event for t in tracers)
    assert light.phase == detailed.phase == "forward"
    assert light.step == detailed.step == 5
    assert light.module == detailed.module == "0"
    assert light.op == detailed.op and light.op is not None
    assert light.message == detailed.message
    assert not any("light step" in d for d in light.details)
    assert [f.module for f in tracers[1].report().frames][-1] == "0"


def test_a_replay_restores_the_rng_so_dropout_draws_the_same_mask():
    tracer = Tracer(detail_every=16)
    with pytest.raises(NonFiniteDetected):
        _run(tracer, 8, bad_step=5, dropout=True)
    assert (tracer.event.step, tracer.event.module) == (5, "0")
    assert not any("light step" in d for d in tracer.event.details)


def test_when_the_replay_does_not_reproduce_the_event_says_so_and_names_no_submodule():
    tracer = Tracer(detail_every=16)
    with pytest.raises(NonFiniteDetected):
        _run(tracer, 8, bad_step=5, mutate=True)
    event = tracer.event
    assert (event.phase, event.step, event.module, event.op) == ("forward", 5, "Sequential", None)
    assert "submodule that made it is unknown" in event.message
    assert any("did not reproduce" in d for d in event.details)


def _run_autocast(tracer: Tracer, steps: int, bad_step: int) -> None:
    """fp32 weights under CPU autocast to float16: at ``bad_step`` the batch is large enough
    that the second Linear's fp16 output overflows, while the same step in fp32 would not."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    with torch.no_grad():
        model[0].weight.abs_()
        model[2].weight.abs_().mul_(100.0)
    opt = torch.optim.SGD(model.parameters(), lr=1e-9)
    x, y = torch.rand(16, 4) + 0.5, torch.randn(16, 1)
    with tracer:
        for step in range(steps):
            with torch.autocast("cpu", dtype=torch.float16):
                out = model(x * (400.0 if step == bad_step else 1.0))
            nn.functional.mse_loss(out.float(), y).backward()
            opt.step()
            opt.zero_grad()


def test_a_replay_computes_in_the_autocast_dtypes_of_the_step_it_replays():
    detailed, light = (t.event for t in _detailed_and_light(_run_autocast, 8, bad_step=5))
    assert (light.phase, light.step, light.dtype) == ("forward", 5, "float16")
    assert (light.module, light.op) == (detailed.module, detailed.op) == ("2", "linear")
    assert not any("did not reproduce" in d for d in light.details)


class _SqrtAbs(nn.Module):
    """Finite forward; its backward is 0/0 = nan where its input is exactly 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x.abs())


class _Gate(nn.Module):
    """A parameter-free module whose own backward is nan at 0 (the tracer hooks its output)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _SqrtAbs()(x) * 1.0


def _run_backward_born(tracer: Tracer, steps: int, bad_step: int, gated: bool) -> None:
    """At ``bad_step`` the batch is all zeros, so the first Linear (no bias) outputs exact 0s
    and the square root's gradient is born nan inside backward."""
    torch.manual_seed(0)
    act = _Gate() if gated else _SqrtAbs()
    _train(
        tracer,
        nn.Sequential(nn.Linear(4, 8, bias=False), act, nn.Linear(8, 1)),
        steps,
        zeros_at=bad_step,
    )


@pytest.mark.parametrize("gated", [False, True])
def test_a_gradient_born_in_backward_on_a_light_step_is_named_as_on_a_detailed_step(gated):
    detailed, light = (
        t.event for t in _detailed_and_light(_run_backward_born, 8, bad_step=5, gated=gated)
    )
    assert light.phase == detailed.phase == "backward"
    assert light.step == detailed.step == 5
    assert (light.module, light.op) == (detailed.module, detailed.op)
    assert light.op in ("sqrt", "abs")
    assert light.message == detailed.message
    assert light.location == detailed.location
    assert not any("light step" in d for d in light.details)


class _WithSide(nn.Module):
    """Returns its prediction and a side output the loss never uses."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor, side: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.lin(x), side * 1.0


def test_a_step_near_the_dtype_limit_makes_the_following_steps_detailed():
    torch.manual_seed(0)
    model = _WithSide()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    tracer = Tracer(detail_every=4)
    with tracer:
        for step in range(11):
            side = torch.full((3,), 2e38 if step == 5 else 1.0)  # 2e38: within 2x of fp32 max
            pred, _ = model(x, side)
            nn.functional.mse_loss(pred, y).backward()
            opt.step()
            opt.zero_grad()
    near = [h.near_limit for h in tracer.history]
    assert near == [s == 5 for s in range(11)]
    detailed = [h.detailed for h in tracer.history]
    assert detailed == [True, False, False, False, True, False, True, True, True, True, False]


def test_a_tracer_entered_again_goes_on_from_its_step_and_history():
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    tracer = Tracer(detail_every=4)
    hooked = []
    for _ in range(3):  # three sessions of three steps
        with tracer:
            for _ in range(3):
                hooked.append(bool(module_hooks._global_forward_hooks))
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                opt.zero_grad()
        assert not module_hooks._global_forward_hooks and not model._forward_hooks
    assert [h.step for h in tracer.history] == list(range(9))
    assert hooked == [True, False, False, False, True, False, False, False, True]
    assert [h.detailed for h in tracer.history] == hooked
    assert tracer.report().status == "clean"
    with tracer, pytest.raises(RuntimeError, match="already attached"):
        tracer.__enter__()


def _run_accumulating(tracer: Tracer, steps: int, bad_step: int) -> None:
    """Two micro-batches per optimizer step; the second one of ``bad_step`` is all zeros."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8, bias=False), _SqrtAbs(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with tracer:
        for step in range(steps):
            for micro in range(2):
                batch = torch.zeros_like(x) if (step, micro) == (bad_step, 1) else x + 1
                (nn.functional.mse_loss(model(batch), y) / 2).backward()
            opt.step()
            opt.zero_grad()


def test_gradient_accumulation_on_a_light_step_replays_every_micro_batch():
    detailed, light = (t.event for t in _detailed_and_light(_run_accumulating, 8, bad_step=5))
    assert (light.phase, light.step, light.op) == (detailed.phase, detailed.step, detailed.op)
    assert light.op == "sqrt"
    assert light.message == detailed.message
    assert not any("light step" in d for d in light.details)


def test_leaving_the_tracer_restores_everything_it_and_its_config_capture_patched():
    originals = (
        torch.optim.Optimizer.__init__,
        torch.Tensor.backward,
        torch.autograd.backward,
        torch.amp.GradScaler.step,
    )
    tracer = Tracer()
    for _ in range(2):
        with tracer:
            _mlp()
            torch.optim.SGD(_mlp().parameters(), lr=0.1)
    assert (
        torch.optim.Optimizer.__init__,
        torch.Tensor.backward,
        torch.autograd.backward,
        torch.amp.GradScaler.step,
    ) == originals
    assert not tracer.report().config.capture_errors  # each undid its own patches cleanly


def test_weights_made_non_finite_by_the_last_update_are_reported_without_a_replay_note():
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1) + 100.0
    tracer = Tracer(detail_every=16)
    with pytest.raises(NonFiniteDetected), tracer:
        for step in range(6):
            if step == 5:
                opt.param_groups[0]["lr"] = 3e38  # the last update throws a weight to inf
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    event = tracer.event
    assert event.phase == "optimizer" and "weight" in event.message
    assert not any("light step" in d for d in event.details)


class _HiddenAndLogits(nn.Module):
    """Returns its hidden state and the logits computed from it; the loss uses the logits."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8, bias=False), _SqrtAbs())
        self.head = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.body(x)
        return hidden, self.head(hidden)


def _run_two_outputs(tracer: Tracer, steps: int, bad_step: int) -> None:
    torch.manual_seed(0)
    _train(tracer, _HiddenAndLogits(), steps, zeros_at=bad_step, predict=lambda out: out[1])


def test_a_replay_differentiates_only_the_outputs_nothing_else_was_computed_from():
    detailed, light = (t.event for t in _detailed_and_light(_run_two_outputs, 8, bad_step=5))
    assert (light.phase, light.step, light.op) == (detailed.phase, detailed.step, detailed.op)
    assert light.message == detailed.message
    assert not any("light step" in d for d in light.details)


def test_outputs_computed_from_another_output_are_the_ones_differentiated():
    from diagnose.tracer.backward import downstream_only

    w = torch.ones(3, requires_grad=True)
    hidden = w * 2
    logits = hidden.sum() * 3
    parts = torch.chunk(w * 5, 3)  # siblings of one node: none is upstream of another
    assert downstream_only([hidden, logits]) == [1]
    assert downstream_only([logits, hidden, *parts]) == [0, 2, 3, 4]


def test_the_frames_kept_between_steps_hold_no_tensors():
    def holds_none(tracer: Tracer) -> None:
        kept = list(tracer._recent)
        assert kept and all(r.args is None and r.kwargs is None and r.grads is None for r in kept)

    _train(Tracer(detail_every=4), _mlp(), 6, each_step=holds_none)


def test_each_history_column_holds_only_what_was_measured_for_it():
    """A loss module called at the top level is a root call too: its output is the loss
    column's, never the model's largest output or activation."""
    torch.manual_seed(0)
    model = _mlp()
    criterion = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=1e-9)
    x, y = torch.randn(16, 4), torch.full((16, 1), 1e4)  # a loss of about 1e8
    tracer = Tracer(detail_every=4, detail_first=1)
    with tracer:
        for _ in range(9):
            criterion(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    history = tracer.history
    assert all(h.loss > 1e7 for h in history)
    assert all(0 < h.max_output < 100 for h in history)  # the Sequential's own output
    assert [h.max_activation is not None for h in history] == [h.detailed for h in history]
    assert [h.detailed for h in history] == [True, False, False, False, True] + [False] * 3 + [True]
    assert all(h.max_activation < 100 for h in history if h.detailed)
