#!/usr/bin/env python3
"""Compares two `headscope corpus` JSON reports: every count and string
equal, every other number within 1e-9 relative (1e-12 absolute near 0),
the same lists in the same order. Ignores the times (elapsed_seconds,
model_seconds).
Prints each difference and exits 1 when there is one.

    compare-reports.py EXPECTED.json ACTUAL.json
"""
import json
import sys

RELATIVE = 1e-9
ABSOLUTE = 1e-12
IGNORED = {"elapsed_seconds", "model_seconds"}


def compare(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key in IGNORED:
                continue
            if key not in a or key not in b:
                out.append(f"{path}.{key}: only in {'actual' if key in b else 'expected'}")
                continue
            compare(a[key], b[key], f"{path}.{key}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items vs {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{path}[{i}]", out)
    elif isinstance(a, bool) or isinstance(b, bool) or isinstance(a, int) and isinstance(b, int):
        if a != b:
            out.append(f"{path}: {a!r} vs {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if abs(a - b) > max(RELATIVE * max(abs(a), abs(b)), ABSOLUTE):
            out.append(f"{path}: {a!r} vs {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r} vs {b!r}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        expected = json.load(f)
    with open(sys.argv[2]) as f:
        actual = json.load(f)
    differences = []
    compare(expected, actual, "$", differences)
    for line in differences[:50]:
        print(line)
    if differences:
        print(f"{len(differences)} difference(s)")
        sys.exit(1)
    print(f"equal: {expected.get('windows')} windows, {expected.get('files')} documents")


if __name__ == "__main__":
    main()
