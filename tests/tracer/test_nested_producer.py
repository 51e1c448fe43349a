"""A value made non-finite in a model's own code and then passed through nested containers is
born in that code, not in the container that passed it on."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from diagnose.tracer import NonFiniteDetected, Tracer


class _Sampler(nn.Module):
    """A VAE's reparameterisation: exp of a log-variance, in the model's own forward."""

    def __init__(self) -> None:
        super().__init__()
        self.logvar = nn.Linear(4, 8)
        self.dec = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.exp(0.5 * self.logvar(x))
        return self.dec(z)


EXP_LINE = inspect.getsourcelines(_Sampler.forward)[1] + 1


@pytest.mark.parametrize("detail_every", [1, 16])
def test_an_exp_in_the_models_own_code_is_the_producer_not_the_container_after_it(detail_every):
    torch.manual_seed(0)
    model = _Sampler()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    tracer = Tracer(detail_every=detail_every)
    with pytest.raises(NonFiniteDetected), tracer:
        for step in range(6):
            if step == 3:
                with torch.no_grad():
                    model.logvar.bias.fill_(500.0)  # exp(250) overflows float32
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    event = tracer.event
    assert (event.phase, event.step, event.module, event.op) == ("forward", 3, "_Sampler", "exp")
    assert event.location.line == EXP_LINE
    assert (
        "`_Sampler` (_Sampler, float32): made non-finite in its own forward from finite "
        "inputs; `dec.0` (Linear) received it"
    ) in event.message
