"""A failure inside the tracer never passes for a verdict and never reaches the script: the
step it could not check is counted as unchecked, the report says why, and the run goes on
exactly as without the tracer."""

from __future__ import annotations

import torch

import diagnose


class Opaque(torch.Tensor):
    """A tensor subclass with no norm: every other op runs as a plain tensor's."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("_foreach_norm", "linalg_vector_norm"):
            raise NotImplementedError("no norm for Opaque")
        return super().__torch_function__(func, types, args, kwargs or {})


def _train(traced: bool) -> tuple[list[float], torch.Tensor, diagnose.Tracer | None]:
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(3))
    tracer = diagnose.Tracer() if traced else None
    losses = []
    with tracer if tracer is not None else torch.enable_grad():
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(4):
            opt.zero_grad()
            loss = (w * 2).pow(2).sum()
            loss.backward()
            w.grad = w.grad.as_subclass(Opaque)  # a gradient the tracer cannot take a norm of
            opt.step()
            losses.append(loss.item())
    return losses, w.detach().clone(), tracer


def test_steps_the_tracer_could_not_check_are_counted_and_said_and_the_run_is_unchanged():
    plain_losses, plain_w, _ = _train(traced=False)
    losses, w, tracer = _train(traced=True)
    assert losses == plain_losses
    assert torch.equal(w, plain_w)
    report = tracer.report()
    assert report.unwatched_steps == 4
    assert report.steps_recorded == 4
    assert report.warnings == [
        "tracer: the norms of the parameter gradients was not recorded: "
        "NotImplementedError: no norm for Opaque"
    ]
