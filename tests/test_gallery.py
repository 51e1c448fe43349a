"""Accuracy on the gallery: `diagnose` ranks each buggy script's known fix first.

Every script in examples/expected.yaml runs once under the real CLI (`diagnose --format json`,
a subprocess), its tests kept on one test worker. A buggy script must produce an event (or,
for a run that stays finite, a silent finding) whose first fix is its `expected_fix`; a healthy
one must produce a clean report with no fix at all.
"""

from __future__ import annotations

import functools
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from diagnose.patches.apply import apply_with_backup
from diagnose.report import Report
from tests.conftest import EXAMPLES, run_cli
from tests.forked import run_python

EXPECTED: dict[str, dict] = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())
BUGGY = sorted(name for name, entry in EXPECTED.items() if not entry.get("healthy"))
HEALTHY = sorted(name for name, entry in EXPECTED.items() if entry.get("healthy"))

# Buggy scripts whose patch needs what only the tracer records (the op, its inputs, the flag
# the value came from): the patch checked is the one in the real run's report, applied as
# `diagnose apply` applies it. tests/patches/test_gallery_patches.py checks the others from
# events written by hand.
PATCHED_AS_REPORTED = [
    "acos_cosine_angle_loss.py",
    "argparse_lr_orders_too_high.py",
    "clipped_adam_high_lr.py",
    "crash_conv_flatten_size.py",
    "crash_float_class_targets.py",
    "crash_inplace_after_sigmoid.py",
    "crash_rnn_hidden_not_detached.py",
    "ctc_target_too_long.py",
    "dtype_setting_fp16_autocast.py",
    "fractional_power_distance.py",
    "gan_discrete_code_sqrt.py",
    "hand_warmup_high_lr.py",
    "hand_written_sgd_sqrt_zero.py",
    "lightning_half_raw_targets.py",
    "lightning_rnn_exploding_grads.py",
    "loss_module_fp16_overflow.py",
    "masked_attention_empty_sequence.py",
    "silent_clip_zero_flag.py",
    "silent_weight_decay_flag.py",
]
# Buggy scripts whose lr comes from a config file beside them (an exec'd configurator, a
# CfgNode's YAML, HfArgumentParser's JSON, a Hydra config, a LightningCLI config): the fix is a diff of that file.
CONFIG_PATCHED = {
    "configurator_high_lr.py": "configs/configurator_sgd.py",
    "cfgnode_yaml_high_lr.py": "configs/cfgnode_trainer.yaml",
    "hf_argparser_json_high_lr.py": "configs/hf_train_args.json",
    "hydra_yaml_high_lr.py": "configs/hydra_train.yaml",
    "lightning_cli_yaml_high_lr.py": "configs/lightning_cli.yaml",
}
# a step's "loss 0.52", or the last line's "final 0.5" / "final loss 0.5"
LOSS = re.compile(r"\b(?:loss|final) ([-+]?(?:\d[\d.eE+-]*|nan|inf))")

pytestmark = pytest.mark.slow


@functools.cache
def report_of(name: str) -> dict:
    result = run_cli("--format", "json", str(EXAMPLES / name))
    exits = (0, 1, 3) if name == "healthy_exit_status.py" else (0, 1)  # sys.exit(3) its own
    assert result.returncode in exits, f"{name}: exit {result.returncode}: {result.stderr[-800:]}"
    report = json.loads(result.stdout)
    report["_exit"] = result.returncode
    return report


def _one_worker_each(names: list[str]) -> list:
    """Each script's tests on one pytest-xdist worker (``--dist loadgroup``): its run is made
    once, and the scripts are shared out over the workers."""
    return [pytest.param(name, marks=pytest.mark.xdist_group(name)) for name in names]


def test_every_gallery_script_is_listed_with_a_root_cause():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts == set(EXPECTED)
    assert len(BUGGY) >= 25 and len(HEALTHY) >= 9
    for name in BUGGY:
        entry = EXPECTED[name]
        assert entry["root_cause"] and entry["expected_fix"], name
        assert (EXAMPLES / name).read_text().startswith('"""Root cause: '), name


@pytest.mark.parametrize("name", _one_worker_each(BUGGY))
def test_buggy_script_gets_its_fix_first(name):
    report = report_of(name)
    assert report["_exit"] == 1 and report["status"] in ("nonfinite", "exception", "silent"), name
    ranked = [f["id"] for f in report["fixes"]]
    assert ranked[:1] == [EXPECTED[name]["expected_fix"]], (
        f"{name}: {EXPECTED[name]['root_cause']}; ranked {ranked}; event {report['event']}"
    )


@pytest.mark.parametrize("name", _one_worker_each(HEALTHY))
def test_healthy_script_is_clean_with_no_fix(name):
    report = report_of(name)
    assert report["_exit"] == (report["exit_code"] or 0), report["event"]  # 0, or its own
    assert report["status"] == "clean" and report["event"] is None
    assert report["fixes"] == [] and report["symptoms"] == [], report["symptoms"]


@pytest.mark.xdist_group("healthy_exit_status.py")
def test_a_healthy_script_ending_with_sys_exit_3_is_clean_and_exits_3():
    report = report_of("healthy_exit_status.py")
    assert report["status"] == "clean" and report["_exit"] == 3
    assert report["exit_code"] == 3 and not report["symptoms"]


@pytest.mark.parametrize("name", _one_worker_each(PATCHED_AS_REPORTED))
def test_the_reported_patch_makes_the_script_train(tmp_path, name):
    fix_id = EXPECTED[name]["expected_fix"]
    report = Report.model_validate({k: v for k, v in report_of(name).items() if k != "_exit"})
    script = tmp_path / name
    shutil.copy(EXAMPLES / name, script)
    applied = apply_with_backup(
        report, fix_id, backup=False, script_path=script, report_dir=tmp_path
    )
    done = run_python([str(script), *(applied.command or [])], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(v) for v in LOSS.findall(done.stdout)]
    assert losses and all(map(math.isfinite, losses)), f"{fix_id} left {done.stdout[-300:]}"
    if report.status == "silent":  # it stayed finite before too: the fixed run must learn
        assert losses[-1] < losses[0], f"{fix_id} left {done.stdout[-300:]}"


@pytest.mark.parametrize("name", _one_worker_each(sorted(CONFIG_PATCHED)))
def test_a_setting_from_a_config_file_is_fixed_in_that_file_and_the_fixed_run_trains(
    tmp_path, name
):
    config = CONFIG_PATCHED[name]
    fix = report_of(name)["fixes"][0]
    assert fix["patch_file"] and fix["patch_argv"] is None, fix["patch_note"]
    assert Path(fix["patch_file"]).resolve() == (EXAMPLES / config).resolve()
    assert fix["patch"].startswith(f"--- a/examples/{config}\n+++ b/examples/{config}\n")
    # the diff applies as a user applies it, here to a copy of the script and its configs
    shutil.copy(EXAMPLES / name, tmp_path / name)
    shutil.copytree(EXAMPLES / "configs", tmp_path / "configs")
    applied = subprocess.run(
        ["git", "apply", "-p2", "-"],
        input=fix["patch"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / config).read_text() != (EXAMPLES / config).read_text()
    done = run_python([str(tmp_path / name)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(v) for v in LOSS.findall(done.stdout)]
    assert losses and all(map(math.isfinite, losses)), done.stdout[-300:]
