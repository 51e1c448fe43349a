"""Where the shipped data (error dataset, rules) lives, in a checkout or in an installed wheel."""

from __future__ import annotations

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
