"""Shared fixtures: a CLI runner, a spec writer and the test plugins on sys.path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

# The packaged MiniLM's fixtures (tests/minilm.py), for the pretrained tests wherever their layer puts them.
pytest_plugins = ["minilm"]

# Under pytest-xdist (`make test` runs `pytest -n auto`) each worker takes its share of torch's threads: tiny
# matmuls in one worker otherwise wait on OpenMP threads that the other workers hold (on a busy 2-core machine,
# test_verdicts.py took 8x the CPU time at 2 threads as at 1). Numbers do not depend on the thread count beyond
# round-off (test_reproducible.py); tests that need a given count set it.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1:
    torch.set_num_threads(max(1, torch.get_num_threads() // WORKERS))
    # and so does every child process a test starts (a CLI in a subprocess, Dask's workers, the GPU check's steps),
    # which would otherwise take all the cores' threads each (the GPU check's dry run: 143 s, and 55 s at one thread)
    os.environ.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))
DEFAULT_THREADS = torch.get_num_threads()


@pytest.fixture(autouse=True, scope="session")
def device_rates_cache(tmp_path_factory):
    """`validate --plan` caches measured device rates in the user's cache folder: the tests' go to a temporary one,
    shared by the session (one measurement per dtype)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORDERLAB_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


ROOT = Path(__file__).resolve().parents[1]
SCRATCH = {".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache", ".import_linter_cache", "__pycache__"}


def repository_files() -> dict[str, tuple[int, int]]:
    """The repository's top-level entries and every file of results/ (git-ignored checkpoints and figures aside), with
    their sizes and modification times."""
    found = {entry.name: (0, 0) for entry in ROOT.iterdir() if entry.name not in SCRATCH}
    for path in (ROOT / "results").rglob("*"):
        if path.is_file() and not {"checkpoints", "figures"} & set(path.parts):
            found[str(path.relative_to(ROOT))] = (path.stat().st_size, path.stat().st_mtime_ns)
    return found


@pytest.fixture(autouse=True, scope="session")
def repository_untouched():
    """Tests write into temporary folders: the repository's top level and its committed results end the session as
    they began (a test once left ./tpu and ./7/ there, and they were committed)."""
    before = repository_files()
    yield
    after = repository_files()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert not changed, f"the tests wrote into the repository: {changed[:10]}"


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
