"""A rate as every view shows it (report/shown.py share_text, the terminal's rate cell): its count, the ties left out,
and a rate whose every answer was a tie shown as no rate, never as a non-finite one."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from orderlab.metrics import RATE_COUNT, RATE_TIES
from orderlab.report.shown import share_text
from orderlab.report.terminal import rate_cell
from orderlab.vocabulary.verdict_words import NON_FINITE


@pytest.mark.parametrize(
    ("rate", "count", "ties", "shown"),
    [
        (0.25, 4, 1, "0.25 (1/4, 1 tie)"),
        (0.5, 2, None, "0.50 (1/2)"),
        (0.42, None, None, "0.42"),
        (math.nan, 0, 2, "- (2 ties)"),  # every answer a tie: no rate
        (math.nan, None, 1, "- (1 tie)"),
        (math.nan, 3, None, "nan !"),  # answers decided, yet no rate: non-finite
        (math.inf, 3, 1, "inf !"),
    ],
)
def test_a_rate_reads_with_its_count_and_ties(rate, count, ties, shown):
    assert share_text(rate, count, ties) == shown


def row(value: float, verdict: str, count: int, ties: int) -> pd.Series:
    return pd.Series({"zero": value, "zero verdict": verdict, RATE_COUNT: count, RATE_TIES: ties})


def test_the_terminal_shows_an_all_tie_rate_as_ties_and_a_non_finite_one_as_non_finite():
    assert rate_cell(row(math.nan, "", 0, 3), "zero").plain == "- (3 ties)"  # summary.csv leaves a rate unjudged
    assert rate_cell(row(math.nan, NON_FINITE, 3, 0), "zero").plain.startswith("nan")
    assert rate_cell(row(0.5, "", 2, 1), "zero").plain == "0.50 (1/2, 1 tie)"
