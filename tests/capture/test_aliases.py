"""Which module-level bindings of the clip functions the capture finds and rebinds.

The script's own modules are searched value by value (any name); installed libraries only
under the functions' own names; the standard library not at all.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.utils.clip_grad as clip_grad

from diagnose.capture import ConfigCapture
from diagnose.capture.aliases import find_bindings
from tests.capture.conftest import mlp, snapshot, train

NAMES = ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_")
ORIGINALS = [clip_grad.clip_grad_norm_, clip_grad.clip_grad_norm, clip_grad.clip_grad_value_]

SOURCE = textwrap.dedent("""
    from torch.nn.utils import clip_grad_norm_
    from torch.nn.utils import clip_grad_norm_ as clip
    from torch.nn.utils.clip_grad import clip_grad_value_ as clip_value


    def step(parameters):
        parameters = list(parameters)
        clip(parameters, 0.25)
        clip_value(parameters, 1.0)
""")


@pytest.fixture
def load_module(tmp_path: Path) -> Iterator:
    """Write ``SOURCE`` as a real module under ``folder`` and import it."""
    loaded: list[str] = []

    def load(folder: str, name: str) -> ModuleType:
        where = tmp_path / folder
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{name}.py").write_text(SOURCE)
        sys.path.insert(0, str(where))
        try:
            importlib.invalidate_caches()
            module = importlib.import_module(name)
        finally:
            sys.path.remove(str(where))
        loaded.append(name)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)


def bindings_in(module: ModuleType) -> set[str]:
    return {name for found, name, _ in find_bindings(ORIGINALS, NAMES) if found is module}


def test_the_scripts_own_module_is_searched_under_every_name(load_module):
    module = load_module("project", "user_training_code")
    assert bindings_in(module) == {"clip_grad_norm_", "clip", "clip_value"}


def test_an_installed_library_is_searched_under_the_functions_own_names(load_module):
    module = load_module("lib/python3/site-packages", "some_installed_library")
    assert bindings_in(module) == {"clip_grad_norm_"}


def test_torch_nn_utils_reexports_are_found():
    found = {(module.__name__, name) for module, name, _ in find_bindings(ORIGINALS, NAMES)}
    assert {("torch.nn.utils", name) for name in NAMES} <= found


def test_skipped_modules_and_the_standard_library_are_not_searched(monkeypatch):
    import json  # a standard-library module that, here, has bound a clip function

    monkeypatch.setattr(json, "clip_grad_norm_", clip_grad.clip_grad_norm_, raising=False)
    found = {module for module, _, _ in find_bindings(ORIGINALS, NAMES, skip=(clip_grad,))}
    assert json not in found and clip_grad not in found


def test_renamed_bindings_in_the_script_are_captured_and_restored(load_module):
    module = load_module("project", "renamed_clip_user")
    model = mlp()
    with ConfigCapture() as cap:
        train(
            model,
            torch.optim.SGD(model.parameters(), lr=0.1),
            before_step=lambda: module.step(model.parameters()),
        )
        config = snapshot(cap)
    kinds = {clip["kind"]: clip for clip in config["grad_clips"]}
    assert kinds["norm"]["calls"] == 3 and kinds["norm"]["max"] == 0.25
    assert kinds["value"]["calls"] == 3 and kinds["value"]["max"] == 1.0
    assert module.clip is clip_grad.clip_grad_norm_
    assert module.clip_value is clip_grad.clip_grad_value_


def test_a_module_registered_under_two_names_is_rebound_once(load_module):
    module = load_module("project", "main_under_two_names")
    sys.modules["main_under_two_names_alias"] = module  # like __main__ and __mp_main__
    try:
        model = mlp()
        with ConfigCapture() as cap:
            train(
                model,
                torch.optim.SGD(model.parameters(), lr=0.1),
                steps=2,
                before_step=lambda: module.clip(model.parameters(), 0.5),
            )
            rebound = [name for owner, name in cap._patcher.installed if owner is module]
            config = snapshot(cap)
        assert sorted(rebound) == ["clip", "clip_grad_norm_", "clip_value"]
        assert config["grad_clip"]["calls"] == 2
        assert module.clip is clip_grad.clip_grad_norm_
    finally:
        del sys.modules["main_under_two_names_alias"]
