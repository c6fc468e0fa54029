"""docs/your_model.ipynb runs as written, through a Jupyter kernel (nbclient): a transformers model object measured
with two ablations, two hook points' activations, a user hook, activation patching, and figures shown inline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orderlab.spec.extras import installed

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "your_model.ipynb"


@pytest.mark.skipif(
    not all(installed(name) for name in ("nbclient", "ipykernel", "transformers")),
    reason="needs the dev extra's nbclient and ipykernel and the hf extra (make installs them)",
)
def test_the_notebook_runs_as_written_and_shows_its_figures(monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "kept without outputs"
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    figures = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(figures) == 4  # equivariance by layer, two attention maps, hooked against as given, patching
    tables = [output for output in outputs if "text/html" in output.get("data", {})]
    assert len(tables) >= 2  # the summary and the activations' index, displayed as frames
    printed = "".join(output.get("text", "") for output in outputs if output.output_type == "stream")
    assert "given+user_hook" in printed and "GPT2LMHeadModel" in printed
    assert "recovers none" in printed  # zero: the last word's layer-1 state is the same in both orders
