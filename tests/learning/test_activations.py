"""Dead ReLUs, saturated tanh/sigmoid and a vanished gradient: measured on the sampled passes
of a real loop, judged only where the loss shows the run did not learn."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from diagnose.learning.findings import detect_learning_symptoms
from diagnose.learning.watch import LearningWatch
from diagnose.report import ActivationNote, GradNote, Learning, Report, ScriptInfo, StepRecord


def _train(model: nn.Module, steps: int = 40) -> Learning:
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = (x[:, 0] > 0).long()
    with LearningWatch() as watch:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        for i in range(steps):
            idx = torch.arange(i * 16, i * 16 + 16) % 256
            optimizer.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            optimizer.step()
    return watch.evidence()


def _mlp(activation: type[nn.Module] = nn.ReLU, depth: int = 2) -> nn.Sequential:
    torch.manual_seed(1)
    layers: list[nn.Module] = [nn.Linear(8, 64), activation()]
    for _ in range(depth - 1):
        layers += [nn.Linear(64, 64), activation()]
    return nn.Sequential(*layers, nn.Linear(64, 2))


def _shares(learning: Learning) -> dict[str, float]:
    return {a.name: a.share for a in learning.activations}


def test_a_negative_bias_makes_every_relu_output_zero_and_stops_the_first_gradient():
    model = _mlp()
    for layer in model:
        if isinstance(layer, nn.Linear):
            nn.init.constant_(layer.bias, -5.0)
    learning = _train(model)
    assert _shares(learning) == {"model.1": 1.0, "model.3": 1.0}
    assert learning.first_grad == GradNote(module="model.0", norm=0.0)
    assert learning.last_grad is not None and learning.last_grad.module == "model.4"
    assert learning.last_grad.norm > 0


def test_a_normal_relu_net_outputs_about_half_zeros():
    learning = _train(_mlp())
    assert all(0.2 < share < 0.7 for share in _shares(learning).values()), learning.activations
    assert learning.first_grad is not None and learning.first_grad.norm > 0


def test_large_weights_put_tanh_inputs_in_the_flat_tails():
    model = _mlp(nn.Tanh)
    for layer in model:
        if isinstance(layer, nn.Linear):
            nn.init.normal_(layer.weight, std=4.0)
    learning = _train(model)
    assert [a.kind for a in learning.activations] == ["tanh", "tanh"]
    assert min(_shares(learning).values()) > 0.5


def test_activations_are_read_only_on_the_sampled_passes():
    learning = _train(_mlp(), steps=40)  # armed after step 3, 16 and 32
    assert {a.checks for a in learning.activations} == {3}


def _report(learning: Learning, losses: list[float]) -> Report:
    history = [StepRecord(step=i, loss=v) for i, v in enumerate(losses)]
    return Report(
        status="clean", script=ScriptInfo(path="train.py"), history=history, learning=learning
    )


FLAT = [0.69 + 0.01 * math.sin(i) for i in range(160)]
FALLING = [0.69 * math.exp(-i / 40) + 0.05 for i in range(160)]


def _ids(learning: Learning, losses: list[float]) -> list[str]:
    return [s.id for s in detect_learning_symptoms(_report(learning, losses))]


def _with(*notes: ActivationNote, first: float = 1.0, last: float = 1.0) -> Learning:
    return Learning(
        backward_passes=160,
        optimizer_steps=160,
        optimizers=1,
        weight_change=0.2,
        activations=list(notes),
        first_grad=GradNote(module="Net.0", norm=first),
        last_grad=GradNote(module="Net.4", norm=last),
    )


def test_dead_relus_are_found_only_when_the_loss_does_not_fall():
    dead = _with(ActivationNote(name="Net.1", kind="relu", share=0.97))
    assert _ids(dead, FLAT) == ["dying-relus"]
    assert _ids(dead, FALLING) == []


def test_half_zero_relus_are_healthy_even_on_a_flat_loss():
    half = _with(ActivationNote(name="Net.1", kind="relu", share=0.5))
    assert "dying-relus" not in _ids(half, FLAT)


def test_saturated_sigmoids_are_named_with_their_share():
    flat = _with(ActivationNote(name="Net.3", kind="sigmoid", share=0.9))
    [symptom] = detect_learning_symptoms(_report(flat, FLAT))
    assert symptom.id == "saturated-activations" and symptom.confidence >= 0.8
    assert "Net.3 (sigmoid) 90%" in symptom.evidence[0]


def test_a_vanished_gradient_needs_orders_of_magnitude_and_a_stalled_loss():
    assert _ids(_with(first=1e-7, last=1.0), FLAT) == ["vanishing-gradients"]
    assert _ids(_with(first=1e-7, last=1.0), FALLING) == []
    assert "vanishing-gradients" not in _ids(_with(first=0.05, last=1.0), FLAT)


def test_dead_units_explain_the_vanished_gradient_without_restating_it():
    dead = _with(ActivationNote(name="Net.1", kind="relu", share=1.0), first=0.0)
    assert _ids(dead, FLAT) == ["dying-relus"]


def test_every_layer_gets_its_gradient_norm_in_forward_order():
    learning = _train(_mlp(depth=3))
    names = [layer.module for layer in learning.layer_grads]
    assert names == ["model.0", "model.2", "model.4", "model.6"]
    assert all(layer.norm > 0 for layer in learning.layer_grads)
    assert learning.first_grad == learning.layer_grads[0]
    assert learning.last_grad == learning.layer_grads[-1]


def test_a_deep_net_keeps_a_spread_of_its_layers_with_both_ends():
    learning = _train(_mlp(depth=40), steps=12)
    names = [layer.module for layer in learning.layer_grads]
    assert len(names) == 24
    assert names[0] == "model.0" and names[-1] == "model.80"
    depths = [int(name.split(".")[1]) for name in names]
    assert depths == sorted(depths) and len(set(depths)) == 24


def test_a_layer_called_at_every_time_step_is_listed_once():
    class Recurrent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cell = nn.Linear(8, 8)
            self.head = nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = x
            for _ in range(5):
                h = torch.tanh(self.cell(h))
            return self.head(h)

    torch.manual_seed(2)
    learning = _train(Recurrent())
    assert [layer.module for layer in learning.layer_grads] == ["model.cell", "model.head"]


def test_a_layer_dead_through_with_no_first_gradient_is_dying_even_after_a_loss_spike():
    spike = [3.3, 170.0, 320.0, 180.0] + [40.0 - 0.1 * i for i in range(156)]  # falls back
    dead = _with(ActivationNote(name="model.1", kind="relu", share=1.0), first=0.0)
    [symptom] = detect_learning_symptoms(_report(dead, spike))
    assert symptom.id == "dying-relus" and symptom.confidence >= 0.8
    assert "first layer, Net.0, got a gradient norm of exactly 0" in symptom.evidence[0]
    # the same curve with a gradient still reaching the first layer: the run learned
    alive = _with(ActivationNote(name="model.1", kind="relu", share=1.0), first=0.3)
    assert _ids(alive, spike) == []
    mostly = _with(ActivationNote(name="model.1", kind="relu", share=0.9), first=0.0)
    assert "dying-relus" not in _ids(mostly, spike)
