"""End-to-end: real training scripts with a known cause, run under the Tracer."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.report import Report
from diagnose.tracer import NonFiniteDetected
from tests.traced_scripts import debug_underflow_overflow_module, trace_script
from tests.traced_scripts import line_of as line_in

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def trace(name: str) -> tuple[Report, NonFiniteDetected | None]:
    return trace_script(SCRIPTS / name)


def line_of(name: str, text: str) -> int:
    return line_in(SCRIPTS / name, text)


@pytest.mark.parametrize(
    ("script", "phase", "step", "module", "op"),
    [
        ("fp16_linear_overflow.py", "forward", 5, "fc2", "linear"),
        ("high_lr.py", "loss", 4, None, "mse_loss"),
        ("rnn_exploding.py", "loss", 10, None, "mse_loss"),
        ("dataloader_nan.py", "input", 1, "Sequential", None),
    ],
)
def test_module_level_causes_are_named(script, phase, step, module, op):
    report, exc = trace(script)
    assert exc is not None and report.status == "nonfinite"
    event = report.event
    assert (event.phase, event.step, event.module, event.op) == (phase, step, module, op)
    assert str(exc) == event.message and event.message.startswith("first non-finite:")


def test_the_producing_frame_is_marked_and_last():
    report, _ = trace("fp16_linear_overflow.py")
    assert [f.module for f in report.frames][-3:] == ["fc1", "act", "fc2"]
    producer = report.frames[-1]
    assert producer.producer and producer.outputs[0].abs_max == float("inf")
    assert all(s.finite for s in producer.inputs)
    assert producer.weights and producer.weights[0].name == "weight"


def test_history_shows_the_activation_growing_and_near_limit():
    report, _ = trace("fp16_linear_overflow.py")
    outputs = [h.max_output for h in report.history]
    assert outputs == sorted(outputs) and len(outputs) == 5
    for h in report.history:  # each column holds only what was measured for it
        assert (h.max_activation is not None) == h.detailed
        assert h.max_activation is None or h.max_activation >= h.max_output
    measured = [max(h.max_activation or 0.0, h.max_output) for h in report.history]
    assert [h.near_limit for h in report.history] == [m > 65504 / 2 for m in measured]


def test_exploding_rnn_history_shows_the_gradient_norm_growing():
    report, _ = trace("rnn_exploding.py")
    norms = [h.grad_norm for h in report.history]
    assert norms[-1] > 1e6 * norms[0]


def test_dataloader_nan_reports_the_dataset_index():
    report, _ = trace("dataloader_nan.py")
    assert report.event.sample_indices == [13]


@pytest.mark.parametrize(
    ("script", "phase", "tensor", "rows"),
    [
        ("half_cast_inputs.py", "input", "input[0]", [13]),
        ("half_cast_targets.py", "loss", "input[1]", [21]),
    ],
)
def test_a_finite_batch_cast_to_float16_is_told_from_non_finite_data(script, phase, tensor, rows):
    report, _ = trace(script)
    event = report.event
    assert event.phase == phase and event.batch_cast is not None, event.message
    cast = event.batch_cast
    assert (cast.input, cast.source_dtype, cast.dtype) == (tensor, "float32", "float16")
    assert cast.max_abs > 65504 and "became inf when cast to float16" in event.message
    assert event.sample_indices == rows


def test_data_that_holds_a_nan_itself_is_no_cast():
    report, _ = trace("dataloader_nan.py")
    assert report.event.batch_cast is None


@pytest.mark.parametrize(
    ("script", "step", "op", "line_text"),
    [
        ("log_softmax_ce.py", 2, "log", "torch.log(picked)"),
        ("fp16_loss_overflow.py", 0, "sum", "(diff * diff).sum()"),
    ],
)
def test_a_hand_written_loss_names_the_op_and_the_line(script, step, op, line_text):
    report, _ = trace(script)
    event = report.event
    assert (event.phase, event.step, event.op) == ("loss", step, op)
    assert event.location.line == line_of(script, line_text)
    assert Path(event.location.file).name == script


def test_log_of_underflowed_softmax_says_it_received_zero():
    report, _ = trace("log_softmax_ce.py")
    assert "log received input min |x| = 0" in report.event.message
    assert report.event.op_inputs[0].abs_max == 1.0


def test_division_by_zero_std_names_the_custom_layer_op_and_line():
    report, _ = trace("zero_std_norm.py")
    event = report.event
    assert (event.phase, event.step, event.module, event.module_type) == (
        "forward",
        2,
        "norm",
        "FeatureNorm",
    )
    assert event.op == "div"
    assert event.location.line == line_of("zero_std_norm.py", "return (x - mean) / std")


@pytest.mark.parametrize("script", ["fp32_healthy.py", "fp16_scaler_healthy.py"])
def test_healthy_runs_end_clean(script):
    report, exc = trace(script)
    assert exc is None and report.status == "clean" and report.event is None
    assert report.history


def test_grad_scaler_skips_are_recorded_not_events():
    report, _ = trace("fp16_scaler_healthy.py")
    skipped = [h for h in report.history if h.skipped]
    assert 5 <= len(skipped) < len(report.history)
    assert not report.history[-1].skipped


@pytest.mark.slow
def test_t5_overflow_names_the_same_module_as_debug_underflow_overflow(capsys):
    report, _ = trace("t5_fp16_overflow.py")
    event = report.event
    assert (event.phase, event.step) == ("forward", 0)
    assert event.module == "encoder.block.1.layer.1.DenseReluDense.wo"
    assert event.module_type == "Linear" and event.dtype == "float16"
    assert debug_underflow_overflow_module(SCRIPTS / "t5_fp16_overflow.py", capsys) == (
        event.module,
        event.module_type,
    )
