"""attention.csv comes from the measured pass: the maps drawn are the maps the metrics were computed from."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from orderlab.cli import app


def maps_of(folder, encoding: str, reordering: int, layer: int = 1) -> np.ndarray:
    """(h, n, n) attention of one encoding, reordering (0: as written) and layer, from attention.csv."""
    table = pd.read_csv(folder / "attention.csv")
    rows = table[(table.encoding == encoding) & (table.reordering == reordering) & (table.layer == layer)]
    h, n = rows["head"].max() + 1, rows["query"].max() + 1
    return rows.sort_values(["head", "query", "key"])["value"].to_numpy().reshape(h, n, n)


def run(cli, tmp_path, rule: str, extra: str = "", *options: str) -> tuple:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "maps.yaml"
    path.write_text(
        "model: {d_model: 8, n_heads: 2, n_layers: 2}\nencodings: [none, sinusoidal]\n"
        f"metrics: [equivariance, attention]\ninputs: [{{sentence: the cat saw a dog, permutations: {rule}}}]\n{extra}"
    )
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path), "-q", *options])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "maps"
    return folder, json.loads((folder / "manifest.json").read_text())["attention"]


def permutation(reordering: dict) -> list[int]:
    return [int(i) for i in reordering["permutation"].split()]


def test_without_positions_the_permuted_map_is_the_original_permuted(cli, tmp_path):
    folder, shown = run(cli, tmp_path, "all")
    (reordering,) = shown["reorderings"]
    p = permutation(reordering)
    assert p != sorted(p)  # a reordering that moves words
    for layer in (1, 2):
        original, permuted = maps_of(folder, "none", 0, layer), maps_of(folder, "none", 1, layer)
        np.testing.assert_allclose(permuted, original[:, p][:, :, p], rtol=0, atol=1e-6)  # A(PX) = P A(X) P^T
        sinusoidal, moved = maps_of(folder, "sinusoidal", 0, layer), maps_of(folder, "sinusoidal", 1, layer)
        assert np.abs(moved - sinusoidal[:, p][:, :, p]).max() > 1e-3  # positions break it


def test_the_map_shown_does_not_depend_on_the_chunk_it_was_measured_in(cli, tmp_path):
    folder, _ = run(cli, tmp_path, "all")
    whole = (folder / "attention.csv").read_bytes()
    chunked, _ = run(cli, tmp_path / "chunked", "all", "", "--chunk-size", "7")
    assert (chunked / "attention.csv").read_bytes() == whole


def test_a_rule_that_moves_no_word_shows_the_reversal(cli, tmp_path):
    folder, shown = run(cli, tmp_path, "identity")
    assert shown["reorderings"] == [{"permutation": "4 3 2 1 0", "permuted": "dog a saw cat the"}]
    original, reversed_ = maps_of(folder, "none", 0), maps_of(folder, "none", 1)
    np.testing.assert_allclose(reversed_, original[:, ::-1][:, :, ::-1], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_chosen_reorderings_are_shown_whether_or_not_the_rule_measures_them(cli, tmp_path):
    chosen = "attention_maps: {permutations: [[1, 0, 2, 3, 4], [4, 3, 2, 1, 0]]}\n"
    folder, shown = run(cli, tmp_path, "swaps", chosen, "--plot")  # swaps gives the first, not the reversal
    assert [r["permutation"] for r in shown["reorderings"]] == ["1 0 2 3 4", "4 3 2 1 0"]
    assert shown["reorderings"][1]["permuted"] == "dog a saw cat the"
    table = pd.read_csv(folder / "attention.csv")
    assert sorted(table.reordering.unique()) == [0, 1, 2]
    for number, reordering in enumerate(shown["reorderings"], start=1):
        p = permutation(reordering)
        np.testing.assert_allclose(maps_of(folder, "none", number), maps_of(folder, "none", 0)[:, p][:, :, p],
                                   rtol=0, atol=1e-6)  # fmt: skip
    grids = sorted(path.name for path in (folder / "figures").glob("attention_none_layer2_*.png"))
    assert grids == ["attention_none_layer2_P1.png", "attention_none_layer2_P2.png"]


def test_chosen_reorderings_that_are_not_permutations_are_one_line(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("inputs: [{sentence: a b c}]\nmetrics: [attention]\nattention_maps: {permutations: [[0, 0, 1]]}\n")
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "attention_maps.permutations" in line and "not a permutation" in line
    path.write_text("inputs: [{sentence: a b c}]\nmetrics: [attention]\nattention_maps: {input: 3}\n")
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "attention_maps.input" in result.output and "expected 0..0" in result.output
