"""Building an index pauses the cyclic collector and always turns it back on."""

from __future__ import annotations

import gc

import pytest

from diagnose.matching.gcpause import collector_paused


def test_collector_is_off_inside_and_back_on_after_an_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves the outer pause alone
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_caller_stays_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
