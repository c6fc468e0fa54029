"""Shared fixtures: a CLI runner and a spec writer."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner


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
