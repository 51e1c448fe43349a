"""Facts from evidence: each named fact, computed from the fields the tracer and capture fill,
and absent (not guessed) when the evidence is missing."""

from __future__ import annotations

import math

import pytest

from diagnose.facts import FACTS, detect_symptoms, extract_facts
from diagnose.facts.heuristics import normalize_op, op_family, round_to_fp16
from diagnose.facts.symptoms import fmt
from diagnose.report import Report


def report(**parts) -> Report:
    event = parts.get("event")
    status = parts.pop("status", "clean" if event is None else event.get("kind", "nonfinite"))
    if event is not None:
        event.setdefault("kind", "nonfinite")
        event.setdefault("message", "")
    return Report.model_validate({"status": status, "script": {"path": "t.py"}, **parts})


def facts_of(**parts):
    facts, warnings = extract_facts(report(**parts))
    assert warnings == []
    return facts


@pytest.mark.parametrize(
    ("op", "base", "family"),
    [
        ("aten::log.Tensor", "log", "log"),
        ("LogBackward0", "log", "log"),
        ("__truediv__", "truediv", "div"),
        ("torch.exp", "exp", "exp"),
        ("SqrtBackward0", "sqrt", "sqrt"),
        ("aten::linalg_vector_norm", "linalg_vector_norm", "sqrt"),
        ("PowBackward1", "pow", "pow"),
        ("aten::nll_loss_forward", "nll_loss_forward", "cross_entropy"),
        ("addmm", "addmm", "reduce"),
        ("LinalgVectorNormBackward0", "linalg_vector_norm", "sqrt"),
        ("relu", "relu", None),
    ],
)
def test_ops_are_normalised_into_hazard_families(op, base, family):
    assert normalize_op(op) == base
    assert op_family(base) == family


def test_event_facts():
    f = facts_of(
        event={
            "phase": "backward",
            "step": 4,
            "op": "SqrtBackward0",
            "dtype": "torch.float16",
            "value": "nan",
            "module": "head",
            "module_type": "Linear",
            "location": {"file": "train.py", "line": 12},
        }
    )
    assert f["event.phase"] == "backward" and f["event.step"] == 4
    assert f["event.op_base"] == "sqrt" and f["event.op_family"] == "sqrt"
    assert f["event.in_backward"] is True
    assert f["event.dtype"] == "float16"
    assert f["event.has_nan"] is True and f["event.has_inf"] is False
    assert f["event.location"] == "train.py:12"


def test_op_input_statistics_say_zero_and_negative_only_when_known():
    f = facts_of(
        event={
            "op": "div",
            "op_inputs": [
                {"name": "input[0]", "abs_min": 0.5, "abs_max": 2.0, "min": -2.0, "max": 1.0},
                {"name": "other", "abs_min": 0.0, "abs_max": 3.0},
            ],
        }
    )
    assert f["op_input.min_abs"] == 0.0 and f["op_input.max_abs"] == 3.0
    assert f["op_input.has_zero"] is True and f["op_input.divisor_has_zero"] is True
    assert f["op_input.has_negative"] is True and f["op_input.min"] == -2.0
    unknown = facts_of(event={"op": "pow", "op_inputs": [{"name": "input[0]", "abs_max": 2.0}]})
    assert "op_input.has_negative" not in unknown and "op_input.has_zero" not in unknown


def test_lr_against_the_usual_lr_for_the_optimizer():
    f = facts_of(config={"optimizer": "torch.optim.AdamW", "lr": 0.1})
    assert f["optimizer.key"] == "adamw" and f["lr.typical"] == 1e-3
    assert f["lr_vs_typical"] == pytest.approx(100.0)
    assert f["lr.typical_source"].startswith("default:")
    sgd = facts_of(config={"optimizer": "SGD", "lr": 0.1})
    assert sgd["lr_vs_typical"] == pytest.approx(1.0)
    assert sgd["lr.typical_source"].startswith("heuristic:")
    from_groups = facts_of(config={"optimizer": "SGD", "param_groups": [{"lr": 2.0}]})
    assert from_groups["lr"] == 2.0
    unknown = facts_of(config={"optimizer": "MyOptimizer", "lr": 5.0})
    assert "lr_vs_typical" not in unknown and unknown["lr"] == 5.0


def test_adam_eps_rounds_to_zero_in_fp16_only():
    assert round_to_fp16(1e-8) == 0.0 and round_to_fp16(1e-4) > 0
    pure = facts_of(
        config={"precision": "fp16", "optimizer": "Adam", "param_groups": [{"eps": 1e-8}]}
    )
    assert pure["adam.eps_underflows"] is True and pure["adam.eps_known"] is True
    assert pure["adam.eps_in_fp16"] == 0.0
    default = facts_of(config={"precision": "fp16", "optimizer": "Adam"})
    assert default["adam.eps"] == 1e-8 and default["adam.eps_known"] is False
    autocast = facts_of(config={"precision": "fp16-autocast", "optimizer": "Adam"})
    assert autocast["adam.eps_underflows"] is False  # fp32 master weights
    raised = facts_of(
        config={"precision": "fp16", "optimizer": "Adam", "param_groups": [{"eps": 1e-4}]}
    )
    assert raised["adam.eps_underflows"] is False


def test_clipping_and_scaler_facts():
    f = facts_of(
        config={
            "grad_scaler": True,
            "grad_clip": {"kind": "norm", "max": 1.0},
            "clip_after_unscale": False,
        }
    )
    assert f["grad_clip.enabled"] is True and f["grad_clip.max"] == 1.0
    assert f["scaler.clip_before_unscale"] is True
    assert facts_of(config={})["grad_clip.enabled"] is False
    assert "scaler.clip_before_unscale" not in facts_of(config={"grad_scaler": True})


def test_trends_over_the_last_steps():
    history = [
        {"step": i, "loss": v, "grad_norm": g}
        for i, (v, g) in enumerate(
            zip(
                [5.0, 1.0, 1.2, 2.0, 4.0, 8.0, 16.0],
                [1.0, 1.0, 2.0, 4.0, 8.0, 16.0, float("inf")],
                strict=True,
            )
        )
    ]
    f = facts_of(history=history)
    assert f["history.steps"] == 7
    assert f["loss_trend"] == pytest.approx(16.0)  # window of 6: 1.0 -> 16.0
    assert f["loss.rising_steps"] == 5
    assert f["grad_norm_growth"] == pytest.approx(16.0) and f["grad_norm.nonfinite"] is True
    assert f["loss.max_abs"] == 16.0


def test_loss_scale_collapse_facts():
    history = [{"step": i, "loss_scale": 65536.0 / 2**i, "skipped": i >= 3} for i in range(10)]
    f = facts_of(history=history)
    assert f["loss_scale.first"] == 65536.0 and f["loss_scale.last"] == 128.0
    assert f["loss_scale.drop"] == 512.0
    assert f["skipped_steps"] == 7 and f["skipped.consecutive_at_end"] == 7


def test_largest_activation_against_its_dtype_limit():
    f = facts_of(
        event={"step": 9, "phase": "forward"},
        config={"precision": "fp16-autocast"},
        frames=[
            {
                "index": 0,
                "step": 7,
                "module": "mlp",
                "outputs": [{"name": "output", "dtype": "float16", "abs_max": 63500.0}],
            },
            {
                "index": 1,
                "step": 8,
                "module": "ln",
                "outputs": [{"name": "output", "dtype": "float32", "abs_max": 1e5}],
            },
        ],
    )
    assert f["dtype.max_abs_ratio"] == pytest.approx(63500 / 65504)
    assert f["activation.module"] == "mlp" and f["activation.dtype"] == "float16"
    assert f["activation.steps_before_event"] == 2
    assert f["activation.near_limit_count"] == 1


def test_weights_at_start():
    f = facts_of(
        event={"step": 0, "phase": "forward"},
        frames=[{"index": 0, "weights": [{"name": "weight", "abs_max": float("inf")}]}],
    )
    assert f["weights.at_start"] is True and f["weights.nonfinite"] is True


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ({"name": "target", "min": -100, "max": -100}, True),
        ({"name": "target", "min": -100, "max": 7}, False),
        ({"name": "target", "abs_min": 100.0, "abs_max": 100.0}, True),
        ({"name": "target"}, None),
    ],
)
def test_all_targets_ignored(target, expected):
    f = facts_of(
        event={
            "op": "cross_entropy",
            "phase": "loss",
            "value": "nan",
            "op_inputs": [{"name": "input", "abs_max": 3.0}, target],
        }
    )
    assert f["loss.is_cross_entropy"] is True
    assert f.get("targets.all_ignored") is expected


def test_input_role_tells_targets_from_inputs():
    t = facts_of(event={"phase": "input", "message": "nan in the targets (batch[1])"})
    assert t["event.input_role"] == "targets"
    i = facts_of(event={"phase": "input", "message": "nan in batch[0]", "sample_indices": [4]})
    assert i["event.input_role"] == "inputs" and i["event.sample_count"] == 1


def test_every_fact_produced_is_documented():
    full = report(
        event={
            "phase": "input",
            "step": 3,
            "op": "nll_loss",
            "value": "nan",
            "dtype": "float16",
            "location": {"file": "a.py", "line": 1},
            "sample_indices": [1],
            "op_inputs": [
                {"name": "x", "abs_min": 0.0, "abs_max": 1.0, "min": -1.0},
                {"name": "target", "min": -100, "max": -100},
            ],
        },
        frames=[
            {
                "index": 0,
                "step": 1,
                "module": "m",
                "outputs": [{"name": "o", "dtype": "float16", "abs_max": 100.0}],
                "weights": [{"name": "w", "abs_max": 1.0}],
            }
        ],
        history=[
            {
                "step": i,
                "loss": 1.0 + i,
                "grad_norm": 1.0 + i,
                "loss_scale": 2.0**-i,
                "weight_norm": 1.0 + i,
                "update_ratio": 0.01,
                "skipped": True,
            }
            for i in range(4)
        ],
        config={
            "precision": "fp16",
            "optimizer": "Adam",
            "lr": 0.1,
            "lr_scheduler": "LinearLR",
            "grad_clip": {"kind": "norm", "max": 1.0},
            "grad_scaler": True,
            "clip_after_unscale": False,
            "param_groups": [{"eps": 1e-8}],
        },
    )
    facts, _ = extract_facts(full)
    assert len(facts) > 70
    assert set(facts) <= set(FACTS), sorted(set(facts) - set(FACTS))


def test_facts_are_json_safe_and_never_non_finite():
    f = facts_of(
        event={"op": "log", "op_inputs": [{"name": "x", "abs_max": float("nan")}]},
        history=[{"step": 0, "loss": float("inf"), "grad_norm": float("nan")}],
        config={"lr": float("inf")},
    )
    for value in f.values():
        assert value is None or isinstance(value, str | bool | int | float)
        assert not (isinstance(value, float) and not math.isfinite(value))


def test_symptom_evidence_reads_like_a_sentence():
    r = report(
        event={"phase": "forward", "step": 5, "op": "addmm", "dtype": "float16", "value": "inf"},
        config={"precision": "fp16"},
        history=[{"step": 3, "max_activation": 63000.0}],
    )
    facts, _ = extract_facts(r)
    symptoms, warnings = detect_symptoms(facts, r)
    assert warnings == []
    overflow = next(s for s in symptoms if s.id == "fp16-overflow")
    assert overflow.evidence[0] == (
        "activation |x| max 6.3e4 in fp16, 96% of the range (65504), 2 steps before the inf"
    )
    assert overflow.title == "fp16 overflow"


def test_numbers_in_evidence_are_written_as_everywhere_else():
    # symptoms write numbers with diagnose.formatting.num, like the renderers and the tracer
    assert [fmt(x) for x in (63000.0, 0.001, 1000.0, 12.5, 1e-8, 0.0, None)] == [
        "6.3e4",
        "0.001",
        "1000",
        "12.5",
        "1.0e-8",
        "0",
        "-",
    ]


def test_zero_counts_and_signed_bounds_tell_zero_from_negative_inputs():
    log_of_zero = facts_of(
        event={
            "op": "log",
            "op_inputs": [
                {
                    "name": "input[0]",
                    "abs_min": 0.25,
                    "abs_max": 1.0,
                    "min": 0.0,
                    "max": 1.0,
                    "zeros": 3,
                }
            ],
        }
    )
    assert log_of_zero["op_input.has_zero"] is True
    assert log_of_zero["op_input.has_negative"] is False
    log_of_negative = facts_of(
        event={
            "op": "log",
            "op_inputs": [
                {
                    "name": "input[0]",
                    "abs_min": 0.25,
                    "abs_max": 1.0,
                    "min": -0.5,
                    "max": 1.0,
                    "zeros": 0,
                }
            ],
        }
    )
    assert log_of_negative["op_input.has_zero"] is False
    assert log_of_negative["op_input.has_negative"] is True
    assert log_of_negative["op_input.min"] == -0.5


def test_op_input_facts_read_the_recorded_numbers_and_no_prose():
    inputs = [
        {"name": "input[0]", "abs_min": 0.02, "abs_max": 3.0},
        {"name": "input[1]", "abs_min": 0.5, "abs_max": 2.5},
    ]
    values = [
        {"name": "input[0]", "min_abs": 0.02, "max_abs": 3.0},
        {"name": "input[1]", "min_abs": 0.0, "max_abs": 2.5},  # a zero abs_min leaves out
    ]
    f = facts_of(event={"op": "div", "op_inputs": inputs, "op_input_values": values})
    assert (f["op_input.divisor_has_zero"], f["op_input.min_abs"]) == (True, 0.0)
    # prose that says otherwise is text for people: the recorded numbers decide
    f = facts_of(
        event={
            "op": "div",
            "op_inputs": inputs,
            "op_input_values": [{**v, "min_abs": 0.5} for v in values],
            "details": ["div received min |x| = 0, max |x| = 3; min |x| = 0, max |x| = 2.5"],
        }
    )
    assert (f["op_input.divisor_has_zero"], f["op_input.min_abs"]) == (False, 0.5)


def test_counted_targets_decide_all_targets_ignored():
    def targets(total, ignored):
        return facts_of(
            event={
                "op": "cross_entropy",
                "phase": "loss",
                "value": "nan",
                "ignore_index": -1,
                "targets_total": total,
                "targets_ignored": ignored,
                "op_inputs": [{"name": "input[0]", "abs_max": 3.0}],
            }
        )

    every = targets(16, 16)
    assert every["targets.all_ignored"] is True and every["targets.ignore_index"] == -1
    assert (every["targets.count"], every["targets.ignored_count"]) == (16, 16)
    assert targets(16, 15)["targets.all_ignored"] is False
    symptoms, _ = detect_symptoms(every, report(event={"op": "cross_entropy", "value": "nan"}))
    ignored = next(s for s in symptoms if s.id == "all-targets-ignored")
    assert ignored.confidence >= 0.95


def _exp_event(step: int) -> dict:
    return {
        "phase": "forward",
        "step": step,
        "op": "exp",
        "dtype": "float32",
        "value": "inf",
        "op_inputs": [{"name": "input[0]", "dtype": "float32", "shape": [8], "abs_max": 3000.0}],
    }


@pytest.mark.parametrize(
    ("lr", "step", "lowered"), [(5.0, 1, True), (5.0, 0, False), (1e-3, 4, False)]
)
def test_an_exp_overflow_under_an_extreme_lr_ranks_below_the_lr_itself(lr, step, lowered):
    r = report(event=_exp_event(step), config={"optimizer": "Adam", "lr": lr})
    facts, _ = extract_facts(r)
    symptoms = {s.id: s for s in detect_symptoms(facts, r)[0]}
    exp = symptoms["exp-overflow"]
    assert (exp.confidence < 0.9) == lowered
    if lowered:
        assert symptoms["lr-too-high"].confidence > exp.confidence
        assert exp.evidence[-1] == (
            "its input grew under an lr 5000x the usual (default: torch.optim.Adam lr=1e-3)"
        )


@pytest.mark.parametrize(("lr", "lowered"), [(0.5, True), (1e-3, False)])
def test_exploding_gradients_under_an_extreme_lr_rank_below_the_lr(lr, lowered):
    r = report(
        event={"phase": "backward", "step": 7, "value": "inf"},
        config={"optimizer": "Adam", "lr": lr},
        history=[{"step": s, "loss": 1.0, "grad_norm": 10.0 ** (s + 2)} for s in range(7)],
    )
    facts, _ = extract_facts(r)
    symptoms = {s.id: s for s in detect_symptoms(facts, r)[0]}
    exploding = symptoms["exploding-gradients"]
    assert exploding.evidence[-1].startswith("they grew under an lr") == lowered
    if lowered:
        assert symptoms["lr-too-high"].confidence > exploding.confidence


def test_a_number_the_ops_dtype_cannot_hold_is_a_fact_and_a_symptom():
    masked = facts_of(event={"op": "mul", "dtype": "float16", "op_numbers": [0.5, -1e9]})
    assert masked["op_input.number_beyond_dtype"] == -1e9
    assert masked["op_input.number_dtype_max"] == 65504.0
    symptoms, _ = detect_symptoms(masked, report(event={"op": "mul"}))
    assert symptoms[0].id == "number-beyond-dtype"
    assert "65504" in symptoms[0].evidence[0]
    # the dtype of the op's inputs when the event has none; float32 holds 1e9 and 3e38
    scaled = facts_of(
        event={
            "op": "mul",
            "op_numbers": [1e39, 3e38],
            "op_inputs": [{"name": "input[0]", "dtype": "float32", "abs_max": 1.0}],
        }
    )
    assert scaled["op_input.number_beyond_dtype"] == 1e39
    assert scaled["op_input.number_dtype"] == "float32"
    held = facts_of(event={"op": "mul", "dtype": "float32", "op_numbers": [-1e9, 3e38]})
    assert "op_input.number_beyond_dtype" not in held
    unknown_dtype = facts_of(event={"op": "mul", "op_numbers": [1e39]})
    assert "op_input.number_beyond_dtype" not in unknown_dtype


def test_an_op_that_returned_both_infinities_is_worded_as_such():
    r = report(
        event={
            "op": "mul",
            "dtype": "float16",
            "value": "nan",
            "op_value": "inf+-inf",
            "phase": "loss",
            "op_numbers": [-1e9],
        }
    )
    facts, _ = extract_facts(r)
    symptoms, _ = detect_symptoms(facts, r)
    evidence = next(s for s in symptoms if s.id == "number-beyond-dtype").evidence[0]
    assert evidence.startswith("the first inf and -inf came out of mul")
    assert "(the loss became nan after it)" in evidence


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float8_e4m3fn"])
def test_rounds_to_zero_agrees_with_torch(dtype):
    import torch

    from diagnose.facts.heuristics import DTYPE_SMALLEST, rounds_to_zero

    smallest = DTYPE_SMALLEST[dtype]
    for x in (1e-12, 1e-8, 3e-8, 1e-4, smallest / 2, smallest * 0.51, smallest, 1.0):
        stored = torch.tensor(x, dtype=torch.float64).to(getattr(torch, dtype)).item()
        assert rounds_to_zero(x, dtype) == (stored == 0.0), (x, dtype)


def _eps_event(**changes):
    event = {
        "op": "div",
        "dtype": "float16",
        "op_inputs": [
            {"name": "input[0]", "dtype": "float16", "zeros": 0, "abs_max": 1.0},
            {"name": "input[1]", "dtype": "float16", "zeros": 3, "abs_max": 0.8},
        ],
        "op_input_sources": [
            {"input": 1, "op": "add", "numbers": [1e-8], "location": {"file": "t.py", "line": 7}}
        ],
    }
    event.update(changes)
    return event


def test_an_eps_the_dtype_rounds_to_zero_is_a_fact_and_outranks_the_division_by_zero():
    facts = facts_of(event=_eps_event())
    assert facts["op_input.eps_lost"] == 1e-8
    assert (facts["op_input.eps_op"], facts["op_input.eps_dtype"]) == ("add", "float16")
    assert facts["op_input.eps_line"] == 7
    symptoms, _ = detect_symptoms(facts, report(event=_eps_event()))
    assert [s.id for s in symptoms[:2]] == ["eps-below-dtype", "division-by-zero"]
    assert "add on line 7 added 1.0e-8: in fp16 that eps is 0" in symptoms[0].evidence[0]


@pytest.mark.parametrize(
    "changes",
    [
        {"op_input_sources": [{"input": 1, "op": "add", "numbers": [1e-4]}]},  # fp16 holds 1e-4
        {
            "dtype": "float32",
            "op_inputs": [
                {"name": "input[0]", "dtype": "float32", "zeros": 0},
                {"name": "input[1]", "dtype": "float32", "zeros": 3},
            ],
        },
        {"op_input_sources": [{"input": 0, "op": "add", "numbers": [1e-8]}]},  # added elsewhere
        {
            "op_inputs": [
                {"name": "input[0]", "dtype": "float16", "zeros": 0},
                {"name": "input[1]", "dtype": "float16", "zeros": 0},
            ]
        },  # no 0 reached it
        {"op_input_sources": [{"input": 5, "op": "add", "numbers": [1e-8]}]},  # no such input
    ],
)
def test_no_eps_fact_unless_the_guarded_input_held_zero_because_of_the_dtype(changes):
    assert "op_input.eps_lost" not in facts_of(event=_eps_event(**changes))


@pytest.mark.parametrize(
    ("event", "lr", "listed"),
    [
        ({"phase": "forward", "op": "div", "value": "nan"}, 1e-3, False),  # x/0: no update in it
        ({"phase": "forward", "op": "div", "value": "nan"}, 10.0, True),  # weights pushed by the lr
        ({"phase": "backward", "value": "inf"}, 1e-3, True),  # an unclipped gradient itself
    ],
)
def test_no_gradient_clipping_is_a_symptom_only_where_update_sizes_play_a_part(event, lr, listed):
    r = report(
        event={"step": 5, **event},
        config={"optimizer": "Adam", "lr": lr},
        history=[{"step": s, "loss": 1.0, "grad_norm": 1.0} for s in range(5)],
    )
    facts, _ = extract_facts(r)
    ids = [s.id for s in detect_symptoms(facts, r)[0]]
    assert ("no-grad-clipping" in ids) == listed


@pytest.mark.parametrize(
    ("lr", "phase", "history_loss", "listed"),
    [
        (3e-3, "forward", [1.0] * 5, False),  # 3x Adam's default, steady loss: common practice
        (3e-3, "forward", [1.0, 2.0, 5.0, 20.0, 80.0], True),  # the same lr under a divergence
        (1e-1, "forward", [1.0] * 5, True),  # 100x: a cause on its own
        (1e-1, "input", [1.0] * 5, False),  # a non-finite batch is not the lr's doing
    ],
)
def test_the_lr_is_a_suspect_when_far_above_the_usual_or_when_the_run_diverged(
    lr, phase, history_loss, listed
):
    r = report(
        event={"step": 5, "phase": phase, "value": "nan"},
        config={"optimizer": "Adam", "lr": lr},
        history=[{"step": s, "loss": v} for s, v in enumerate(history_loss)],
    )
    facts, _ = extract_facts(r)
    ids = [s.id for s in detect_symptoms(facts, r)[0]]
    assert ("lr-too-high" in ids) == listed


# --- the symptom registry ---------------------------------------------------------------------


def test_a_detector_returning_an_id_it_does_not_declare_gives_a_warning_not_a_symptom():
    from diagnose.facts.symptoms import SymptomRegistry, symptom
    from diagnose.report import Symptom

    registry = SymptomRegistry()

    def mislabelled(f, r):
        return Symptom(id="lr-too-high", confidence=0.9)

    symptom("made-up", title="a made-up symptom", registry=registry)(mislabelled)
    r = report(event={"phase": "forward", "value": "nan"})
    found, warnings = detect_symptoms(extract_facts(r)[0], r, registry=registry)
    assert found == []
    assert warnings == ["symptoms: mislabelled returned 'lr-too-high', which it does not declare"]


def test_a_symptom_id_is_declared_once():
    from diagnose.facts.symptoms import SymptomRegistry, symptom

    registry = SymptomRegistry()
    symptom("made-up", title="a made-up symptom", registry=registry)(len)
    with pytest.raises(ValueError, match="declared twice"):
        symptom("made-up", title="another", registry=registry)(abs)


def test_a_title_comes_from_the_declaration():
    r = report(event={"phase": "forward", "op": "log", "value": "-inf"})
    found, _ = detect_symptoms(extract_facts(r)[0], r)
    assert [(s.id, s.title) for s in found] == [
        ("log-domain", "log of zero or of a negative number")
    ]


def test_clipping_before_unscale_in_a_real_run_is_a_fact():
    """The capture records clip_after_unscale with the clipping it saw, under a real scaler."""
    import torch

    from diagnose.capture import ConfigCapture

    with ConfigCapture() as capture:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        for _ in range(2):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(torch.randn(8, 4)).float().pow(2).mean()
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # before unscale_: wrong
            scaler.unscale_(optimizer)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        config = capture.snapshot()
    facts = facts_of(config=config)
    assert facts["grad_scaler"] is True and facts["scaler.clip_before_unscale"] is True


def test_a_run_that_died_within_its_first_steps_diverged_if_its_loss_rose_tenfold_on_each():
    def lr_symptom(losses: list[float]):
        r = report(
            event={"phase": "forward", "step": len(losses), "value": "nan"},
            config={"optimizer": "SGD", "lr": 0.3},
            history=[{"step": s, "loss": v} for s, v in enumerate(losses)],
        )
        facts, _ = extract_facts(r)
        return {s.id: s for s in detect_symptoms(facts, r)[0]}.get("lr-too-high")

    died = lr_symptom([8.8, 513.0])
    assert died is not None
    assert "the loss grew 58.3x over the run's first 2 steps (8.8 -> 513)" in died.evidence[-1]
    assert lr_symptom([8.8, 9.1]) is None  # a loss that barely moved is no divergence
    assert lr_symptom([8.8, 513.0, 20.0, 40.0, 90.0, 300.0]).evidence  # the longer trend rule
