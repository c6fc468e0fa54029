"""The summary rows of a run: a sentence's running summary finished against its round-off (metrics.csv's summary
rows, the max rows summary.csv reduces), and summary.csv's wide view of them, per combination and over seeds.

The one place both are made, for a whole run and for `orderlab merge` of shards alike (results/merge.py), so a
merged run's summary comes out as the whole run's. Torch-free at import, like `orderlab merge`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from orderlab.core.minimal_pair_file import PAIR_GROUP_COLUMNS, PHENOMENON_COLUMN, UID_COLUMN
from orderlab.core.pair_relations import RELATION_COLUMN
from orderlab.measure.intervals import over_seeds
from orderlab.measure.noise import judge
from orderlab.measure.verdicts import canonical, round_off_lines, verdicts
from orderlab.metrics import (
    METRICS,
    ORIGINAL_RANK,
    PERMUTATION_PREFERRED,
    RATE_COUNT,
    RATE_TIES,
    TASK_ACCURACY,
    per_permutation_mean,
    reduction_of,
)
from orderlab.spec.fields import RESOLUTION
from orderlab.spec.sweep import SEED
from orderlab.vocabulary.columns import (
    CHANCE,
    SUMMARY_COLUMNS,
    TASK_CASE,
    all_probes,
    condition_column,
    first_layer_column,
)
from orderlab.vocabulary.digest import Judged, NoiseKey, Summary
from orderlab.vocabulary.verdict_words import NON_FINITE, ORDER_SENSITIVE, PASSING_WORDS, TIE, UNRESOLVED


def finish_summary(
    summary: Summary, noise: dict[NoiseKey, float], dtype: str, resolution: float = RESOLUTION
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """A sentence's summary judged against its round-off: (its rows, sorted for metrics.csv; its max rows, each
    with the `mean` and `count` of its permutations, for summary.csv; how many came out non-finite). The one place
    a summary is finished, for a whole run and for a merge of shards alike."""
    table = summary.frame()
    judge(table, noise, dtype, resolution)
    table = none_decided(table)
    judged = int((table["verdict"] == NON_FINITE).sum())
    summary.name_first_where_round_off(table)
    order = ["layer", "head", "metric", "statistic"]
    rows = table.sort_values(order, kind="mergesort", na_position="first")[SUMMARY_COLUMNS]
    means = table.loc[table["statistic"] == "mean", "value"].to_numpy()  # frame() writes each max before its mean
    return rows, table[table["statistic"] == "max"].assign(mean=means), judged


def finish_parts(parts: list[Judged], resolution: float = RESOLUTION) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """finish_summary of a sentence whose orders were judged in two precisions (escalation per order: the run's for
    the orders it resolved, the twin's for the others): each part judged by its own round-off, then per layer, head
    and metric the worst max row of either (order-sensitive or non-finite above unresolved above passing, then the
    larger value), and the exact mean, count and ties over both, the mean judged by the run's line where that is no
    wider than the resolution, else by the twin's. One part with orders: that part's finish_summary as it is."""
    measured = [part for part in parts if part.summary.worst] or parts[:1]
    if len(measured) == 1:
        (part,) = measured
        return finish_summary(part.summary, part.noise, part.dtype, resolution)
    coarse, fine = measured
    maxima = []
    for part in measured:
        table = part.summary.frame()
        judge(table, part.noise, part.dtype, resolution)
        part.summary.name_first_where_round_off(table)
        maxima.append(table[table["statistic"] == "max"])
    both = pd.concat(maxima, ignore_index=True)
    rank = np.select([both["verdict"] == UNRESOLVED, both["verdict"].isin([ORDER_SENSITIVE, NON_FINITE])], [1, 2], 0)
    # the larger value wins (NaN above any), then the order first in label order, as one running max keeps it
    both = both.assign(rank=rank, nan=both["value"].isna(), label=both["permutation"])
    both = both.sort_values(["rank", "nan", "value", "label"], ascending=[False, False, False, True], kind="mergesort")
    worst = both.drop_duplicates(["layer", "head", "metric"]).drop(columns=["rank", "nan", "label"])
    fixed = coarse.summary.fixed
    together = Summary(fixed["case"], fixed["input"], fixed["encoding"], coarse.summary.words)
    together.absorb(coarse.summary)
    together.absorb(fine.summary)
    table = together.frame()
    means = table[table["statistic"] == "mean"].copy()
    lines = {part.dtype: stat_lines(means, part.noise, part.dtype) for part in measured}
    line = np.where(lines[coarse.dtype] <= resolution, lines[coarse.dtype], lines[fine.dtype])
    means["verdict"] = verdicts(means["metric"].to_numpy(), means["value"].to_numpy(), line, resolution)
    means["value"] = canonical(means["value"].to_numpy(), means["verdict"].to_numpy())
    totals = means.set_index(stat_key(means))
    at = stat_key(worst)
    worst = none_decided(worst.assign(**{column: totals.loc[at, column].to_numpy() for column in ("count", RATE_TIES)}))
    means = none_decided(means)
    table = pd.concat([worst, means], ignore_index=True)
    order = ["layer", "head", "metric", "statistic"]
    rows = table.sort_values(order, kind="mergesort", na_position="first")[SUMMARY_COLUMNS]
    judged = int((table["verdict"] == NON_FINITE).sum())
    return rows, worst.assign(mean=totals.loc[at, "value"].to_numpy()).reset_index(drop=True), judged


def none_decided(table: pd.DataFrame) -> pd.DataFrame:
    """The summary rows of a rate whose every answer was a tie read `tie`, as each answer's row does in metrics.csv
    per permutation: none decided, its mean is 0/0, not a measurement gone non-finite (which failed the run)."""
    alone = (table["metric"].map(reduction_of) == "rate") & (table["count"] == 0) & (table[RATE_TIES] > 0)
    return table.assign(verdict=table["verdict"].where(~alone, TIE))


def stat_key(table: pd.DataFrame) -> pd.Index:
    """Each summary row's (layer, head, metric) as one label (a head may be NA, which pandas will not join on)."""
    cells = zip(table["layer"], table["head"], table["metric"], strict=True)
    return pd.Index([f"{layer}|{'' if pd.isna(head) else int(head)}|{metric}" for layer, head, metric in cells])


def stat_lines(table: pd.DataFrame, noise: dict[NoiseKey, float], dtype: str) -> np.ndarray:
    """Each summary row's round-off line under `noise` in `dtype` (NaN where none was measured)."""
    heads = [None if pd.isna(head) else int(head) for head in table["head"]]
    sources = [METRICS.get(m).noise_source if m in METRICS else m for m in table["metric"]]
    keys = zip(table["layer"].astype(int), heads, sources, strict=True)
    return round_off_lines(np.array([noise.get(k, math.nan) for k in keys], dtype=np.float64), dtype)


def summarize(table: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """Wide view: per (case, subject, metric), each encoding's value as the registry reduces the metric, and its
    verdict: the worst (largest) value, or for a mean or a rate the largest mean over permutations of any layer and
    head (table's `mean` column), with the worst value's verdict. A table with a rate metric gets RATE_COUNT; one
    with a pair that is not a reordering, each pair's relation (RELATION_COLUMN, blank on other rows)."""
    subject = np.where(table["case"] == "probe", table["input"] + " vs " + table["permuted"], table["input"])
    shown = table.assign(subject=subject, value=summary_values(table))
    relation = [RELATION_COLUMN] if RELATION_COLUMN in table.columns else []
    if relation:
        shown[RELATION_COLUMN] = shown[RELATION_COLUMN].fillna("")
    index = ["case", "subject", *relation, "metric"]
    # An unresolved row (a value within a line wider than the resolution) ranks above every passing row and below
    # every order-sensitive or non-finite one, whatever its value: it is neither answer.
    rank = np.select([shown["verdict"] == UNRESOLVED, shown["verdict"].isin([ORDER_SENSITIVE, NON_FINITE])], [1, 2], 0)
    ordered = shown.assign(rank=rank).sort_values(["rank", "value"], kind="mergesort", na_position="last")
    # tail(1), not last(): last() skips NaN column by column and would pair a finite value with a NaN row's verdict.
    worst = ordered.groupby([*index, "encoding"]).tail(1)
    wide = worst.pivot(index=index, columns="encoding", values=["value", "verdict"])
    columns = {name: wide[("value", name)].astype(float) for name in encodings}
    columns |= {f"{name} verdict": wide[("verdict", name)] for name in encodings}
    firsts = first_layers(shown, index).reindex(index=wide.index, columns=encodings).astype(object).fillna("")
    columns |= {first_layer_column(name): firsts[name] for name in encodings}
    summary = pd.DataFrame(columns).reset_index()
    rates = worst[worst["metric"].map(reduction_of) == "rate"]
    if rates.empty:
        return summary
    summary = unjudged_rates(summary, encodings)
    # A probe's answer is one value (no permutations to count): a run of probes alone has no `count` column.
    counted = rates if "count" in rates.columns else rates.assign(count=np.nan)
    counts = counted.groupby(["case", "subject", "metric"])["count"].max().rename(RATE_COUNT)
    # A rate's answers within round-off (ties) are out of its rate and count; a probe's tie is its own answer.
    tied = counted.get(RATE_TIES, pd.Series(np.nan, index=counted.index))
    counted = counted.assign(
        **{RATE_TIES: tied.where(rates["case"] != "probe", (rates["verdict"] == TIE).astype(float))}
    )
    keys = ["case", "subject", "metric"]
    ties = counted.groupby(keys)[RATE_TIES].max()
    summary = summary.join(counts, on=keys).join(ties, on=keys)
    by_condition = counted.groupby([*keys, "encoding"])[["count", RATE_TIES]].max().unstack("encoding")
    for name in encodings:
        for column, source in ((RATE_COUNT, "count"), (RATE_TIES, RATE_TIES)):
            each = by_condition.get((source, name), pd.Series(np.nan, index=by_condition.index))
            summary = summary.join(each.rename(condition_column(name, column)), on=keys)
    over_probes = probe_rates(rates[rates["case"] == "probe"], encodings)
    summary = pd.concat([summary, over_probes], ignore_index=True).astype({RATE_COUNT: "Int64", RATE_TIES: "Int64"})
    summary = summary.fillna({first_layer_column(name): "" for name in encodings})  # the probes' rows: none
    return with_ranks(counts_by_condition(summary, encodings), encodings, index)


def counts_by_condition(summary: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """The summary with each condition's count and ties ('<condition> permutations', '<condition> ties') only where
    some rate row's differ between conditions (a tie under one condition's round-off only): else RATE_COUNT and
    RATE_TIES say them for every condition, as they always have."""
    split = [[condition_column(name, column) for name in encodings] for column in (RATE_COUNT, RATE_TIES)]
    differ = any(summary[columns].fillna(-1).nunique(axis=1).gt(1).any() for columns in split)
    if not differ:
        return summary.drop(columns=[column for columns in split for column in columns])
    return summary.astype({column: "Int64" for columns in split for column in columns})


def unjudged_rates(summary: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """A rate's verdict cells blank but non-finite: a share of answers is the finding itself (0.27 of the reorderings
    preferred), and the one answer that reached its max (`preferred`) would misname it."""
    rates = summary["metric"].map(reduction_of) == "rate"
    for name in encodings:
        column = f"{name} verdict"
        summary[column] = summary[column].where(~rates | (summary[column] == NON_FINITE), "")
    return summary


def first_layers(rows: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    """Per summary row (index) and encoding, the first layer (0 = the input) at which a value is order-sensitive as
    text ('2'); blank where none is (the verdict column then says invariant, or unresolved where some layer's line
    was wider than the resolution), or for a metric not judged by order (a rate, a rank, unjudged values)."""
    judged = rows["verdict"].isin([*PASSING_WORDS, ORDER_SENSITIVE, NON_FINITE, UNRESOLVED]) & (
        rows["metric"].map(reduction_of).isin(["max", "mean"])
    )
    sensitive = rows["layer"].where(rows["verdict"] == ORDER_SENSITIVE).astype(float)
    keys = [*index, "encoding"]
    first = sensitive[judged].groupby([rows.loc[judged, key] for key in keys]).min()
    shown = first.map(lambda layer: "" if pd.isna(layer) else str(int(layer)))
    return shown.unstack("encoding").fillna("") if len(shown) else pd.DataFrame()


def with_ranks(summary: pd.DataFrame, encodings: list[str], index: list[str]) -> pd.DataFrame:
    """The summary with, after each acceptance rate, the original's rank among itself and its distinct reorderings:
    1 + how many the model prefers (rate x count), of count + 1 sentences; unjudged (verdict '')."""
    rates = summary[summary["metric"] == PERMUTATION_PREFERRED]
    if rates.empty:
        return summary
    ranks = rates.assign(metric=ORIGINAL_RANK)
    for name in encodings:
        count = rates.get(condition_column(name, RATE_COUNT), rates[RATE_COUNT])  # the condition's own, where split
        ranks[name] = 1 + (rates[name] * count.astype(float)).round()
        ranks[f"{name} verdict"] = ranks[f"{name} verdict"].where(ranks[f"{name} verdict"] == NON_FINITE, "")
    together = pd.concat([summary, ranks], ignore_index=True)
    return together.sort_values(index, kind="mergesort", ignore_index=True)


def probe_rates(rates: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """Per rate metric of probes (a minimal pair's preference), one row over all of them: each condition's rate with
    the probe count (BLiMP's accuracy) over the probes it decides (a tie, a margin within round-off, is left out and
    counted in RATE_TIES); no verdict but non-finite, where a probe's answer was. Where pairs name their phenomenon
    and UID (a BLiMP-format file), the same per phenomenon and per UID, and the unweighted mean over phenomena and
    over UIDs (lm-evaluation-harness's aggregate over BLiMP's paradigms). Empty without such probes."""
    rows = []
    for metric, group in rates.groupby("metric", sort=False):
        probes = int(group.groupby("encoding").size().max())
        rows.append(rate_row(group, encodings, "probes", all_probes(probes), str(metric)))
        for column in (name for name in PAIR_GROUP_COLUMNS if name in group.columns):
            named = group[group[column].fillna("") != ""]
            per_group = [rate_row(members, encodings, column, str(name), str(metric))
                         for name, members in named.groupby(column, sort=True)]  # fmt: skip
            rows += per_group + ([mean_over(per_group, encodings, column)] if per_group else [])
    return pd.DataFrame(rows)


def rate_row(group: pd.DataFrame, encodings: list[str], case: str, subject: str, metric: str) -> dict[str, object]:
    """One summary row of a rate over a group of probe rows: each condition's rate over the probes it decides,
    their count, and the ties left out."""
    decided = group[group["verdict"] != TIE]
    rate = decided.groupby("encoding")["value"].mean()
    counts = decided.groupby("encoding").size()
    each_tied = (group["verdict"] == TIE).groupby(group["encoding"]).sum()
    shares = {name: float(rate.get(name, np.nan)) for name in encodings}
    marks = {f"{name} verdict": "" if np.isfinite(share) else NON_FINITE for name, share in shares.items()}
    each = {condition_column(name, RATE_COUNT): int(counts.get(name, 0)) for name in encodings}
    each |= {condition_column(name, RATE_TIES): int(each_tied.get(name, 0)) for name in encodings}
    return {"case": case, "subject": subject, "metric": metric, **shares, **marks,
            RATE_COUNT: int(counts.max()) if len(decided) else 0, RATE_TIES: int(each_tied.max()), **each}  # fmt: skip


def mean_over(per_group: list[dict[str, object]], encodings: list[str], column: str) -> dict[str, object]:
    """The unweighted mean of groups' rates (each phenomenon counts once, however many pairs it has), over the
    groups a condition decides; no count (it is not a share of pairs), the ties of all of them."""
    table = pd.DataFrame(per_group)
    shares = {name: float(table[name].mean()) for name in encodings}  # a group all ties has no rate: left out
    marks = {f"{name} verdict": "" if np.isfinite(share) else NON_FINITE for name, share in shares.items()}
    noun = {PHENOMENON_COLUMN: "phenomena", UID_COLUMN: "UIDs"}[column]
    each: dict[str, object] = {condition_column(name, RATE_COUNT): pd.NA for name in encodings}
    each |= {(tied := condition_column(name, RATE_TIES)): int(table[tied].sum()) for name in encodings}
    return {"case": "probes", "subject": f"mean over {len(per_group)} {noun}", "metric": table["metric"].iloc[0],
            **shares, **marks, RATE_COUNT: pd.NA, RATE_TIES: int(table[RATE_TIES].sum()), **each}  # fmt: skip


def summary_values(table: pd.DataFrame) -> pd.Series:
    """Each row's value as its summary shows it: its `mean` over permutations for a mean or rate metric, else
    `value` (the worst)."""
    if "mean" not in table.columns:
        return table["value"]
    one_value = table["mean"].isna() & (table["case"] == "probe")  # a probe's one value is its own mean
    return table["value"].where(~table["metric"].map(per_permutation_mean).astype(bool) | one_value, table["mean"])


def summarize_sweep(table: pd.DataFrame, encodings: list[str], swept: list[str]) -> pd.DataFrame:
    """`summarize` per combination, then a trained spec's task accuracy per length (task_summary), with the
    swept columns after `subject`; the position probe's rows left out. Over a seed sweep, per cell the mean over
    seeds of the per-seed worst value and its t interval."""
    # Left out: the position probe's rows, and values summarised by another metric (log P per order).
    shown = table[(table["case"] != "decodability") & (table["metric"].map(reduction_of) != "none")]
    shown = pd.concat([shown, table[table["case"] == TASK_CASE]])
    if shown.empty:
        return pd.DataFrame(columns=["case", "subject", *(c for c in swept if c != SEED), "metric", *encodings])
    if not swept:
        return summarize_with_tasks(shown, encodings)
    parts = []
    for values, group in shown.groupby(swept, sort=True):
        part = summarize_with_tasks(group, encodings)
        for position, (name, value) in enumerate(zip(swept, values, strict=True), start=2):
            # pandas-stubs type group keys as Hashable; each is a cell of a swept column
            part.insert(position, name, value)  # type: ignore[arg-type]
        parts.append(part)
    per_combination = pd.concat(parts, ignore_index=True)
    return over_seeds(per_combination, SEED, encodings, per_seed=(CHANCE,)) if SEED in swept else per_combination


def summarize_with_tasks(table: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """`summarize` of the order metrics, then the task accuracy rows (their CHANCE column blank elsewhere)."""
    tasks = table["case"] == TASK_CASE
    parts = [summarize(table[~tasks], encodings)] if (~tasks).any() else []
    parts += [task_summary(table[tasks], encodings)] if tasks.any() else []
    summary = pd.concat(parts, ignore_index=True)
    return summary.fillna({CHANCE: ""}) if CHANCE in summary.columns else summary


def task_summary(rows: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """summary.csv's task rows: per test length, each trained encoding's accuracy, its verdict (trained or untrained
    length) and the length's CHANCE, so that the answer of a trained spec is read against chance."""
    keys = ["input", "length", CHANCE]
    wide = rows.pivot(index=keys, columns="encoding", values=["value", "verdict"])
    ordered = wide.sort_index(level="length")
    columns = {name: ordered[("value", name)].astype(float) for name in encodings}
    columns |= {f"{name} verdict": ordered[("verdict", name)] for name in encodings}
    table = pd.DataFrame(columns).reset_index().rename(columns={"input": "subject"})
    return table.assign(case=TASK_CASE, metric=TASK_ACCURACY).drop(columns="length")[
        ["case", "subject", "metric", *columns, CHANCE]
    ]
