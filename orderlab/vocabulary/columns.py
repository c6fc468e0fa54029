"""The columns of metrics.csv and summary.csv and the words in their cells that are not verdicts: case names, the
`weights` column of a trained spec, the first-layer column, the interval bounds. Never imports torch.
"""

from __future__ import annotations

import pandas as pd

from orderlab.spec.schema import Spec

KEY_COLUMNS = ["case", "input", "encoding", "permutation", "permuted", "layer", "head", "metric"]
COLUMNS = [*KEY_COLUMNS, "value", "verdict"]
# After the value: what a task or probe row is measured against, blank on every other row. Written only by specs
# that have such rows (a train: block or the decodability probe), so other results keep their columns.
DETAIL_COLUMNS = ["length", "slot", "chance"]  # sentence length; the probe's slot (per-slot rows); chance accuracy
SUMMARY_COLUMNS = [*KEY_COLUMNS, "statistic", "value", "verdict"]
STATISTICS = ("max", "mean")  # what a summary row reduces over the permutations


def detail_number(value: float) -> str:
    """A float of DETAIL_COLUMNS as metrics.csv writes its floats (%.6e): they share a column with blanks."""
    return f"{value:.6e}"


# summary.csv's '<encoding> first layer': the first layer (a whole number, 0 = the input) at which the row is
# order-sensitive; empty where no layer is (the verdict column says whether it was judged: 'invariant' at every layer,
# or a metric not judged by order). One type in every summary, whatever the family or sweep: docs/outputs.md.
FIRST_LAYER = "first layer"


def first_layer_column(encoding: str) -> str:
    return f"{encoding} {FIRST_LAYER}"


def condition_column(encoding: str, column: str) -> str:
    """One condition's own figure of a column shared by all (a rate's count or ties, where the conditions' differ)."""
    return f"{encoding} {column}"


def all_probes(count: int) -> str:
    """summary.csv's subject of a probe rate's row over every probe ('all 4 probes'): the row its figure bar shows."""
    return f"all {count} probes"


def earliest(layers: list[str]) -> str:
    """The earliest of several first layers (a seed sweep's cell: where any seed shows order), blank if none does."""
    shown = [int(layer) for layer in layers if layer.isdigit()]
    return str(min(shown)) if shown else ""


LOWER, UPPER = "lower", "upper"  # a seed sweep's '<encoding> lower' / '<encoding> upper': its t interval

# What a trained spec adds: the `weights` column (trained beside untrained) and task accuracy rows.
WEIGHTS = "weights"  # the column: which stacks a row measures
TRAINED, UNTRAINED = "trained", "untrained"
TASK_CASE = "task"
TRAINED_LENGTH, UNTRAINED_LENGTH = "trained length", "untrained length"
CHANCE = "chance"  # summary.csv's column on a task row: the length's chance accuracy (as metrics.csv's)


def task_subject(spec: Spec, n: int) -> str:
    """The `input` of a task accuracy row: which task, how many sentences, how long."""
    assert spec.train is not None
    return f"{spec.train.task}: {spec.train.test_sentences} sentences of {n:>3} words"


def tested_length(subject: str) -> int:
    """The sentence length a task accuracy row's `input` (task_subject) names."""
    return int(subject.rsplit(" of ", 1)[1].split()[0])


# attention.csv, after any swept columns. reordering: 0 for the input as written, k for the k-th shown reordering.
MAP_COLUMNS = ["encoding", "reordering", "layer", "head", "query", "key", "value"]


def sort_maps(table: pd.DataFrame, leading: list[str] | None = None) -> pd.DataFrame:
    """Rows by the `leading` columns (a sweep's), encoding, layer, reordering, head, query, key."""
    order = [*(leading or []), "encoding", "layer", "reordering", "head", "query", "key"]
    return table.sort_values(order, kind="mergesort", ignore_index=True)
