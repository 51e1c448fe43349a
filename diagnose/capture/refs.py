"""An ordered set of weak references that keeps only the newest object alive.

Weak references alone are not enough: a script that trains inside ``main()`` drops its
optimizer, scheduler and loss when ``main`` returns, before the report is built, and the
config would be lost. So the most recently added object is also held strongly (at most one
per kind: an older optimizer a script has replaced is not kept alive); ``release()`` drops it.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class WeakOrderedSet(Generic[T]):
    """Objects in the order first seen; dead ones drop out. ``add`` is O(1)."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}
        self._pinned: Any = None

    def add(self, obj: T) -> bool:
        """Remember ``obj`` (and hold it as the newest); True when it was not known yet."""
        key = id(obj)
        ref = self._refs.get(key)
        if ref is not None and ref() is obj:
            return False
        self._refs.pop(key, None)  # an id reused after the old object died goes to the end
        self._refs[key] = weakref.ref(obj)
        self._pinned = obj
        return True

    def release(self) -> None:
        self._pinned = None

    def __iter__(self) -> Iterator[T]:
        for ref in list(self._refs.values()):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self) -> int:
        return sum(1 for _ in self)
