"""``headscope.show``: the desktop viewer on a capture, a file or an analysis.

The viewer is headscope's egui app, linked into the native module; it runs
in a process of its own (``python -m headscope.viewer FILE``), so a
notebook or script goes on while the window is open.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any, Union

from ._analysis import Analysis
from ._capture import Capture

Showable = Union[Capture, Analysis, str, "os.PathLike[str]"]


def show(x: Showable, wait: bool = False) -> subprocess.Popen[bytes]:
    """Opens the headscope window on ``x``: a :class:`Capture`, an
    :class:`Analysis`, or the path of a capture file (``.safetensors``) or a
    text file. Returns the viewer's process; ``wait=True`` waits until its
    window is closed."""
    if isinstance(x, (Capture, Analysis)):
        folder = tempfile.mkdtemp(prefix="headscope-")
        path = os.path.join(folder, "capture.safetensors")
        x.save(path)
    elif isinstance(x, (str, os.PathLike)):
        path = os.fspath(x)
        if not os.path.exists(path):
            raise FileNotFoundError(path)
    else:
        raise TypeError(f"headscope.show takes a Capture, an Analysis or a path, not {type(x).__name__}")
    process = subprocess.Popen([sys.executable, "-m", "headscope.viewer", path])
    if wait:
        process.wait()
    return process
