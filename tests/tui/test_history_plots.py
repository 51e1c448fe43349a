"""History plots: a loss that spans decades on a log axis, a loss in a narrow band drawn as a
line across that band; neither is a solid block of bars from 0."""

from __future__ import annotations

import math

from diagnose.report import Report, StepRecord
from tests.tui.conftest import load_fp16, show_tab
from tui.app import DiagnoseApp
from tui.widgets.step_plot import StepPlot


def with_losses(losses: list[float]) -> Report:
    history = [StepRecord(step=i, loss=v, grad_norm=1.0) for i, v in enumerate(losses)]
    return load_fp16().model_copy(
        update={"status": "silent", "event": None, "frames": [], "history": history}
    )


async def plot_rows(report: Report) -> list[str]:
    """The loss plot as it is drawn in the History tab at 100x40: title, bar rows, axis."""
    app = DiagnoseApp(report)
    async with app.run_test(size=(100, 40)) as pilot:
        await show_tab(pilot, "3")
        await pilot.pause()
        return app.query_one("#plot-loss", StepPlot).render().plain.splitlines()


def full_rows(rows: list[str]) -> int:
    """How many bar rows are (nearly) all full blocks: a solid block has most of them."""
    bars = [row[8:] for row in rows[1:-1]]
    return sum(1 for bar in bars if bar.strip() and bar.count("█") > 0.9 * len(bar.rstrip()))


async def test_a_loss_spanning_decades_is_on_a_log_axis_as_a_line():
    losses = [10 * 0.9**i for i in range(60)]  # 10 down to 0.02: more than two decades
    rows = await plot_rows(with_losses(losses))
    assert "(log scale)" in rows[0]
    assert rows[1].split()[0] == "10" and rows[-2].split()[0] == "0.02"
    assert full_rows(rows) == 0
    # on a log axis an exponential fall is a straight line: each row holds a part of it
    assert all(row[8:].strip() for row in rows[1:-1])


async def test_a_flat_loss_far_from_0_spans_its_band_not_a_block_from_0():
    losses = [0.693 + 0.01 * math.sin(i) for i in range(60)]  # a silent run at chance level
    rows = await plot_rows(with_losses(losses))
    assert "(log scale)" not in rows[0]
    bottom = float(rows[-2].split()[0])
    assert 0.6 < bottom < 0.69  # the axis starts just under the band, not at 0
    assert full_rows(rows) == 0


async def test_a_series_rising_from_near_0_keeps_its_bars_from_0():
    rows = await plot_rows(with_losses([1.0 + i for i in range(60)]))  # under two decades
    assert "(log scale)" not in rows[0]
    assert rows[-2].split()[0] == "0"
    assert full_rows(rows) >= 1  # bars: the last rows filled under the rising values
