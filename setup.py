"""Packaging glue that pyproject.toml cannot express.

The error dataset and the rules live at the top of the repository (``dataset/``, ``rules/``)
so that people can find and edit them, but they must ship *inside* the wheel. They are mapped
to the packages ``diagnose.dataset`` and ``diagnose.rules``; ``diagnose.paths`` finds them in
either place.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["diagnose", "diagnose.*", "tui", "tui.*"]),
        "diagnose.dataset",
        "diagnose.rules",
    ],
    package_dir={"diagnose.dataset": "dataset", "diagnose.rules": "rules"},
    package_data={
        "diagnose.dataset": ["*.json", "records/*", "records/**/*"],
        "diagnose.rules": ["*.yaml", "*.json", "**/*.yaml", "**/*.json"],
        "tui": ["*.tcss", "**/*.tcss"],
    },
    include_package_data=False,
)
