"""A library's own styling inside an exception message is shown as the plain text it styles.

torch.load(weights_only=True) refuses a pickled class with a message that makes one phrase bold
with ``ESC [1m ... ESC [0m``; every output shows that phrase, with no escape code left over.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from diagnose.render import RENDERERS
from diagnose.report import Report
from tests.conftest import run_cli
from tui.app import DiagnoseApp
from tui.widgets.verdict import Verdict

SCRIPT = """import torch


class Checkpoint:
    pass


torch.save(Checkpoint(), "ckpt.pt")
torch.load("ckpt.pt", weights_only=True)
"""
PHRASE = "do those steps only if you trust the source of the checkpoint"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[dict, Report]:
    folder = tmp_path_factory.mktemp("load")
    script = folder / "load.py"
    script.write_text(SCRIPT)
    path = folder / "report.json"
    done = run_cli("run", "--format", "json", "--report", str(path), str(script), cwd=folder)
    assert done.returncode == 1, done.stderr[-500:]
    return json.loads(path.read_text()), Report.load(path)


def test_the_torch_message_really_is_styled():
    import torch.serialization

    source = Path(torch.serialization.__file__).read_text(encoding="utf-8")
    assert f"\\033[1m{PHRASE}\\033[0m" in source


def test_the_json_message_keeps_the_plain_text(saved):
    data, _ = saved
    event = data["event"]
    assert event["exception_type"].endswith("UnpicklingError")
    assert PHRASE in event["message"]
    for text in (event["message"], event.get("traceback") or "", *event["details"]):
        assert "\x1b" not in text and "[1m" not in text and "[0m" not in text


@pytest.mark.parametrize("fmt", sorted(set(RENDERERS) - {"json"}))
def test_every_renderer_shows_the_phrase_without_escape_codes(saved, fmt):
    _, report = saved
    out = RENDERERS[fmt].write(report, False)
    assert PHRASE in " ".join(out.split())
    assert "\x1b" not in out and "[1m" not in out and "[0m" not in out


def test_the_tui_verdict_shows_the_phrase_without_escape_codes(saved):
    _, report = saved

    async def verdict() -> str:
        app = DiagnoseApp(report)
        async with app.run_test(size=(200, 40)):
            return app.query_one(Verdict).render().plain

    shown = asyncio.run(verdict())
    assert "[1m" not in shown and "\x1b" not in shown
    assert "Weights only load failed" in shown
