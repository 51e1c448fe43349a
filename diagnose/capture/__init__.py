"""Training-config capture: what precision, optimizer, lr, scaler and clipping a run really used.

- ``ConfigCapture``: ``install()`` before the script runs, ``snapshot()`` for the report,
  ``uninstall()`` to restore everything it patched.
- ``load_config_file(path)`` and ``merge_config(captured, user)`` for ``--config FILE``.

The config-file helpers are imported on first use: they need yaml and the report model, which
a traced run that only captures (the tracer enters ``ConfigCapture`` on every run) never does.
"""

from typing import Any

from diagnose.capture.core import ConfigCapture

__all__ = ["ConfigCapture", "load_config_file", "merge_config"]

_LAZY = {"load_config_file", "merge_config"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from diagnose.capture import config_file

        return getattr(config_file, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
