"""The core package never imports the TUI (textual, tui/); the TUI is loaded lazily by the CLI."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import diagnose


def _core_modules() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.walk_packages(diagnose.__path__, prefix="diagnose.")
        if m.name not in ("diagnose.__main__",)
    )


def test_core_never_imports_textual_or_tui():
    modules = _core_modules()
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(n for n in sys.modules if n == 'textual' or n.startswith(('textual.', 'tui')))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imports the TUI: {out.stdout.strip()}"


def test_import_diagnose_does_not_import_torch():
    code = "import diagnose, diagnose.cli, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
