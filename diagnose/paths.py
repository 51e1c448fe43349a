"""Where the shipped data (error dataset, rules) lives, in a checkout or in an installed wheel."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _shipped(name: str) -> Path:
    # In a checkout (or an editable install) the data sits next to the package; in a wheel,
    # setup.py maps it inside the package as diagnose/<name>.
    checkout = _PACKAGE.parent / name
    if checkout.is_dir() and (_PACKAGE.parent / "pyproject.toml").is_file():
        return checkout
    return _PACKAGE / name


def dataset_dir() -> Path:
    """Folder holding ``schema.json`` and ``records/``."""
    return _shipped("dataset")


def dataset_schema_path() -> Path:
    return dataset_dir() / "schema.json"


def records_dir() -> Path:
    return dataset_dir() / "records"


def rules_dir() -> Path:
    """Folder of the built-in rule files (YAML, grouped in folders by family)."""
    return _shipped("rules")


def user_cache_dir() -> Path | None:
    """diagnose's folder in the user's cache: ``$DIAGNOSE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/diagnose``, else ``~/.cache/diagnose``; None when caching is off
    (``DIAGNOSE_CACHE_DIR`` set to ``off``, ``none``, ``0`` or empty)."""
    configured = os.environ.get("DIAGNOSE_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("", "0", "off", "none"):
            return None
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "diagnose"
