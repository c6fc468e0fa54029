"""attention.csv comes from the measured pass: the maps drawn are the maps the metrics were computed from."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from orderlab.cli import app


def maps_of(folder, encoding: str, which: str, layer: int = 1) -> np.ndarray:
    """(h, n, n) attention of one encoding, order and layer, from attention.csv."""
    table = pd.read_csv(folder / "attention.csv")
    rows = table[(table.encoding == encoding) & (table.sentence == which) & (table.layer == layer)]
    h, n = rows["head"].max() + 1, rows["query"].max() + 1
    return rows.sort_values(["head", "query", "key"])["value"].to_numpy().reshape(h, n, n)


def run(cli, tmp_path, rule: str, extra: str = "") -> tuple:
    path = tmp_path / "maps.yaml"
    path.write_text(
        "model: {d_model: 8, n_heads: 2, n_layers: 2}\nencodings: [none, sinusoidal]\n"
        f"metrics: [equivariance, attention]\ninputs: [{{sentence: the cat saw a dog, permutations: {rule}}}]\n{extra}"
    )
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "maps"
    return folder, json.loads((folder / "manifest.json").read_text())["attention"]


def test_without_positions_the_permuted_map_is_the_original_permuted(cli, tmp_path):
    folder, shown = run(cli, tmp_path, "all")
    p = [int(i) for i in shown["permutation"].split()]
    assert p != sorted(p)  # a reordering that moves words
    for layer in (1, 2):
        original, permuted = maps_of(folder, "none", "original", layer), maps_of(folder, "none", "permuted", layer)
        np.testing.assert_allclose(permuted, original[:, p][:, :, p], rtol=0, atol=1e-6)  # A(PX) = P A(X) P^T
        sinusoidal = maps_of(folder, "sinusoidal", "original", layer)
        moved = maps_of(folder, "sinusoidal", "permuted", layer)
        assert np.abs(moved - sinusoidal[:, p][:, :, p]).max() > 1e-3  # positions break it


def test_the_map_shown_does_not_depend_on_the_chunk_it_was_measured_in(cli, tmp_path):
    folder, _ = run(cli, tmp_path, "all")
    whole = (folder / "attention.csv").read_bytes()
    path = tmp_path / "maps.yaml"
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path / "chunked"), "-q", "--chunk-size", "7"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "chunked" / "maps" / "attention.csv").read_bytes() == whole


def test_a_rule_that_moves_no_word_shows_the_reversal(cli, tmp_path):
    folder, shown = run(cli, tmp_path, "identity")
    assert shown["permutation"] == "4 3 2 1 0" and shown["permuted"] == "dog a saw cat the"
    original, reversed_ = maps_of(folder, "none", "original"), maps_of(folder, "none", "permuted")
    np.testing.assert_allclose(reversed_, original[:, ::-1][:, :, ::-1], rtol=0, atol=1e-6)
