"""Every orderlab.api entry point refuses a wrong argument with OrderlabError (the CLI's one line), whatever its
type or value: hypothesis feeds each argument of each function a wrong one, the others valid and cheap."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import orderlab.api as ol
from orderlab.errors import OrderlabError

TINY = "name: tiny\nmodel: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [none]\ninputs: [{sentence: a b}]\n"


def deep(levels: int) -> object:
    nested: object = 1
    for _ in range(levels):
        nested = [nested]
    return nested


WRONG = st.sampled_from(
    [None, 5, -3, 0, 10**5000, "7", "", "tpu", "a\nb", b"bytes", math.nan, math.inf, -1.5, True, object(), 1j,
     [], [None], ["a.yaml", 3], {}, {"x": object()}, deep(3000), Path("/nonexistent/\x00nul"), print]
)  # fmt: skip


def calls(spec: Path, folder: Path) -> dict[str, dict[str, Any]]:
    """Each function with valid, cheap arguments (a tiny spec, a tiny properties size): the baseline one wrong
    argument is swapped into."""
    return {
        "validate": {"spec": spec, "base": None, "model": None},
        "plan": {"spec": spec, "device": "cpu"},
        "run": {"spec": spec, "out": None, "base": None, "device": "cpu", "chunk_size": None, "force": False,
                "shard": None, "workers": None, "scheduler": None, "plot": False, "html": False, "progress": False,
                "model": None, "tokenizer": None, "hooks": None},
        "activations": {"spec": spec, "points": ["1.output"], "orders": None, "device": "cpu", "model": None,
                        "tokenizer": None, "hooks": None, "progress": False},
        "load": {"results_dir": folder},
        "hooks": {"family": "stack"},
        "merge": {"shards": [folder], "out": folder.parent / "merged", "force": False},
        "compare": {"specs": [spec], "encodings": "none", "metrics": ["equivariance"], "out": None, "device": "cpu",
                    "force": False, "html": None, "progress": False, "model": None, "tokenizer": None},
        "properties": {"encodings": "none", "max_len": 8, "d_model": 8, "n_heads": 2, "seed": 0, "out": None,
                       "force": False, "progress": False},
        "trace": {"spec": spec, "input_index": 0, "layer": 1, "encoding": "", "family": "", "out": None, "force": False,
                  "progress": False, "model": None, "tokenizer": None},
        "patch": {"spec": spec, "device": "cpu", "model": None, "tokenizer": None, "hooks": None, "progress": False},
        "plot": {"results_dir": folder, "formats": None},
        "report": {"results_dirs": [folder], "out": folder.parent / "r.html"},
        "check": {"targets": [spec], "out": folder.parent, "rtol": None, "atol": None, "update": False, "junit": None,
                  "html": None, "device": "cpu", "progress": False, "model": None, "tokenizer": None},
    }  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def elsewhere(tmp_path_factory):
    """The wrong arguments name relative paths ('7', 'tpu': an out, html or junit path): they land in a scratch
    folder, never in the repository (a run once left ./tpu and ./7/ there, and they were committed)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("cwd"))
        yield


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("api")
    spec = root / "tiny.yaml"
    spec.write_text(TINY)
    return spec, ol.run(spec, out=root / "results", progress=False).folder  # type: ignore[return-value]


def test_the_calls_cover_every_function_and_argument(written):
    import inspect

    table = calls(*written)
    functions = [name for name in ol.__all__ if name not in ("Result", "schema", "encodings", "models")]
    assert sorted(table) == sorted(functions)
    for name, arguments in table.items():
        assert set(arguments) == set(inspect.signature(getattr(ol, name)).parameters), name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), wrong=WRONG)
def test_only_orderlab_errors_escape(written, data, wrong):
    table = calls(*written)
    function = data.draw(st.sampled_from(sorted(table)))
    argument = data.draw(st.sampled_from(sorted(table[function])))
    try:
        getattr(ol, function)(**{**table[function], argument: wrong})
    except OrderlabError as error:
        assert "\n" not in str(error), str(error)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ol.run({"name": "x", "n": object()}), r"spec\.n=object: expected a YAML value"),
        (lambda: ol.run({"name": "x", "model": {"d_model": 10**5000}}), r"spec\.model\.d_model: an integer of many"),
        (lambda: ol.run({"name": deep(200)}), r"nested more than 64 deep"),
        (lambda: ol.run("a.yaml", chunk_size=-3), r"chunk_size=-3: expected an integer from 1"),
        (lambda: ol.run("a.yaml", chunk_size="7"), r"chunk_size='7': expected an integer"),
        (lambda: ol.run("a.yaml", device="tpu"), r"device='tpu': expected 'cpu', 'cuda' or 'auto'"),
        (lambda: ol.run("a.yaml", out=5), r"out=5: expected a path"),
        (lambda: ol.load(None), r"results_dir=None: expected a path"),
        (lambda: ol.compare(None, encodings=5), r"encodings=5: expected a name or a non-empty list"),
        (lambda: ol.compare(["a.yaml"], metrics="equivariance"), r"a\.yaml"),
        (lambda: ol.validate("spec\nwith a break.yaml"), r"without line breaks"),
    ],
)
def test_wrong_arguments_are_one_line_naming_the_argument(call, message):
    with pytest.raises(OrderlabError, match=message):
        call()
