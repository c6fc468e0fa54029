"""How a summary row's cell reads, in every view alike: the terminal, the figures, the HTML report and a notebook's
`_repr_html_` all take their marks, shares and first layers from here, so that no view says more (or other) than
summary.csv holds. Text only: no rich, no matplotlib, no torch.

A new verdict word is one line of MARKS (and its legend entry beside it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from orderlab.metrics import RATE_COUNT, RATE_TIES
from orderlab.vocabulary.columns import condition_column

if TYPE_CHECKING:
    import pandas as pd
from orderlab.vocabulary.verdict_words import (
    DISTINGUISHABLE,
    INDISTINGUISHABLE,
    NON_FINITE,
    ORDER_SENSITIVE,
    PASSING_WORDS,
    TIE,
    UNRESOLVED,
)


class Mark(NamedTuple):
    """A verdict word's mark, how its value is shown beside it, and its tone (the terminal's colour, the HTML's CSS
    class: ok, bad, nonfinite, open, or '' for none)."""

    glyph: str
    value_shown: bool  # False: the value is round-off, written as 0 and shown '≈0'
    tone: str


MARKS: dict[str, Mark] = {
    **{word: Mark("✓", False, "ok") for word in PASSING_WORDS},  # within the run's measured round-off
    ORDER_SENSITIVE: Mark("✗", True, "bad"),
    NON_FINITE: Mark("!", True, "nonfinite"),
    DISTINGUISHABLE: Mark("≠", True, ""),  # a pair of different words told apart (no order verdict)
    UNRESOLVED: Mark("?", True, "open"),  # within a round-off line wider than the resolution: kept as measured
    TIE: Mark("~", True, ""),  # a 0/1 answer whose margin lies within its round-off: neither answer
}
MARKS[INDISTINGUISHABLE] = Mark("=", False, "")  # ... not told apart: a pair's passing word, unmarked by order


def tone(verdict: str) -> str:
    """A verdict's tone (Mark.tone); '' for a word without a mark."""
    mark = MARKS.get(verdict)
    return "" if mark is None else mark.tone


def verdict_text(value: float, verdict: str) -> str:
    """'≈0 ✓' within round-off, '6.9e-02 ✗' order-sensitive, 'nan !' non-finite, '9.8e-02 ≠' / '≈0 =' for a pair of
    different words; a value without a verdict word as itself ('6.9e-02')."""
    mark = MARKS.get(verdict)
    if verdict == NON_FINITE or (mark is None and not math.isfinite(value)):
        return f"{value} !"
    if mark is None:
        return f"{value:.1e}"
    return f"{value:.1e} {mark.glyph}" if mark.value_shown else f"≈0 {mark.glyph}"


def share_text(rate: float, count: int | None = None, ties: int | None = None) -> str:
    """A rate as a person reads it, '0.42 (10/24)': how many of how many, and the answers left out as ties (within
    their round-off) where there are some, '0.25 (1/4, 1 tie)'; '0.42' without a count; '- (2 ties)' where every
    answer was a tie (no rate, and nothing non-finite); 'nan !'."""
    tied = [f"{ties} tie{'s' if ties > 1 else ''}"] if ties else []
    if math.isnan(rate) and tied and not count:
        return f"- ({tied[0]})"
    if not math.isfinite(rate):
        return f"{rate} !"
    told = ([] if count is None else [f"{round(rate * count)}/{count}"]) + tied
    return f"{rate:.2f}" + (f" ({', '.join(told)})" if told else "")


def rate_counts(row: Mapping[str, Any] | pd.Series, name: str) -> tuple[Any, Any]:
    """One condition's count and ties of a summary row's rate: its own columns where summary.csv splits them (the
    conditions' differ: a tie under one condition's round-off only), else the row's RATE_COUNT and RATE_TIES."""
    count, ties = (condition_column(name, column) for column in (RATE_COUNT, RATE_TIES))
    return (row[count] if count in row else row.get(RATE_COUNT)), (row[ties] if ties in row else row.get(RATE_TIES))


def share_of(probes: bool) -> str:
    """What a rate is a share of: a probe's answers (a minimal pair each), or a sentence's distinct reorderings."""
    return "probe pairs" if probes else "distinct reorderings"


def first_layer_text(layer: object) -> str:
    """summary.csv's first-layer cell as every view shows it: the layer as a whole number ('2'), or '-' where no layer
    is order-sensitive or none is judged (the cell is empty in summary.csv; 'never' in results written before)."""
    if layer is None or (isinstance(layer, float) and math.isnan(layer)) or str(layer) in ("", "<NA>", "never"):
        return "-"
    try:
        return str(int(float(str(layer))))
    except (ValueError, OverflowError):  # a hand-edited cell: shown as it is
        return str(layer)
