"""install / uninstall: chained, idempotent, exact restore, and never raising into user code."""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.optim.optimizer as optimizer_module

from diagnose.capture import ConfigCapture
from diagnose.capture.patching import _MISSING
from tests.capture.conftest import mlp, train


def patched_places() -> list[tuple[object, str]]:
    probe = ConfigCapture().install()
    places = probe._patcher.installed
    probe.uninstall()
    assert len(places) >= 10
    return places


def current(places):
    return [vars(owner).get(name, _MISSING) for owner, name in places]


def global_state():
    return (list(sys.meta_path), len(optimizer_module._global_optimizer_pre_hooks))


def test_uninstall_restores_every_patched_attribute_exactly():
    places = patched_places()
    before, state = current(places), global_state()
    cap = ConfigCapture().install()
    assert all(a is not b for a, b in zip(current(places), before, strict=True))
    model = mlp()
    train(model, torch.optim.SGD(model.parameters(), lr=0.1))
    cap.uninstall()
    assert all(a is b for a, b in zip(current(places), before, strict=True))
    assert global_state() == state
    assert "__call__" not in vars(torch.nn.modules.loss._Loss)


def test_an_exception_in_user_code_leaves_nothing_patched():
    places = patched_places()
    before, state = current(places), global_state()
    with pytest.raises(ZeroDivisionError), ConfigCapture():
        model = mlp()
        train(model, torch.optim.Adam(model.parameters()), steps=1)
        1 / 0  # noqa: B018
    assert all(a is b for a, b in zip(current(places), before, strict=True))
    assert global_state() == state


def test_install_twice_patches_once():
    cap = ConfigCapture()
    cap.install()
    count = len(cap._patcher.installed)
    cap.install()
    assert len(cap._patcher.installed) == count
    cap.uninstall()
    cap.uninstall()  # harmless
    assert cap._patcher.installed == []


def test_wrappers_chain_onto_other_tools_in_both_orders():
    calls: list[str] = []
    original = argparse.ArgumentParser.parse_known_args

    def other_tool(self, *args, **kwargs):
        calls.append("other")
        return original(self, *args, **kwargs)

    argparse.ArgumentParser.parse_known_args = other_tool
    try:
        cap = ConfigCapture().install()
        argparse.ArgumentParser().parse_args([])
        cap.uninstall()
        assert argparse.ArgumentParser.parse_known_args is other_tool
        assert calls == ["other"]
    finally:
        argparse.ArgumentParser.parse_known_args = original

    # installed underneath a tool that wraps later and is still there at uninstall:
    cap = ConfigCapture().install()
    ours = argparse.ArgumentParser.parse_known_args

    def later_tool(self, *args, **kwargs):
        calls.append("later")
        return ours(self, *args, **kwargs)

    argparse.ArgumentParser.parse_known_args = later_tool
    try:
        cap.uninstall()
        assert argparse.ArgumentParser.parse_known_args is later_tool  # their wrapper kept
        assert argparse.ArgumentParser().parse_args([]) == argparse.Namespace()
        assert calls == ["other", "later"]
        assert cap.snapshot()["capture_errors"][0].startswith("restore parse_known_args")
    finally:
        argparse.ArgumentParser.parse_known_args = original


def test_an_internal_error_is_recorded_not_raised():
    class OddScaler(torch.amp.GradScaler):
        """A third-party scaler whose bookkeeping the capture does not understand."""

    model = mlp()
    with ConfigCapture() as cap:
        scaler = OddScaler("cpu")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler.scale(model(torch.randn(2, 4)).sum()).backward()
        states = scaler._per_optimizer_states
        scaler._per_optimizer_states = None  # the clip hook will fail reading it
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # must not raise
        scaler._per_optimizer_states = states
        scaler.step(optimizer)
        config = cap.snapshot()
    assert config["grad_clip"]["calls"] == 1
    assert any("clip_grad_norm_" in e for e in config["capture_errors"])


def test_install_imports_neither_transformers_nor_lightning_nor_the_config_file_reader():
    code = textwrap.dedent("""
        import sys
        from diagnose.capture import ConfigCapture
        cap = ConfigCapture().install()
        cap.snapshot()
        cap.uninstall()
        print(sorted(m for m in ("transformers", "lightning", "pytorch_lightning", "yaml",
                                 "diagnose.capture.config_file") if m in sys.modules))
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
