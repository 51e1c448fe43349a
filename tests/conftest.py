"""Shared fixtures: paths into the checkout and a helper to run the real CLI."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# The suite runs two tests at a time (pytest -n 2) and most start torch processes of their
# own: one intra-op thread each keeps them from oversubscribing a small machine's cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Every run keeps its report (diagnose.reportstore): the suite's go to a folder of its own,
# never to the user's ~/.local/state; a test about that folder points it at its tmp_path.
_REPORTS = tempfile.mkdtemp(prefix="diagnose-test-reports-")
os.environ["DIAGNOSE_REPORT_DIR"] = _REPORTS
atexit.register(shutil.rmtree, _REPORTS, True)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# The upstream sample record, copied into the project (see tests/fixtures/upstream/README.md);
# the upstream file itself, when a checkout has it beside, is only compared with the copy.
SEED = ROOT / "tests" / "fixtures" / "upstream" / "000_27c7b1b258d2bb16.txt"
UPSTREAM_SEED = ROOT.parent / "shared" / "seed" / SEED.name


@pytest.fixture
def root() -> Path:
    return ROOT


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 300):
    """Run ``python -m diagnose ARGS`` as a user would, without a terminal (``tests.forked``:
    a fresh process that finds torch already imported)."""
    from tests.forked import run_python

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    return run_python(
        ["-m", "diagnose", *args], cwd=cwd or ROOT, env=env, stdin=stdin or "", timeout=timeout
    )


def _torch_globals() -> dict[str, object] | None:
    """What a tracer or watch changes in torch while attached, or None before torch is loaded:
    the global module and optimizer hooks and the functions wrapped in place."""
    if "torch" not in sys.modules:
        return None
    import torch
    from torch.nn.modules import module as module_hooks
    from torch.optim import optimizer as optim_hooks

    return {
        "forward hooks": dict(module_hooks._global_forward_hooks),
        "forward pre-hooks": dict(module_hooks._global_forward_pre_hooks),
        "backward hooks": dict(module_hooks._global_backward_hooks),
        "optimizer step pre-hooks": dict(optim_hooks._global_optimizer_pre_hooks),
        "optimizer step post-hooks": dict(optim_hooks._global_optimizer_post_hooks),
        "torch.autograd.backward": torch.autograd.backward,
        "torch.Tensor.backward": torch.Tensor.backward,
        "torch.optim.Optimizer.__init__": torch.optim.Optimizer.__init__,
        "torch.optim.Optimizer.zero_grad": torch.optim.Optimizer.zero_grad,
    }


@pytest.fixture(autouse=True)
def torch_left_as_found():
    """Every test leaves torch as it found it: a tracer, watch or callback that stays attached
    after its run would change the next script's training, and the next test's."""
    before = _torch_globals()
    yield
    after = _torch_globals()
    if after is None:
        return
    if before is None:  # torch was first loaded by this test: no hook was there before it
        before = {key: {} if isinstance(value, dict) else value for key, value in after.items()}
    changed = [key for key in after if before[key] is not after[key] and before[key] != after[key]]
    if changed:
        pytest.fail(f"left attached to torch: {', '.join(changed)}")
