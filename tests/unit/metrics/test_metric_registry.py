"""The metric registry is the one list of metrics: what runs write, what specs accept and what the docs say."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.errors import OrderlabError
from orderlab.metrics import (
    BOTH,
    CAUSAL_POOLINGS,
    DECODABILITY_FAMILY,
    ENCODER_POOLINGS,
    INVARIANCE_FAMILY,
    METRIC_FAMILIES,
    METRICS,
    PAIR_DISTANCE_FAMILY,
    STACK_POOLINGS,
    TASK_ACCURACY,
    TOKEN_SHIFT,
    all_metrics,
    computed_on,
    family_names,
    metric,
    metrics_of,
)
from orderlab.metrics.docs_table import markdown_tables
from orderlab.metrics.registry import row_metric
from orderlab.plan.estimate import estimate
from orderlab.spec.load import load_spec
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import DatasetInputs, uses_backend
from orderlab.vocabulary.verdict_words import PASSING_WORDS

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "metrics.md"
GENERATED = re.compile(r"<!-- generated from orderlab/metrics[^\n]*-->\n(.*?)<!-- end of generated tables -->", re.S)


def baselines() -> list[tuple[str, str, pd.DataFrame, list[str], bool]]:
    """(folder, model, metrics.csv, the spec's metrics, corpus mode) of every committed results folder with rows."""
    found = []
    for table in sorted(ROOT.glob("results/*/metrics.csv")):
        manifest = json.loads((table.parent / "manifest.json").read_text())
        spec = load_spec(ROOT / manifest["spec"]["path"]).spec
        model = "pretrained" if uses_backend(spec) else "stack"
        rows = pd.read_csv(table, keep_default_na=False)
        own_pass = isinstance(spec.inputs, CorpusInputs | DatasetInputs)  # corpus mode, dataset inputs: no families
        found.append((table.parent.name, model, rows, list(spec.metrics), own_pass))
    return found


BASELINES = baselines()


def test_registering_a_metric_or_family_name_twice_is_refused():
    with pytest.raises(ValueError, match="'token_shift' is already registered"):
        METRICS.register("token_shift", METRICS.get("token_shift"))
    with pytest.raises(ValueError, match="'attention' is already registered"):
        METRIC_FAMILIES.register("attention", METRIC_FAMILIES.get("attention"))


def test_an_unknown_name_is_answered_with_the_closest_registered_one():
    with pytest.raises(OrderlabError, match=r"Unknown metric 'repeat_distanse'\. Did you mean: repeat_distance\?"):
        METRICS.get("repeat_distanse")
    with pytest.raises(OrderlabError, match=r"Unknown metric family 'invarance'\. Did you mean: invariance\?"):
        metrics_of("invarance")


def test_every_registered_metric_is_computed_in_one_place():
    """By the loop (a permutation's or a probe's computation), or by the pass of its own that writes it: the position
    probe's (decodability), a train: block's or corpus mode's (no family), or the summary (a rank)."""
    loop = {m.name for m in all_metrics() if m.computations}
    own_pass = {m.name for m in all_metrics() if m.family in (None, DECODABILITY_FAMILY) or m.reduction == "rank"}
    assert loop | own_pass == set(METRICS.names())
    assert not loop & own_pass
    assert all(m.computed_by == "the loop" for m in all_metrics() if m.name in loop)


def test_a_metric_of_an_unregistered_family_or_noise_source_is_refused():
    with pytest.raises(OrderlabError, match=r"Unknown metric family 'invarance'\. Did you mean: invariance\?"):
        metric("wobble", "invarance", BOTH, "permutation × layer", "doc", computed_by="the loop")
    with pytest.raises(OrderlabError, match=r"Unknown metric 'token_shfit'\. Did you mean: token_shift\?"):
        metric("wobble", None, BOTH, "permutation × layer", "doc", computed_by="x", noise_from="token_shfit")
    assert "wobble" not in METRICS


def test_a_second_computation_of_a_metric_on_the_same_comparison_is_refused():
    with pytest.raises(ValueError, match="'token_shift' already has a computation on probes"):
        METRICS.get(TOKEN_SHIFT).also_on("probes")(lambda what, layer, pooling: None)


@pytest.mark.parametrize(
    "model, poolings, invariance, pairs",
    [
        ("stack", STACK_POOLINGS, ["invariance_mean", "invariance_max", "invariance_first", "invariance_last"],
         ["pair_cosine", "pair_l2"]),
        ("pretrained", ENCODER_POOLINGS, ["invariance_mean", "cosine_cls", "cosine_mean", "invariance_cls"],
         ["pair_cosine", "pair_l2", "pair_cosine_cls"]),
        ("pretrained", CAUSAL_POOLINGS, ["invariance_mean", "cosine_mean"], ["pair_cosine", "pair_l2"]),
    ],
    ids=["stack", "encoder", "causal LM"],
)  # fmt: skip
def test_a_model_writes_the_pooled_metrics_of_its_kind_and_poolings(model, poolings, invariance, pairs):
    """A causal LM's first token is BOS in every order: it defines no [CLS] vector, so it writes no [CLS] rows."""
    assert [m.name for m, _ in computed_on("reorderings", [INVARIANCE_FAMILY], model, poolings)] == invariance
    assert [m.name for m, _ in computed_on("probes", [PAIR_DISTANCE_FAMILY], model, poolings)] == pairs
    assert [m.name for m in metrics_of(INVARIANCE_FAMILY, model, poolings)] == invariance


def test_compare_suggests_a_registered_row_metric_for_a_typo():
    result = CliRunner().invoke(
        app, ["compare", "--metric", "pair_cosin", str(ROOT / "experiments/dog_bites_man.yaml")]
    )
    assert result.exit_code == 2
    assert "Unknown metric 'pair_cosin'. Did you mean: pair_cosine?" in result.output


def test_a_spec_accepts_exactly_the_registered_families(write_spec):
    result = CliRunner().invoke(app, ["validate", str(write_spec("inputs: [{sentence: a b}]\nmetrics: [order]\n"))])
    assert result.exit_code == 2
    listed = re.findall(r"'([a-z_]+)'", result.output.split("expected", 1)[1])
    assert listed == family_names()


@pytest.mark.parametrize("folder, model, rows, wanted, corpus", BASELINES, ids=[b[0] for b in BASELINES])
def test_every_metric_a_committed_baseline_writes_is_registered_for_its_model_and_family(
    folder, model, rows, wanted, corpus
):
    for name in rows["metric"].unique():
        metric = METRICS.get(name)
        assert model in metric.models, f"{folder}: {name} is written by a {model} run"
        in_mode = corpus or (name == TASK_ACCURACY and "weights" in rows.columns)  # corpus mode, or a train: block
        assert metric.family in wanted if metric.family else in_mode, f"{folder}: {name} needs {metric.family}"


@pytest.mark.parametrize("folder, model, rows, wanted, corpus", BASELINES, ids=[b[0] for b in BASELINES])
def test_a_baseline_row_within_round_off_carries_its_metrics_registered_verdict(folder, model, rows, wanted, corpus):
    if "verdict" not in rows:
        assert all(METRICS.get(name).passing is None for name in rows["metric"].unique())
        return
    passed = rows[rows["verdict"].isin(PASSING_WORDS)]
    expected = passed["metric"].map(lambda name: METRICS.get(name).passing)
    assert (passed["verdict"] == expected).all(), folder
    unjudged = [m.name for m in all_metrics() if m.passing is None]
    assert not rows[rows["metric"].isin(unjudged)]["verdict"].isin(PASSING_WORDS).any(), folder


def test_every_registered_metric_is_written_by_some_committed_baseline():
    written = {name for _, _, rows, _, _ in BASELINES for name in rows["metric"].unique()}
    summaries = ROOT.glob("results/*/summary.csv")  # a rank is a summary's (summary.csv only)
    written |= {name for path in summaries for name in pd.read_csv(path).get("metric", pd.Series()).unique()}
    assert set(METRICS.names()) - written == set()


STACK_SPEC = """
model: {d_model: 8, n_heads: 2, n_layers: 1}
encodings: [none, sinusoidal]
inputs: [{sentence: the cat saw the dog, permutations: all}]
probes: [[the cat saw the dog, the dog saw the cat]]
decodability: {sentences: 16, length: 4, vocabulary: 8}
"""


@pytest.mark.parametrize("family", [name for name in family_names() if metrics_of(name, "stack")])
def test_a_stack_run_of_one_family_writes_exactly_its_registered_metrics(family, write_spec, tmp_path):
    spec = write_spec(f"name: only_{family}\n{STACK_SPEC}metrics: [{family}]\n")
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    written = pd.read_csv(tmp_path / "out" / f"only_{family}" / "metrics.csv")["metric"]
    assert set(written) == {m.name for m in metrics_of(family, "stack")}


def test_docs_hold_the_registry_tables_verbatim():
    found = GENERATED.search(DOCS.read_text())
    assert found, "docs/metrics.md lost its generated tables' markers"
    assert found.group(1) == markdown_tables(), (
        "run `python -m orderlab.metrics.docs_table` and paste into docs/metrics.md"
    )


def test_every_metric_the_docs_tabulate_is_registered_and_every_registered_one_is_tabulated():
    first_cells = set(re.findall(r"^\| `([a-z_0-9]+)` \|", DOCS.read_text(), re.M))
    assert first_cells == {*METRICS.names(), *METRIC_FAMILIES.names()}


# A metric and its family, as a new file in orderlab/metrics/ would add them: one decorated function.
NEW_METRIC_MODULE = """
from orderlab.metrics import BOTH, family, row_metric

HALVES = family("halves", "how far the first half of the sentence's states move")


@row_metric("half_shift", HALVES, BOTH, "permutation × layer", "`‖H_l(PX)[:n/2] − H_l(X)[:n/2]‖ / ‖H_l(X)[:n/2]‖`")
def half_shift(c, layer, pooling):
    from orderlab.metrics import maths

    half = c.slots.shape[1] // 2
    moved = (c.output.hidden[layer][:, :half] - c.reference.hidden[layer][:, :half]).flatten(1).norm(dim=1)
    return maths.ratio(moved, c.reference.hidden[layer][0, :half].norm().expand_as(moved))
"""


@pytest.fixture
def new_metric(tmp_path, monkeypatch):
    """The module above imported from a temporary folder; its registrations undone afterwards."""
    (tmp_path / "halves_metric.py").write_text(NEW_METRIC_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("halves_metric")
    METRICS.unregister("half_shift")
    METRIC_FAMILIES.unregister("halves")
    sys.modules.pop("halves_metric")


def test_a_metric_added_as_one_decorated_function_is_seen_by_validate_run_the_estimate_and_the_docs(
    new_metric, write_spec, tmp_path
):
    spec = write_spec(
        "name: halves\nmodel: {d_model: 8, n_heads: 2, n_layers: 2}\nencodings: [none, sinusoidal]\n"
        "inputs: [{sentence: the cat saw a dog, permutations: all}]\nmetrics: [equivariance, halves]\n"
    )
    validated = CliRunner().invoke(app, ["validate", str(spec)])
    assert validated.exit_code == 0, validated.output
    ran = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "-q"])
    assert ran.exit_code == 0, ran.output
    rows = pd.read_csv(tmp_path / "out" / "halves" / "metrics.csv", keep_default_na=False)
    half = rows[rows["metric"] == "half_shift"]
    assert len(half) == 2 * 120 * 3  # encodings x orders x layers 0..2
    # Orders that keep the first two words in place move nothing in the first half's inputs without positions
    kept = half[(half["encoding"] == "none") & (half["layer"] == 0) & half["permutation"].str.startswith("0 1 ")]
    assert len(kept) == 6 and (kept["value"] == 0).all()
    assert (half[half["encoding"] == "sinusoidal"]["value"] > 0).sum() > 100
    assert set(half["verdict"]) >= {"invariant", "order-sensitive"}
    planned = sum(e.metrics_rows for e in estimate(load_spec(spec).spec, spec))
    assert planned == len(rows)
    assert "| `halves` | no | `half_shift` |" in markdown_tables()
    assert "| `half_shift` |" in markdown_tables()


def test_a_spec_naming_a_family_that_was_never_added_is_refused_with_the_registered_ones(write_spec):
    spec = write_spec("inputs: [{sentence: a b}]\nmetrics: [halves]\n")
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2
    assert "'halves'" in result.output and "'equivariance'" in result.output


@pytest.mark.parametrize(
    "declaration, message",
    [
        ({"layers": "every"}, "metric 'wobble': a computation on reorderings: layers='every'; expected one of"),
        ({"passing": "fine"}, "metric 'wobble': passing='fine'; expected one of 'equivariant', 'invariant'"),
        ({"reduction": "median"}, "metric 'wobble': reduction='median'; expected one of 'max'"),
        ({"compares": "sentences"}, "compares='sentences'; expected one of 'reorderings', 'probes'"),
        ({"needs": "a GPU"}, "needs='a GPU'; expected one of"),
        ({"pooling": "sum"}, "pooling='sum'; expected one of"),
        ({"flag": ("yes",)}, "flag=('yes',); expected two verdict words"),
    ],
)
def test_a_metric_declared_with_a_value_its_field_does_not_take_is_refused_at_registration(declaration, message):
    """A plug-in's typo was a KeyError at validate (layers), a verdict written as 'fine' (passing), or accepted
    (reduction); now the decorator refuses it, naming the metric and field, and registers nothing."""
    with pytest.raises(ValueError, match=re.escape(message)):
        row_metric("wobble", "invariance", BOTH, "permutation × layer", "doc", **declaration)(lambda *args: None)
    assert "wobble" not in METRICS
