"""The upstream sample the tests validate is a faithful copy of the upstream file."""

from __future__ import annotations

import pytest

from tests.conftest import SEED, UPSTREAM_SEED


def test_the_fixture_is_in_the_project():
    assert SEED.is_file()
    assert SEED.read_bytes().startswith(b'{"record":')


@pytest.mark.skipif(not UPSTREAM_SEED.is_file(), reason="no upstream seed beside this checkout")
def test_the_fixture_is_identical_to_the_upstream_file():
    assert SEED.read_bytes() == UPSTREAM_SEED.read_bytes()
