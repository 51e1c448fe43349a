"""The expected fix's patch makes each silent gallery script learn: `diagnose` calls it clean.

The report the patch is made from is written by hand (status silent, and the learning evidence
the patcher reads where it needs any), so that this holds independently of the watch; the
patched copy then runs under the real CLI, whose learning watch must find nothing wrong.
"""

from __future__ import annotations

import json

import pytest
import yaml

from diagnose.patches import PATCHERS, make_patch
from diagnose.report import Report
from tests.conftest import EXAMPLES, run_cli

EXPECTED = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())
# script -> the learning evidence the patcher reads (what the watch records of that run)
LEARNING = {
    "silent_no_zero_grad.py": {},
    "silent_gpt2_no_zero_grad.py": {},
    "silent_plain_list_layers.py": {
        "unregistered": [
            {"name": "DeepMLP.hidden[0]", "type": "Linear", "container": "DeepMLP.hidden (a list)"}
        ]
    },
    "silent_head_only_optimizer.py": {},
    "silent_softmax_then_ce.py": {},
    "silent_missing_step.py": {},
    "silent_regression_broadcast.py": {
        "losses": [
            {
                "function": "mse_loss",
                "input_shape": [32, 1],
                "target_shape": [32],
                "broadcast": True,
                "broadcast_shape": [32, 32],
            }
        ]
    },
    "silent_eval_mode.py": {},
    "silent_dead_relu_bias.py": {},
    "silent_time_as_classes.py": {
        "losses": [
            {
                "function": "cross_entropy",
                "input_shape": [32, 10, 6],
                "target_shape": [32, 10, 6],
                "misplaced_classes": True,
            }
        ]
    },
    "silent_clip_zero_flag.py": {},
    "silent_tiny_lr.py": {},
    "silent_weight_decay_flag.py": {},
}
# script -> the config the patcher reads besides (what the capture records of that run)
CONFIG = {
    "silent_tiny_lr.py": {"optimizer": "Adam", "lr": 1e-9, "lr_initial": 1e-9},
    "silent_weight_decay_flag.py": {
        "optimizer": "AdamW",
        "lr": 1e-2,
        "optimizers": [{"class": "AdamW", "param_groups": [{"lr": 1e-2, "weight_decay": 50.0}]}],
    },
}


def silent_with_patcher() -> set[str]:
    return {
        name
        for name, entry in EXPECTED.items()
        if name.startswith("silent_") and entry["expected_fix"] in PATCHERS
    }


def test_every_silent_gallery_script_with_a_patched_fix_is_covered():
    assert silent_with_patcher() == set(LEARNING)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LEARNING))
def test_expected_fix_makes_the_silent_script_learn(tmp_path, name):
    script = tmp_path / name
    script.write_text((EXAMPLES / name).read_text())
    report = Report.model_validate(
        {
            "status": "silent",
            "script": {"path": str(script)},
            "learning": LEARNING[name],
            "config": CONFIG.get(name, {}),
        }
    )
    fix_id = EXPECTED[name]["expected_fix"]
    result = make_patch(fix_id, script, report)
    assert result.new_source is not None, result.note
    compile(result.new_source, name, "exec")
    script.write_text(result.new_source)
    done = run_cli("--format", "json", str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    after = json.loads(done.stdout)
    assert after["status"] == "clean", (fix_id, [s["id"] for s in after["symptoms"]])
