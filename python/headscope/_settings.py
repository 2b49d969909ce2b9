"""Analysis settings as keyword arguments, turned into `headscope analyze`'s flags.

The Rust side parses them with the command line's own parser, so every
name, default and check is the CLI's: ``q=0.02`` is ``--q 0.02``,
``one_sentence_per_line=True`` is ``--one-sentence-per-line``,
``selection="top-k-per-row"`` (or ``"top_k_per_row"``) is
``--selection top-k-per-row``.
"""

from __future__ import annotations

from typing import Any

#: The settings ``analyze`` and ``figures`` take, as the CLI names them.
SETTINGS = (
    "one_sentence_per_line",
    "plain",
    "q",
    "selection",
    "z",
    "k",
    "similarity",
    "window",
    "max_tokens",
    "capture_memory_mb",
)


def flags(settings: dict[str, Any]) -> list[str]:
    """``analyze``'s command-line flags for keyword ``settings``."""
    out: list[str] = []
    for name, value in settings.items():
        if name not in SETTINGS:
            raise TypeError(
                f"unknown setting {name!r}; headscope takes {', '.join(SETTINGS)}"
            )
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, str):
            out += [flag, value.replace("_", "-")]
        else:
            out += [flag, repr(value) if isinstance(value, float) else str(value)]
    return out
