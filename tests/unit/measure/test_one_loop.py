"""A pretrained model goes through the one measuring loop: every metric family, summary rows, any chunk size."""

from __future__ import annotations

import pandas as pd
import pytest
from minilm import needs_minilm

from orderlab.cli import app

pytestmark = pytest.mark.slow

SPEC = """
name: minilm_all
model: {kind: pretrained, name: minilm, position_embeddings: [trained, zero]}
inputs:
  - sentence: the dog chased a cat
    permutations: prefixes
probes:
  - [dog bites man, man bites dog]
metrics: [equivariance, prefix_invariance, decodability, pair_distance, repeated_words]
rows: summary
decodability: {sentences: 32, length: 4, vocabulary: 24}
"""


def test_minilm_writes_rows_for_every_metric_in_summary_mode_at_any_chunk_size(cli, write_spec, tmp_path):
    needs_minilm()
    spec = write_spec(SPEC)
    texts = []
    for chunk in ("4", "1000"):
        result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / chunk), "--chunk-size", chunk, "-q"])
        assert result.exit_code == 0, result.output
        texts.append((tmp_path / chunk / "minilm_all" / "metrics.csv").read_text())
    assert texts[0] == texts[1]  # chunking never changes a number
    table = pd.read_csv(tmp_path / "4" / "minilm_all" / "metrics.csv", keep_default_na=False)
    written = set(table.metric)
    assert {"equivariance", "prefix_invariance", "position_accuracy", "position_chance"} <= written
    assert {"pair_cosine", "pair_cosine_cls", "pair_l2"} <= written
    assert not written & {"repeat_distance", "repeat_cosine"}  # no word repeats in these sentences
    permutation_rows = table[table.case == "permutation"]
    assert set(permutation_rows.statistic) == {"max", "mean"} and set(permutation_rows.encoding) == {"trained", "zero"}
    zero = permutation_rows[permutation_rows.encoding == "zero"]
    assert (zero.verdict != "order-sensitive").all()  # no positions: every reordering is round-off
    accuracy = table[(table.metric == "position_accuracy") & (table.layer == 0)].set_index("encoding").value
    assert float(accuracy["trained"]) == 1.0 and float(accuracy["zero"]) < 0.6  # chance is 0.25


def test_the_estimate_counts_the_rows_a_pretrained_run_writes(cli, write_spec, tmp_path):
    needs_minilm()
    from orderlab.plan import estimate
    from orderlab.spec.load import load_spec

    for rows in ("summary", "per_permutation"):
        spec = write_spec(SPEC.replace("rows: summary", f"rows: {rows}").replace("minilm_all", f"minilm_{rows}"))
        planned = estimate.estimate(load_spec(spec).spec, spec)
        result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path), "-q"])
        assert result.exit_code == 0, result.output
        written = tmp_path / f"minilm_{rows}" / "metrics.csv"
        assert sum(e.metrics_rows for e in planned) == len(pd.read_csv(written)), rows
        assert 0.7 <= sum(e.metrics_bytes.amount for e in planned) / written.stat().st_size <= 1.4, rows
