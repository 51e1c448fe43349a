"""An ordered set of weak references: remembers objects without keeping them alive."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class WeakOrderedSet(Generic[T]):
    """Objects in the order first seen; dead ones drop out. ``add`` is O(1)."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def add(self, obj: T) -> bool:
        """Remember ``obj``; True when it was not known yet."""
        key = id(obj)
        ref = self._refs.get(key)
        if ref is not None and ref() is obj:
            return False
        self._refs.pop(key, None)  # an id reused after the old object died goes to the end
        self._refs[key] = weakref.ref(obj)
        return True

    def __iter__(self) -> Iterator[T]:
        for ref in list(self._refs.values()):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self) -> int:
        return sum(1 for _ in self)
