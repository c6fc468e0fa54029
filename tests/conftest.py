"""Shared fixtures: a CLI runner, a spec writer and the test plugins on sys.path."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

DEFAULT_THREADS = torch.get_num_threads()


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


@pytest.fixture
def write_spec(tmp_path: Path):
    """Write YAML text to a spec file in a temp folder and return its path."""

    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


@pytest.fixture
def plugins(monkeypatch):
    """Make tests/plugin_*.py importable, as a user's own encodings would be, for `package.module:Class` names."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


@pytest.fixture
def one_thread():
    """Tiny matmuls on a loaded 2-core machine are far slower with 2 OpenMP threads; a module whose equalities
    hold at any thread count runs on one (pytestmark = pytest.mark.usefixtures("one_thread"))."""
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(DEFAULT_THREADS)
