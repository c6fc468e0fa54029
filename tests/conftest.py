"""Shared test helpers: paths, a CLI runner, and a small-stack factory."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"
RESULTS = ROOT / "results"


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
