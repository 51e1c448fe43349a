"""``diagnose train.py`` on unmodified Trainer scripts, and the callbacks reporting the same way.

Each script runs as a user runs it: through the real command line (``diagnose --format json``)
with no diagnose code inside, with ``python script.py --callback REPORT`` (the framework
callback, no command line), and with both at once (the callback joins the command line's
tracer). The three must agree on the event and the framework config.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tests.forked import run_python

SCRIPTS = ROOT / "tests" / "scripts"
HF = SCRIPTS / "hf_trainer_gpt2.py"
PL = SCRIPTS / "lightning_regression.py"

pytestmark = pytest.mark.slow


def diagnose_json(script: Path, *args: str) -> tuple[int, dict]:
    done = run_cli("--format", "json", str(script), *args)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def python_with_callback(script: Path, report: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return run_python([str(script), *args, "--callback", str(report)], cwd=ROOT, env=env)


def where(event: dict) -> tuple:
    return (
        event["kind"],
        event["phase"],
        event["step"],
        event["module"],
        event["op"],
        event["sample_indices"],
    )


class TestTransformersTrainer:
    @pytest.fixture(autouse=True, scope="class")
    def transformers_installed(self) -> None:
        pytest.importorskip("transformers")
        pytest.importorskip("accelerate")

    @pytest.fixture(scope="class")
    def nan_data(self, transformers_installed) -> tuple[int, dict]:
        return diagnose_json(HF, "--nan-data")

    def test_a_clean_run_reports_the_training_arguments(self):
        code, report = diagnose_json(HF)
        assert code == 0 and report["status"] == "clean" and report["event"] is None
        config = report["config"]
        hf = config["transformers"]
        assert (hf["fp16"], hf["bf16"]) == (False, False)
        assert hf["learning_rate"] == 1e-3 and hf["warmup_steps"] == 1
        assert hf["max_grad_norm"] == 1.0 and hf["gradient_accumulation_steps"] == 2
        # The Trainer's logs would have hidden a nan loss; the report says so.
        assert hf["logging_nan_inf_filter"] is True and hf["logs_hide_nonfinite_loss"] is True
        assert "logging_nan_inf_filter" in hf["notes"][0]
        assert config["optimizer"] == "AdamW" and config["precision"] == "fp32"
        assert config["grad_clip"]["kind"] == "norm" and config["grad_clip"]["calls"] == 4
        assert config["lr_scheduler"]["warmup"]["steps"] == 1
        assert len(report["history"]) == 4

    def test_a_nan_in_the_data_is_found_at_the_model_input(self, nan_data):
        code, report = nan_data
        assert code == 1 and report["status"] == "nonfinite"
        event = report["event"]
        assert (event["phase"], event["module"]) == ("input", "GPT2LMHeadModel")
        assert "inputs_embeds" in event["message"]
        assert report["fixes"][0]["id"] == "sanitize-inputs"
        assert report["config"]["transformers"]["learning_rate"] == 1e-3

    def test_the_callback_reports_the_same_as_the_command_line(self, nan_data, tmp_path):
        _, cli = nan_data
        done = python_with_callback(HF, tmp_path / "report.json", "--nan-data")
        assert done.returncode == 1 and "NonFiniteDetected" in done.stderr, done.stderr[-3000:]
        report = json.loads((tmp_path / "report.json").read_text())
        assert where(report["event"]) == where(cli["event"])
        assert report["config"]["transformers"] == cli["config"]["transformers"]
        assert report["fixes"][0]["id"] == cli["fixes"][0]["id"]

    def test_the_callback_under_the_command_line_joins_its_tracer(self, nan_data, tmp_path):
        _, alone = nan_data
        code, cli = diagnose_json(HF, "--nan-data", "--callback", str(tmp_path / "cb.json"))
        assert code == 1 and where(cli["event"]) == where(alone["event"])
        from_callback = json.loads((tmp_path / "cb.json").read_text())
        assert where(from_callback["event"]) == where(alone["event"])


class TestLightningTrainer:
    @pytest.fixture(autouse=True, scope="class")
    def lightning_installed(self) -> None:
        pytest.importorskip("lightning")

    @pytest.fixture(scope="class")
    def nan_data(self, lightning_installed) -> tuple[int, dict]:
        return diagnose_json(PL, "--nan-data")

    def test_a_clean_run_reports_the_trainer_config(self):
        code, report = diagnose_json(PL, "--clip-algorithm", "value", "--clip", "0.5")
        assert code == 0 and report["status"] == "clean"
        config = report["config"]
        pl = config["lightning"]
        assert pl["precision"] == "32-true" and pl["precision_plugin"] == "Precision"
        assert (pl["gradient_clip_val"], pl["gradient_clip_algorithm"]) == (0.5, "value")
        assert pl["optimizers"] == [{"class": "SGD", "param_groups": 1, "lr": [0.05]}]
        assert pl["lr_schedulers"] == [
            {"class": "StepLR", "interval": "epoch", "frequency": 1, "monitor": None, "name": None}
        ]
        assert pl["module_class"] == "Regressor"
        assert config["grad_clip"]["kind"] == "value" and config["grad_clip"]["max"] == 0.5
        assert config["optimizer"] == "SGD" and len(report["history"]) == 6

    def test_bf16_mixed_precision_is_the_plugin_and_the_autocast_seen(self):
        code, report = diagnose_json(PL, "--precision", "bf16-mixed")
        assert code == 0
        config = report["config"]
        assert config["lightning"]["precision"] == "bf16-mixed"
        assert config["lightning"]["precision_plugin"] == "MixedPrecision"
        assert config["precision"] == "bf16-autocast" and config["autocast_dtype"] == "bfloat16"

    def test_a_nan_in_the_data_names_the_batch_row(self, nan_data):
        code, report = nan_data
        assert code == 1
        assert where(report["event"]) == ("nonfinite", "input", 4, "Sequential", None, [37])
        assert report["fixes"][0]["id"] == "sanitize-inputs"

    def test_a_learning_rate_far_too_high_without_clipping(self):
        code, report = diagnose_json(PL, "--lr", "1e4", "--clip", "0", "--steps", "40")
        assert code == 1 and report["event"]["phase"] == "loss"
        assert report["config"]["lightning"]["gradient_clip_val"] is None
        assert report["config"]["grad_clip"] is None and report["config"]["lr"] == 1e4
        fixes = [fix["id"] for fix in report["fixes"]]
        # 1e4 is orders of magnitude above the usual lr: a clip would leave each update as large
        assert fixes[0] == "lower-learning-rate" and "enable-grad-clipping" not in fixes

    def test_the_callback_reports_the_same_as_the_command_line(self, nan_data, tmp_path):
        _, cli = nan_data
        done = python_with_callback(PL, tmp_path / "report.json", "--nan-data")
        assert done.returncode == 1 and "NonFiniteDetected" in done.stderr, done.stderr[-3000:]
        report = json.loads((tmp_path / "report.json").read_text())
        assert where(report["event"]) == where(cli["event"])
        lightning = {k: v for k, v in report["config"]["lightning"].items() if k != "init_args"}
        assert lightning.items() <= cli["config"]["lightning"].items()
        assert report["fixes"][0]["id"] == cli["fixes"][0]["id"]

    def test_the_callback_under_the_command_line_joins_its_tracer(self, nan_data, tmp_path):
        _, alone = nan_data
        code, cli = diagnose_json(PL, "--nan-data", "--callback", str(tmp_path / "cb.json"))
        assert code == 1 and where(cli["event"]) == where(alone["event"])
        from_callback = json.loads((tmp_path / "cb.json").read_text())
        assert where(from_callback["event"]) == where(alone["event"])
