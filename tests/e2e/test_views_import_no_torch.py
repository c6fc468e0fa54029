"""`orderlab plot`, `orderlab report` and check's baseline comparison read result files, never torch: they read a
run through the results vocabulary (orderlab/vocabulary/), not the measuring code. Each runs in a fresh interpreter
over committed results folders, which then checks that torch never came in."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A sweep with attention maps, a trained spec (task rows), a corpus run: each view's readers of each kind of folder,
# the smallest committed folder of each kind (drawing is most of this test's time).
FOLDERS = ["worked_example", "trained_length_generalization", "minilm_corpus"]
VIEWS = ["orderlab.commands.plot", "orderlab.commands.report", "orderlab.results.baseline_diff"]


def loaded_after(code: str) -> list[str]:
    """Run `code` in a fresh interpreter; the heavy modules it left loaded (torch, transformers, the measuring loop)."""
    watched = ("torch", "transformers", "orderlab.measure.loop")
    script = f"{code}\nimport sys\nprint(sorted(m for m in {watched!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    loaded: list[str] = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    return loaded


def test_the_view_modules_import_no_torch():
    assert loaded_after("\n".join(f"import {module}" for module in VIEWS)) == []


def test_the_merge_of_shards_imports_neither_torch_nor_the_measuring_loop():
    assert loaded_after("import orderlab.results.merge") == []


@pytest.mark.slow
def test_plot_report_and_the_baseline_comparison_of_committed_results_load_no_torch(tmp_path):
    code = f"""
import shutil
from pathlib import Path
from orderlab.commands.plot import plot
from orderlab.commands.report import report
from orderlab.results.baseline_diff import compare_folder, default_tolerances
copies = []
for name in {FOLDERS!r}:
    committed, copy = Path("results") / name, Path({str(tmp_path)!r}) / name
    shutil.copytree(committed, copy)
    copies.append(copy)
    assert plot(copy, "png").paths, name
    fresh = {{path.name: path.read_text() for path in committed.glob("*.csv")}}
    comparisons, unmatched = compare_folder(copy, fresh, default_tolerances("float64"))
    assert comparisons and not unmatched and not any(c.drifted for c in comparisons), name
assert report(copies, Path({str(tmp_path)!r}) / "report.html").is_file()
"""
    assert loaded_after(code) == []
