"""Clipping and loss scaling a framework was set to do count, even before a call was seen."""

from __future__ import annotations

from diagnose.facts import extract_facts
from diagnose.report import Report


def _facts(config: dict) -> dict:
    report = Report.model_validate(
        {"status": "nonfinite", "script": {"path": "t.py"}, "config": config}
    )
    return extract_facts(report)[0]


def test_trainer_and_lightning_clip_settings_are_read():
    assert _facts({"transformers": {"max_grad_norm": 1.0}})["grad_clip.configured"] is True
    assert _facts({"lightning": {"gradient_clip_val": 0.5}})["grad_clip.configured"] is True
    assert _facts({"transformers": {"max_grad_norm": 0.0}})["grad_clip.configured"] is False
    assert _facts({})["grad_clip.configured"] is False


def test_framework_fp16_builds_its_own_grad_scaler():
    assert _facts({"transformers": {"fp16": True}})["grad_scaler.configured"] is True
    assert _facts({"lightning": {"precision": "16-mixed"}})["grad_scaler.configured"] is True
    assert _facts({"lightning": {"precision": "16-true"}})["grad_scaler.configured"] is False
