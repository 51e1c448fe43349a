"""Importing an integration: one clear ImportError without its framework, the right base class
with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def without(*packages: str) -> str:
    """Code that makes ``packages`` unimportable, as if they were not installed."""
    return "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in packages)


@pytest.mark.parametrize(
    ("integration", "packages", "message"),
    [
        (
            "lightning",
            ("lightning", "lightning.pytorch", "pytorch_lightning"),
            "needs Lightning: pip install lightning (or pytorch-lightning)",
        ),
        (
            "transformers",
            ("transformers", "transformers.trainer_callback"),
            "needs transformers: pip install transformers",
        ),
    ],
)
def test_a_missing_framework_is_one_clear_import_error(integration, packages, message):
    done = python(
        without(*packages)
        + textwrap.dedent(f"""
        try:
            import diagnose.integrations.{integration}
        except ImportError as exc:
            print("ImportError:", exc)
    """)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"ImportError: diagnose.integrations.{integration} {message}"


def test_the_integration_package_imports_no_framework():
    done = python("""
        import sys
        import diagnose.integrations
        print(sorted(m for m in ("lightning", "pytorch_lightning", "transformers", "torch")
                     if m in sys.modules))
    """)
    assert done.stdout.strip() == "[]", done.stderr[-2000:]


def test_the_lightning_callback_fits_the_package_the_script_imported():
    pytest.importorskip("lightning")
    pytest.importorskip("pytorch_lightning")
    done = python("""
        import pytorch_lightning
        from diagnose.integrations.lightning import DiagnoseCallback
        print(issubclass(DiagnoseCallback, pytorch_lightning.Callback))
    """)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
    done = python("""
        import lightning
        from diagnose.integrations.lightning import DiagnoseCallback
        print(issubclass(DiagnoseCallback, lightning.pytorch.Callback))
    """)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
