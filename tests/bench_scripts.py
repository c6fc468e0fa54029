"""A benchmark script run as a user runs it, at a tiny size, writing into a results file that already holds another
key: what the tests of benchmarks/ share."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def bench_figures(script: str, args: list[str], folder: Path) -> dict[str, Any]:
    """benchmarks/`script` run with `args` from `folder`: the results file it wrote, checked to keep its other key."""
    results = folder / "results.json"
    results.write_text(json.dumps({"zoo": {"kept": True}}))
    command = [sys.executable, str(ROOT / "benchmarks" / script), *args, "--results", str(results)]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    written: dict[str, Any] = json.loads(results.read_text())
    assert written["zoo"] == {"kept": True}  # the file's other keys left as they are
    return written
