"""On a CUDA device: the same causes are found, healthy AMP runs end clean, one host read a step.

Skipped where torch sees no CUDA device (CI); run on a GPU machine with
``python -m pytest tests/cuda``.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from diagnose.report import Report
from diagnose.tracer import NonFiniteDetected, Tracer
from tests.traced_scripts import debug_underflow_overflow_module, trace_script
from tests.traced_scripts import line_of as line_in

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def trace(name: str) -> tuple[Report, NonFiniteDetected | None]:
    return trace_script(SCRIPTS / name)


def line_of(name: str, text: str) -> int:
    return line_in(SCRIPTS / name, text)


def test_a_healthy_amp_run_with_early_scaler_skips_ends_clean():
    report, exc = trace("amp_scaler_healthy.py")
    assert exc is None and report.status == "clean"
    skipped = [h for h in report.history if h.skipped]
    assert skipped and not report.history[-1].skipped
    config = report.config.model_dump()
    assert config["grad_scaler"] and config["precision"] == "fp16-autocast"
    assert config["autocast"][0]["device_type"] == "cuda"
    assert config["grad_clip"]["kind"] == "norm" and config["grad_clip"]["clip_after_unscale"]


def test_an_autocast_linear_overflow_names_the_linear_and_its_step():
    report, exc = trace("amp_linear_overflow.py")
    assert exc is not None and report.status == "nonfinite"
    event = report.event
    assert (event.phase, event.module, event.op) == ("forward", "fc2", "linear")
    assert event.dtype == "float16" and event.step >= 1
    assert report.config.model_dump()["autocast_dtype"] == "float16"


def test_log_of_an_underflowed_softmax_names_the_op_and_line():
    report, _ = trace("log_softmax_ce.py")
    event = report.event
    assert (event.phase, event.op) == ("loss", "log")
    assert event.location.line == line_of("log_softmax_ce.py", "torch.log(picked)")
    assert "log received input min |x| = 0" in event.message


def test_a_nan_sample_moved_to_the_device_is_reported_as_input_with_its_index():
    report, _ = trace("dataloader_nan.py")
    assert (report.event.phase, report.event.step) == ("input", 1)
    assert report.event.sample_indices == [13]


def test_t5_fp16_on_cuda_names_the_same_module_as_debug_underflow_overflow(capsys):
    pytest.importorskip("transformers")
    report, _ = trace("t5_fp16_overflow.py")
    event = report.event
    assert (event.phase, event.step, event.dtype) == ("forward", 0, "float16")
    assert debug_underflow_overflow_module(SCRIPTS / "t5_fp16_overflow.py", capsys) == (
        event.module,
        event.module_type,
    )


def _synchronizing_calls(steps: int, tracer: Tracer | None) -> int:
    """Count the CUDA host synchronisations torch reports over ``steps`` training steps."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with tracer if tracer is not None else contextlib.nullcontext():
                for _ in range(steps):
                    loss = nn.functional.cross_entropy(model(x), y)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
        finally:
            torch.cuda.set_sync_debug_mode(0)
    return sum("synchroniz" in str(w.message) for w in caught)


def test_the_tracer_reads_the_device_at_most_once_a_step():
    steps = 40
    untraced = _synchronizing_calls(steps, None)
    tracer = Tracer()
    traced = _synchronizing_calls(steps, tracer)
    # torch itself may synchronise once (a lazy initialisation); the tracer adds at most one
    # read a step and one as it exits.
    assert untraced <= 2
    assert 0 < traced - untraced <= steps + 1
    assert tracer.syncs <= steps + 1
