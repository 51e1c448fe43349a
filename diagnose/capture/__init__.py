"""Training-config capture: what precision, optimizer, lr, scaler and clipping a run really used.

- ``ConfigCapture``: ``install()`` before the script runs, ``snapshot()`` for the report,
  ``uninstall()`` to restore everything it patched.
- ``load_config_file(path)`` and ``merge_config(captured, user)`` for ``--config FILE``.
"""

from diagnose.capture.config_file import load_config_file, merge_config
from diagnose.capture.core import ConfigCapture

__all__ = ["ConfigCapture", "load_config_file", "merge_config"]
