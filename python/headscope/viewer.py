"""``python -m headscope.viewer FILE``: the desktop viewer on a capture or text file."""

from __future__ import annotations

import sys

from . import _native


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m headscope.viewer FILE", file=sys.stderr)
        return 2
    try:
        _native.view(argv[0])
    except Exception as error:  # one line, as the CLI reports errors
        print(f"headscope: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
