"""Run functions in forked child processes: bounded waits, every child reaped, no lost work.

A child runs one function and sends back the bytes it returns, framed with their length, then
leaves with ``os._exit``: no atexit handler, no ``finally`` of the parent's frames and no flush
of the parent's stdio buffers runs twice. The parent waits for every reply at most until a
deadline, kills the children still running then, and reaps each one (``waitpid``), also when
it is interrupted itself. A child that failed in any way (an exception, a signal, a short or
missing reply, late) simply has no reply: the caller does that work itself.

Forking a process that has threads (torch's thread pools, a caller's own threads) copies only
the calling thread; a lock another thread held stays locked in the child. The children run
only the loader's own code (pydantic's validators hold no lock across calls, ``marshal`` and
``os`` need none) and a child that hangs anyway is killed at the deadline.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import time
import warnings
from collections.abc import Callable, Sequence
from types import TracebackType

# Called in each child, with its task's number, before the task (tests use it to make a child
# crash, fail or hang; the parent then does that task itself).
child_hook: Callable[[int], None] | None = None
_in_child = False


def in_child() -> bool:
    """True in a child started here (it forks no children of its own)."""
    return _in_child


def can_fork() -> bool:
    return hasattr(os, "fork") and not _in_child


class Forked:
    """Children running ``tasks`` (one each); ``wait`` collects their replies.

    Use as a context manager: leaving it kills and reaps any child still running.
    """

    def __init__(self, tasks: Sequence[Callable[[], bytes]]) -> None:
        self._pids: list[int | None] = []
        self._pipes: dict[int, int] = {}  # read end -> task number
        self._chunks: list[list[bytes]] = [[] for _ in tasks]
        self._ended: list[bool] = [False] * len(tasks)  # the pipe reached end of file
        self._status: list[int | None] = [None] * len(tasks)
        try:
            for number, task in enumerate(tasks):
                self._pids.append(self._start(number, task))
        except BaseException:  # interrupted while starting: leave no child behind
            self.close()
            raise

    def _start(self, number: int, task: Callable[[], bytes]) -> int | None:
        try:
            read, write = os.pipe()
        except OSError:
            return None
        try:
            with warnings.catch_warnings():  # Python 3.12+ warns about threads; see above
                warnings.filterwarnings(
                    "ignore", "This process .* multi-threaded", DeprecationWarning
                )
                pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return None
        if pid == 0:  # the child: never returns
            _child(number, task, read, write)
        os.close(write)
        self._pipes[read] = number
        return pid

    def wait(self, timeout: float) -> list[bytes | None]:
        """Each task's reply, or None where its child failed or was not done in ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            for read in self._pipes:
                selector.register(read, selectors.EVENT_READ)
            while self._pipes:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                for key, _ in selector.select(left):
                    read = int(key.fd)  # type: ignore[arg-type]
                    chunk = os.read(read, 1 << 20)
                    number = self._pipes[read]
                    if chunk:
                        self._chunks[number].append(chunk)
                        continue
                    selector.unregister(read)
                    os.close(read)
                    del self._pipes[read]
                    self._ended[number] = True
        self.close()
        return [self._reply(number) for number in range(len(self._chunks))]

    def _reply(self, number: int) -> bytes | None:
        status = self._status[number]
        if not self._ended[number] or (status is not None and status != 0):
            return None
        data = b"".join(self._chunks[number])
        if len(data) < 8 or int.from_bytes(data[:8], "little") != len(data) - 8:
            return None  # the child died while writing
        return data[8:]

    def close(self) -> None:
        """Kill the children still running (their pipe still open) and reap every child."""
        for read, number in list(self._pipes.items()):
            pid = self._pids[number]
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os.close(read)
            del self._pipes[read]
        for number, pid in enumerate(self._pids):
            if pid is None:
                continue
            try:
                _, status = os.waitpid(pid, 0)
                self._status[number] = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): the reply says
                self._status[number] = None
            self._pids[number] = None

    def __enter__(self) -> Forked:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _child(number: int, task: Callable[[], bytes], read: int, write: int) -> None:
    """Run ``task`` and send its reply; leave without running any of the parent's code."""
    global _in_child
    code = 1
    try:
        _in_child = True
        os.close(read)
        if child_hook is not None:
            child_hook(number)
        reply = task()
        view = memoryview(len(reply).to_bytes(8, "little") + reply)
        while view:
            view = view[os.write(write, view) :]
        code = 0
    finally:
        os._exit(code)
