"""A causal LM's prefix walk with its calls captured by torch.compile in static shape buckets (models/hf/capture.py,
opt-in: ORDERLAB_CAPTURE). Under dynamo's `eager` backend the captured graphs run the model's own ops, so the walk's
numbers must come out bit for bit: what is tested here is the buckets, the graphs' guards and the fallback, not a
compiler's round-off (a card measures that: benchmarks/gpu_check.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from causal_walks import CAUSAL, ORDERS, WORDS, fed_tokens, lm_spec
from hypothesis import given
from hypothesis import strategies as st

from orderlab.cli import app
from orderlab.errors import OrderlabError
from orderlab.measure.adapters import build_adapters
from orderlab.measure.run_options import RunOptions
from orderlab.measure.sweep_measure import run_sweep
from orderlab.models.devices import CPU
from orderlab.models.hf.capture import bucket
from orderlab.plan.chunks import ROW_ALIGNMENT
from orderlab.plan.decisions import Decisions, capture_backend
from orderlab.spec.extras import installed

needs_transformers = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")
STATES, LM_ONLY = ["lm_logprob", "invariance"], ["lm_logprob"]


@given(st.integers(1, 5000), st.sampled_from([1, 8, 16, 32]))
def test_a_bucket_is_the_fewest_whole_row_tiles_in_a_power_of_two_that_hold_the_rows(rows, alignment):
    size = bucket(rows, alignment)
    tiles = size // alignment
    assert size % alignment == 0 and tiles & (tiles - 1) == 0  # whole tiles, a power of two of them
    assert size >= rows and (tiles == 1 or size // 2 < rows)  # the smallest such


def test_capture_is_off_unless_asked_for_and_an_unknown_backend_is_refused_in_one_line():
    assert capture_backend("off") == "" and capture_backend("inductor") == "inductor"
    with pytest.raises(OrderlabError, match=r"^ORDERLAB_CAPTURE='tensorrt'; expected one of off, eager, aot_eager, "
                                            r"inductor$"):  # fmt: skip
        capture_backend("tensorrt")


def adapters(family: str, metrics: list[str], capture: str):
    decisions = Decisions(share_prefixes=True, compile=False, capture=capture)
    return build_adapters(lm_spec(family, metrics), CPU, Path("spec.yaml"), decisions=decisions)


@needs_transformers
@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("family", CAUSAL)
def test_a_captured_walk_gives_the_walks_numbers_bit_for_bit_on_bucketed_rows(family):
    walks, captures = adapters(family, STATES, ""), adapters(family, STATES, "eager")
    rows = slice(7, 47)  # a chunk that splits the trie below the top: 2, 7, 21, 40, 40 prefixes
    for walk, captured in ((walks[0], captures[0]), (walks[-1], captures[-1])):  # two ablations: two hook layouts
        expected, _ = fed_tokens(walk.sentence(WORDS), ORDERS)
        got, fed = fed_tokens(captured.sentence(WORDS), ORDERS[rows])
        assert torch.equal(got.logprob, expected.logprob[rows]), captured.label
        assert len(got.hidden) == len(expected.hidden) == 3  # embeddings, 2 layers
        for layer, states in enumerate(expected.hidden):
            assert torch.equal(got.hidden[layer], states[rows]), (captured.label, layer)
        tiles = [count // ROW_ALIGNMENT for count in fed]  # the root's call, then a bucket per depth (40 rows: 3
        assert all(count % ROW_ALIGNMENT == 0 for count in fed) and tiles == [1, 1, 1, 2, 4, 4], fed  # tiles, then 4)
        record = captured.compilation()
        assert record is not None and record["capture"] == "eager" and record["calls"] >= 5, record


def unique_graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


@needs_transformers
@pytest.mark.usefixtures("one_thread")
def test_a_chunk_of_the_same_shape_replays_the_graphs_another_chunk_compiled():
    walk, captured = (adapters("gpt2", STATES, capture)[0] for capture in ("", "eager"))
    expected, _ = fed_tokens(walk.sentence(WORDS), ORDERS)
    fed_tokens(captured.sentence(WORDS), ORDERS[:24])  # the orders that start with "the": a trie of 1, 4, 12, 24, 24
    compiled = unique_graphs()
    got, _ = fed_tokens(captured.sentence(WORDS), ORDERS[24:48])  # those that start with "dog": the same shapes
    assert unique_graphs() == compiled
    assert torch.equal(got.logprob, expected.logprob[24:48])


@needs_transformers
@pytest.mark.usefixtures("one_thread")
def test_the_graphs_are_guarded_on_the_ablations_hooks():  # dynamo's default replays one ablation's graph for all
    walks, captured = adapters("gpt2", LM_ONLY, ""), adapters("gpt2", LM_ONLY, "eager")
    by_label = {adapter.label: adapter for adapter in walks}
    values = {}
    for adapter in captured:  # one model, one Capture: trained, shuffled, sinusoidal and zero in turn
        got, _ = fed_tokens(adapter.sentence(WORDS), ORDERS)
        expected, _ = fed_tokens(by_label[adapter.label].sentence(WORDS), ORDERS)
        assert torch.equal(got.logprob, expected.logprob), adapter.label
        values[adapter.label] = got.logprob
    labels = list(values)
    assert len(labels) == 4 and not any(torch.equal(values[a], values[b]) for a in labels for b in labels if a < b)


@needs_transformers
@pytest.mark.usefixtures("one_thread")
def test_a_failed_compile_runs_the_walk_eager_from_the_same_cache_and_says_why():
    walk, captured = (adapters("llama", STATES, capture)[0] for capture in ("", "eager"))
    capture = captured.shared.capture()
    assert capture is not None

    def fail(**_kwargs):
        raise RuntimeError("no C compiler found")

    capture.compiled = fail
    (expected, _), (got, _) = (fed_tokens(a.sentence(WORDS), ORDERS) for a in (walk, captured))
    assert torch.equal(got.logprob, expected.logprob)
    assert all(torch.equal(g, e) for g, e in zip(got.hidden, expected.hidden, strict=True))
    assert captured.compilation() == {"capture": "eager", "fallback": "RuntimeError: no C compiler found"}


@needs_transformers
def test_a_run_asked_to_capture_reaches_the_same_numbers_and_says_so(cli, monkeypatch, tmp_path):
    spec = lm_spec("gpt2", ["equivariance", "invariance", "lm_logprob"], WORDS[:4])
    walked = run_sweep(spec, RunOptions()).metrics
    monkeypatch.setenv("ORDERLAB_CAPTURE", "eager")
    captured = run_sweep(spec, RunOptions()).metrics
    assert captured.equals(walked)
    folder = tmp_path / "spec.yaml"
    folder.write_text(json.dumps({"name": "s", **spec.model_dump(mode="json", exclude_defaults=True)}))
    assert cli.invoke(app, ["run", str(folder), "--out", str(tmp_path / "out")]).exit_code == 0
    manifest = json.loads((tmp_path / "out" / "s" / "manifest.json").read_text())
    assert set(manifest["prefix_sharing"].values()) == {
        "shared, calls captured by torch.compile (eager) in static shape buckets"
    }
    assert [record["encoding"] for record in manifest["torch_compile"]] == sorted(manifest["prefix_sharing"])
    assert all(record["capture"] == "eager" and record["compile_seconds"] >= 0 and record["calls"] > 0
               for record in manifest["torch_compile"])  # fmt: skip
