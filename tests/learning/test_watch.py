"""The learning watch turns what a real training loop does into plain evidence.

Each test runs a tiny real loop under ``LearningWatch`` and reads ``evidence()``; each habit
that makes a run unable to learn is paired with the healthy way of writing the same loop.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from diagnose.learning.watch import LearningWatch
from diagnose.report import Learning


def _data(n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(n, 6)
    return x, (x[:, 0] > 0).long()


def _watch(loop: Callable[[], None]) -> Learning:
    with LearningWatch() as watch:
        loop()
    return watch.evidence()


def _loop(
    model: nn.Module,
    *,
    steps: int = 6,
    zero_grad: bool = True,
    step: bool = True,
    params: object = None,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy,
) -> Callable[[], None]:
    x, y = _data()

    def run() -> None:
        optimizer = torch.optim.SGD(params or model.parameters(), lr=0.1)
        for i in range(steps):
            if zero_grad:
                optimizer.zero_grad()
            loss_fn(model(x[i * 8 : i * 8 + 8]), y[i * 8 : i * 8 + 8]).backward()
            if step:
                optimizer.step()

    return run


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))


def test_counts_backward_passes_and_optimizer_steps() -> None:
    evidence = _watch(_loop(_mlp(), steps=5))
    assert (evidence.backward_passes, evidence.optimizer_steps, evidence.optimizers) == (5, 5, 1)


def test_a_loop_without_zero_grad_steps_on_uncleared_gradients() -> None:
    evidence = _watch(_loop(_mlp(), zero_grad=False))
    assert evidence.clear_checked >= 4 and evidence.uncleared == evidence.clear_checked


def test_zero_grad_and_clearing_by_hand_both_count_as_cleared() -> None:
    assert _watch(_loop(_mlp())).uncleared == 0
    model = _mlp()
    x, y = _data()

    def by_hand() -> None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(6):
            F.cross_entropy(model(x[i * 8 : i * 8 + 8]), y[i * 8 : i * 8 + 8]).backward()
            optimizer.step()
            for p in model.parameters():
                p.grad = None

    evidence = _watch(by_hand)
    assert evidence.clear_checked >= 4 and evidence.uncleared == 0


def test_gradient_accumulation_clears_once_per_step_and_is_not_a_miss() -> None:
    model = _mlp()
    x, y = _data()

    def accumulate() -> None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(8):
            F.cross_entropy(model(x[i * 8 : i * 8 + 8]), y[i * 8 : i * 8 + 8]).backward()
            if i % 2 == 1:
                optimizer.step()
                optimizer.zero_grad()

    evidence = _watch(accumulate)
    assert evidence.optimizer_steps == 4 and evidence.uncleared == 0


def test_layers_in_a_plain_list_are_unregistered_with_their_container() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = nn.Linear(6, 8)
            self.blocks = [nn.Linear(8, 8), nn.Linear(8, 8)]
            self.last = nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.first(x)
            for block in self.blocks:
                x = block(x).relu()
            return self.last(x)

    evidence = _watch(_loop(Net()))
    assert [n.name for n in evidence.unregistered] == ["model.blocks[0]", "model.blocks[1]"]
    assert {n.container for n in evidence.unregistered} == {"model.blocks (a list)"}
    assert evidence.not_in_optimizer == []


def test_parameters_left_out_of_the_optimizer_are_named() -> None:
    model = _mlp()
    evidence = _watch(_loop(model, params=model[2].parameters()))
    assert [n.name for n in evidence.not_in_optimizer] == ["model.0"]
    assert evidence.not_in_optimizer[0].parameters == 6 * 8 + 8


def test_a_frozen_part_left_out_of_the_optimizer_on_purpose_is_not_named() -> None:
    model = _mlp()
    model[0].requires_grad_(False)
    evidence = _watch(_loop(model, params=model[2].parameters()))
    assert evidence.not_in_optimizer == [] and evidence.no_gradient == []


def test_a_detached_backbone_gets_no_gradient_and_a_no_grad_block_is_named() -> None:
    class Detached(nn.Module):
        def __init__(self, no_grad: bool) -> None:
            super().__init__()
            self.body, self.head, self.no_grad = nn.Linear(6, 8), nn.Linear(8, 2), no_grad

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.no_grad:
                with torch.no_grad():
                    return self.head(self.body(x))  # the body runs without gradients
            return self.head(self.body(x).detach())

    detached = _watch(_loop(Detached(no_grad=False)))
    assert [n.name for n in detached.no_gradient] == ["model.body"]
    assert detached.no_grad_modules == []


def test_a_module_run_under_no_grad_inside_the_training_forward_is_named() -> None:
    class Partly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body, self.head = nn.Linear(6, 8), nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                h = self.body(x)
            return self.head(h)

    assert _watch(_loop(Partly())).no_grad_modules == ["model.body"]


def test_a_teacher_run_wholly_under_no_grad_is_not_a_cut() -> None:
    teacher, student = _mlp(), _mlp()
    x, _ = _data()

    def distil() -> None:
        optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
        for i in range(6):
            with torch.no_grad():
                soft = teacher(x[i * 8 : i * 8 + 8]).softmax(dim=1)
            out = student(x[i * 8 : i * 8 + 8])
            loss = F.kl_div(out.log_softmax(dim=1), soft, reduction="batchmean")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    evidence = _watch(distil)
    assert evidence.no_grad_modules == [] and evidence.no_gradient == []
    assert evidence.not_in_optimizer == []


@pytest.mark.parametrize(
    ("head", "function", "producer"),
    [
        (nn.Softmax(dim=1), "cross_entropy", "softmax"),
        (nn.Identity(), "cross_entropy", None),
        (nn.LogSoftmax(dim=1), "cross_entropy", None),
    ],
)
def test_the_loss_input_producer_is_read_from_the_graph(head, function, producer) -> None:
    evidence = _watch(_loop(nn.Sequential(_mlp(), head)))
    [loss] = evidence.losses
    assert (loss.function, loss.producer, loss.classes) == (function, producer, 2)


def test_nll_loss_after_softmax_is_named_but_after_log_softmax_is_cross_entropy() -> None:
    wrong = _watch(_loop(nn.Sequential(_mlp(), nn.Softmax(dim=1)), loss_fn=F.nll_loss))
    right = _watch(_loop(nn.Sequential(_mlp(), nn.LogSoftmax(dim=1)), loss_fn=F.nll_loss))
    assert [(x.function, x.producer) for x in wrong.losses] == [("nll_loss", "softmax")]
    # log_softmax then nll_loss is the very graph cross_entropy builds
    assert [(x.function, x.producer) for x in right.losses] == [("cross_entropy", None)]


def test_a_broadcast_regression_target_is_seen_with_both_shapes() -> None:
    model = nn.Linear(6, 1)

    def mse(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(out, y.float())

    with pytest.warns(UserWarning, match="target size"):
        evidence = _watch(_loop(model, loss_fn=mse))
    [loss] = evidence.losses
    assert loss.broadcast and loss.input_shape == [8, 1] and loss.broadcast_shape == [8, 8]


def test_a_regression_of_matching_shapes_is_not_broadcast() -> None:
    model = nn.Linear(6, 1)

    def mse(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(out.squeeze(1), y.float())

    [loss] = _watch(_loop(model, loss_fn=mse)).losses
    assert not loss.broadcast


def test_eval_mode_on_every_training_pass_is_counted_and_train_mode_is_not() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.2), nn.Linear(8, 2))
    model.eval()
    in_eval = _watch(_loop(model))
    model.train()
    in_train = _watch(_loop(model))
    assert in_eval.mode_checked >= 3 and in_eval.eval_mode == in_eval.mode_checked
    assert in_train.mode_checked >= 3 and in_train.eval_mode == 0


def test_a_model_without_dropout_or_batch_norm_is_not_checked_for_its_mode() -> None:
    model = _mlp().eval()
    assert _watch(_loop(model)).mode_checked == 0


def test_the_first_layers_input_scale_and_the_weight_motion_are_measured() -> None:
    model = _mlp()
    x, y = _data()

    def raw() -> None:
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
        for i in range(4):
            optimizer.zero_grad()
            F.cross_entropy(
                model(x[i * 8 : i * 8 + 8] * 100 + 128), y[i * 8 : i * 8 + 8]
            ).backward()
            optimizer.step()

    evidence = _watch(raw)
    assert evidence.input_module == "model.0"
    assert 100 < evidence.input_mean < 160 and evidence.input_std > 50
    assert evidence.weight_change is not None and evidence.weight_change < 1e-3


def test_a_run_without_torch_optim_keeps_its_loss_per_backward_pass() -> None:
    w = torch.zeros(6, 1, requires_grad=True)
    x, _ = _data()
    y = x[:, :1] * 2

    def by_hand() -> None:
        for _ in range(10):
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                w.sub_(0.1 * w.grad)
                w.grad = None

    evidence = _watch(by_hand)
    assert evidence.optimizers == 0 and evidence.backward_passes == 10
    assert len(evidence.loss_series) == 10 and evidence.loss_series[-1] < evidence.loss_series[0]


def test_a_run_whose_optimizer_never_steps_keeps_its_loss_per_backward_pass() -> None:
    evidence = _watch(_loop(_mlp(), step=False))
    assert evidence.optimizer_steps == 0 and evidence.backward_passes == 6
    assert len(evidence.loss_series) == 6


def test_a_run_that_steps_after_accumulating_keeps_no_backward_series() -> None:
    model = _mlp()
    x, y = _data()

    def accumulate_then_step() -> None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(6):
            F.cross_entropy(model(x[i * 8 : i * 8 + 8]), y[i * 8 : i * 8 + 8]).backward()
            if i % 3 == 2:
                optimizer.step()
                optimizer.zero_grad()

    evidence = _watch(accumulate_then_step)
    assert evidence.optimizer_steps == 2 and evidence.loss_series == []


def test_the_watch_puts_back_everything_it_wrapped() -> None:
    before = (torch.autograd.backward, torch.optim.Optimizer.zero_grad, nn.Module.zero_grad)
    _watch(_loop(_mlp()))
    after = (torch.autograd.backward, torch.optim.Optimizer.zero_grad, nn.Module.zero_grad)
    assert before == after
    assert not torch.nn.modules.module._global_forward_pre_hooks


def test_a_compiled_model_trains_under_the_watch_as_without_it():
    """dynamo traces global module hooks into the graph it captures; the watch's own
    bookkeeping must not be part of it (it made ``torch.compile`` raise)."""
    torch.manual_seed(0)
    model = torch.compile(
        nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)), backend="eager"
    )
    learning = _watch(_loop(model, steps=4))
    assert learning.backward_passes == 4 and learning.optimizer_steps == 4


def test_a_watch_that_exits_right_after_a_sampled_step_leaves_no_hook():
    """The activations are sampled in the forward after certain steps; a run that ends there
    (a step limit, the end of an epoch's callback) must not leave that hook on every module."""
    from torch.nn.modules import module as module_hooks

    from diagnose.learning.watch import TRACKED_PASSES

    before = dict(module_hooks._global_forward_hooks)
    _watch(_loop(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)), steps=TRACKED_PASSES))
    assert dict(module_hooks._global_forward_hooks) == before


def _said_early(loop: Callable[[], None]) -> list[str]:
    said: list[str] = []
    with LearningWatch(on_early=said.append):
        loop()
    return said


def test_an_lbfgs_step_that_runs_backward_many_times_is_not_a_missing_step() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(64, 6) * 3, torch.randn(64, 1)
    model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))

    def loop() -> None:
        optimizer = torch.optim.LBFGS(model.parameters(), max_iter=20)

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss

        for _ in range(2):
            optimizer.step(closure)

    assert not any("never steps" in line for line in _said_early(loop))
    no_step = _loop(nn.Linear(6, 2), step=False, steps=12)
    assert any("never steps" in line for line in _said_early(no_step))
