"""A run that stops in the middle on purpose, for tests that interrupt it or race it from another process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# A user encoding (loaded as `stall_encoding:Stall`) that announces the run has reached the forward
# pass by creating a file, then waits there until a release file appears (at most 120 s), so a test
# can act mid-run on any machine speed.
STALL_MODULE = """
import os, pathlib, time
from orderlab.encodings.encoding import PositionalEncoding

class Stall(PositionalEncoding):
    name, kind, relative, reference = "stall", "none", False, "test only"

    def input_offsets(self, n):
        pathlib.Path(os.environ["ORDERLAB_TEST_STARTED"]).touch()
        release, deadline = pathlib.Path(os.environ["ORDERLAB_TEST_RELEASE"]), time.monotonic() + 120
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return super().input_offsets(n)
"""
STALL_SPEC = """
name: stalled
encodings: [none, "stall_encoding:Stall"]
inputs: [{sentence: dog bites man}]
"""


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (hidden leftovers included) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>" for p in sorted(root.rglob("*"))}


def stall_env(tmp_path: Path) -> dict[str, str]:
    """Where the stalling encoding is imported from and which files it touches and waits for."""
    (tmp_path / "stall_encoding.py").write_text(STALL_MODULE)
    (tmp_path / "stalled.yaml").write_text(STALL_SPEC)
    return {
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "ORDERLAB_TEST_STARTED": str(tmp_path / "started"),
        "ORDERLAB_TEST_RELEASE": str(tmp_path / "release"),
    }


def start_stalled(tmp_path: Path, args: list[str]) -> subprocess.Popen:
    """`python -m orderlab *args` (with stall_env) in tmp_path, returned once it waits in the forward pass."""
    env = {**os.environ, **stall_env(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "orderlab", *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the run never reached the forward pass: {process.communicate()}")
        time.sleep(0.05)
    return process
