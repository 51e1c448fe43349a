"""A loss trend is judged on signed values: falling below zero and on is not growing."""

from __future__ import annotations

import pytest

from diagnose.facts.extract import extract_facts, signed_growth
from diagnose.report import Report


def _facts(losses: list[float]) -> dict:
    report = Report.model_validate(
        {
            "status": "clean",
            "script": {"path": "train.py"},
            "history": [{"step": i, "loss": v} for i, v in enumerate(losses)],
        }
    )
    return extract_facts(report)[0]


def test_growth_of_a_positive_loss_is_its_ratio_and_of_a_negative_one_its_signed_rise():
    assert signed_growth(2.0, 20.0) == pytest.approx(10.0)
    assert signed_growth(-1.14, -60.8) < 0  # fell: a linear objective, an NLL
    assert signed_growth(-1.0, 50.0) == pytest.approx(52.0)  # rose past zero: it grew
    assert signed_growth(0.0, 5.0) is None


def test_a_loss_falling_ever_more_negative_is_neither_a_divergence_nor_rising():
    facts = _facts([-1.1 - 0.5 * i for i in range(120)])
    assert facts["run.loss_growth"] < 1
    assert facts["loss_trend"] < 1 and facts["loss.rising_steps"] == 0


def test_a_positive_loss_growing_tenfold_still_diverges():
    facts = _facts([1.0 * 1.05**i for i in range(60)])
    assert facts["run.loss_growth"] > 10 and facts["loss.rising_steps"] == 0
    climbing = _facts([1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 4.0, 8.0])
    assert climbing["loss.rising_steps"] == 3 and climbing["loss_trend"] == pytest.approx(8.0)
