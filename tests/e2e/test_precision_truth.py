"""Every precision tells the truth (issue 39): a 16-bit run never calls a real effect passing, never flips a 0/1
answer without calling it a tie, and never calls an exact zero order-sensitive; the bfloat16 GPT-2 case of the issue
reads order-sensitive where float32 does.

Each spec runs through the production path (orderlab.api.run, as `orderlab run` does) in float32 and in a 16-bit
dtype, and the rows are matched one to one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from sharding import assert_same_files, run_shards, run_whole

import orderlab.api as ol
from orderlab.cli import app
from orderlab.families import FAMILIES
from orderlab.measure.verdicts import DEFAULT_RESOLUTION
from orderlab.metrics import METRICS
from orderlab.spec.extras import installed
from orderlab.vocabulary.verdict_words import ORDER_SENSITIVE, PASSING_WORDS, TIE, UNRESOLVED

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: pip install 'orderlab[hf]'"),
]
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
LOW = ["bfloat16", "float16"]
CASE = {
    "name": "case",
    "seed": 0,
    "model": {"kind": "hf", "family": "gpt2", "d_model": 64, "n_heads": 4, "n_layers": 3,
              "position_embeddings": "zero", "dtype": "bfloat16"},
    "inputs": [{"sentence": "the old dog bit the tall man",
                "permutations": [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 5, 4, 6]]}],
    "metrics": ["prefix_invariance"],
}  # fmt: skip
ANSWERS = [name for name in METRICS.names() if METRICS.get(name).reduction == "rate"]  # 0/1 answers
CAUSAL = [name for name in FAMILIES.names() if FAMILIES.get(name).causal]
ZOO = {  # all eleven families, three seeds, with and without positions, at small sizes
    "seed": [0, 1, 2],
    "model": {"kind": "hf", "d_model": 16, "n_heads": 2, "n_layers": 2, "position_embeddings": ["trained", "zero"]},
    # every seed measures the same orders (a random rule draws per seed, and may draw none that keeps the last word)
    "inputs": [{"sentence": "dog bit the man", "permutations": "prefixes"}],
}
ZOO_SPECS = {
    "encoders": ZOO | {"model": ZOO["model"] | {"family": [n for n in FAMILIES.names() if n not in CAUSAL]},
                       "metrics": ["equivariance", "invariance"]},
    "causal": ZOO | {"model": ZOO["model"] | {"family": CAUSAL},
                     "probes": [{"pair": ["the dog bites the man", "the dog bite the man"], "relation": "minimal_pair"},
                                ["the dog bit the man", "the man bit the dog"]],
                     "metrics": ["equivariance", "prefix_invariance", "lm_logprob", "minimal_pairs"]},
}  # fmt: skip
NOT_ROW_KEYS = {"value", "verdict"}


def shipped(name: str) -> dict[str, Any]:
    """A shipped spec as data, training cut to a few steps (its verdicts, not its accuracy, are under test)."""
    data: dict[str, Any] = yaml.safe_load((EXPERIMENTS / f"{name}.yaml").read_text())
    if "train" in data:
        data["train"]["steps"] = min(data["train"].get("steps", 20), 20)
    return data


SHIPPED = sorted(
    path.stem
    for path in EXPERIMENTS.glob("*.yaml")
    if not isinstance(yaml.safe_load(path.read_text()).get("inputs"), dict)  # corpus mode: no round-off verdicts
)


def rows_in(data: dict[str, Any], dtype: str, out: Path) -> pd.DataFrame:
    """metrics.csv of the spec run in `dtype`: keys as text, the value as a number."""
    spec = {**data, "model": {**data.get("model", {}), "dtype": dtype}}
    result = ol.run(spec, out / dtype, base=EXPERIMENTS, progress=False)
    table = pd.read_csv(result.folder / "metrics.csv", dtype=str, keep_default_na=False)
    return table.assign(value=table["value"].astype(float))


def matched(single: pd.DataFrame, low: pd.DataFrame) -> pd.DataFrame:
    keys = [column for column in single.columns if column not in NOT_ROW_KEYS]
    both = single.merge(low, on=keys, suffixes=("_32", "_low"), validate="one_to_one")
    assert len(both) == len(single) == len(low), "the same rows in both precisions"
    return both


def assert_truthful(both: pd.DataFrame) -> int:
    """The issue's three promises over matched rows; returns how many real effects the low run was held to."""
    real = (both["verdict_32"] == ORDER_SENSITIVE) & (both["value_32"] > DEFAULT_RESOLUTION)
    passed = both["verdict_low"].isin(PASSING_WORDS)
    assert not (real & passed).any(), both.loc[real & passed, ["metric", "layer", "value_32", "value_low"]].head()
    answers = both["metric"].isin(ANSWERS)
    flipped = answers & (both["value_32"] != both["value_low"])
    untied = flipped & (both["verdict_32"] != TIE) & (both["verdict_low"] != TIE)
    assert not untied.any(), both.loc[untied, ["encoding", "input", "permuted", "value_32", "value_low"]].head()
    for side in ("32", "low"):
        zero = both[f"value_{side}"] == 0
        assert not (zero & (both[f"verdict_{side}"] == ORDER_SENSITIVE)).any()
    return int(real.sum())


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_spec_tells_the_truth_in_16_bits(name, tmp_path):
    data = shipped(name)
    single = rows_in(data, "float32", tmp_path)  # run once, held against each 16-bit dtype
    for dtype in LOW:
        assert_truthful(matched(single, rows_in(data, dtype, tmp_path)))


@pytest.mark.parametrize("kind", sorted(ZOO_SPECS))
def test_every_family_seeded_with_and_without_positions_tells_the_truth_in_16_bits(kind, tmp_path):
    data = {"name": f"zoo_{kind}", **ZOO_SPECS[kind]}
    single = rows_in(data, "float32", tmp_path)
    for dtype in LOW:
        assert assert_truthful(matched(single, rows_in(data, dtype, tmp_path))) > 0  # the promise was put to the test


def test_the_bfloat16_gpt2_case_reads_order_sensitive_at_layers_2_and_3(cli, tmp_path):
    spec = tmp_path / "case.yaml"
    spec.write_text(yaml.safe_dump(CASE))
    ran = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "r")])
    assert ran.exit_code == 0, ran.output
    assert "re-measured in float32" in " ".join(ran.output.split())
    rows = pd.read_csv(tmp_path / "r" / "case" / "metrics.csv")
    swapped = rows[rows["permutation"] == "0 1 2 3 5 4 6"].set_index("layer")
    assert (swapped.loc[[2, 3], "verdict"] == ORDER_SENSITIVE).all()
    assert swapped.loc[2, "value"] == pytest.approx(0.0839, abs=2e-3)  # float32's 0.0839 (bfloat16 weights)
    manifest = json.loads((tmp_path / "r" / "case" / "manifest.json").read_text())
    assert manifest["resolution"]["conditions"]["zero"]["remeasured"] == 2
    summary = pd.read_csv(tmp_path / "r" / "case" / "summary.csv", dtype=str)
    assert summary.loc[0, "zero first layer"] == "2"


def test_without_escalation_the_bfloat16_case_is_unresolved_and_keeps_its_values(cli, tmp_path):
    spec = tmp_path / "case.yaml"
    spec.write_text(yaml.safe_dump(CASE | {"escalate": False}))
    ran = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "r")])
    assert ran.exit_code == 0, ran.output
    rows = pd.read_csv(tmp_path / "r" / "case" / "metrics.csv")
    swapped = rows[rows["permutation"] == "0 1 2 3 5 4 6"].set_index("layer")
    assert (swapped.loc[[2, 3], "verdict"] == UNRESOLVED).all()
    assert np.all(swapped.loc[[2, 3], "value"] > 0.05)  # kept as measured, never written as 0
    summary = pd.read_csv(tmp_path / "r" / "case" / "summary.csv", dtype=str)
    assert summary.loc[0, "zero verdict"] == UNRESOLVED and pd.isna(summary.loc[0, "zero first layer"])  # empty
    assert "? = unresolved" in " ".join(ran.output.split())


MIXED = CASE | {
    "name": "mixed",
    "model": CASE["model"] | {"position_embeddings": ["trained", "zero"]},
    # the issue's two orders (the swap's effect lies within bfloat16's line) and four far from the line
    "inputs": [*CASE["inputs"], {"sentence": "the old dog bit the tall man", "permutations": {"random": 4}}],
    "metrics": ["prefix_invariance", "equivariance"],
}


def test_only_the_orders_bfloat16_leaves_unresolved_are_measured_again_with_float32s_verdicts(tmp_path):
    spec = MIXED | {"rows": "per_permutation"}
    low = rows_in(spec, "bfloat16", tmp_path)
    both = matched(rows_in(spec, "float32", tmp_path), low)
    assert (both["verdict_32"] == both["verdict_low"]).all()  # as if every order had been measured in float32
    manifest = json.loads((tmp_path / "bfloat16" / "mixed" / "manifest.json").read_text())
    orders = low.groupby("encoding")["permutation"].nunique()
    remeasured = {label: record["remeasured"] for label, record in manifest["resolution"]["conditions"].items()}
    assert all(0 < remeasured[label] < orders[label] for label in orders.index), (remeasured, orders)


def test_bfloat16_shards_merged_record_the_whole_runs_resolution(cli, tmp_path):
    spec = tmp_path / "mixed.yaml"
    spec.write_text(yaml.safe_dump(MIXED | {"model": CASE["model"]}))  # one condition: zero
    whole = run_whole(cli, spec, tmp_path / "whole")
    shards = run_shards(cli, spec, 2, tmp_path / "shards")
    cut = [u for s in shards for u in json.loads((s / "manifest.json").read_text())["shard"]["units"] if u["start"]]
    assert cut  # a sentence's orders split between shards: their twin's summaries fold too
    result = cli.invoke(app, ["merge", *map(str, shards), "--out", str(tmp_path / "merged")])
    assert result.exit_code == 0, result.output
    assert "re-measured in float32" in " ".join(result.output.split())  # the caption's note, as the whole run's
    resolution = json.loads((whole / "manifest.json").read_text())["resolution"]
    assert resolution["conditions"]["zero"]["remeasured"] > 0
    assert_same_files(tmp_path / "merged" / "mixed", whole)  # manifest.json's resolution record included
