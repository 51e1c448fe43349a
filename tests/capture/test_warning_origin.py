"""A library warning names the user's line, not the capture's wrapper standing between."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from diagnose.capture.patching import ErrorLog, Patcher


class Library:
    """A library class whose constructor warns its caller (``stacklevel=2``), as torch's do."""

    def __init__(self) -> None:
        warnings.warn("this argument is deprecated", FutureWarning, stacklevel=2)


class Child(Library):
    """Inherits the constructor: the wrapper then calls it through ``super()``."""


@pytest.fixture
def shown() -> Iterator[list[tuple[str, int, str]]]:
    """What the warning display is asked to show: (file, line, message)."""
    seen: list[tuple[str, int, str]] = []
    saved = warnings.showwarning

    def record(message: Any, category: Any, filename: str, lineno: int, *rest: Any) -> None:
        seen.append((filename, lineno, str(message)))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        try:
            yield seen
        finally:
            warnings.showwarning = saved


def test_a_warning_from_a_wrapped_constructor_names_the_callers_line(shown) -> None:
    patcher = Patcher(ErrorLog())
    patcher.wrap(Library, "__init__", after=lambda *a, **k: None)
    try:
        Library()
        line = _line_of("Library()")
    finally:
        patcher.restore_all()
    assert shown == [(__file__, line, "this argument is deprecated")]


def test_an_inherited_constructor_called_through_super_is_located_the_same(shown) -> None:
    patcher = Patcher(ErrorLog())
    patcher.wrap(Child, "__init__", after=lambda *a, **k: None)
    try:
        Child()
        line = _line_of("Child()")
    finally:
        patcher.restore_all()
    assert shown == [(__file__, line, "this argument is deprecated")]


def test_the_display_found_at_install_is_put_back(shown) -> None:
    before = warnings.showwarning
    patcher = Patcher(ErrorLog())
    patcher.wrap(Library, "__init__", after=lambda *a, **k: None)
    assert warnings.showwarning is not before
    patcher.restore_all()
    assert warnings.showwarning is before


def test_warnings_the_wrappers_do_not_stand_in_front_of_are_left_alone(shown) -> None:
    patcher = Patcher(ErrorLog())
    patcher.wrap(Library, "__init__", after=lambda *a, **k: None)
    try:
        warnings.warn("plain", UserWarning, stacklevel=1)
        line = _line_of('warnings.warn("plain"')
    finally:
        patcher.restore_all()
    assert shown == [(__file__, line, "plain")]


def _line_of(text: str) -> int:
    """The line of this file holding ``text`` (the call whose warning is checked)."""
    with open(__file__, encoding="utf-8") as source:
        return next(n for n, line in enumerate(source, 1) if line.strip().startswith(text))
