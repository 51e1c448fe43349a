"""Reports for the TUI tests: the hand-built fp16 overflow report and variants of it."""

from __future__ import annotations

import asyncio
import inspect
import math
from pathlib import Path

import pytest

from diagnose.report import Event, Frame, Location, Report, StepRecord, TensorStats

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FP16_REPORT = FIXTURES / "fp16_overflow.json"
HOSTILE = "[bold red]x[/]\x1b[31mRED\x1b[0m"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests (Pilot scenarios) in a fresh event loop, no plugin needed."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


def load_fp16() -> Report:
    return Report.load(FP16_REPORT)


@pytest.fixture
def fp16_report() -> Report:
    return load_fp16()


@pytest.fixture
def clean_report() -> Report:
    report = load_fp16()
    history = [StepRecord(step=i, loss=1.0 / (i + 1), grad_norm=0.5, lr=1e-3) for i in range(20)]
    return report.model_copy(
        update={
            "status": "clean",
            "event": None,
            "frames": [],
            "history": history,
            "symptoms": [],
            "fixes": [],
            "matches": [],
        }
    )


@pytest.fixture
def exception_report() -> Report:
    report = load_fp16()
    event = Event(
        kind="exception",
        phase="forward",
        step=0,
        message="mat1 and mat2 shapes cannot be multiplied (64x100 and 256x256)",
        exception_type="RuntimeError",
        location=Location(file="train.py", line=12, code="out = model(x)"),
        traceback="Traceback (most recent call last):\n  ...\nRuntimeError: mat1 and mat2 ...",
    )
    return report.model_copy(
        update={
            "status": "exception",
            "event": event,
            "frames": [],
            "history": [],
            "symptoms": [],
            "fixes": [],
        }
    )


@pytest.fixture
def no_frames_report() -> Report:
    return load_fp16().model_copy(update={"frames": []})


def big_frames(n: int) -> list[Frame]:
    """``n`` frames with the producer at the very end, as a long ring buffer would have it."""
    frames = []
    for i in range(n):
        bad = i == n - 1
        out = TensorStats(
            name="output",
            dtype="float16",
            abs_min=1e-3,
            abs_max=math.inf if bad else 10.0 + i,
            inf=3 if bad else 0,
            nan=0,
        )
        frames.append(
            Frame(
                index=i,
                step=i // 50,
                phase="forward",
                module=f"layers.{i % 50}",
                module_type="Linear",
                outputs=[out],
                producer=bad,
            )
        )
    return frames


@pytest.fixture
def big_report() -> Report:
    return load_fp16().model_copy(update={"frames": big_frames(10_000)})


@pytest.fixture
def newer_report(tmp_path: Path) -> Report:
    data = load_fp16().model_dump(mode="json")
    data["version"] = 99
    data["something_new"] = {"a": 1}
    path = tmp_path / "newer.json"
    import json

    path.write_text(json.dumps(data))
    return Report.load(path)


@pytest.fixture
def hostile_report() -> Report:
    """Module names, messages and paths that carry Rich markup and terminal escapes."""
    report = load_fp16()
    event = report.event.model_copy(
        update={
            "module": HOSTILE,
            "message": f"{HOSTILE} produced inf",
            "location": Location(file=f"/tmp/{HOSTILE}.py", line=3),
        }
    )
    frames = [f.model_copy(update={"module": HOSTILE}) if f.producer else f for f in report.frames]
    fixes = [report.fixes[0].model_copy(update={"title": HOSTILE}), *report.fixes[1:]]
    return report.model_copy(update={"event": event, "frames": frames, "fixes": fixes})


def notifications(app) -> list[str]:
    """The messages the app has shown as toasts (kept for the whole test, see below)."""
    return [n.message for n in app._notifications]


@pytest.fixture(autouse=True)
def toasts_outlast_the_test(monkeypatch):
    """On a busy machine a scenario can take longer than a toast's few seconds on screen:
    tests read them after the fact, so they stay up."""
    from tui.app import DiagnoseApp

    monkeypatch.setattr(DiagnoseApp, "NOTIFICATION_TIMEOUT", 3600)


async def until(pilot, condition, what: str, timeout: float = 120.0) -> None:
    """Let the app run until ``condition()`` holds.

    A key's effects (a message posted, a screen pushed, a worker started and its outcome
    handled) take as many frames as the machine's load makes them: a fixed pause is a race.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        await pilot.pause(0.02)


async def notice(pilot, app, part: str) -> str:
    """Wait for the toast that contains ``part``; its message."""
    await until(pilot, lambda: any(part in m for m in notifications(app)), f"a notice {part!r}")
    return next(m for m in notifications(app) if part in m)


async def show_tab(pilot, key: str) -> None:
    """Press a tab's number key and wait until its content has the focus, so that the keys
    pressed next reach it (focus moves a frame or more after the key)."""
    from tui.app import FOCUS, TABS

    tab = TABS[int(key) - 1]
    await pilot.press(key)
    await until(pilot, lambda: isinstance(pilot.app.focused, FOCUS[tab]), f"the {tab} tab's focus")
