"""A backward event's producer is confirmed by a replay of the step under anomaly mode.

A GPT-style stack (norm -> attention -> GELU MLP, residuals) trained by AdamW at a far too
high lr sends a huge gradient into a norm's backward, whose products overflow there: the
first nan is born in the norm's backward, not in the op re-run alone with a gradient of ones.
The event names the norm (torch's LayerNorm, or a norm written by hand), the op, the line
inside the block's ``forward`` where it ran, and the user's frames from the training loop's
call down to it, and says the anomaly-mode replay confirmed it; torch's own anomaly mode,
run on the same training, stops at the same autograd node.
"""

from __future__ import annotations

import inspect
import re
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from diagnose.tracer import NonFiniteDetected, Tracer


class HandNorm(nn.Module):
    """An RMS norm written by hand: its backward is a few user ops, not one torch module."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gain * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)  # NORM-OP


class Block(nn.Module):
    def __init__(self, d: int, norm: type[nn.Module]) -> None:
        super().__init__()
        self.pre_attn, self.pre_mlp = norm(d), norm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.pre_attn(x)).chunk(3, -1)  # PRE-ATTN
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return x + self.down(F.gelu(self.up(self.pre_mlp(x))))


def _train(norm: type[nn.Module], steps: int = 40) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(40, 32), Block(32, norm), Block(32, norm), nn.Linear(32, 40))
    opt = torch.optim.AdamW(model.parameters(), lr=1e3)
    for _ in range(steps):
        idx = torch.randint(0, 40, (4, 12))
        logits = model(idx)  # THE-LOOP
        loss = F.cross_entropy(logits.flatten(0, 1), idx.roll(-1, 1).flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()


def _line(obj: object, marker: str) -> int:
    lines, start = inspect.getsourcelines(obj)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def _anomaly_node(norm: type[nn.Module]) -> str:
    """The autograd node torch's own anomaly mode stops at, on the same training."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as raised, torch.autograd.detect_anomaly(check_nan=True):
            _train(norm)
    found = re.search(r"Function '(\w+)' returned nan", str(raised.value))
    assert found is not None, str(raised.value)
    return found.group(1)


@pytest.mark.parametrize("detail_every", [16, 1], ids=["light", "detailed"])
@pytest.mark.parametrize(
    ("norm", "op", "where"),
    [
        (nn.LayerNorm, "layer_norm", (Block.forward, "PRE-ATTN")),
        (HandNorm, "mul", (HandNorm.forward, "NORM-OP")),
    ],
    ids=["LayerNorm", "hand-written"],
)
def test_the_norm_whose_backward_made_the_nan_is_named_and_confirmed(norm, op, where, detail_every):
    with pytest.raises(NonFiniteDetected) as stopped, Tracer(detail_every=detail_every):
        _train(norm)
    event = stopped.value.event
    assert event.phase == "backward"
    assert event.module_type == norm.__name__
    assert event.module is not None and event.module.endswith(".pre_attn")
    assert event.op == op
    assert event.location is not None
    assert (event.location.file, event.location.line) == (__file__, _line(*where))
    chain = [(f.file, f.line) for f in event.call_chain or []]
    assert chain[0] == (__file__, _line(_train, "THE-LOOP"))  # the loop's call of the model
    assert chain[-1] == (__file__, _line(*where))
    if norm is HandNorm:  # through the block's forward into the norm's
        assert (__file__, _line(Block.forward, "PRE-ATTN")) in chain
    check = event.cross_check
    assert check is not None and check.method == "anomaly-mode replay"
    assert check.agreed is not None
    assert _anomaly_node(norm) in event.message


def test_a_backward_event_found_outside_the_model_keeps_its_own_producer():
    """A gradient born in the loss code (sqrt at 0) is the op watch's: no model replay."""
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.zeros(8, 4)
    with pytest.raises(NonFiniteDetected) as stopped, Tracer():
        out = model(x) * 0
        loss = out.pow(2).sum(-1).sqrt().mean()  # sqrt(0): an infinite derivative
        loss.backward()
        opt.step()
    event = stopped.value.event
    assert event.op == "sqrt"
    assert event.cross_check is None


class ZeroSafeUnit(nn.Module):
    """Scales rows to unit length; a zero row's sqrt has an infinite derivative."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.inner(x) * (x.abs().sum(-1, keepdim=True) > 0)
        return e / e.pow(2).sum(-1, keepdim=True).sqrt().clamp_min(1e-6)  # UNIT-SQRT


def test_both_methods_name_the_same_op_inside_a_module():
    torch.manual_seed(0)
    model = nn.Sequential(ZeroSafeUnit(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    x[:2] = 0
    with pytest.raises(NonFiniteDetected) as stopped, Tracer():
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    event = stopped.value.event
    assert (event.op, event.module_type) == ("sqrt", "ZeroSafeUnit")
    assert event.location is not None
    assert event.location.line == _line(ZeroSafeUnit.forward, "UNIT-SQRT")
    check = event.cross_check
    assert check is not None and check.agreed is True and check.first is None
