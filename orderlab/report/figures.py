"""Figures from a results folder: metric vs layer, all-heads attention grids, position-probe accuracy, task accuracy
by length, and a corpus run's similarity with word shuffles by sentence length.

Reads only what `orderlab run` wrote (metrics.csv, attention.csv, manifest.json) and never
recomputes, so a committed baseline can be re-plotted without torch. Uses matplotlib's Figure
API with the Agg canvas: no pyplot state, no display needed. `plot_results` saves the figures
(PNG, SVG and/or PDF) to <folder>/figures/ with a manifest.json naming them, written whole or not at
all, keeping the figures of the formats it was not asked for; the HTML report (report/html.py) draws
the same figures inline.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import textwrap
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import numpy.typing as npt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from matplotlib.typing import ColorType

from orderlab.core.bounds import MAX_PROBE_LENGTH
from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError
from orderlab.metrics import (
    POSITION_ACCURACY,
    POSITION_CHANCE,
    RATE_COUNT,
    RATE_TIES,
    TASK_ACCURACY,
    metric_names,
    per_permutation_mean,
    reduction_of,
)
from orderlab.report.patching_figure import patching_heat_map
from orderlab.report.shown import rate_counts, share_of, share_text
from orderlab.results import tables
from orderlab.results.folder import staged_folder
from orderlab.results.manifest import MANIFEST, ManifestFields, read_manifest
from orderlab.results.orders import COLUMNS as ORDERS_COLUMNS
from orderlab.results.orders import KEY, ORDERS
from orderlab.results.ownership import Writer, claim
from orderlab.results.paths import child
from orderlab.results.run_folder import (
    SUMMARY,
    open_run_folder,
    read_attention,
    read_metrics,
    read_patching,
    swept_kinds,
)
from orderlab.spec.sweep import SEED, describe
from orderlab.vocabulary.columns import (
    TASK_CASE,
    TRAINED_LENGTH,
    WEIGHTS,
    all_probes,
    condition_column,
    tested_length,
)
from orderlab.vocabulary.verdict_words import TIE

FLOOR = 1e-17  # zeros are drawn here on log axes: values within the run's round-off are written as 0
STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
DPI = 150
FORMATS = ("png", "svg", "pdf")  # what `plot --format` writes; the HTML report inlines SVG
FIGURES = "figures"  # the folder inside a results folder that `plot_results` writes
LEGEND_SIZE = 12  # points: the figures are drawn smaller than their size in a page's column
TITLE_CHARS_PER_INCH = 9  # characters of a 12-point title line per inch of figure, with room for wide glyphs
DODGE = 0.06  # layers between neighbouring lines' markers, so that lines with equal values stay visible


@contextmanager
def user_text() -> Iterator[None]:
    """Draw a user's words (sentences, names, sweep values) as typed: `$x$` is no mathtext formula and
    `$\\badcommand{x}$` no crash; a character the font lacks is drawn as its box, without a warning per glyph.
    Text takes the setting when made and reads it again when drawn: figures are made and saved inside."""
    with matplotlib.rc_context({"text.parse_math": False}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        yield


@dataclass(frozen=True)
class Drawing:
    """One figure of a results folder, with what tells it apart from the others of its kind."""

    stem: str  # file name without extension: metrics_by_layer, attention_causal-true_rope_layer2
    kind: str  # metrics, displacement, decodability, task, corpus, patching or attention
    label: str  # 'rope, layer 2 (causal=true)'; empty where the folder has one figure of its kind
    figure: Figure


# Columns of a run over sentences and their permutations: per-layer metrics to draw (corpus runs have none).
LAYER_COLUMNS = frozenset({"case", "layer", "metric", "value"})
METRICS = "metrics.csv of a run over sentences, as `orderlab run` writes it"
DETAIL_KINDS = {"length": tables.integer(MAX_PROBE_LENGTH, blank=True), "chance": tables.NUMBER}


@dataclass(frozen=True)
class Results:
    """What the figures of a results folder are drawn from, each file read back and checked."""

    metrics: pd.DataFrame
    manifest: ManifestFields
    attention: pd.DataFrame | None
    orders: pd.DataFrame | None = None  # orders.csv: each reordering's displacement (results/orders.py)
    patching: pd.DataFrame | None = None  # patching.csv: the share each activation patch recovered (spec's patching:)
    summary: pd.DataFrame | None = None  # summary.csv's rows, their rates' counts and ties (None where it has none)


def has_figures(folder: Path) -> bool:
    """Whether the folder holds a run's per-layer metrics or a corpus run's similarities (by metrics.csv's header)."""
    header = tables.csv_header(folder / "metrics.csv", METRICS)
    found = set(header or ())
    return header is not None and (found >= LAYER_COLUMNS or found >= CORPUS_COLUMNS) and (folder / MANIFEST).is_file()


def read_results(folder: Path) -> Results:
    """metrics.csv, manifest.json and attention.csv (None if absent) of a results folder, each held to what the
    figures use (columns, kinds, bounds); one line naming the file and column if not."""
    manifest = open_run_folder(folder).fields
    header = set(tables.csv_header(folder / "metrics.csv", METRICS) or ())
    corpus = header >= CORPUS_COLUMNS
    if not corpus and not header >= LAYER_COLUMNS:
        raise OrderlabError(
            f"{folder}: these results have no per-layer metrics or corpus similarities to plot; expected the folder "
            "of `orderlab run`"
        )
    if corpus:
        kinds = {"words": tables.INDEX, "encoding": tables.TEXT, "metric": tables.TEXT, "value": tables.NUMBER}
        similarities = read_metrics(folder, manifest, kinds, METRICS)
        if not similarities["metric"].isin(list(POOLINGS_SHOWN)).any():
            raise FileProblem(
                folder / "metrics.csv", f"no {' or '.join(POOLINGS_SHOWN)} rows to plot; expected {METRICS}"
            )
        return Results(similarities, manifest, None)
    kinds = {"case": tables.TEXT, "input": tables.TEXT, "encoding": tables.TEXT, "layer": tables.INDEX}
    kinds |= {"metric": tables.TEXT, "value": tables.NUMBER, "verdict": tables.TEXT}
    details = {name: kind for name, kind in DETAIL_KINDS.items() if name in header}  # task and probe rows'
    metrics = read_metrics(folder, manifest, kinds | details, METRICS)
    has_maps = os.path.lexists(folder / "attention.csv")  # a link is there, and refused by the reader
    attention = read_attention(folder, manifest, swept_kinds(manifest)) if has_maps else None
    patching = read_patching(folder, swept_kinds(manifest))
    summary = read_rate_counts(folder, manifest, list(dict.fromkeys(metrics["encoding"])))
    return Results(metrics, manifest, attention, read_orders(folder), patching, summary)


COUNT = tables.integer(2**53, blank=True)  # a rate's answers or ties: any whole number a CSV's float holds exactly


def read_rate_counts(folder: Path, manifest: ManifestFields, encodings: list[str]) -> pd.DataFrame | None:
    """summary.csv held to what a rate's bar reads of it (which row, its count and ties: shown.rate_counts), so that
    the bar's label is the terminal's and summary.csv's in either kind of metrics.csv (`rows: summary` writes no
    count); None where the folder has no summary.csv (a folder written by hand: the bars then say no count)."""
    path = folder / "summary.csv"
    if not os.path.lexists(path):  # a link is there, and refused by the reader, not absent
        return None
    summary = tables.read_table(path, SUMMARY)
    counts = [RATE_COUNT, RATE_TIES, *(condition_column(e, c) for e in encodings for c in (RATE_COUNT, RATE_TIES))]
    kinds = {name: kind for name, kind in swept_kinds(manifest).items() if name != SEED}  # seeds: one row over all
    kinds |= {"case": tables.TEXT, "subject": tables.TEXT, "metric": tables.TEXT}
    return tables.require(summary, path, kinds | {name: COUNT for name in counts if name in summary.columns}, SUMMARY)


def read_orders(folder: Path) -> pd.DataFrame | None:
    """orders.csv held to its columns (None where a run from before it has none)."""
    path = folder / f"{ORDERS}.csv"
    if not path.exists() and not path.is_symlink():
        return None
    expected = "orders.csv as `orderlab run` writes it"
    kinds = {name: tables.TEXT for name in KEY} | {"mean_abs_displacement": tables.NUMBER}
    orders = tables.require(tables.read_table(path, expected), path, kinds, expected)
    return orders[[column for column in ORDERS_COLUMNS if column in orders.columns]]


def parse_formats(text: str) -> list[str]:
    """'png,svg' -> ['png', 'svg']: one or several of FORMATS, each once; one line naming the choices if not."""
    names = [part.strip().lower() for part in text.split(",")]
    unknown = [name for name in names if name not in FORMATS]
    if unknown or len(set(names)) != len(names):
        problem = f"{unknown[0]!r} is not a figure format" if unknown else "a format is named twice"
        raise OrderlabError(f"--format {text!r}: {problem}; expected {', '.join(FORMATS)}, or several joined by commas")
    return names


def plot_results(folder: Path, formats: Sequence[str] = ("png",)) -> list[Path]:
    """Write every figure the folder's data supports into <folder>/figures/ in each of `formats`; return their paths.

    The folder is replaced whole (staged_folder), with the figures of other formats that plot wrote before
    carried over, so `plot --format pdf` after a PNG plot leaves both."""
    drawn = drawings(folder, read_results(folder))
    figures = child(folder, FIGURES)
    with claim(figures, Writer("plot")), staged_folder(figures) as staging, user_text():
        carry_other_formats(figures, staging, formats)
        for drawing in drawn:
            for file_format in formats:
                path = staging / f"{drawing.stem}.{file_format}"
                drawing.figure.savefig(path, dpi=DPI, metadata=_no_date(file_format))
    return [figures / f"{drawing.stem}.{file_format}" for drawing in drawn for file_format in formats]


def carry_other_formats(figures: Path, staging: Path, formats: Sequence[str]) -> None:
    """Copy into staging the figures of formats not being drawn now, as the previous manifest lists them (files
    plot wrote; nothing a user put there, no link): re-plotting in one format keeps the others'."""
    if not (figures / MANIFEST).is_file():
        return
    listed = read_manifest(figures).fields.files or []
    for name in listed:
        source = figures / name
        kept = Path(name).suffix.lstrip(".") in set(FORMATS) - set(formats)
        if kept and "/" not in name and source.is_file() and not source.is_symlink():
            shutil.copyfile(source, staging / name)


def drawings(folder: Path, results: Results) -> list[Drawing]:
    """Every figure the data supports: metrics by layer, decodability, then attention per configuration,
    encoding and layer; a user's words drawn as typed (user_text)."""
    with user_text():
        return _drawings(folder, results)


def _drawings(folder: Path, results: Results) -> list[Drawing]:
    metrics, manifest, attention = results.metrics, results.manifest, results.attention
    assert manifest.spec is not None and manifest.dtype is not None  # read_results checked them
    swept, name = list(manifest.sweep), manifest.spec.name
    if "shuffle" in metrics.columns:  # a corpus run (read_results)
        return [Drawing("corpus_similarity", "corpus", "", corpus_similarity(metrics, name))]
    drawn = []
    # Left out as in summary.csv: the probe's and task rows, and values another metric summarises (log P per order).
    errors = metrics[
        ~metrics["case"].isin(["decodability", TASK_CASE]) & (metrics["metric"].map(reduction_of) != "none")
    ]
    if not errors.empty:
        figure = metrics_by_layer(errors, swept, name, manifest.dtype, results.summary)
        drawn.append(Drawing("metrics_by_layer", "metrics", "", figure))
    probe = metrics[metrics["metric"] == POSITION_ACCURACY]
    if not probe.empty:
        chance = _one_value(folder, metrics, POSITION_CHANCE)
        drawn.append(Drawing("decodability", "decodability", "", decodability(probe, swept, name, chance)))
    if "permutation" in errors.columns and has_displacement(errors, results.orders):
        assert results.orders is not None
        figure = metric_by_displacement(errors, results.orders, swept, name)
        drawn.append(Drawing("metrics_by_displacement", "displacement", "", figure))
    accuracy = metrics[metrics["metric"] == TASK_ACCURACY]
    if not accuracy.empty:
        figure = task_accuracy(_with_lengths(folder, accuracy), [c for c in swept if c != WEIGHTS], name)
        drawn.append(Drawing("task_accuracy", "task", "", figure))
    if results.patching is not None and not results.patching.empty:
        drawn.append(Drawing("patching", "patching", "", patching_heat_map(results.patching, name)))
    if attention is not None and manifest.attention is not None:
        words, reorderings = manifest.attention.words, manifest.attention.reorderings
        for columns, configuration in _by_configuration(attention, swept):
            where = describe(columns)
            for (encoding, layer), group in configuration.groupby(["encoding", "layer"], sort=False):
                for number, reordering in enumerate(reorderings, start=1):
                    shown = [] if len(reorderings) == 1 else [f"P{number}"]
                    stem = "_".join(["attention", *([where] if where else []), str(encoding), f"layer{layer}", *shown])
                    label = ", ".join([str(encoding), f"layer {layer}", *shown]) + (f" ({where})" if where else "")
                    maps = group[group["reordering"].isin([0, number])]
                    figure = attention_heads(maps, words, reordering.model_dump(), number, f"{name}: {label}")
                    drawn.append(Drawing(_file_stem(stem), "attention", label, figure))
    return drawn


def _one_value(folder: Path, metrics: pd.DataFrame, metric: str) -> float:
    """The value of a metric metrics.csv holds once per run (the probe's chance level)."""
    values = metrics.loc[metrics["metric"] == metric, "value"]
    if values.empty:
        raise FileProblem(folder / "metrics.csv", f"no {metric} row beside the position probe's; expected {METRICS}")
    return float(values.iloc[0])


def _with_lengths(folder: Path, accuracy: pd.DataFrame) -> pd.DataFrame:
    """Task accuracy rows with their sentence length: the `length` column, or in results written before it, the
    length each row's `input` names (measure/task_accuracy.task_subject)."""
    if "length" in accuracy.columns and accuracy["length"].notna().all():
        return accuracy.astype({"length": int})
    lengths = [_tested_length(str(subject)) for subject in accuracy["input"]]
    if None in lengths:
        shown = str(accuracy["input"].iloc[lengths.index(None)])[:60]
        raise FileProblem(folder / "metrics.csv", f"{shown!r} names no tested length; expected {METRICS}", "input")
    return accuracy.assign(length=pd.Series(lengths, index=accuracy.index, dtype=int))


def _tested_length(subject: str) -> int | None:
    try:
        return tested_length(subject)
    except (IndexError, ValueError):
        return None


def _file_stem(text: str) -> str:
    """A file name from a figure's description: 'causal=true' -> 'causal-true', anything odd -> '-'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text.replace("=", "-").replace(" ", "_"))


def _no_date(file_format: str) -> dict[str, str | None]:
    """Metadata that keeps re-plotting byte-stable: no creation date in SVG and PDF (PNG writes none)."""
    if file_format == "svg":
        return {"Date": None}
    return {"CreationDate": None} if file_format == "pdf" else {}


def _by_configuration(frame: pd.DataFrame, swept: list[str]) -> Iterator[tuple[dict[str, object], pd.DataFrame]]:
    if not swept:
        yield {}, frame
        return
    for values, group in frame.groupby(swept, sort=True):
        yield dict(zip(swept, map(_plain, values), strict=True)), group


def _lines(frame: pd.DataFrame, swept: list[str]) -> list[tuple[str, int, int, pd.DataFrame]]:
    """(label, colour index, style index, group) per encoding x configuration, in file order."""
    encodings = list(dict.fromkeys(frame["encoding"]))
    configurations = list(dict.fromkeys(map(tuple, frame[swept].to_numpy()))) if swept else [()]
    lines = []
    for e, encoding in enumerate(encodings):
        for c, values in enumerate(configurations):
            mask = frame["encoding"] == encoding
            for column, value in zip(swept, values, strict=True):
                mask &= frame[column] == value
            if mask.any():
                config = describe(dict(zip(swept, map(_plain, values), strict=True)))
                colour = e if len(encodings) > 1 else c  # one encoding: colour tells configurations apart
                lines.append(((f"{encoding} · {config}" if config else encoding), colour, c, frame[mask]))
    return lines


def _draw_lines(
    ax: Axes, lines: list[tuple[str, pd.Series]], styles: list[tuple[int, int]], dodge: float = DODGE
) -> None:
    """One line per (label, values by layer), each shifted sideways by its own small offset (dodge), so that
    lines with equal values (every encoding at ≈0, say) sit side by side instead of hiding each other."""
    colours = _colours()
    for index, ((label, series), (colour, style)) in enumerate(zip(lines, styles, strict=True)):
        offset = (index - (len(lines) - 1) / 2) * dodge
        ax.plot(series.index + offset, series.to_numpy(), label=label, color=colours[colour % len(colours)],
                linestyle=STYLES[style % len(STYLES)], marker=MARKERS[index % len(MARKERS)], markersize=5,
                markerfacecolor="none")  # fmt: skip


def _metric_order(names: list[str]) -> list[str]:
    """Panels in the registry's order (equivariance, invariance, attention, ..., probe distances); others after."""
    rank = {name: i for i, name in enumerate(metric_names())}
    return sorted(dict.fromkeys(names), key=lambda name: (rank.get(name, len(rank)), name))


def metrics_by_layer(
    frame: pd.DataFrame, swept: list[str], name: str, dtype: str, summary: pd.DataFrame | None = None
) -> Figure:
    """One panel per metric: the worst value over inputs, permutations and heads, per layer, log scale; a mean or
    rate metric (one value per sequence) as its mean over permutations, on a linear axis at its whole layers, a
    rate's bar labelled with its count and ties from `summary` (summary.csv)."""
    names = _metric_order(list(frame["metric"]))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    figure = Figure(figsize=(5.2 * columns, 3.6 * rows + 1.2), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).flatten()
    for ax, metric in zip(axes, names, strict=False):
        lines = _lines(frame[frame["metric"] == metric], swept)
        styles = [(e, c) for _, e, c, _ in lines]
        if per_permutation_mean(metric):
            means = [(label, _mean_by_layer(group)) for label, _, _, group in lines]
            layers = sorted(frame.loc[frame["metric"] == metric, "layer"].unique())
            if len(layers) == 1:  # measured at one layer (an LM's scores of its output): bars, not a dot a line
                counts = [_bar_counts(summary, metric, group, swept) for _, _, _, group in lines]
                probes = bool((frame.loc[frame["metric"] == metric, "case"] == "probe").all())
                _mean_bars(ax, metric, means, [e for _, e, _, _ in lines], int(layers[0]), counts, probes)
                continue
            _draw_lines(ax, means, styles, dodge=DODGE)
            _mean_axes(ax, metric, layers)
            continue
        worst = [(label, group.groupby("layer")["value"].max().clip(lower=FLOOR)) for label, _, _, group in lines]
        _draw_lines(ax, worst, styles)
        ax.set_yscale("log")
        _readable_log_ticks(ax, [float(v) for _, series in worst for v in series])
        probe = " (probe pair)" if (frame.loc[frame["metric"] == metric, "case"] == "probe").all() else ""
        ax.set_title(metric + probe)
        ax.set_xlabel("layer (0 = input)")
        ax.set_ylabel(f"worst {metric} (log)")
        _integer_ticks(ax)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    handles, labels = next(
        (found for ax in axes if (found := ax.get_legend_handles_labels())[0]), axes[0].get_legend_handles_labels()
    )  # a panel of lines (a bar panel has no legend entries)
    legend = {"ncols": _legend_columns(figure, labels), "fontsize": LEGEND_SIZE}
    legend_rows = -(-len(labels) // legend["ncols"])
    figure.set_figheight(figure.get_figheight() + 2 * legend_rows * LEGEND_SIZE * 1.5 / 72)  # room for both legends
    title = (
        f"{name}: order sensitivity by layer ({dtype}; values within round-off are 0, drawn at {FLOOR:.0e}; "
        "lines shifted sideways a little so equal ones stay visible)"
    )
    # The legend above the panels, where a reader starts (the title heads it: a suptitle would overlap it), and
    # again below the last row.
    figure.legend(handles, labels, loc="outside upper center", title=_wrapped(figure, title), title_fontsize="large",
                  frameon=False, **legend)  # fmt: skip
    if labels:  # bars alone name their lines under each bar: no empty box below
        figure.legend(handles, labels, loc="outside lower center", **legend)
    return figure


def _mean_by_layer(rows: pd.DataFrame) -> pd.Series:
    """A line's mean over permutations per layer, averaged over its subjects (`rows: summary` writes the means); as
    the summary's, over the orders that change the sentence. A probe pair is its own subject (its sentence and its
    counterpart), so a minimal pair's bar is summary.csv's 'all N probes' rate, not a mean of per-sentence means."""
    means = rows["statistic"] == "mean" if "statistic" in rows.columns else rows["permuted"] != rows["input"]
    rows = rows[means & ~_tied(rows)]  # a tie is left out of its rate, as summary.csv leaves it out
    subject = rows["input"].where(rows["case"] != "probe", rows["input"] + " vs " + rows["permuted"])
    return rows.groupby([rows["layer"], subject])["value"].mean().groupby("layer").mean()


def _mean_axes(ax: Axes, metric: str, layers: list[int]) -> None:
    """A mean or rate panel: linear values (a rate within 0..1), ticks at exactly the layers measured."""
    rate = reduction_of(metric) == "rate"
    if rate:
        ax.set_ylim(-0.02, 1.02)
    else:
        ax.set_ylim(bottom=0)
    ax.set_xticks(layers)
    ax.set_title(f"{metric}\n({'rate' if rate else 'mean'} over permutations)")  # two lines: a panel is narrow
    ax.set_xlabel("layer (0 = input)")
    ax.set_ylabel("share of reorderings at 1" if rate else f"mean {metric}")


def _bar_counts(
    summary: pd.DataFrame | None, metric: str, rows: pd.DataFrame, swept: list[str]
) -> tuple[int | None, int | None]:
    """A rate bar's count and ties, read from the one summary.csv row the bar shows (a sentence's rate over its
    reorderings, or the probes' 'all N probes' row) as every view reads them (shown.rate_counts); (None, None) for a
    bar that is no one row (a mean over sentences, one seed of a seed sweep), a metric that is not a rate, or a
    folder without summary.csv."""
    probes = bool((rows["case"] == "probe").all())
    one_sentence = bool((rows["case"] == "permutation").all()) and rows["input"].nunique() == 1
    if summary is None or reduction_of(metric) != "rate" or SEED in swept or not (probes or one_sentence):
        return None, None
    first = rows.iloc[0]
    subject = all_probes((rows["input"] + " vs " + rows["permuted"]).nunique()) if probes else first["input"]
    found = (summary["metric"] == metric) & (summary["case"] == ("probes" if probes else "permutation"))
    found &= summary["subject"] == subject
    for column in swept:
        found &= summary[column].astype(str) == str(first[column])
    if found.sum() != 1:
        return None, None
    count, ties = rate_counts(summary[found].iloc[0], str(first["encoding"]))
    return (None if pd.isna(count) else int(count)), (None if pd.isna(ties) else int(ties))


def _tied(rows: pd.DataFrame) -> pd.Series:
    """Which rows are 0/1 answers within their round-off (verdict `tie`)."""
    return rows["verdict"] == TIE if "verdict" in rows.columns else pd.Series(False, index=rows.index)


def _mean_bars(
    ax: Axes,
    metric: str,
    means: list[tuple[str, pd.Series]],
    colours: list[int],
    layer: int,
    counts: list[tuple[int | None, int | None]],
    probes: bool,
) -> None:
    """A mean or rate measured at one layer: a bar per line with its value written on it (a rate within 0..1, with
    its count and ties as share_text writes them: '0.25 (1/4, 1 tie)'; 'nan !' at 0 where no answer was decided, as
    the terminal says it); counts: (count, ties) per bar."""
    palette, rate = _colours(), reduction_of(metric) == "rate"
    values = [float(series.iloc[0]) if len(series) else math.nan for _, series in means]  # every answer a tie: none
    heights = [value if math.isfinite(value) else 0.0 for value in values]  # no number: its label at the axis says so
    bars = ax.bar(range(len(means)), heights, color=[palette[c % len(palette)] for c in colours])
    shown = zip(values, counts, strict=True)
    labels = [share_text(value, *counted) if rate else f"{value:.2e}" for value, counted in shown]
    ax.bar_label(bars, labels, fontsize="small")
    ax.set_xticks(range(len(means)), [label for label, _ in means], rotation=30, ha="right", fontsize="small")
    ax.set_ylim(0, 1.1 if rate else max(heights, default=0) * 1.2 or 1)
    over = share_of(probes) if rate else "permutations"
    ax.set_title(f"{metric}\n({'rate' if rate else 'mean'} over {over}, layer {layer})")
    ax.set_ylabel(f"share of {over} at 1" if rate else f"mean {metric}")


def _readable_log_ticks(ax: Axes, values: list[float]) -> None:
    """A log axis that spans too little for its powers of ten to show more than one: ticks at 1, 2 and 5 of each
    decade over one to two decades, evenly spaced values under one decade, each labelled."""
    low, high = max(min(values, default=1.0), FLOOR), max(values, default=1.0)
    if high <= 0 or high / low >= 100:
        ax.yaxis.set_major_formatter(FuncFormatter(power_of_ten))
        ax.yaxis.set_minor_formatter(NullFormatter())
        return
    if high / low >= 10:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    else:
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: float, _position: object = None) -> str:
    """A decade's tick as plain text, '10⁻¹⁶': matplotlib's own labels are mathtext ('$\\mathdefault{10^{-16}}$'),
    which user_text turns off so that a user's `$x$` stays as typed; '' for a tick between decades."""
    if not value > 0:
        return ""
    exponent = round(math.log10(value))
    if not math.isclose(value, 10.0**exponent, rel_tol=1e-9):
        return ""
    return "1" if exponent == 0 else "10" + str(exponent).translate(SUPERSCRIPTS)


def _legend_columns(figure: Figure, labels: list[str]) -> int:
    """As many legend columns as entries of the longest label fit across the figure."""
    entry = (max(map(len, labels), default=1) * 0.6 + 4) * LEGEND_SIZE  # points: text, line sample and gap
    return max(1, min(len(labels), int(figure.get_figwidth() * 72 // entry)))


def _wrapped(figure: Figure, text: str) -> str:
    """Each line of a title wrapped to the figure's width, so that none is cut off at its edges."""
    width = max(20, int(figure.get_figwidth() * TITLE_CHARS_PER_INCH))
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def decodability(frame: pd.DataFrame, swept: list[str], name: str, chance: float) -> Figure:
    """Held-out accuracy of the slot probe vs layer, per encoding (colour) and configuration (line style)."""
    figure = Figure(figsize=(7.5, 5), layout="constrained")
    ax = figure.subplots()
    lines = _lines(frame, swept)
    accuracy = [(label, group.set_index("layer")["value"].sort_index()) for label, _, _, group in lines]
    _draw_lines(ax, accuracy, [(e, c) for _, e, c, _ in lines])
    ax.axhline(chance, color="black", linewidth=1, linestyle=(0, (2, 2)), label=f"chance = {chance:.3f}")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("layer (0 = input, encoding added)")
    ax.set_ylabel(f"{POSITION_ACCURACY}: held-out accuracy of a linear slot probe")
    _integer_ticks(ax)
    ax.set_title(f"{name}: can position be read off the hidden state?\n{frame['input'].iloc[0]}")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return figure


def task_accuracy(frame: pd.DataFrame, swept: list[str], name: str) -> Figure:
    """A trained stack's task accuracy vs sentence length, per encoding and configuration; trained lengths shaded.

    Lines sit a little apart sideways with a marker each (dodged), and lines that coincide are named in the
    legend's title, so three encodings at 1.0 never read as one; the title says which lengths were tested."""
    figure = Figure(figsize=(7.5, 5.5), layout="constrained")
    ax = figure.subplots()
    lines = _lines(frame, swept)
    series = [(label, group.set_index("length")["value"].sort_index()) for label, _, _, group in lines]
    _draw_lines(ax, series, [(e, c) for _, e, c, _ in lines], dodge=TASK_DODGE)
    chance = frame.groupby("length")["chance"] if "chance" in frame.columns else None
    if chance is not None and frame["chance"].notna().all() and (chance.nunique() == 1).all():  # one per length
        levels = chance.first().sort_index()
        ax.plot(levels.index, levels.to_numpy(), color="black", linewidth=1, linestyle=(0, (2, 2)),
                label="chance (best order-blind guess)")  # fmt: skip
    trained = frame.loc[frame["verdict"] == TRAINED_LENGTH, "length"]
    ax.axvspan(trained.min() - 0.5, trained.max() + 0.5, color="grey", alpha=0.15, label="trained lengths")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("sentence length (words)")
    ax.set_ylabel("task accuracy, held-out sentences")
    ax.set_xticks(sorted(frame["length"].unique()))  # the lengths tested, each a whole number of words
    task = frame["input"].iloc[0].split(":")[0]
    ax.set_title(_wrapped(figure, f"{name}: {tested_lengths(frame['length'], trained)}\n{task}"))
    ax.legend(fontsize="small", title=coinciding_note(series), title_fontsize="small")
    ax.grid(alpha=0.3)
    return figure


TASK_DODGE = 0.08  # words between neighbouring lines' markers on the length axis

# A corpus run's metrics.csv (measure/corpus.py): one row per sentence, shuffle, ablation and pooling.
# metric versus displacement: does local order matter more than global order? (Clouatre et al. 2022)
DISPLACEMENT = "mean_abs_displacement"


def has_displacement(metrics: pd.DataFrame, orders: pd.DataFrame | None) -> bool:
    """Whether there is something to draw: reorderings metrics.csv measures at more than one displacement."""
    if orders is None:
        return False
    joined = _joined(metrics, orders)
    return joined[DISPLACEMENT].nunique() > 1


def metric_by_displacement(metrics: pd.DataFrame, orders: pd.DataFrame, swept: list[str], name: str) -> Figure:
    """One panel per metric at the output layer: each reordering's value (dots) and the mean at each displacement
    (a line) per condition; a worst-over-heads metric on a log axis (0 drawn at FLOOR), a mean or rate linear."""
    joined = _joined(metrics, orders)
    names = _metric_order(list(joined["metric"]))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    figure = Figure(figsize=(5.2 * columns, 3.6 * rows + 1.6), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).flatten()
    colours = _colours()
    for ax, metric in zip(axes, names, strict=False):
        rows_of = joined[joined["metric"] == metric]
        layer = int(rows_of["layer"].max())
        rows_of = rows_of[rows_of["layer"] == layer]
        linear = per_permutation_mean(metric)
        values: list[float] = []
        for index, (label, colour, style, group) in enumerate(_lines(rows_of, swept)):
            points = group.groupby([*KEY, DISPLACEMENT])["value"].max().reset_index()  # worst over heads
            shown = points["value"] if linear else points["value"].clip(lower=FLOOR)
            means = shown.groupby(points[DISPLACEMENT]).mean()
            values += [float(v) for v in shown]
            colour_of = colours[colour % len(colours)]
            ax.scatter(points[DISPLACEMENT], shown, s=10, alpha=0.35, color=colour_of, linewidths=0)
            ax.plot(means.index, means.to_numpy(), label=label, color=colour_of, marker=MARKERS[index % len(MARKERS)],
                    linestyle=STYLES[style % len(STYLES)], markersize=5, markerfacecolor="none")  # fmt: skip
        if not linear:
            ax.set_yscale("log")
            _readable_log_ticks(ax, values)
        ax.set_title(f"{metric} (layer {layer})")
        ax.set_xlabel("mean displacement (slots per word)")
        ax.set_ylabel(f"{'' if linear else 'worst '}{metric}{'' if linear else ' (log)'}")
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    legend = {"ncols": _legend_columns(figure, labels), "fontsize": LEGEND_SIZE}
    title = (
        f"{name}: order sensitivity against how far the words moved (dots: each reordering, lines: mean at each "
        f"displacement; values within round-off are 0, drawn at {FLOOR:.0e} on log axes)"
    )
    figure.legend(handles, labels, loc="outside upper center", title=_wrapped(figure, title),
                  title_fontsize="large", frameon=False, **legend)  # fmt: skip
    return figure


def _joined(metrics: pd.DataFrame, orders: pd.DataFrame) -> pd.DataFrame:
    """Reordering rows of per-layer metrics with their displacement (probe rows and the original's have none)."""
    reorderings = metrics[(metrics["case"] == "permutation") & metrics["permutation"].notna()]
    reorderings = reorderings.astype({"permutation": str})
    return reorderings.merge(orders[[*KEY, DISPLACEMENT]].astype({"permutation": str}), on=KEY, how="inner")


CORPUS_COLUMNS = {"sentence_id", "words", "encoding", "shuffle", "metric", "value"}
POOLINGS_SHOWN = {"similarity_mean": "mean-pooled sentence vectors", "similarity_cls": "[CLS] vectors"}
SPREAD = (0.1, 0.9)  # the quantiles of a length's shuffles shaded around its mean


def corpus_similarity(frame: pd.DataFrame, name: str) -> Figure:
    """A corpus run: per pooling, the cosine similarity of a sentence with its word shuffles against its length in
    words, a line per position ablation (the mean over that length's shuffles, dodged, a marker each, coinciding
    lines named) with the 10th-90th percentile of the shuffles shaded."""
    poolings = [metric for metric in POOLINGS_SHOWN if (frame["metric"] == metric).any()]
    figure = Figure(figsize=(6.5 * max(1, len(poolings)), 5.2), layout="constrained")
    axes = figure.subplots(1, max(1, len(poolings)), squeeze=False)[0]
    notes = []
    for ax, metric in zip(axes, poolings, strict=False):
        rows = frame[frame["metric"] == metric]
        by_ablation = list(rows.groupby("encoding", sort=False))
        means = [(str(encoding), group.groupby("words")["value"].mean()) for encoding, group in by_ablation]
        _draw_lines(ax, means, [(index, 0) for index in range(len(means))], dodge=TASK_DODGE)
        colours = _colours()
        for index, (_, group) in enumerate(by_ablation):
            values = group.groupby("words")["value"]
            low, high = values.quantile(SPREAD[0]), values.quantile(SPREAD[1])
            ax.fill_between(low.index, low, high, alpha=0.12, linewidth=0, color=colours[index % len(colours)])
        ax.set_xlabel("sentence length (words)")
        ax.set_ylabel("cosine similarity with its shuffles")
        ax.set_title(POOLINGS_SHOWN[metric])
        ax.set_ylim(top=1.01)
        _integer_ticks(ax)
        ax.grid(alpha=0.3)
        notes.append(coinciding_note(means))
    shuffles = len(frame[frame["metric"] == poolings[0]]) // frame["encoding"].nunique() if poolings else 0
    sentences = frame["sentence_id"].nunique()
    handles, labels = axes[0].get_legend_handles_labels()
    note = next((found for found in notes if found), None)
    title = (
        f"{name}: how alike a sentence and its word shuffles are, by length ({shuffles:,} shuffles of {sentences:,} "
        f"sentences; lines: the mean of a length's shuffles, bands: their {SPREAD[0]:.0%}-{SPREAD[1]:.0%} range)"
        + (f"\n{note}" if note else "")
    )
    figure.legend(handles, labels, loc="outside upper center", title=_wrapped(figure, title), title_fontsize="large",
                  frameon=False, ncols=_legend_columns(figure, labels), fontsize=LEGEND_SIZE)  # fmt: skip
    return figure


def tested_lengths(lengths: pd.Series, trained: pd.Series) -> str:
    """What a task-accuracy figure shows: accuracy at the trained lengths only, or also at lengths not trained on."""
    seen = sorted(set(trained.astype(int)))
    others = sorted(set(lengths.astype(int)) - set(seen))
    span = _lengths_text(seen)
    if not others:
        return f"task accuracy at the trained lengths ({span} words; no other length tested)"
    return f"does what was learned at {span} words carry to {_lengths_text(others)} words?"


def _lengths_text(lengths: list[int]) -> str:
    whole_run = lengths == list(range(lengths[0], lengths[-1] + 1))
    return f"{lengths[0]}-{lengths[-1]}" if whole_run and len(lengths) > 2 else ", ".join(map(str, lengths))


def coinciding_note(series: list[tuple[str, pd.Series]], places: int = 3) -> str | None:
    """'learned, rope, sinusoidal coincide (drawn side by side)' for lines whose values agree to `places` decimals
    everywhere; None when every line has its own."""
    groups: dict[tuple[tuple[object, float], ...], list[str]] = {}
    for label, values in series:
        groups.setdefault(tuple((index, round(float(v), places)) for index, v in values.items()), []).append(label)
    same = [labels for labels in groups.values() if len(labels) > 1]
    if not same:
        return None
    note = "; ".join(f"{', '.join(labels)} coincide" for labels in same) + " (drawn side by side)"
    return textwrap.fill(note, 60)


def attention_heads(frame: pd.DataFrame, words: str, reordering: dict[str, str], number: int, title: str) -> Figure:
    """Every head of one layer (columns): A(X), A(PX) and A(PX) - P A(X) Pᵀ (rows), the permutation in the title.

    frame: attention.csv's rows of the input as written (reordering 0) and of reordering `number`, which the
    manifest records as {"permutation": "2 1 0", "permuted": ...}.
    """
    heads = sorted(frame["head"].unique())
    p = [int(i) for i in reordering["permutation"].split()]
    moved = reordering["permuted"].split()
    maps = []
    for head in heads:
        rows = frame[frame["head"] == head]
        original = _grid(rows[rows["reordering"] == 0], len(p))
        permuted = _grid(rows[rows["reordering"] == number], len(p))
        maps.append((original, permuted, permuted - original[np.ix_(p, p)]))  # A(PX) - P A(X) P^T
    largest = max(float(np.abs(difference).max()) for _, _, difference in maps)
    limit = max(largest, 1e-3)  # round-off stays white
    figure = Figure(figsize=(2.4 * len(heads) + 1.6, 7.6), layout="constrained")
    axes = figure.subplots(3, len(heads), squeeze=False)
    kinds = [("A(X)", words.split()), ("A(PX)", moved), ("A(PX) − P A(X) Pᵀ", moved)]
    for col, head in enumerate(heads):
        for row, ((label, labels), grid) in enumerate(zip(kinds, maps[col], strict=True)):
            ax = axes[row, col]
            scale = {"vmin": 0, "vmax": 1, "cmap": "viridis"} if row < 2 else {"vmin": -limit, "vmax": limit,
                                                                              "cmap": "RdBu_r"}  # fmt: skip
            image = ax.imshow(grid, **scale)
            _label_axes(ax, labels, f"head {head}: {label}", ylabels=col == 0)
        if col == len(heads) - 1:
            figure.colorbar(image, ax=axes[2, :].tolist(), label=f"difference (max |Δ| = {largest:.1e})", shrink=0.9)
    figure.colorbar(axes[0, 0].images[0], ax=axes[:2, :].flatten().tolist(), label="attention weight", shrink=0.9)
    permutation = f"P = [{reordering['permutation']}]: “{words}” → “{reordering['permuted']}”"
    figure.suptitle(_wrapped(figure, f"{title}: every head\n{permutation} (rows of a map: queries, columns: keys)"))
    return figure


def _plain(value: object) -> object:
    """numpy scalars read back from CSV -> Python values, so booleans print as true/false."""
    return value.item() if hasattr(value, "item") else value


def _grid(rows: pd.DataFrame, n: int) -> npt.NDArray[np.float64]:
    """An n x n map from its rows (query and key within 0..n-1: read_results checked them)."""
    grid = np.zeros((n, n))
    grid[rows["query"].to_numpy(), rows["key"].to_numpy()] = rows["value"].to_numpy()
    return grid


def _integer_ticks(ax: Axes) -> None:
    """Layers are whole numbers: no tick at 0.5."""
    locator = ax.xaxis.get_major_locator()
    assert isinstance(locator, MaxNLocator)  # a linear axis's AutoLocator
    locator.set_params(integer=True)


def _label_axes(ax: Axes, words: list[str], title: str, ylabels: bool) -> None:
    ax.set_xticks(range(len(words)), words, rotation=45, ha="right", fontsize="small")
    ax.set_yticks(range(len(words)), words if ylabels else [], fontsize="small")
    ax.set_xlabel("key", fontsize="small")
    if ylabels:
        ax.set_ylabel("query", fontsize="small")
    ax.set_title(title, fontsize="small")


def _colours() -> list[ColorType]:
    from matplotlib import color_sequences

    return color_sequences["tab10"]  # a fresh list of the tab10 colormap's colours
