"""The streaming sweep: results do not depend on the chunk size; summary rows reduce the per-permutation rows."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
import torch

from orderlab.measure.run_options import RunOptions
from orderlab.measure.sweep_measure import run_sweep
from orderlab.models.stack_adapter import StackSentence
from orderlab.spec.schema import Spec

DEFAULT_THREADS = torch.get_num_threads()
# one thread: the exact equalities hold either way (test_chunking_holds_with_all_threads runs with the default)
pytestmark = pytest.mark.usefixtures("one_thread")


def sweep_spec(**changes) -> Spec:
    """5 words with a repeated one (occurrence matching matters), 60 distinct orders (of 5! = 120), 3 encodings."""
    fields = {
        "model": {"d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": "float64"},
        "inputs": [{"sentence": "the cat saw the dog", "permutations": "all"}],
        "probes": [["the cat saw the dog", "the dog saw the cat"]],
    }
    return Spec.model_validate(fields | changes)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("metrics", [["equivariance", "invariance", "attention", "token_shift"], ["equivariance"]])
@pytest.mark.parametrize("rows", ["per_permutation", "summary"])
def test_chunked_results_equal_unchunked_exactly(dtype, metrics, rows):
    spec = sweep_spec(model={"d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": dtype}, metrics=metrics, rows=rows)
    whole = run_sweep(spec, RunOptions(chunk_size=10_000)).metrics  # every permutation in one forward pass
    for chunk_size in (7, 32, 119):
        chunked = run_sweep(spec, RunOptions(chunk_size=chunk_size)).metrics
        pd.testing.assert_frame_equal(chunked, whole, check_exact=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_chunking_holds_with_all_threads(dtype):
    torch.set_num_threads(DEFAULT_THREADS)
    spec = sweep_spec(encodings=["rope"], model={"d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": dtype})
    pd.testing.assert_frame_equal(
        run_sweep(spec, RunOptions(chunk_size=9)).metrics,
        run_sweep(spec, RunOptions(chunk_size=60)).metrics,
        check_exact=True,
    )


def test_default_rows_are_one_per_permutation_layer_head_and_metric():
    table = run_sweep(sweep_spec(metrics=["equivariance", "attention"])).metrics
    permutations = table[table["case"] == "permutation"]
    per_encoding = 60 * (3 + 2 * 2)  # equivariance at layers 0..2, attention at layers 1..2 x 2 heads
    assert len(permutations) == 3 * per_encoding
    assert permutations["permutation"].nunique() == permutations["permuted"].nunique() == 60


def test_summary_rows_are_the_max_and_exact_mean_over_permutations():
    per_permutation = run_sweep(sweep_spec(encodings=["rope"])).metrics
    summary = run_sweep(sweep_spec(encodings=["rope"], rows="summary")).metrics
    groups = per_permutation[per_permutation["case"] == "permutation"].groupby(
        ["layer", "head", "metric"], dropna=False, sort=False
    )
    summary = summary[summary["case"] == "permutation"].set_index(["layer", "head", "metric", "statistic"])
    for (layer, head, metric), group in groups:
        top = summary.loc[(layer, head, metric, "max")]
        assert top["value"] == group["value"].max()
        assert top["permutation"] == group.loc[group["value"].idxmax(), "permutation"]  # first one, in CSV order
        exact = float(sum(map(Fraction, group["value"])) / len(group))
        assert summary.loc[(layer, head, metric, "mean"), "value"] == exact


def test_summary_csv_is_the_same_whichever_rows_are_kept(tmp_path):
    from orderlab.measure.sweep_measure import SweepMeasurement
    from orderlab.results.folder import write_csv_chunks

    worst = []
    for rows in ("per_permutation", "summary"):
        _, digest = write_csv_chunks(SweepMeasurement(sweep_spec(rows=rows)).frames(), tmp_path / f"{rows}.csv")
        worst.append(digest.worst_table().reset_index(drop=True))
    pd.testing.assert_frame_equal(worst[0][worst[1].columns.drop("statistic")], worst[1].drop(columns="statistic"))


def test_progress_reports_every_chunk_up_to_the_total():
    calls = []
    run_sweep(
        sweep_spec(encodings=["none"]),
        RunOptions(chunk_size=50, progress=lambda done, total: calls.append((done, total))),
    )
    # the total before any work (the bar shows it during set-up), 60 distinct orders in 2 chunks, then the probe
    assert calls == [(0, 61), (50, 61), (60, 61), (61, 61)]


def test_nine_word_sentences_need_summary_rows_for_all_permutations(tmp_path):
    from orderlab.errors import SpecError
    from orderlab.plan.limits import validate_limits
    from orderlab.spec.load import load_spec

    path = tmp_path / "nine.yaml"
    path.write_text("inputs:\n  - sentence: a b c d e f g h i\n    permutations: all\n")
    with pytest.raises(SpecError, match=r"362,880 permutations .* expected rows: summary"):
        validate_limits(load_spec(path))
    path.write_text("rows: summary\ninputs:\n  - sentence: a b c d e f g h i\n    permutations: all\n")
    assert validate_limits(load_spec(path)).spec.rows == "summary"
    path.write_text("rows: summary\ninputs:\n  - sentence: a b c d e f g h i j\n    permutations: all\n")
    with pytest.raises(SpecError, match=r"past the limit of 9!"):
        load_spec(path)


def test_chunk_size_is_chosen_from_width_length_and_dtype():
    from orderlab.measure.adapters import build_adapters

    def chunk(n: int, attention: bool = False, **model: object) -> int:
        spec = Spec.model_validate({"model": {"n_heads": 4, "n_layers": 4, **model}, "inputs": [{"sentence": "a b"}]})
        return build_adapters(spec, torch.device("cpu"), Path("spec.yaml"))[0].chunk_size(n, attention)

    bench = chunk(8, d_model=128, dtype="float32")
    assert 500 <= bench <= 4096
    assert chunk(8, d_model=512, dtype="float32") < bench
    assert chunk(16, d_model=128, dtype="float32") < bench
    assert chunk(8, d_model=128, dtype="float64") == pytest.approx(bench / 2, abs=1)
    assert math.isfinite(chunk(9, True, d_model=128, dtype="float32"))


@pytest.mark.parametrize(("rule", "chunks"), [("all", [32, 28]), ({"random": 10}, [1 + 10])])
def test_the_reference_rides_in_the_first_chunks_pass(monkeypatch, rule, chunks):
    """f(X) is the first chunk's first row, or one row more where the rule leaves the identity out: no pass of its
    own (a causal LM's shared prefixes would walk the trie twice)."""
    sizes: list[tuple[torch.dtype, int]] = []
    forward = StackSentence.forward

    def counted(self, orders, hooks=()):
        sizes.append((self.adapter.dtype, len(orders)))
        return forward(self, orders, hooks)

    monkeypatch.setattr(StackSentence, "forward", counted)
    spec = sweep_spec(inputs=[{"sentence": "the cat saw the dog", "permutations": rule}], probes=[], encodings=["none"])
    run_sweep(spec, RunOptions(chunk_size=32))
    first, *rest = [(torch.float64, size) for size in chunks]
    assert sizes == [first, (torch.float32, 1), *rest]  # the round-off twin's identity after the first chunk
