"""orderlab on a system without fcntl (Windows): every module imports and a command answers. The lock itself
(filelock's lock on a descriptor) is tested on Linux by test_output_safety and test_interruption."""

from __future__ import annotations

from pathlib import Path

import pytest
from command_line import python

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter with fcntl made unimportable, as on Windows; prints the modules that failed to import.
WITHOUT_FCNTL = """
import sys
sys.modules["fcntl"] = None  # `import fcntl` now raises ImportError, as where the module does not exist
import importlib, pkgutil, warnings
warnings.simplefilter("ignore")  # filelock says it has only a soft lock here; the import is what is tested
import orderlab
failed = []
for module in pkgutil.walk_packages(orderlab.__path__, "orderlab."):
    if not module.name.endswith("__main__"):  # running the CLI is the next check
        try:
            importlib.import_module(module.name)
        except ImportError as error:
            failed.append(f"{module.name}: {error}")
print("failed:", failed)
from typer.testing import CliRunner
from orderlab.cli import app
result = CliRunner().invoke(app, ["validate", sys.argv[1]])
print("validate:", result.exit_code, result.output.strip())
"""


def test_every_module_imports_and_validate_answers_without_fcntl():
    spec = ROOT / "experiments/dog_bites_man.yaml"
    done = python("-c", WITHOUT_FCNTL, spec, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "failed: []" in done.stdout, done.stdout
    assert f"validate: 0 {spec}: ok (dog_bites_man)" in done.stdout, done.stdout
