"""diagnose ending a run on purpose, and telling that apart from the script failing.

Kept free of torch: the runner's own stops (``--max-steps``) are defined on import of the
runner, which the command line loads before any torch is.
"""

from __future__ import annotations


class RunStopped(BaseException):
    """diagnose ending a run on purpose (at the first inf/nan, after ``--max-steps``).

    Not an error of the script, so not an ``Exception``: like ``KeyboardInterrupt`` it passes
    the ``except Exception`` handlers of the script and of the frameworks that run it (Hydra's
    job runner would log it as the job's error, print its traceback and exit 1), up to the
    runner that delivered it, which reports the diagnosis instead.
    """


def stopped_by(exc: BaseException | None) -> RunStopped | None:
    """The ``RunStopped`` that ``exc`` is, or that it was raised while handling (a script's
    ``except BaseException: sys.exit(1)``, a framework re-raising its own error from it)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, RunStopped):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
