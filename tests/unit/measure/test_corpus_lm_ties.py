"""Corpus mode's 'original preferred' through the tie rule (measure/corpus_lm.py): a line whose original's margin
over its best shuffle lies within the round-off of its log P is a tie, left out of the share and its count and
counted beside it; a margin above the line is decided as before."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orderlab.core.corpustext import CorpusLine
from orderlab.measure.corpus import Plan
from orderlab.measure.corpus_lm import sentence_rows, summary_rows
from orderlab.measure.verdicts import FLOOR, SAFETY, eps

LINES = [CorpusLine(n, s, s.split()) for n, s in ((1, "a b c"), (2, "d e f"), (3, "g h i"))]
# each line with 2 shuffles (plan order: the line, then its shuffles)
PLAN = Plan(LINES, [[(1, 0, 2), (2, 1, 0)]] * 3, np.repeat([0, 1, 2], 3), np.tile([0, 1, 2], 3))
ROUND_OFF = np.array([1e-6, 1e-6, 1e-6])  # each original's measured round-off
LINE = SAFETY * 1e-6  # the tie line: 16 x the round-off (above 16 x eps64 x |log P| at these sizes)


def scores(margins: list[float]) -> np.ndarray:
    """Per line, original -20 and shuffles -25 and -20 - margin (the best shuffle `margin` below the original)."""
    return np.array([value for margin in margins for value in (-20.0, -25.0, -20.0 - margin)])


def test_a_margin_within_round_off_is_a_tie_left_out_of_the_share():
    assert FLOOR * eps("float64") * 20 < LINE  # the measured round-off draws the line here, not the floor
    margins = [0.5 * LINE, -0.5 * LINE, 2 * LINE]  # line 1 just ahead, line 2 just behind: ties; line 3 decided
    rows = sentence_rows(PLAN, scores(margins), [2, 2, 2], "seeded", ROUND_OFF, "float64")
    assert rows["tie"].tolist() == [1, 1, 0]
    assert rows["original_preferred"].tolist() == [1, 0, 1]  # as measured: >= every shuffle
    (summary,) = summary_rows(rows, ["seeded"]).query("length == 'all'").to_dict("records")
    assert (summary["sentences"], summary["ties"], summary["original_preferred"]) == (3, 2, 1)
    assert summary["original_preferred_rate"] == 1.0  # 1 of the 1 decided line


def test_margins_beyond_round_off_are_decided_as_before():
    rows = sentence_rows(PLAN, scores([2 * LINE, -2 * LINE, 1.0]), [2, 2, 2], "seeded", ROUND_OFF, "float64")
    assert rows["tie"].tolist() == [0, 0, 0]
    (summary,) = summary_rows(rows, ["seeded"]).query("length == 'all'").to_dict("records")
    assert (summary["ties"], summary["original_preferred"]) == (0, 2)
    assert summary["original_preferred_rate"] == pytest.approx(2 / 3)


def test_every_line_tied_leaves_no_share():
    rows = sentence_rows(PLAN, scores([0.0, 0.0, 0.0]), [2, 2, 2], "seeded", ROUND_OFF, "float64")
    (summary,) = summary_rows(rows, ["seeded"]).query("length == 'all'").to_dict("records")
    assert summary["ties"] == 3 and math.isnan(summary["original_preferred_rate"])
