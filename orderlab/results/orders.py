"""orders.csv: every order metrics.csv measures, once per input, with how far it moves the words (core/displacement.py).

Written beside metrics.csv rather than as columns of it, so that metrics.csv (the committed baselines) keeps its
columns; it joins metrics.csv on (input, permutation), so any metric can be plotted against displacement. Made from
the finished metrics.csv, so a whole run and its merged shards write the same file. A baseline from before this file
existed has none, and `check` does not ask for one (baseline_diff.DERIVED).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from orderlab.core import displacement

ORDERS = "orders"  # the table's name: orders.csv
KEY = ["input", "permutation"]
COLUMNS = [*KEY, "permuted", "words", *displacement.MEASURES]
# Only where a spec supplies a parse of some input (blank for the others), so other results keep their columns.
DEPENDENCY = "dependency_displacement"
REORDERING = "permutation"  # metrics.csv's case of a reordering's rows (probes are the other)
CHUNK_ROWS = 200_000  # metrics.csv rows held at once: memory stays flat however long the run was


def orders_table(metrics: Path, parses: Mapping[str, Sequence[int]] | None = None) -> pd.DataFrame | None:
    """The distinct (input, permutation) of metrics.csv's reordering rows in first-seen order, with their
    displacement, and their dependency displacement where `parses` (input -> CoNLL heads) has the input's parse;
    None where it has none (probes only, or a corpus run, whose rows have no `case`)."""
    header = pd.read_csv(metrics, nrows=0).columns
    if not {"case", *KEY, "permuted"} <= set(header):
        return None
    seen: dict[tuple[str, str], str] = {}
    columns = ["case", *KEY, "permuted"]
    for chunk in pd.read_csv(metrics, usecols=columns, dtype=str, keep_default_na=False, chunksize=CHUNK_ROWS):
        reorderings = chunk[chunk["case"] == REORDERING]
        for sentence, label, permuted in reorderings[[*KEY, "permuted"]].itertuples(index=False):
            seen.setdefault((sentence, label), permuted)
    if not seen:
        return None
    rows = []
    for (sentence, label), permuted in seen.items():
        p = tuple(int(slot) for slot in label.split())
        heads = (parses or {}).get(sentence)
        dependency = [displacement.dependency_displacement(p, heads) if heads else float("nan")] if parses else []
        rows.append((sentence, label, permuted, len(p), *displacement.measures(p), *dependency))
    return pd.DataFrame(rows, columns=COLUMNS + [DEPENDENCY] * bool(parses))
