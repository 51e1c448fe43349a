"""Which config file a setting's change may be written to: one the run read, under its folders.

The file a change names comes from the report (``config.origins``), and a report may come
from someone else, so it is not trusted. A config file is written only when, resolved (every
symlink followed):

- it lies under the script's folder or the current folder (never anywhere else; ``--force``
  does not lift this);
- it has a config file's suffix (a ``.py`` configurator, YAML, JSON, TOML, ...);
- the report says the run read it: an origin of the report names that path, and the file's
  sha256 is still the one the run read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from diagnose.capture.files import SUFFIXES
from diagnose.errors import UsageError
from diagnose.report import Report
from diagnose.safetext import one_line
from diagnose.userwrite import UserFile, read_user_file, resolve


def locate_config(report: Report, file: str | Path, script_folder: Path) -> UserFile:
    """The config file ``file`` read and checked; UsageError of one line if it may not be."""
    real = resolve(file)
    roots = [Path(os.path.realpath(script_folder)), Path(os.path.realpath(os.getcwd()))]
    if not any(real.is_relative_to(root) for root in roots):
        raise UsageError(
            f"{one_line(file)}: not under the script's folder or the current folder; "
            "change it by hand"
        )
    if real.suffix.lower() not in SUFFIXES:
        raise UsageError(f"{one_line(file)}: not a config file ({one_line(real.suffix)})")
    hashes = {
        origin.sha256
        for origin in (report.config.origins or {}).values()
        if origin.kind == "config-file" and origin.file and _same_path(origin.file, real)
    }
    if not hashes:
        raise UsageError(f"{one_line(file)}: the report does not say the run read it")
    checked = read_user_file(real)
    if hashlib.sha256(checked.data).hexdigest() not in hashes:
        raise UsageError(
            f"{one_line(file)}: changed since the run read it (sha256 differs); run it again"
        )
    return checked


def _same_path(named: str, real: Path) -> bool:
    try:
        return Path(os.path.realpath(named)) == real
    except (OSError, ValueError):
        return False
