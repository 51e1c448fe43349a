"""(being written) the `diagnose apply` command."""

from __future__ import annotations

import argparse

from diagnose.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def main(args: argparse.Namespace) -> int:
    raise UsageError("'diagnose apply' is not available in this build yet")
