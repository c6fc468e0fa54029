"""metrics.csv's rows of one example's orders (measure/task_measure.order_rows): per order its predicted label, margin
and gold probability as Python floats, the label named by id2label, a tie or non-finite answer said in the verdict and
a non-finite one predicting nothing; the permuted words of each side."""

from __future__ import annotations

import math

import numpy as np

from orderlab.core.labelled_data import Example
from orderlab.measure.task_heads import Answers
from orderlab.measure.task_measure import COLUMNS, Orders, order_rows
from orderlab.metrics.task_predictions import GOLD_PROBABILITY, LABEL_MARGIN, PREDICTED_LABEL
from orderlab.vocabulary.verdict_words import NON_FINITE, TIE


def test_each_order_gives_its_three_answers_named_and_verdicted():
    example = Example("data.jsonl:3", ["a", "b", "c"], ["x", "y"], "yes", "g")
    orders = Orders([(0, 1, 2), (2, 1, 0), (1, 0, 2)], [(0, 1), (1, 0), None])
    found = Answers(predicted=np.array([1, 0, 1]), margin=np.array([0.5, 1e-9, np.nan]),
                    gold_probability=np.array([0.75, 0.5, np.nan]), tied=np.array([False, True, False]),
                    finite=np.array([True, True, False]))  # fmt: skip
    rows = order_rows(example, 3, orders, found, "trained", ["no", "yes"])
    table = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    assert [(r["permutation"], r["pair_permutation"], r["permuted"], r["permuted_pair"]) for r in table[::3]] == [
        ("0 1 2", "0 1", "a b c", "x y"), ("2 1 0", "1 0", "c b a", "y x"), ("1 0 2", "", "b a c", "x y")]  # fmt: skip
    assert [r["metric"] for r in table] == [PREDICTED_LABEL, LABEL_MARGIN, GOLD_PROBABILITY] * 3
    assert [r["predicted"] for r in table] == ["yes"] * 3 + ["no"] * 3 + [""] * 3
    assert [r["verdict"] for r in table] == [""] * 3 + [TIE] * 3 + [NON_FINITE] * 3
    values = [r["value"] for r in table]
    assert all(type(value) is float for value in values)
    assert values[:6] == [1.0, 0.5, 0.75, 0.0, 1e-9, 0.5]
    assert all(math.isnan(value) for value in values[6:])  # a non-finite answer predicts nothing
    assert {(r["example"], r["input"], r["pair"], r["label"], r["group"], r["encoding"]) for r in table} == {
        (3, "a b c", "x y", "yes", "g", "trained")}  # fmt: skip


def test_an_unlabelled_example_has_no_gold_probability_rows():
    example = Example("examples[0]", ["a", "b"], None, None, None)
    found = Answers(np.array([0, 1]), np.array([2.0, 3.0]), np.full(2, np.nan), np.zeros(2, bool), np.ones(2, bool))
    rows = order_rows(example, 0, Orders([(0, 1), (1, 0)], [None, None]), found, "trained", ["no", "yes"])
    assert [(row[COLUMNS.index("metric")], row[COLUMNS.index("value")]) for row in rows] == [
        (PREDICTED_LABEL, 0.0), (LABEL_MARGIN, 2.0), (PREDICTED_LABEL, 1.0), (LABEL_MARGIN, 3.0)]  # fmt: skip
