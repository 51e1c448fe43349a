"""The engine on realistic hand-made reports: which fixes come out, and in which order.

The reports look like what the tracer and the config capture produce for real runs: an event
with the producing op and its input statistics, the frames before it, a per-step history, and
the captured config. The orderings are the ones an expert would give: the fix that removes the
root cause ranks above the fixes that only hide it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from diagnose.engine import analyze, combine, load_rules
from diagnose.report import Report


def make_report(
    *,
    event: dict[str, Any] | None = None,
    frames: list[dict[str, Any]] | None = None,
    history: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
    status: str | None = None,
) -> Report:
    if status is None:
        status = "clean" if event is None else event["kind"]
    # through the report's loader, the one place that takes reports of any shape
    return Report.from_data(
        {
            "status": status,
            "script": {"path": "train.py", "argv": []},
            "event": event,
            "frames": frames or [],
            "history": history or [],
            "config": config or {},
        }
    )


def steps(**series: list[Any]) -> list[dict[str, Any]]:
    """History rows from parallel series: steps(loss=[...], grad_norm=[...])."""
    length = max(len(v) for v in series.values())
    return [
        {"step": i, **{k: v[i] for k, v in series.items() if i < len(v)}} for i in range(length)
    ]


def fix_ids(report: Report) -> list[str]:
    return [f.id for f in report.fixes]


def above(report: Report, better: str, worse: str) -> bool:
    ids = fix_ids(report)
    assert better in ids, f"{better} missing from {ids}"
    return worse not in ids or ids.index(better) < ids.index(worse)


# --- realistic runs ---------------------------------------------------------------------------


def fp16_overflow_run() -> Report:
    """A GPT-like model under fp16 autocast: the MLP output creeps up to fp16's limit."""
    acts = [900.0, 2.1e3, 5.5e3, 1.2e4, 2.6e4, 4.1e4, 6.3e4]
    return make_report(
        event={
            "kind": "nonfinite",
            "phase": "forward",
            "step": 7,
            "module": "h.3.mlp.c_proj",
            "module_type": "Linear",
            "op": "addmm",
            "dtype": "torch.float16",
            "value": "inf",
            "message": "inf in the output of h.3.mlp.c_proj (Linear)",
            "op_inputs": [
                {"name": "input[0]", "dtype": "float16", "abs_min": 0.0, "abs_max": 310.0}
            ],
        },
        frames=[
            {
                "index": i,
                "step": 6,
                "phase": "forward",
                "module": f"h.{i}.mlp.c_proj",
                "module_type": "Linear",
                "outputs": [{"name": "output", "dtype": "float16", "abs_max": a}],
            }
            for i, a in enumerate([3.1e4, 4.4e4, 6.3e4])
        ],
        history=steps(
            loss=[4.1, 3.9, 3.8, 3.8, 3.9, 4.3, 5.0],
            grad_norm=[1.0, 1.3, 2.0, 4.1, 9.0, 22.0, 48.0],
            max_activation=acts,
            loss_scale=[65536.0] * 7,
        ),
        config={
            "precision": "fp16-autocast",
            "optimizer": "AdamW",
            "lr": 3e-4,
            "grad_clip": None,
            "grad_scaler": True,
        },
    )


def log_zero_run() -> Report:
    """A hand-written cross-entropy, log(softmax(x)), with an SGD lr somewhat high."""
    return make_report(
        event={
            "kind": "nonfinite",
            "phase": "loss",
            "step": 41,
            "op": "log",
            "dtype": "float32",
            "value": "-inf",
            "message": "-inf from torch.log at train.py:31",
            "location": {"file": "train.py", "line": 31},
            "op_inputs": [{"name": "input[0]", "dtype": "float32", "abs_min": 0.0, "abs_max": 1.0}],
        },
        history=steps(
            loss=[2.3, 1.9, 1.7, 2.4, 3.9, 7.7], grad_norm=[3.0, 2.0, 2.5, 4.0, 6.0, 11.0]
        ),
        config={"precision": "fp32", "optimizer": "SGD", "lr": 0.5, "grad_clip": None},
    )


def nan_in_data_run() -> Report:
    return make_report(
        event={
            "kind": "nonfinite",
            "phase": "input",
            "step": 12,
            "value": "nan",
            "message": "nan in the input batch (batch[0])",
            "sample_indices": [113, 870],
            "op_inputs": [
                {"name": "batch[0]", "dtype": "float32", "abs_max": float("nan"), "nan": 3}
            ],
        },
        history=steps(
            loss=[0.9, 0.7, 0.6, 0.55, 0.5, 0.48, 0.46],
            grad_norm=[2.0, 1.5, 1.2, 1.1, 1.0, 0.9, 0.9],
        ),
        config={"precision": "fp32", "optimizer": "Adam", "lr": 1e-3, "grad_clip": None},
    )


def lr_too_high_run() -> Report:
    """Adam at lr=1: loss and gradient norm grow every step until the forward pass overflows."""
    return make_report(
        event={
            "kind": "nonfinite",
            "phase": "forward",
            "step": 6,
            "module": "fc2",
            "module_type": "Linear",
            "op": "addmm",
            "dtype": "float32",
            "value": "inf",
            "message": "inf in fc2",
        },
        history=steps(
            loss=[2.3, 2.6, 9.5, 140.0, 8.1e3, 2.2e6],
            grad_norm=[1.1, 3.0, 40.0, 900.0, 3.1e4, 2.5e6],
        ),
        config={"precision": "fp32", "optimizer": "Adam", "lr": 1.0, "grad_clip": None},
    )


# --- orderings --------------------------------------------------------------------------------


def test_fp16_overflow_ranks_bf16_and_fp32_above_clipping():
    report = analyze(fp16_overflow_run())
    ids = fix_ids(report)
    assert ids[0] == "use-bf16"
    assert above(report, "upcast-to-fp32", "enable-grad-clipping")
    assert "enable-grad-clipping" in ids  # the growing grad norm is real, but it is not the cause
    symptom = next(s for s in report.symptoms if s.id == "fp16-overflow")
    assert symptom.confidence >= 0.9
    assert any("6.3e4 in fp16" in e and "96% of the range" in e for e in symptom.evidence)


def test_log_of_zero_ranks_stabilize_log_above_lower_lr():
    report = analyze(log_zero_run())
    assert fix_ids(report)[0] == "stabilize-log"
    assert above(report, "stabilize-log", "lower-learning-rate")
    top = report.fixes[0]
    assert top.rules == ["log-of-zero"]
    assert any("log" in e and "holds 0" in e for e in top.evidence)


def test_nan_in_data_ranks_sanitize_inputs_first_and_alone():
    report = analyze(nan_in_data_run())
    assert fix_ids(report) == ["sanitize-inputs"]
    assert "samples 113, 870" in report.fixes[0].evidence[0]


def test_an_lr_far_too_high_ranks_lower_lr_first_with_no_clipping_or_warmup():
    report = analyze(lr_too_high_run())
    ids = fix_ids(report)
    assert ids[0] == "lower-learning-rate"
    # 1000x the usual lr: each update stays lr-sized under a clip, and no ramp makes it trainable
    assert "enable-grad-clipping" not in ids and "add-lr-warmup" not in ids
    assert "lr-too-high" in report.fixes[0].rules
    assert any("1e3x the usual" in e or "1000x the usual" in e for e in report.fixes[0].evidence)


def test_adam_eps_in_pure_fp16_ranks_raise_eps_first():
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "optimizer",
                "step": 3,
                "dtype": "float16",
                "value": "nan",
                "message": "nan in weight fc.weight after optimizer.step()",
            },
            history=steps(loss=[0.7, 0.69, 0.69]),
            config={
                "precision": "fp16",
                "optimizer": "Adam",
                "lr": 1e-3,
                "param_groups": [{"lr": 1e-3, "eps": 1e-8, "betas": [0.9, 0.999]}],
            },
        )
    )
    assert fix_ids(report)[0] == "raise-adam-eps"
    assert "eps=1.0e-8 is 0 in fp16" in report.fixes[0].evidence[0]


def test_clipping_before_unscale_ranks_unscale_first():
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "forward",
                "step": 30,
                "module": "encoder.0",
                "module_type": "Linear",
                "dtype": "float16",
                "value": "inf",
                "message": "inf",
            },
            history=steps(loss=[1.0] * 6, loss_scale=[65536.0] * 6),
            config={
                "precision": "fp16-autocast",
                "optimizer": "AdamW",
                "lr": 1e-4,
                "grad_clip": {"kind": "norm", "max": 1.0},
                "grad_scaler": True,
                "clip_after_unscale": False,
            },
        )
    )
    assert fix_ids(report)[0] == "unscale-before-clipping"


def test_cross_entropy_over_ignored_targets_ranks_guard_first():
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "loss",
                "step": 88,
                "module": "loss_fn",
                "module_type": "CrossEntropyLoss",
                "op": "nll_loss",
                "dtype": "float32",
                "value": "nan",
                "message": "nan from cross_entropy",
                "op_inputs": [
                    {"name": "input", "dtype": "float32", "abs_min": 0.01, "abs_max": 7.5},
                    {
                        "name": "target",
                        "dtype": "int64",
                        "min": -100,
                        "max": -100,
                        "abs_min": 100.0,
                        "abs_max": 100.0,
                    },
                ],
            },
            history=steps(loss=[3.2, 3.1, 3.0, 2.9]),
            config={"precision": "fp32", "optimizer": "AdamW", "lr": 5e-5},
        )
    )
    assert fix_ids(report) == ["guard-ignored-targets"]
    assert report.facts["targets.all_ignored"] is True


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            {
                "op": "SqrtBackward0",
                "phase": "backward",
                "value": "nan",
                "op_inputs": [{"name": "input[0]", "abs_min": 0.0, "abs_max": 4.0}],
            },
            "guard-sqrt",
        ),
        (
            {
                "op": "div",
                "phase": "forward",
                "value": "inf",
                "op_inputs": [
                    {"name": "input[0]", "abs_min": 0.5, "abs_max": 3.0},
                    {"name": "other", "abs_min": 0.0, "abs_max": 9.0},
                ],
            },
            "guard-division",
        ),
        (
            {
                "op": "exp",
                "phase": "forward",
                "value": "inf",
                "dtype": "float32",
                "op_inputs": [{"name": "input[0]", "abs_min": 0.1, "abs_max": 95.0}],
            },
            "stabilize-exp",
        ),
        (
            {
                "op": "pow",
                "phase": "forward",
                "value": "nan",
                "op_inputs": [{"name": "input[0]", "min": -3.0, "max": 2.0, "abs_max": 3.0}],
            },
            "guard-pow",
        ),
        (
            {
                "op": "aten::log.default",
                "phase": "forward",
                "value": "nan",
                "op_inputs": [{"name": "input[0]", "min": -0.2, "max": 5.0}],
            },
            "stabilize-log",
        ),
    ],
)
def test_op_level_causes_rank_their_guard_first(event, expected):
    report = analyze(
        make_report(
            event={"kind": "nonfinite", "step": 20, "message": "x", **event},
            history=steps(loss=[1.0, 1.1, 1.3, 2.0, 3.5]),
            config={"precision": "fp32", "optimizer": "Adam", "lr": 3e-2},  # 30x usual, no clipping
        )
    )
    assert fix_ids(report)[0] == expected


def test_exp_overflow_in_fp16_ranks_stable_exp_above_bf16():
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "forward",
                "step": 5,
                "op": "exp",
                "dtype": "float16",
                "value": "inf",
                "message": "inf",
                "op_inputs": [{"name": "input[0]", "dtype": "float16", "abs_max": 14.0}],
            },
            config={"precision": "fp16-autocast", "grad_scaler": True},
        )
    )
    assert above(report, "stabilize-exp", "use-bf16")


def test_huge_initial_weights_rank_fix_initialization_and_do_not_blame_the_lr():
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "forward",
                "step": 0,
                "module": "net.2",
                "module_type": "Linear",
                "dtype": "float32",
                "value": "inf",
                "message": "inf",
            },
            frames=[
                {
                    "index": 0,
                    "step": 0,
                    "phase": "forward",
                    "module": "net.0",
                    "weights": [{"name": "weight", "dtype": "float32", "abs_max": 3.0e5}],
                    "outputs": [{"name": "output", "dtype": "float32", "abs_max": 2.0e30}],
                }
            ],
            config={"precision": "fp32", "optimizer": "SGD", "lr": 10.0},
        )
    )
    assert fix_ids(report)[0] == "fix-initialization"
    assert "lower-learning-rate" not in fix_ids(report)


def test_collapsing_loss_scale_points_at_the_precision():
    scales = [65536.0 / 2**i for i in range(20)]
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "forward",
                "step": 20,
                "dtype": "float16",
                "value": "inf",
                "message": "inf in attn",
            },
            history=[
                {"step": i, "loss": 2.0, "loss_scale": s, "skipped": i > 2}
                for i, s in enumerate(scales)
            ],
            config={
                "precision": "fp16-autocast",
                "optimizer": "AdamW",
                "lr": 1e-4,
                "grad_scaler": True,
            },
        )
    )
    assert fix_ids(report)[0] == "use-bf16"
    assert "loss-scale-collapse" in report.fixes[0].rules


# --- what must produce no fixes ---------------------------------------------------------------


def test_clean_report_has_no_symptoms_and_no_fixes():
    report = analyze(
        make_report(
            history=steps(loss=[2.0, 1.5, 1.2], grad_norm=[1.0, 0.8, 0.7]),
            config={"precision": "fp16", "optimizer": "Adam", "lr": 10.0},
        )
    )
    assert report.fixes == [] and report.symptoms == []
    assert report.facts["status"] == "clean"


def test_exception_report_gets_no_fix_from_the_built_in_rules():
    report = analyze(
        make_report(
            event={
                "kind": "exception",
                "exception_type": "RuntimeError",
                "message": "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)",
            },
            config={"optimizer": "Adam", "lr": 5.0},
        )
    )
    assert report.fixes == []
    assert [s.id for s in report.symptoms] == ["script-exception"]


def test_autograd_anomaly_error_is_read_for_the_op_it_names():
    report = analyze(
        make_report(
            event={
                "kind": "exception",
                "exception_type": "RuntimeError",
                "message": "Function 'LogBackward0' returned nan values in its 0th output.",
            }
        )
    )
    assert fix_ids(report) == ["stabilize-log"]


def test_user_rule_can_read_exceptions(tmp_path: Path):
    (tmp_path / "oom.yaml").write_text(
        "id: oom\ntitle: t\nsymptom: script-exception\ndescription: d\nwhy: w\n"
        "conditions: {fact: event.message, operator: matches, value: 'out of memory'}\n"
        "fixes: [{id: use-bf16, weight: 0.5}]\n"
        "tests: {match: [{symptom.script-exception: 1, event.message: 'CUDA out of memory'}],"
        " no_match: [{symptom.script-exception: 1, event.message: 'shape'}]}\n"
    )
    report = make_report(event={"kind": "exception", "message": "CUDA out of memory. Tried"})
    assert fix_ids(analyze(report, extra_rules=[tmp_path])) == ["use-bf16"]
    assert fix_ids(analyze(report)) == []


# --- ranking arithmetic and user overrides ----------------------------------------------------


def test_several_weak_signals_beat_one_slightly_stronger():
    assert combine([0.5, 0.5]) > combine([0.6])
    assert combine([0.95]) > combine([0.8, 0.5, 0.4])  # but not a strong, direct one
    assert combine([0.7]) == pytest.approx(0.7)
    assert combine([]) == 0.0


def test_a_user_rule_overrides_a_built_in_one_by_id(tmp_path: Path):
    (tmp_path / "numerics").mkdir()
    (tmp_path / "numerics" / "log-of-zero.yaml").write_text(
        "id: log-of-zero\ntitle: mine\nsymptom: log-domain\ndescription: d\nwhy: w\n"
        "fixes: [{id: lower-learning-rate, weight: 1.0}]\n"
        "tests: {match: [{symptom.log-domain: 1}], no_match: [{symptom.log-domain: 0}]}\n"
    )
    rules, problems = load_rules(tmp_path)
    assert problems == []
    mine = [r for r in rules if r.id == "log-of-zero"]
    assert len(mine) == 1 and mine[0].title == "mine" and not mine[0].builtin
    report = analyze(log_zero_run(), extra_rules=[tmp_path])
    assert "stabilize-log" not in fix_ids(report)
    assert report.fixes[0].id == "lower-learning-rate"


def test_broken_user_rule_becomes_a_warning_and_the_built_ins_still_work(tmp_path: Path):
    (tmp_path / "bad.yaml").write_text("id: bad\ntitle: a: b\n")
    report = analyze(log_zero_run(), extra_rules=[tmp_path])
    assert fix_ids(report)[0] == "stabilize-log"
    assert any("bad.yaml:2" in w and "not valid YAML" in w for w in report.warnings)


def test_scores_are_in_range_sorted_and_explained():
    for run in (fp16_overflow_run(), log_zero_run(), nan_in_data_run(), lr_too_high_run()):
        report = analyze(run)
        scores = [f.score for f in report.fixes]
        assert scores == sorted(scores, reverse=True)
        for fix in report.fixes:
            assert 0 < fix.score <= 1 and fix.rules and fix.evidence
            assert "# before" in fix.example_patch and "# after" in fix.example_patch
        assert report.to_json()  # JSON-safe: no nan/inf sneaks into facts


def test_analyze_returns_a_copy_and_keeps_existing_warnings():
    original = log_zero_run()
    original.warnings.append("tracer: something")
    report = analyze(original)
    assert original.fixes == [] and report.fixes
    assert report.warnings[0] == "tracer: something"


def test_odd_evidence_never_raises():
    weird = make_report(
        event={
            "kind": "nonfinite",
            "phase": None,
            "step": None,
            "op": "",
            "dtype": "weird",
            "value": "NaN+INF",
            "message": "",
            "op_inputs": [
                {"name": "x", "abs_min": float("nan"), "abs_max": float("inf"), "min": "oops"},
                {"name": "target", "abs_min": None, "zeros": "many"},
            ],
        },
        frames=[
            {
                "index": 0,
                "outputs": [{"name": "o", "dtype": None, "abs_max": 1e300}],
                "weights": [{"name": "w", "abs_max": float("-inf")}],
            }
        ],
        history=[
            {
                "step": 0,
                "loss": float("nan"),
                "grad_norm": float("inf"),
                "loss_scale": 0.0,
                "weight_norm": "x",
                "update_ratio": None,
            }
        ],
        config={
            "precision": "fp16",
            "optimizer": "",
            "lr": float("nan"),
            "param_groups": "no",
            "loss_fn": ["?"],
            "lr_scheduler": {"name": 1},
        },
    )
    assert weird.config.param_groups is None and weird.config.loss_fn is None  # left out on load
    report = analyze(weird)
    assert report.to_json()
    for value in report.facts.values():
        assert not (isinstance(value, float) and not math.isfinite(value))


# --- shapes of evidence the tracer really produces --------------------------------------------


def test_a_spike_after_steady_steps_is_an_exploding_gradient_not_the_lr():
    """A ReLU RNN at lr=1e-3: flat loss, then one step multiplies it by 1e32."""
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "forward",
                "step": 10,
                "module": "head",
                "module_type": "Linear",
                "op": "linear",
                "dtype": "float32",
                "value": "inf+-inf",
                "message": "inf in head",
            },
            history=steps(
                loss=[1.0735, 1.0731, 1.0733, 1.0741, 1.0752, 1.0761, 1.0770, 1.08e32],
                grad_norm=[0.17, 0.21, 0.20, 0.23, 0.19, 0.20, 0.17, float("nan")],
            ),
            config={"precision": "fp32", "optimizer": "SGD", "lr": 1e-3},
        )
    )
    assert fix_ids(report)[0] == "enable-grad-clipping"
    assert "lr-too-high" not in [s.id for s in report.symptoms]


def test_steady_divergence_at_an_ordinary_lr_still_blames_the_lr_first():
    """SGD at 0.02 on unnormalised inputs: loss and grad norm grow every step."""
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "loss",
                "step": 11,
                "dtype": "float32",
                "value": "inf",
                "message": "loss is inf from finite model outputs",
            },
            history=steps(
                loss=[102.7, 180.5, 186.9, 308.8, 2322.5, 3203.8, 2.4e6, 4.0e14],
                grad_norm=[167.0, 235.0, 209.0, 486.0, 1281.0, 2716.0, 2.8e5, 5.0e11],
            ),
            config={"precision": "fp32", "optimizer": "SGD", "lr": 0.02},
        )
    )
    assert fix_ids(report)[:2] == ["lower-learning-rate", "enable-grad-clipping"]


def test_fp16_sum_in_the_loss_ranks_fp32_first():
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "loss",
                "step": 0,
                "op": "sum",
                "dtype": "float16",
                "value": "inf",
                "message": "sum received min |x| = 0, max |x| = 21.6",
                "details": ["sum received min |x| = 0, max |x| = 21.6 and returned inf"],
                "op_inputs": [
                    {"name": "input[0]", "dtype": "float16", "abs_min": 0.01, "abs_max": 21.6}
                ],
            },
            config={"precision": "fp16", "optimizer": "Adam", "lr": 1e-5},
        )
    )
    assert fix_ids(report)[:2] == ["upcast-to-fp32", "use-bf16"]
    # the optimizer has not run yet: its eps cannot be the cause
    assert "raise-adam-eps" not in fix_ids(report)


def test_the_tracer_detail_line_reveals_zeros_that_abs_min_leaves_out():
    """TensorStats.abs_min is the smallest non-zero |x|; the detail line has the true minimum."""
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "forward",
                "step": 0,
                "op": "div",
                "value": "nan",
                "message": "div",
                "details": [
                    "div received min |x| = 0, max |x| = 3; min |x| = 0, max |x| = 2.5 "
                    "and returned nan"
                ],
                "op_inputs": [
                    {"name": "input[0]", "abs_min": 0.02, "abs_max": 3.0},
                    {"name": "input[1]", "abs_min": 0.5, "abs_max": 2.5},
                ],
            },
        )
    )
    assert report.facts["op_input.divisor_has_zero"] is True
    assert report.symptoms[0].confidence == 0.95
    assert fix_ids(report) == ["guard-division"]


def test_a_non_finite_input_of_the_loss_op_means_bad_targets():
    report = analyze(
        make_report(
            event={
                "kind": "nonfinite",
                "phase": "loss",
                "step": 3,
                "op": "mse_loss",
                "value": "nan",
                "message": "loss",
                "op_inputs": [
                    {"name": "input[0]", "abs_max": 2.0},
                    {"name": "input[1]", "abs_max": float("nan"), "nan": 1},
                ],
            },
        )
    )
    assert fix_ids(report) == ["sanitize-inputs"]
    assert report.fixes[0].rules == ["nonfinite-targets"]


# --- a rule's regular expression runs under a time bound ---------------------------------------

BACKTRACKING_RULE = (
    "id: {id}\ntitle: t\nsymptom: script-exception\ndescription: d\nwhy: w\n"
    "conditions: {{fact: event.message, operator: matches, value: '{pattern}'}}\n"
    "fixes: [{{id: use-bf16, weight: 0.5}}]\n"
    "tests: {{match: [{{symptom.script-exception: 1, event.message: 'aa'}}],"
    " no_match: [{{symptom.script-exception: 1, event.message: 'b'}}]}}\n"
)
BOUNDED_ANALYZE = """
import sys
from pathlib import Path
from diagnose.engine import analyze
from diagnose.report import Report
report = Report.model_validate({"status": "exception", "script": {"path": "train.py"},
    "event": {"kind": "exception", "message": "a" * 40 + "!"}})
out = analyze(report, extra_rules=[Path(sys.argv[1])])
print("\\n".join(out.warnings))
print("fixes:", [f.id for f in out.fixes])
"""


def _analyze_in_subprocess(rules: Path) -> list[str]:
    """The warnings and fix ids of a crafted exception report analysed with ``rules``, run in a
    child with a timeout so that a regression cannot hang the suite."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BOUNDED_ANALYZE, str(rules)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("pattern", ["(?=(a+)+$)", "(?:x|(a+)+$)", "((a+)+)?$", "(a|aa)+$"])
def test_a_backtracking_matches_pattern_cannot_hang_the_engine(tmp_path: Path, pattern: str):
    (tmp_path / "evil.yaml").write_text(BACKTRACKING_RULE.format(id="evil", pattern=pattern))
    (tmp_path / "fine.yaml").write_text(
        BACKTRACKING_RULE.format(id="fine", pattern="a!$").replace("use-bf16", "upcast-to-fp32")
    )
    out = _analyze_in_subprocess(tmp_path)
    assert "fixes: ['upcast-to-fp32']" in out  # the other rule still fires, the evil one not
    named = [line for line in out if "time bound" in line]
    assert named in (
        [],
        [
            f"rules: {tmp_path / 'evil.yaml'}: rule evil: a `matches` test ran past its time bound "
            "on event.message; counted as no match"
        ],
    )


def test_a_matches_pattern_that_runs_out_of_time_is_named_with_its_file(tmp_path: Path):
    (tmp_path / "evil.yaml").write_text(BACKTRACKING_RULE.format(id="evil", pattern="(a|aa)+$"))
    out = _analyze_in_subprocess(tmp_path)
    assert (
        f"rules: {tmp_path / 'evil.yaml'}: rule evil: a `matches` test ran past its time bound "
        "on event.message; counted as no match"
    ) in out
