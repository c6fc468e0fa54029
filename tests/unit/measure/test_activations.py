"""orderlab.api.activations: hook points per order and condition, row for row with an index frame, bounded by the
memory beside the run's estimate (the attention stack here; transformers models in
tests/unit/models/test_user_hooks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import orderlab.api as ol
from orderlab.core import permutations as perms
from orderlab.errors import OrderlabError

SPEC = {
    "name": "activations",
    "model": {"d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": "float64"},
    "encodings": ["none", "rope"],
    "inputs": [
        {"sentence": "dog bites man", "permutations": "all"},
        {"sentence": "the cat sat down", "permutations": "reverse"},
    ],
}


def test_each_row_is_the_pass_of_its_order_and_condition():
    got = ol.activations(SPEC, points=["1.output", "2.pattern"])
    index = got.index
    assert list(index.columns) == ["encoding", "input", "permutation", "permuted", "slots"]
    assert len(index) == 2 * (6 + 1) and got["1.output"].shape == (14, 4, 16) and got["2.pattern"].shape[:2] == (14, 2)
    for encoding, moved in (("none", True), ("rope", False)):  # without positions: f(PX) = P f(X), row by row
        rows = index[(index.encoding == encoding) & (index.input == "dog bites man")]
        identity = got["1.output"][rows.index[rows.permutation == "0 1 2"][0], :3]
        for row, label in zip(rows.index, rows.permutation, strict=True):
            order = [int(slot) for slot in label.split()]
            assert torch.allclose(got["1.output"][row, :3], identity[order], atol=1e-12) == (
                moved or order == [0, 1, 2]
            )


def test_rows_of_shorter_inputs_are_nan_past_their_slots():
    got = ol.activations(SPEC, points=["1.output", "1.pattern"])
    short = torch.tensor((got.index.slots == 3).to_list())
    assert set(got.index.slots) == {3, 4}
    assert torch.isnan(got["1.output"][short, 3]).all()
    assert torch.isfinite(got["1.output"][short, :3]).all() and torch.isfinite(got["1.output"][~short]).all()
    assert torch.isnan(got["1.pattern"][short][..., 3]).all() and torch.isnan(got["1.pattern"][short][..., 3, :]).all()


def test_orders_apply_to_every_input_and_match_trace(tmp_path: Path):
    import yaml

    from orderlab.measure.trace import trace_layer
    from orderlab.spec.load import load_spec

    got = ol.activations(SPEC, points=["2.output", "tokens"], orders="identity")
    assert list(got.index.permutation) == ["0 1 2", "0 1 2 3"] * 2
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(SPEC))
    traced = trace_layer(load_spec(spec_file).spec, "dog bites man", 2, encoding_index=1)
    row = got.index[(got.index.encoding == "rope") & (got.index.input == "dog bites man")].index[0]
    # trace asks for q, k, ... (the explicit attention path), these states the fused one: equal to round-off
    assert torch.allclose(got["2.output"][row, :3], traced.output, rtol=0, atol=1e-12)


def test_an_explicit_order_list_is_checked_against_each_input():
    with pytest.raises(OrderlabError, match=r"^orders: .*'the cat sat down'"):
        ol.activations(SPEC, points=["1.output"], orders=[[2, 1, 0]])
    one = {**SPEC, "inputs": SPEC["inputs"][:1]}
    got = ol.activations(one, points=["1.output"], orders=[[2, 1, 0], [1, 0, 2]])
    assert list(got.index.permutation) == ["1 0 2", "2 1 0"] * 2  # label order, as metrics.csv


def test_a_point_no_condition_forms_is_one_line():
    for points, expected in ((["3.output"], "'3.output' is not a hook point of none"), (["position"], "not formed by"),
                             ([], "none asked for")):  # fmt: skip
        with pytest.raises(OrderlabError, match=expected) as error:
            ol.activations(SPEC, points=points)
        assert "\n" not in str(error.value)


def test_what_would_not_fit_beside_the_run_is_refused(monkeypatch):
    import orderlab.measure.activations as activations

    needed = 14 * 4 * 16 * 8  # rows x slots x width x float64
    monkeypatch.setattr(activations, "memory_beside_run", lambda spec, spec_file: needed - 1)
    with pytest.raises(OrderlabError, match=r"^activations: .* 1 point\(s\) x 14 rows .*expected fewer points"):
        ol.activations(SPEC, points=["1.output"])
    monkeypatch.setattr(activations, "memory_beside_run", lambda spec, spec_file: needed)
    assert ol.activations(SPEC, points=["1.output"])["1.output"].numel() * 8 == needed


def test_the_rows_follow_the_spec_permutations():
    got = ol.activations(SPEC, points=["1.input"])
    per_input = got.index.groupby(["encoding", "input"]).size()
    assert per_input[("none", "dog bites man")] == perms.count("all", "dog bites man".split())
    assert per_input[("rope", "the cat sat down")] == perms.count("reverse", "the cat sat down".split())
