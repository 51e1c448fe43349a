"""``python -m diagnose.engine docs``: print the rules reference page (docs/rules.md)."""

from __future__ import annotations

import sys

from diagnose.engine.docs import render


def main(argv: list[str]) -> int:
    if argv != ["docs"]:
        print("usage: python -m diagnose.engine docs > docs/rules.md", file=sys.stderr)
        return 2
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
