"""Finite runs under the real ``diagnose`` (a subprocess, real torch loops): each verdict names
the mechanism the run's own facts show, and its healthy look-alike stays clean.

The scripts in ``tests/learning/scripts`` are written in styles the gallery does not use (a
Trainer class with callbacks, a dict config, a bare linear objective).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path

import pytest

from diagnose.patches.apply import apply_with_backup
from diagnose.report import Report
from tests.conftest import run_cli
from tests.forked import run_python

SCRIPTS = Path(__file__).parent / "scripts"
LOSS = re.compile(r"\bloss (-?[\d.]+)")

pytestmark = pytest.mark.slow


@functools.cache
def report_of(name: str) -> dict:
    result = run_cli("--format", "json", str(SCRIPTS / name))
    assert result.returncode in (0, 1), f"{name}: exit {result.returncode}: {result.stderr[-800:]}"
    return json.loads(result.stdout)


def _symptoms(report: dict) -> list[str]:
    return [s["id"] for s in report["symptoms"]]


@pytest.mark.parametrize(
    "name", ["trainer_clears_before_step.py", "dict_config_step_before_backward.py"]
)
def test_steps_on_just_cleared_gradients_are_the_call_order_not_a_cut_graph(name):
    report = report_of(name)
    assert report["status"] == "silent"
    assert _symptoms(report) == ["training-calls-out-of-order"]
    assert report["fixes"][0]["id"] == "fix-training-call-order"
    assert "gradient-flow-cut" not in report["facts"]
    evidence = report["symptoms"][0]["evidence"][0]
    assert "after zero_grad() had cleared the gradients of the last backward" in evidence


@pytest.mark.parametrize(
    "name", ["trainer_clears_before_step.py", "dict_config_step_before_backward.py"]
)
def test_the_reordered_loop_trains(tmp_path, name):
    report = Report.model_validate(report_of(name))
    script = tmp_path / name
    shutil.copy(SCRIPTS / name, script)
    apply_with_backup(
        report, "fix-training-call-order", backup=False, script_path=script, report_dir=tmp_path
    )
    done = run_python([str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(v) for v in LOSS.findall(done.stdout)]
    assert losses[-1] < 0.8 * losses[0], done.stdout


def test_a_trainer_that_clears_before_backward_is_clean():
    report = report_of("healthy_trainer_clears_first.py")
    assert report["status"] == "clean", report["symptoms"]
    assert report["symptoms"] == [] and report["fixes"] == []
    assert report["learning"]["order_checked"] > 2 and report["learning"]["stepped_cleared"] == 0


def test_a_loss_falling_below_zero_and_on_is_not_a_divergence():
    report = report_of("healthy_linear_objective.py")
    assert report["status"] == "clean", report["symptoms"]
    assert report["symptoms"] == [] and report["fixes"] == []
    facts = report["facts"]
    assert facts["run.loss_end"] < facts["run.loss_start"] < 0
    assert facts["run.loss_growth"] < 1


def test_an_lr_far_below_the_usual_that_still_moves_the_weights_is_lr_too_low():
    report = report_of("callbacks_lr_far_too_low.py")
    assert report["status"] == "silent"
    assert _symptoms(report) == ["lr-too-low"]
    assert [f["id"] for f in report["fixes"]][:1] == ["raise-learning-rate"]
    assert "fix-label-alignment" not in [f["id"] for f in report["fixes"]]
    assert report["learning"]["weight_change"] > 1e-4  # the weights did move, a little
    assert "625x below Adam's usual" in report["symptoms"][0]["evidence"][1]
    assert "1.6e-6" in report["fixes"][0]["patch"] and "0.001" in report["fixes"][0]["patch"]


def test_the_same_framework_at_a_usual_lr_is_clean():
    report = report_of("healthy_callbacks_usual_lr.py")
    assert report["status"] == "clean"
    assert report["symptoms"] == report["set_aside"] == report["fixes"] == []


def test_a_sigmoid_output_fitted_to_targets_outside_0_1_is_told_so_not_relu_or_residual():
    report = report_of("sigmoid_output_house_prices.py")
    assert report["status"] == "silent"
    assert _symptoms(report) == ["output-range-excludes-targets"]
    assert [f["id"] for f in report["fixes"]] == ["match-output-to-targets"]
    assert (
        "which lies in (0, 1), but its targets range over ["
        in (report["symptoms"][0]["evidence"][0])
    )
    assert report["facts"]["learning.saturated_only_output"] is True


def test_the_same_sigmoid_output_fitted_to_targets_scaled_into_0_1_is_clean():
    report = report_of("healthy_sigmoid_output_scaled_prices.py")
    assert report["status"] == "clean"
    assert report["symptoms"] == report["set_aside"] == report["fixes"] == []
    (loss,) = report["learning"]["losses"]
    assert loss["output_activation"] == "sigmoid" and 0 <= loss["target_min"] < 1


def test_a_gan_whose_generator_alone_steps_on_cleared_gradients_names_it_and_its_lines():
    report = report_of("gan_generator_cleared_before_step.py")
    assert _symptoms(report) == ["training-calls-out-of-order"]
    assert report["learning"]["order_optimizer"] == "opt_g"
    assert report["symptoms"][0]["evidence"][0].startswith("20 of opt_g's 20 steps checked")
    patch = report["fixes"][0]["patch"]
    assert (
        "+        opt_g.zero_grad()\n         g_loss.backward()\n-        opt_g.zero_grad()"
        in patch
    )
    assert "opt_d" not in "".join(line for line in patch.splitlines() if line[:1] in "+-")
    losses = {x["name"]: x for x in report["learning"]["optimizer_losses"]}
    assert set(losses) == {"opt_d", "opt_g"}
    assert losses["opt_d"]["last"] < losses["opt_d"]["first"]  # the discriminator learns
    assert losses["opt_g"]["last"] > losses["opt_g"]["first"]  # against a generator that stays


def test_modules_are_named_as_the_script_names_its_models():
    gan = report_of("healthy_gan_points.py")
    trainer = report_of("trainer_clears_before_step.py")
    names = [a["name"] for a in trainer["learning"]["activations"]]
    assert names == ["model.1"]
    assert [n["name"] for n in trainer["learning"]["no_gradient"]] == ["model.0", "model.2"]
    assert gan["learning"]["input_module"] in ("generator.0", "discriminator.0")
    assert {a["name"] for a in gan["learning"]["activations"]} >= {"generator.1"}


def test_a_gan_in_a_working_order_is_clean():
    report = report_of("healthy_gan_points.py")
    assert report["status"] == "clean", report["symptoms"]
    assert report["symptoms"] == report["fixes"] == []
    assert report["learning"]["stepped_cleared"] == 0


def test_a_hand_written_loss_that_broadcasts_its_target_is_found_and_reshaped(tmp_path):
    name = "hand_written_loss_broadcast.py"
    report = report_of(name)
    assert report["status"] == "silent"
    assert _symptoms(report) == ["target-shape-broadcast"]
    assert (
        "hand-written squared error's input of shape (64, 1) was broadcast to (64, 64)"
        in (report["symptoms"][0]["evidence"][0])
    )
    assert report["fixes"][0]["id"] == "fix-target-shape"
    script = tmp_path / name
    shutil.copy(SCRIPTS / name, script)
    apply_with_backup(
        Report.model_validate(report),
        "fix-target-shape",
        backup=False,
        script_path=script,
        report_dir=tmp_path,
    )
    assert "target.reshape_as(pred)" in script.read_text()
    done = run_python([str(script)], cwd=tmp_path)
    losses = [float(v) for v in LOSS.findall(done.stdout)]
    assert done.returncode == 0 and losses[-1] < 0.1 * losses[0], done.stdout


def test_the_same_hand_written_loss_with_matching_shapes_is_clean():
    report = report_of("healthy_hand_written_loss.py")
    assert report["status"] == "clean"
    assert report["symptoms"] == report["fixes"] == []
    (loss,) = report["learning"]["losses"]
    assert loss["function"] == "hand-written squared error" and not loss["broadcast"]


def test_raw_pixels_whose_loss_fell_from_a_first_spike_to_chance_are_unnormalized_inputs():
    report = report_of("dataset_raw_pixels_cnn.py")
    assert report["status"] == "silent"
    assert _symptoms(report) == ["unnormalized-inputs"]
    assert report["fixes"][0]["id"] == "normalize-inputs"
    evidence = report["symptoms"][0]["evidence"][0]
    assert "range [0, 255]" in evidence and "not below the chance level ln(2)" in evidence


def test_the_same_pixels_scaled_into_0_1_are_clean():
    report = report_of("healthy_dataset_scaled_pixels_cnn.py")
    assert report["status"] == "clean"
    assert report["symptoms"] == report["fixes"] == []


def test_tanh_units_saturated_by_the_init_are_found_and_the_init_is_named():
    report = report_of("tanh_saturated_by_init.py")
    assert report["status"] == "silent"
    assert _symptoms(report) == ["saturated-activations"]
    assert "saturated from the first check" in report["symptoms"][0]["evidence"][1]
    assert report["facts"]["learning.saturated_from_start"] is True
    fixes = {f["id"]: f for f in report["fixes"]}
    assert "saturated-by-initialization" in fixes["fix-initialization"]["rules"]


def test_the_same_tanh_net_at_a_small_init_is_clean():
    report = report_of("healthy_tanh_small_init.py")
    assert report["status"] == "clean"
    assert report["symptoms"] == report["fixes"] == []


def test_logits_with_the_tags_on_the_last_axis_are_the_class_axis_not_misaligned_labels():
    report = report_of("tagger_classes_on_time_axis.py")
    assert report["status"] == "silent"
    assert _symptoms(report) == ["class-axis-misplaced"]
    assert [f["id"] for f in report["fixes"]][:1] == ["fix-loss-dimension"]
    assert "fix-label-alignment" not in [f["id"] for f in report["fixes"]]
    assert "model(xb).movedim(-1, 1)" in report["fixes"][0]["patch"]


def test_the_same_tagger_with_its_logits_turned_is_clean():
    report = report_of("healthy_tagger_tags_on_dim_1.py")
    assert report["status"] == "clean"
    assert report["symptoms"] == report["fixes"] == []
