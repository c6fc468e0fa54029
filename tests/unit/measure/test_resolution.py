"""Resolution, escalation and ties (issue 39): what a verdict may say where round-off is coarse."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from orderlab.errors import OrderlabError
from orderlab.measure.escalation import (
    escalates,
    reach_note,
    reached_lines,
    resolution_record,
    unresolvable,
    widest_lines,
)
from orderlab.measure.replay import ChunkRecord
from orderlab.measure.rows import RowCollector
from orderlab.measure.summaries import finish_parts, finish_summary, first_layers, summarize
from orderlab.measure.verdicts import DEFAULT_RESOLUTION, canonical, ties, verdicts, without_order
from orderlab.metrics import RATE_COUNT, RATE_TIES
from orderlab.spec.load import load_spec_data
from orderlab.vocabulary.columns import earliest, first_layer_column
from orderlab.vocabulary.digest import Judged, Reach, Summary
from orderlab.vocabulary.verdict_words import ORDER_SENSITIVE, PASSING_WORDS, TIE, UNRESOLVED


def test_a_value_within_a_line_wider_than_the_resolution_is_unresolved_and_kept():
    metrics = np.array(["prefix_invariance"] * 3)
    values = np.array([0.085, 0.0, 0.2])
    lines = np.array([0.12, 0.12, 0.12])  # bfloat16's line: wider than the default resolution
    judged = verdicts(metrics, values, lines)
    assert list(judged) == [UNRESOLVED, UNRESOLVED, ORDER_SENSITIVE]
    assert list(canonical(values, judged)) == [0.085, 0.0, 0.2]  # not written as 0
    assert list(verdicts(metrics, values, lines, resolution=0.5)) == ["invariant", "invariant", ORDER_SENSITIVE]
    assert without_order(judged)[0] == UNRESOLVED  # a pair of different words: neither told apart nor not


@given(st.floats(0, 1), st.floats(1e-8, 1), st.floats(1e-6, 1))
def test_a_passing_word_only_within_a_line_no_wider_than_the_resolution(value, line, resolution):
    judged = verdicts(np.array(["equivariance"]), np.array([value]), np.array([line]), resolution)[0]
    assert (judged in PASSING_WORDS) == (value <= line <= resolution)
    assert (judged == UNRESOLVED) == (value <= line and line > resolution)
    assert (judged == ORDER_SENSITIVE) == (value > line)


def test_a_margin_within_its_round_off_is_a_tie():
    margins = np.array([0.0, 1e-3, 0.5, math.nan])
    tied = ties(margins, 1e-4, np.full(4, 30.0), "float32")  # 16 x 1e-4 = 1.6e-3 > 16 x eps x 30
    assert list(tied) == [True, True, False, False]
    assert not ties(np.array([1e-3]), math.nan, np.array([30.0]), "float32")[0]  # no measured round-off: no tie


def test_first_layer_is_empty_where_no_layer_is_order_sensitive_and_the_verdict_says_unresolved():
    rows = pd.DataFrame({
        "case": "permutation", "subject": "s", "metric": "prefix_invariance", "encoding": ["a"] * 3 + ["b"] * 3,
        "layer": [0, 1, 2] * 2, "verdict": ["invariant", UNRESOLVED, UNRESOLVED, "invariant", UNRESOLVED,
                                             ORDER_SENSITIVE],
    })  # fmt: skip
    firsts = first_layers(rows, ["case", "subject", "metric"])
    assert firsts.loc[("permutation", "s", "prefix_invariance"), "a"] == ""  # one type: a whole layer or empty
    assert firsts.loc[("permutation", "s", "prefix_invariance"), "b"] == "2"
    assert earliest(["", "3"]) == "3" and earliest(["", ""]) == ""
    worst = rows.assign(input="s", permuted="s", head=pd.array([None] * 6, dtype="Int64"), value=0.05)
    summary = summarize(worst.drop(columns="subject"), ["a", "b"])
    assert summary.loc[0, "a verdict"] == UNRESOLVED and summary.loc[0, first_layer_column("a")] == ""
    assert summary.loc[0, "b verdict"] == ORDER_SENSITIVE and summary.loc[0, first_layer_column("b")] == "2"


def test_the_summary_shows_an_order_sensitive_row_over_a_larger_unresolved_one():
    worst = pd.DataFrame({
        "case": "permutation", "input": "s", "permuted": "s", "encoding": "a", "metric": "prefix_invariance",
        "layer": [1, 2, 3], "head": pd.array([None] * 3, dtype="Int64"), "value": [0.0, 0.08, 0.05],
        "verdict": ["invariant", UNRESOLVED, ORDER_SENSITIVE],
    })  # fmt: skip
    summary = summarize(worst, ["a"])
    assert summary.loc[0, "a verdict"] == ORDER_SENSITIVE and summary.loc[0, "a"] == 0.05
    unresolved = summarize(worst.iloc[:2], ["a"])
    assert unresolved.loc[0, "a verdict"] == UNRESOLVED and unresolved.loc[0, "a"] == 0.08


def test_a_rate_leaves_ties_out_and_counts_them():
    worst = pd.DataFrame({
        "case": "probe", "input": ["a", "c", "e"], "permuted": ["b", "d", "f"], "encoding": "x",
        "metric": "minimal_pair_preferred", "layer": 2, "head": pd.array([None] * 3, dtype="Int64"),
        "value": [1.0, 0.0, 1.0], "verdict": ["", "", TIE],
    })  # fmt: skip
    summary = summarize(worst, ["x"])
    over = summary[summary["case"] == "probes"].iloc[0]
    assert over["x"] == 0.5 and over[RATE_COUNT] == 2 and over[RATE_TIES] == 1
    assert summary.loc[summary["subject"] == "e vs f", RATE_TIES].iloc[0] == 1


def test_escalation_asks_for_a_finer_twin_only_where_the_line_is_too_wide():
    coarse = {(3, None, "prefix_invariance"): 0.01}  # 16 x 0.01 = 0.16
    fine = {(3, None, "prefix_invariance"): 1e-6}
    assert widest_lines(coarse, "bfloat16") == {3: pytest.approx(0.16)}
    assert escalates(coarse, "bfloat16", DEFAULT_RESOLUTION, True)
    assert not escalates(coarse, "bfloat16", DEFAULT_RESOLUTION, False)  # the spec opts out
    assert not escalates(coarse, "float64", DEFAULT_RESOLUTION, True)  # nothing finer to ask
    assert not escalates(fine, "float32", DEFAULT_RESOLUTION, True)
    assert not escalates({(3, None, "logprob"): 1.0}, "float32", DEFAULT_RESOLUTION, True)  # not judged by round-off
    reach = Reach()
    reach.widen(widest_lines(coarse, "bfloat16"), "bfloat16")
    assert "effects above 1.6e-01 resolved (bfloat16, widest line at layer 3)" in reach_note(
        "bfloat16", 1e-2, {"zero": reach}
    )
    assert resolution_record(1e-2, {"zero": Reach(1e-5, 3, "float32")}) is None  # nothing to say


def test_the_resolution_is_a_spec_field_between_0_and_1(tmp_path):
    spec = {"name": "r", "inputs": [{"sentence": "the dog bit the man", "permutations": "all"}]}
    assert load_spec_data(spec, tmp_path).spec.resolution == DEFAULT_RESOLUTION == 1e-2
    assert load_spec_data(spec | {"resolution": 1e-3, "escalate": False}, tmp_path).spec.escalate is False
    with pytest.raises(OrderlabError, match="resolution"):
        load_spec_data(spec | {"resolution": 0}, tmp_path)


def test_only_the_orders_with_a_value_within_a_line_wider_than_the_resolution_go_to_the_twin():
    wide = unresolvable({(2, None, "prefix_invariance"): 0.01, (1, None, "prefix_invariance"): 1e-6}, "bfloat16",
                        DEFAULT_RESOLUTION)  # fmt: skip
    assert wide == {(2, None, "prefix_invariance"): pytest.approx(0.16)}  # layer 1's line resolves
    record = ChunkRecord()
    record.add("prefix_invariance", 1, torch.tensor([0.0, 0.0, 0.0, 0.0]))  # resolved: a narrow line
    record.add("prefix_invariance", 2, torch.tensor([0.0, 0.3, 0.1, math.nan]))  # within 0.16: orders 0 and 2
    record.add_where(torch.tensor([False, True, False, True]), "permutation_preferred", 2, torch.tensor([1.0] * 4))
    again = record.unresolved(wide, 4)
    assert again.tolist() == [True, False, True, False]  # NaN is non-finite, not unresolved
    rows = RowCollector("permutation", "s", "a", ["p1", "p3"], ["x", "y"])
    record.replay(rows, ~again)
    table = rows.frame()
    assert table.groupby("metric")["permutation"].apply(list).to_dict() == {
        "prefix_invariance": ["p1", "p3", "p1", "p3"], "permutation_preferred": ["p1", "p3"]
    }  # fmt: skip
    kept = table.loc[(table["layer"] == 2) & (table["metric"] == "prefix_invariance"), "value"]
    assert kept.iloc[0] == pytest.approx(0.3) and math.isnan(kept.iloc[1])  # orders 1 and 3, as measured


def summary_of(values: dict[tuple[int, ...], float]) -> Summary:
    summary = Summary("permutation", "a b c", "zero", ["a", "b", "c"])
    for order, value in values.items():
        summary.fold((2, None, "prefix_invariance"), value, order, np.array([value]), [order])
    return summary


def test_orders_judged_in_two_precisions_finish_as_one_summary():
    coarse_noise = {(2, None, "prefix_invariance"): 0.01}  # bfloat16's line, 0.16: too wide
    fine_noise = {(2, None, "prefix_invariance"): 1e-6}  # float32's: 1.6e-5
    kept = Judged(summary_of({(2, 1, 0): 0.4}), coarse_noise, "bfloat16")  # clears the wide line
    again = Judged(summary_of({(0, 2, 1): 0.05, (1, 0, 2): 0.0}), fine_noise, "float32")  # resolved by float32
    rows, worst, judged = finish_parts([kept, again])
    assert judged == 0
    (top,) = worst.itertuples()
    assert (top.value, top.verdict, top.permutation, top.count) == (0.4, ORDER_SENSITIVE, "2 1 0", 3)
    assert top.mean == pytest.approx(0.45 / 3)  # exact, over both precisions' orders
    mean = rows[rows["statistic"] == "mean"].iloc[0]
    assert mean["verdict"] == ORDER_SENSITIVE  # judged by float32's line: bfloat16's is too wide
    alone = finish_parts([again, Judged(Summary("permutation", "a b c", "zero", ["a", "b", "c"]), {}, "float32")])
    assert alone[0].equals(finish_summary(again.summary, fine_noise, "float32")[0])  # one part: as it always was
    lines, judged_in = reached_lines(coarse_noise, "bfloat16", DEFAULT_RESOLUTION, (fine_noise, "float32"))
    assert lines == {2: pytest.approx(1.6e-5)} and judged_in == "float32"  # the twin judged what bfloat16 could not
