"""What the Tracer keeps and when it reads: frames, sampling, host reads, hooks, DTensor."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optim_hooks

from diagnose.tracer import NonFiniteDetected, Tracer


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))


def _train(model: nn.Module, steps: int, tracer: Tracer, lr: float = 0.01) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with tracer:
        for _ in range(steps):
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()


@pytest.mark.parametrize("n", [1, 3, 7])
def test_the_ring_buffer_keeps_exactly_the_last_n_calls_oldest_first(n):
    # a container's call ends after its children's
    tracer = Tracer(frames=n, detail_every=1)  # every step watches every module call
    _train(_mlp(), 3, tracer)  # 6 module calls per step, 18 in all
    frames = tracer.report().frames
    assert len(frames) == n
    assert [f.step for f in frames] == sorted(f.step for f in frames)  # in the order calls ended
    assert frames[-1].module == "Sequential" and frames[-1].step == 2  # the last call made
    if n == 7:
        assert [f.module for f in frames] == ["Sequential", "0", "1", "2", "3", "4", "Sequential"]


def test_frames_carry_input_output_and_weight_statistics():
    model = _mlp()
    with torch.no_grad():
        model[4].weight.fill_(1e38)  # the loss of the first step overflows
    with pytest.raises(NonFiniteDetected) as caught:
        _train(model, 1, Tracer(frames=3))
    frame = next(f for f in caught.value.frames if f.module == "4")
    assert (frame.module, frame.module_type, frame.phase) == ("4", "Linear", "forward")
    assert frame.inputs[0].shape == [16, 8] and frame.outputs[0].shape == [16, 1]
    assert {w.name for w in frame.weights} == {"weight", "bias"}
    assert max(w.abs_max for w in frame.weights) == pytest.approx(1e38, rel=1e-6)
    assert frame.inputs[0].abs_max > 0 and frame.inputs[0].headroom > 1e30


def test_frames_of_steps_an_update_followed_show_no_weights_of_today():
    # The weights are read when the report is made: a frame recorded before the last update
    # would show values its call never saw, so it shows none.
    tracer = Tracer(frames=12, detail_every=1)
    _train(_mlp(), 2, tracer, lr=0.5)
    assert all(f.weights == [] for f in tracer.report().frames)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    x = torch.randn(16, 4)
    with pytest.raises(NonFiniteDetected) as caught, Tracer(frames=12, detail_every=1):
        for step in range(2):
            if step == 1:
                x[0, 0] = float("nan")
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
    frames = caught.value.frames
    assert {f.step for f in frames} == {0, 1}
    assert all(f.weights == [] for f in frames if f.step == 0)
    assert all(f.weights for f in frames if f.step == 1 and f.module_type == "Linear")


def test_frames_must_be_positive():
    with pytest.raises(ValueError, match="frames"):
        Tracer(frames=0)
    with pytest.raises(ValueError, match="sample_every"):
        Tracer(sample_every=0)


def test_at_most_one_host_read_per_training_step():
    tracer = Tracer()
    _train(_mlp(), 10, tracer)
    assert len(tracer.report().history) == 10
    assert tracer.syncs <= 10 + 1  # one per step, plus the final weights check at exit


def test_a_manual_update_loop_without_an_optimizer_is_still_checked_once_per_step():
    model = nn.Linear(3, 1)
    x = torch.randn(8, 3)
    with pytest.raises(NonFiniteDetected) as info, Tracer() as tracer:
        for step in range(6):
            model(x).pow(2).mean().backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 1e30 * p.grad if step >= 3 else 0.01 * p.grad
                    p.grad = None
    assert info.value.event.step == 4  # each backward pass is a step: the real one
    assert tracer.syncs <= 6


def test_sample_every_watches_one_step_in_k():
    every, sampled = Tracer(), Tracer(sample_every=3)
    _train(_mlp(), 9, every)
    _train(_mlp(), 9, sampled)
    watched = [h for h in sampled.report().history if h.max_output]
    assert len(every.report().history) == 9
    assert [h.step for h in watched] == [0, 3, 6]
    assert sampled.syncs < every.syncs


def test_sampling_still_stops_a_watched_step_that_goes_non_finite():
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 4)
    with pytest.raises(NonFiniteDetected) as info, Tracer(sample_every=2):
        for step in range(6):
            if step == 4:
                x = x.clone()
                x[0, 0] = float("nan")
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
    assert (info.value.event.phase, info.value.event.step) == ("input", 4)


def test_a_nan_loss_is_reported_as_loss_and_the_update_never_lands():
    model = nn.Linear(3, 1)
    before = model.weight.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(NonFiniteDetected) as info, Tracer():
        out = model(torch.ones(2, 3))
        loss = (out - out.detach()).sum() / torch.zeros(())  # 0/0 in a hand-written loss
        loss.backward()
        opt.step()
    assert info.value.event.phase == "loss" and info.value.event.op == "div"
    assert torch.equal(model.weight.detach(), before)


class _SqrtNorm(nn.Module):
    def forward(self, x):  # finite forward (clamped), but d sqrt/dx at 0 is inf -> nan grads
        return x / (x * x).sum(-1, keepdim=True).sqrt().clamp_min(1e-6)


@pytest.mark.parametrize("backward", [True, False])
def test_a_nan_gradient_born_in_backward_stops_before_the_update(backward):
    model = nn.Sequential(nn.Linear(3, 3), _SqrtNorm(), nn.Linear(3, 1))
    with torch.no_grad():
        model[0].weight[0].zero_()
        model[0].bias.zero_()
    before = model[0].weight.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    with pytest.raises(NonFiniteDetected) as info, Tracer(backward=backward):
        model(x).sum().backward()
        opt.step()
    assert info.value.event.phase == "backward" and info.value.event.step == 0
    assert torch.equal(model[0].weight.detach(), before)


def _hook_state() -> tuple:
    return (
        dict(module_hooks._global_forward_hooks),
        dict(module_hooks._global_forward_pre_hooks),
        dict(optim_hooks._global_optimizer_pre_hooks),
        dict(optim_hooks._global_optimizer_post_hooks),
        torch.Tensor.backward,
        torch.autograd.backward,
        torch.amp.GradScaler.step,
        torch.utils.data.dataloader._BaseDataLoaderIter._next_index,
    )


def test_hooks_and_patches_are_removed_after_an_event_in_a_training_loop():
    before = _hook_state()
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(NonFiniteDetected), Tracer():
        for step in range(3):
            x = torch.ones(4, 2) * (float("inf") if step == 2 else 1.0)
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
    assert _hook_state() == before
    model(torch.ones(1, 2)).sum().backward()  # training on afterwards is untouched
    opt.step()


def test_a_forward_event_is_pinned_to_the_op_after_the_inputs_were_released():
    class Scale(nn.Module):
        def forward(self, x):
            return x / x.sum(dim=1, keepdim=True)  # a row summing to 0 divides by 0

    model = nn.Sequential(nn.Linear(2, 2), Scale(), nn.Linear(2, 1))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        model[0].bias.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with pytest.raises(NonFiniteDetected) as info, Tracer():
        model(torch.ones(3, 2)).sum().backward()  # the check runs at the step, after backward
        opt.step()
    event = info.value.event
    assert (event.phase, event.module, event.module_type, event.op) == (
        "forward",
        "1",
        "Scale",
        "div",
    )
    assert event.location is not None and event.location.file == __file__


def test_dtensor_values_are_read_through_their_local_shard():
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not built in")
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_module, distribute_tensor

    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        mesh = init_device_mesh("cpu", (1,))
        model = distribute_module(nn.Linear(2, 2), mesh)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        tracer = Tracer()
        with tracer:
            for _ in range(2):
                model(distribute_tensor(torch.randn(4, 2), mesh, [Shard(0)])).sum().backward()
                opt.step()
                opt.zero_grad()
        report = tracer.report()
        assert report.status == "clean" and len(report.history) == 2
        assert report.frames[-1].outputs[0].shape == [4, 2]

        bad = distribute_tensor(torch.tensor([[1.0, float("nan")]]), mesh, [Shard(0)])
        with pytest.raises(NonFiniteDetected) as info, Tracer():
            model(bad)
        assert info.value.event.phase == "input"
    finally:
        dist.destroy_process_group()


def test_a_float64_model_trains_clean_under_the_tracer():
    # the step's gradient norms are float32: fp64 gradients must be cast, not rejected
    model = _mlp().double()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(16, 4, dtype=torch.float64)
    with Tracer() as tracer:
        for _ in range(2):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
    assert tracer.event is None and len(tracer.history) == 2


@pytest.mark.parametrize("by_keyword", [False, True])
def test_a_closure_optimizer_is_stopped_before_it_uses_a_bad_evaluation(by_keyword):
    # LBFGS evaluates its closure (forward and backward) inside step() and updates the
    # weights from each evaluation's gradients: each is checked before it is used.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.LBFGS(model.parameters(), lr=1.0)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    bad_step = 3
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        for step in range(6):

            def closure(step=step):
                opt.zero_grad()
                scale = float("inf") if step == bad_step else 1.0
                loss = nn.functional.mse_loss(model(x) * scale, y)
                loss.backward()
                return loss

            before = [p.detach().clone() for p in model.parameters()]
            opt.step(closure=closure) if by_keyword else opt.step(closure)
    event = caught.value.event
    assert (event.step, event.phase, event.op) == (bad_step, "loss", "mul")
    assert all(torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    assert all(bool(torch.isfinite(p).all()) for p in model.parameters())


def test_a_closure_optimizers_history_has_the_norm_of_its_last_evaluation():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
    x, y = torch.randn(32, 4), torch.randn(32, 1)

    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    with Tracer() as tracer:
        for _ in range(3):
            opt.step(closure)
            last = torch.linalg.vector_norm(
                torch.stack([p.grad.norm() for p in model.parameters()])
            )
    assert tracer.history[-1].grad_norm == pytest.approx(float(last), rel=1e-5)
    assert len(tracer.history) == 3


@pytest.mark.parametrize("grad", [1e19, 1e38])  # the norm's square, or the norm, past fp32
def test_finite_gradients_whose_float32_norm_overflows_are_no_event_and_keep_their_norm(grad):
    weight = nn.Parameter(torch.zeros(100))
    opt = torch.optim.SGD([weight], lr=1e-45)
    with Tracer() as tracer:
        (weight * grad).sum().backward()
        opt.step()
    assert tracer.event is None
    assert tracer.history[0].grad_norm == pytest.approx(grad * 10, rel=1e-6)


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.mark.parametrize("steps_before", [0, 3])  # a detailed first step, a light one
def test_a_compiled_model_is_named_as_the_script_spells_it(steps_before):
    torch.manual_seed(0)
    net = _Net()
    model = torch.compile(net, backend="eager")  # wraps the model as `_orig_mod`
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    x, y = torch.randn(16, 4) * 100, torch.randn(16, 1)
    with pytest.raises(NonFiniteDetected) as info, Tracer() as tracer:
        for step in range(steps_before + 1):
            if step == steps_before:
                with torch.no_grad():
                    net.fc2.weight.mul_(1e37)
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    assert (info.value.event.module, info.value.event.module_type) == ("fc2", "Linear")
    assert info.value.event.step == steps_before
    assert not any("_orig_mod" in (f.module or "") for f in tracer.report().frames)


def test_torchs_warning_about_global_hooks_on_a_compiled_model_is_the_tracers_to_hide():
    import warnings

    model = torch.compile(_Net(), backend="eager")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        with Tracer():  # the first step is detailed: global module hooks are on
            nn.functional.mse_loss(model(torch.randn(2, 4)), torch.randn(2, 1)).backward()
        after = list(warnings.filters)
    assert not [w for w in seen if "global hooks" in str(w.message)]
    assert after == before  # the filter goes with the tracer


class _EpsNorm(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (x.std(-1, keepdim=True) + 1e-8)  # 1e-8 is 0 in float16


def test_the_op_that_made_an_input_with_a_plain_number_is_kept_with_its_line():
    model = nn.Sequential(nn.Linear(4, 4), _EpsNorm()).half()
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.fill_(0.5)  # every row constant: its std is 0
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with pytest.raises(NonFiniteDetected) as info, Tracer():
        model(torch.randn(2, 4).half()).float().sum().backward()
        opt.step()
    event = info.value.event
    assert (event.op, event.module) == ("div", "1")
    [source] = event.op_input_sources
    assert (source.input, source.op, source.numbers) == (1, "add", [1e-8])
    assert source.location.file == __file__ and source.location.function == "forward"


def test_a_model_cast_to_float16_mid_run_reports_its_gradients_as_float16():
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    x = torch.randn(16, 4)
    with pytest.raises(NonFiniteDetected) as info, Tracer(detail_every=100):
        for step in range(3):
            if step == 2:
                model.half()  # the same parameters, now float16
                x = x.half()
            model(x).float().sum().backward()
            if step == 2:
                model[0].weight.grad[0, 0] = float("inf")  # a gradient no module made
            opt.step()
            opt.zero_grad()
    event = info.value.event
    assert (event.phase, event.step, event.module) == ("backward", 2, "0")
    assert event.dtype == "float16"


def _gan_loop(feature, iterations: int = 3) -> None:
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    netD = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    optD = torch.optim.Adam(netD.parameters(), lr=2e-4)
    optG = torch.optim.Adam(netG.parameters(), lr=2e-4)
    bce = nn.functional.binary_cross_entropy_with_logits
    for _ in range(iterations):
        fake = netG(torch.randn(16, 4))
        optD.zero_grad()
        d_fake = netD(feature(fake.detach()))
        bce(d_fake, torch.zeros_like(d_fake)).backward()
        optD.step()
        optG.zero_grad()
        g_out = netD(feature(fake))  # the generator's half: after optD.step, before a forward
        bce(g_out, torch.ones_like(g_out)).backward()
        optG.step()


def _spread(x):
    d = torch.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))  # 0 on the diagonal
    return torch.cat([x, d.mean(1, keepdim=True)], -1)


def test_two_models_with_alike_submodules_are_named_by_what_the_script_calls_them():
    with Tracer(detail_every=1) as tracer:
        _gan_loop(lambda x: torch.cat([x, x[:, :1]], -1))
    modules = {f.module for f in tracer.report().frames}
    assert {"netG.0", "netD.0", "netD", "netG"} <= modules
    assert "0" not in modules


def test_ops_between_two_optimizers_steps_are_watched_for_the_second_half():
    # The generator's gradients turn nan in the backward of sqrt at 0 run between optD.step()
    # and the discriminator's forward of the generator half.
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        _gan_loop(_spread)
    event = caught.value.event
    assert (event.phase, event.op) == ("backward", "sqrt")
    assert event.location.line == _spread.__code__.co_firstlineno + 1


class _TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h)  # CALLS FC2


def test_an_op_in_torchs_own_module_code_is_located_at_the_users_call_of_the_module():
    import inspect

    model = _TwoLayers()
    with torch.no_grad():
        model.fc2.weight.fill_(3e38)
    with pytest.raises(NonFiniteDetected) as caught:
        _train(model, 1, Tracer())
    event = caught.value.event
    assert (event.module, event.op) == ("fc2", "linear")
    lines, start = inspect.getsourcelines(_TwoLayers.forward)
    line = start + next(i for i, text in enumerate(lines) if "# CALLS FC2" in text)
    assert (event.location.file, event.location.line) == (__file__, line)


def test_a_gradient_made_by_a_module_with_parameters_is_blamed_on_it_not_on_its_input():
    # Modules that own parameters carry no gradient hook; the inf reaching the ReLU's output
    # was made by the backward of the Linear after it (3e38 + 3e38 overflows).
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.fill_(-1.0)  # the ReLU's output is 0: the forward stays finite
        model[2].weight.fill_(3e38)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        model(torch.randn(3, 4)).sum().backward()
        opt.step()
    event = caught.value.event
    assert (event.phase, event.module, event.module_type) == ("backward", "2", "Linear")
    assert "w.r.t. the output of `1` (ReLU)" in event.message
