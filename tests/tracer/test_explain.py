"""Writing an event from scanned records: one message, written once, numbers by one formatter."""

from __future__ import annotations

import math

import torch

from diagnose.report import InputValues, Location, TensorStats
from diagnose.tracer import explain
from diagnose.tracer.ops import OpFinding
from diagnose.tracer.window import Rec


def _call(module: torch.nn.Module, values: list[tuple[float, float]], step: int = 3) -> Rec:
    rec = Rec("call", "forward", step, module, [("output", torch.float16, (2,), 0)], call=7)
    rec.values = values
    rec.ins = [("input[0]", torch.float16, (2,), 1)]
    rec.invalues = [(-1.0, 1.0)]
    return rec


def _finding(op: str = "exp", backward: bool = False) -> OpFinding:
    values = [InputValues(name="input[0]", dtype="float16", min=0.0, max=12.0, min_abs=0.0)]
    return OpFinding(
        op,
        Location(file="train.py", line=12),
        [TensorStats(name="input[0]", dtype="float16", abs_max=12.0, zeros=1)],
        detail=f"{op} received min |x| = 0, max |x| = 12 and returned inf",
        backward=backward,
        value="inf",
        values=values,
    )


def _names(module: object) -> str:
    return "encoder.act"


def test_a_forward_event_ends_its_message_with_the_op_its_line_and_what_it_received():
    rec = _call(torch.nn.ReLU(), [(0.0, math.inf)])
    event = explain.forward_event(rec, rec, _names, 0.125, _finding())
    assert event.message == (
        "first non-finite: step 3, forward, `encoder.act` (ReLU, float16): output |x| max = inf "
        "from finite input, weight |x| max 0.125; op `exp` at train.py:12: "
        "exp received min |x| = 0, max |x| = 12 and returned inf"
    )
    assert (event.op, event.op_value, event.location.line) == ("exp", "inf", 12)
    assert event.op_input_values[0].min_abs == 0.0
    assert event.details == ["exp received min |x| = 0, max |x| = 12 and returned inf"]


def test_a_gradient_born_in_an_op_outside_modules_names_the_op_and_no_module():
    rec = Rec("grad", "backward", 2, torch.nn.Tanh(), [("grad_output", torch.float32, (2,), 0)])
    rec.values = [(math.nan, math.nan)]
    found = explain.BackwardOp(_finding("div", backward=True))
    event = explain.grad_event(rec, torch.nn.Linear(2, 2), _names, found)
    assert event.message.startswith(
        "first non-finite: step 2, backward, op `div` (float32): gradient nan w.r.t. the "
        "output of `encoder.act` (Tanh); born in the backward of op `div` at train.py:12"
    )
    assert "incoming" not in event.message
    assert (event.module, event.module_type, event.op_value) == (None, None, None)


def test_a_gradient_found_inside_a_module_names_that_module():
    rec = Rec("grad", "backward", 2, torch.nn.Tanh(), [("grad_output", torch.float32, (2,), 0)])
    rec.values = [(-math.inf, 0.0)]
    found = explain.BackwardOp(_finding("sqrt", backward=True), ("encoder.norm", "LayerNorm"))
    # the module backward visited before (a Linear) is only a guess: the op's module is named
    event = explain.grad_event(rec, torch.nn.Linear(2, 2), _names, found)
    assert (
        "`encoder.norm` (LayerNorm, float32): gradient -inf w.r.t. the output of `encoder.act` (Tanh) "
        "from finite " in event.message
    )
    assert (event.module, event.module_type) == ("encoder.norm", "LayerNorm")


def test_a_light_step_note_is_kept_only_when_no_op_was_named():
    rec = Rec("loss", "loss", 1, None, [("loss", torch.float32, (), 0)])
    rec.values = [(math.nan, math.nan)]
    assert explain.loss_event(rec, None, "light step: ...").details == ["light step: ..."]
    named = explain.loss_event(rec, _finding("log"), "light step: ...")
    assert named.details == [_finding("log").detail]


def test_numbers_in_event_messages_are_written_by_the_one_formatter():
    rec = Rec("scale", "backward", 5, None, [("loss_scale", torch.float32, (), 0)])
    rec.values = [(-math.inf, -math.inf)]
    assert "loss scale collapsed to -inf:" in explain.scale_event(rec).message
    rec.values = [(0.0001220703125, 0.0001220703125)]
    assert "loss scale collapsed to 1.2e-4:" in explain.scale_event(rec).message
    assert "(scale 6.1e-5)" in explain.skips_event(9, 25, 6.103515625e-05).message
