"""The report's training config is declared models: read by attribute, written as it was given,
and loaded from older or other tools' reports (unknown keys kept, unreadable ones left out)."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from diagnose.capture import ConfigCapture
from diagnose.report import Report, ReportError
from diagnose.trainconfig import Config, GradClip, ParamGroup, SchedulerInfo


def _captured(argv: list[str]) -> dict:
    """The snapshot of a real short training run with argparse, AdamW, a scheduler, clipping."""
    with ConfigCapture() as capture:
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=1e-3)
        parser.add_argument("--steps", type=int, default=3)
        args = parser.parse_args(argv)
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=1e-8)
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=2)
        for _ in range(args.steps):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            scheduler.step()
        return capture.snapshot()


def test_a_captured_config_is_read_by_attribute():
    config = Config.model_validate(_captured(["--lr", "0.5"]))
    assert config.optimizer == "AdamW"
    assert isinstance(config.param_groups[0], ParamGroup) and config.param_groups[0].eps == 1e-8
    assert config.args == {"lr": 0.5, "steps": 3}
    assert config.args_given == {"lr": "--lr"} and config.args_defaults == {"steps": 3}
    assert isinstance(config.lr_scheduler, SchedulerInfo)
    assert config.lr_scheduler.name == "LinearLR" and config.lr_scheduler.warmup["steps"] == 2
    assert isinstance(config.grad_clip, GradClip)
    assert config.grad_clip.function == "torch.nn.utils.clip_grad_norm_"
    assert config.grad_clip.calls == 3 and config.grad_clip.clip_after_unscale is None
    assert config.param_dtypes == {"float32": 10}
    assert config.optimizers[0].name == "AdamW" and config.optimizers[0].steps == 3


def test_a_report_writes_the_config_json_the_capture_wrote():
    captured = _captured([])
    report = Report(status="clean", script={"path": "t.py"}, config=captured)
    written = json.loads(report.to_json())["config"]
    assert json.dumps(written) == json.dumps(captured)  # same keys, values, order and types


def test_declared_keys_that_were_not_given_are_not_written():
    config = Config.model_validate({"lr": 0.1, "param_groups": [{"lr": 1}]})
    data = json.loads(config.model_dump_json())
    assert list(data) == [
        "precision",
        "optimizer",
        "lr",
        "grad_clip",
        "grad_scaler",
        "param_groups",
    ]
    assert data["param_groups"] == [{"lr": 1}]  # an int stays an int


def test_a_non_finite_value_the_capture_wrote_as_a_string_stays_that_string():
    data = {"grad_clip_inactive": {"kind": "norm", "max": "inf", "calls": 2}}
    written = json.loads(Config.model_validate(data).model_dump_json())
    assert written["grad_clip_inactive"] == {"kind": "norm", "max": "inf", "calls": 2}


def test_a_report_with_unknown_config_keys_loads_and_keeps_them(tmp_path):
    path = tmp_path / "r.json"
    config = {"lr": 0.1, "made_by_another_tool": {"x": [1, 2]}, "param_groups": [{"lr": 0.1}]}
    path.write_text(json.dumps({"status": "clean", "script": {"path": "t.py"}, "config": config}))
    report = Report.load(path)
    assert report.config.model_extra == {"made_by_another_tool": {"x": [1, 2]}}
    assert report.warnings == []
    assert json.loads(report.to_json())["config"]["made_by_another_tool"] == {"x": [1, 2]}


def test_a_declared_key_of_another_shape_is_left_out_with_a_warning(tmp_path):
    path = tmp_path / "r.json"
    config = {"lr": 0.1, "param_groups": "two groups", "args_given": {"lr": 3}, "loss": None}
    path.write_text(json.dumps({"status": "clean", "script": {"path": "t.py"}, "config": config}))
    report = Report.load(path)
    assert report.config.lr == 0.1 and report.config.param_groups is None
    assert report.warnings == [
        "config.args_given: not in a form this diagnose reads; left out",
        "config.param_groups: not in a form this diagnose reads; left out",
    ]


def test_a_bad_value_of_a_long_standing_key_is_still_one_clear_line(tmp_path):
    path = tmp_path / "r.json"
    data = {"status": "clean", "script": {"path": "t.py"}, "config": {"lr": "fast"}}
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError, match=r"\$\.config\.lr"):
        Report.load(path)


def test_models_with_the_same_values_are_equal_whatever_the_key_order():
    a = Config.model_validate({"lr": 0.1, "optimizer": "SGD"})
    b = Config.model_validate({"optimizer": "SGD", "lr": 0.1})
    assert a == b and a != Config.model_validate({"optimizer": "SGD", "lr": 0.2})
