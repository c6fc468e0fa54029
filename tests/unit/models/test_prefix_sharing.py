"""Causal prefix sharing: each distinct prefix computed once gives the dense pass's numbers, whatever the chunk."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch
from stacks import make_stack

from orderlab.cli import app
from orderlab.core.permutations import in_label_order
from orderlab.encodings import ENCODINGS
from orderlab.measure.adapters import build_adapters
from orderlab.measure.loop import MeasuringLoop
from orderlab.measure.run_options import RunOptions
from orderlab.measure.sweep_measure import run_sweep
from orderlab.models.devices import CPU
from orderlab.models.prefix_trie import distinct_prefixes, one_query_attention, shared_prefix_pass, slot_rotations
from orderlab.plan.chunks import ROW_ALIGNMENT
from orderlab.plan.decisions import Decisions
from orderlab.spec.schema import Spec

TOLERANCE = {"float64": 1e-12, "float32": 2e-5}
BUILT_IN = sorted(ENCODINGS.names())
pytestmark = pytest.mark.usefixtures("one_thread")  # the equalities hold at any thread count


def causal_spec(encodings: list[str], sentence: str = "the cat saw the dog", rule: object = "all", **model) -> Spec:
    return Spec.model_validate({
        "model": {"d_model": 16, "n_heads": 2, "n_layers": 2, "causal": True, "dtype": "float64"} | model,
        "encodings": encodings, "rows": "per_permutation",
        "metrics": ["equivariance", "invariance", "attention", "token_shift", "prefix_invariance"],
        "inputs": [{"sentence": sentence, "permutations": rule}],
    })  # fmt: skip


def measured(spec: Spec, share_prefixes: bool) -> pd.DataFrame:
    """Every row of the measuring loop, with the causal stacks run shared or dense."""
    adapters = build_adapters(spec, CPU, Path("spec.yaml"), decisions=Decisions(share_prefixes, compile=False))
    return pd.concat(list(MeasuringLoop(spec).frames(adapters)), ignore_index=True)


@pytest.mark.parametrize("encoding", BUILT_IN)
@pytest.mark.parametrize("maps", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_shared_pass_equals_the_dense_pass_for_every_built_in_encoding(encoding, maps, dtype):
    assert ENCODINGS.get(encoding).shares_prefixes  # every built-in can run causally with shared prefixes
    stack = make_stack(encoding, d_model=16, n_heads=2, n_layers=3, causal=True, dtype=dtype)
    x = torch.randn(6, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(stack.dtype)
    orders = torch.tensor(list(itertools.permutations(range(6)))[100:400])  # a contiguous run, as a chunk is
    with torch.inference_mode():
        dense, shared = stack(x[orders], attention_maps=maps), shared_prefix_pass(stack, x, orders, maps, ROW_ALIGNMENT)
    assert len(shared.attention) == (3 if maps else 0)
    for expected, got in zip(dense.hidden + dense.attention, shared.hidden + shared.attention, strict=True):
        torch.testing.assert_close(got, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("encoding", BUILT_IN)
@pytest.mark.parametrize("scale", ["sqrt", "none"])
def test_one_query_attention_at_each_slot_is_the_dense_attentions_row(encoding, scale):
    """The two kinds of attention, each against the other: slot t's query over slots 0..t (its keys and values
    written into the cache by the slots before it) gives row t of the dense causal attention, output and weights."""
    n, d = 7, 16
    stack = make_stack(encoding, d_model=d, n_heads=2, n_layers=1, causal=True, scale=scale)
    layer, rotations = stack.layers[0], slot_rotations(stack, n)
    x = torch.randn(3, n, d, generator=torch.Generator().manual_seed(2), dtype=torch.float64)  # 3 sentences
    with torch.inference_mode():
        dense, dense_weights = stack.attend(x, layer)  # (3, n, d), (3, h, n, n)
        cache = x.new_empty(3, n, 2 * d)
        for t in range(n):
            heads, weights = one_query_attention(stack, x[:, t] @ layer.w_qkv, cache, t, rotations[t])
            torch.testing.assert_close(heads @ layer.w_o, dense[:, t], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(weights, dense_weights[:, :, t, : t + 1], rtol=1e-12, atol=1e-12)
    assert dense_weights.triu(1).abs().max() == 0  # nothing past slot t in the dense row either


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_shared_results_do_not_depend_on_the_chunk_size(dtype):
    spec = causal_spec(["none", "rope", "alibi"], dtype=dtype)
    whole = run_sweep(spec, RunOptions(chunk_size=10_000)).metrics
    for chunk_size in (7, 50):
        pd.testing.assert_frame_equal(
            run_sweep(spec, RunOptions(chunk_size=chunk_size)).metrics, whole, check_exact=True
        )


@pytest.mark.parametrize("rule", ["all", "prefixes"])
def test_shared_and_dense_runs_give_the_same_verdicts_and_values_within_round_off(rule):
    spec = causal_spec(BUILT_IN, sentence="the dog bit the man", rule=rule)
    shared, dense = measured(spec, share_prefixes=True), measured(spec, share_prefixes=False)
    assert len(shared) > 1000
    pd.testing.assert_series_equal(shared["verdict"], dense["verdict"])
    pd.testing.assert_series_equal(shared["value"], dense["value"], check_exact=False, rtol=1e-9, atol=1e-12)


def test_distinct_prefixes_of_every_order_are_the_permutation_tries_nodes():
    orders = torch.tensor(list(itertools.permutations(range(6))))
    nodes = sum(math.perm(6, depth) for depth in range(1, 7))  # 6 + 30 + 120 + 360 + 720 + 720
    assert distinct_prefixes(orders) == nodes == 1956
    assert distinct_prefixes(orders[:1]) == 6  # one reordering: nothing to share


def test_prefixes_rule_shares_all_but_the_last_slot_in_label_order():
    words = ["a", "b", "c", "d", "e", "f"]  # six distinct words: every order is a sentence of its own
    orders = torch.tensor(list(in_label_order("prefixes", words, 0)))  # orders of the first five, the last in place
    assert (orders[:, -1] == 5).all() and len(orders) == 120
    assert distinct_prefixes(orders) == sum(math.perm(5, depth) for depth in range(1, 6)) + 120


def test_an_encoding_that_does_not_declare_prefix_sharing_runs_dense_and_the_manifest_says_so(
    cli, write_spec, plugins, tmp_path
):
    spec = write_spec(
        "name: fallback\nmodel: {d_model: 8, n_heads: 2, n_layers: 1, causal: true}\n"
        "encodings: [none, 'plugin_encodings:SquaredDistance']\n"
        "inputs: [{sentence: a b c d, permutations: all}]\nmetrics: [equivariance]\n"
    )
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out/fallback/manifest.json").read_text())
    assert manifest["prefix_sharing"] == {
        "none": "shared",
        "plugin_encodings:SquaredDistance": "dense: plugin_encodings:SquaredDistance does not declare shares_prefixes",
    }
    adapters = build_adapters(causal_spec(["none", "plugin_encodings:SquaredDistance"]), CPU, Path("spec.yaml"))
    assert [adapter.shares_prefixes for adapter in adapters] == [True, False]


def test_bidirectional_runs_record_no_prefix_sharing(cli, write_spec, tmp_path):
    spec = write_spec("name: both\nmodel: {d_model: 8, n_heads: 2, n_layers: 1}\ninputs: [{sentence: a b c}]\n")
    assert cli.invoke(app, ["run", str(spec), "--out", str(tmp_path), "--quiet"]).exit_code == 0
    assert "prefix_sharing" not in json.loads((tmp_path / "both/manifest.json").read_text())
