"""The command line as the tests drive it: in this process through typer's CliRunner, in a child Python (`python -m
orderlab`, or a script) where the process itself is under test, and the one-line refusal every bad input gets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from orderlab.cli import app

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args: object, width: int = 200) -> Result:
    """`orderlab *args` in this process, on a console `width` columns wide (wide enough by default that no table
    wraps)."""
    return CliRunner().invoke(app, [str(arg) for arg in args], env={"COLUMNS": str(width)})


def assert_refused(result: Result, *fragments: str) -> str:
    """Exit 2 with exactly one line on the terminal, an error naming every fragment; the line."""
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    for fragment in fragments:
        assert fragment in result.output, result.output
    return result.output


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """This environment with env over it, and this checkout on the child's path (after env's PYTHONPATH), whatever
    its working folder."""
    env = env or {}
    return {**os.environ, **env, "PYTHONPATH": os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(ROOT)]))}


def python(
    *args: object, env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: int = 600, **options
) -> subprocess.CompletedProcess[str]:
    """`python *args` in a child process with this checkout on its path, its output captured as text."""
    return subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, env=child_env(env), cwd=cwd,
        timeout=timeout, check=False, **options,
    )  # fmt: skip


def python_orderlab(*args: object, **options) -> subprocess.CompletedProcess[str]:
    """`python -m orderlab *args` in a child process (python's options)."""
    return python("-m", "orderlab", *args, **options)
