"""Figures (PNG) from a results folder: metric vs layer, attention heatmaps, position-probe accuracy.

Reads only what `orderlab run` wrote (metrics.csv, attention.csv, manifest.json) and never
recomputes, so a committed baseline can be re-plotted without torch. Uses matplotlib's Figure
API with the Agg canvas: no pyplot state, no display needed. Figures go to <folder>/figures/
(with a manifest.json naming them), written whole or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.typing import ColorType

from orderlab.errors import OrderlabError
from orderlab.metric_registry import POSITION_ACCURACY, POSITION_CHANCE, TASK_ACCURACY
from orderlab.ownership import Writer, claim
from orderlab.results import Manifest, staged_folder
from orderlab.sweep import describe
from orderlab.training.results import TASK_CASE, TRAINED_LENGTH, WEIGHTS, tested_length

FLOOR = 1e-17  # zeros are drawn here on log axes: values within the run's round-off are written as 0
STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
DPI = 150


def read_results(folder: Path) -> tuple[pd.DataFrame, Manifest, pd.DataFrame | None]:
    """metrics.csv, manifest.json and attention.csv (None if absent) of a results folder."""
    if not (folder / "metrics.csv").is_file() or not (folder / "manifest.json").is_file():
        raise OrderlabError(f"{folder}: not a results folder; expected metrics.csv and manifest.json (orderlab run)")

    def read(name: str) -> pd.DataFrame:
        return pd.read_csv(folder / name, keep_default_na=False, na_values=[""])

    attention = read("attention.csv") if (folder / "attention.csv").is_file() else None
    metrics = read("metrics.csv")
    if not {"case", "layer", "metric", "value"} <= set(metrics.columns):
        raise OrderlabError(
            f"{folder}: these results (corpus mode?) have no per-layer metrics to plot; expected the folder of a "
            "run over sentences and their permutations"
        )
    return metrics, json.loads((folder / "manifest.json").read_text()), attention


def plot_results(folder: Path) -> list[Path]:
    """Write every figure the folder's data supports into <folder>/figures/; return their paths."""
    metrics, manifest, attention = read_results(folder)
    swept = list(manifest.get("sweep", {}))
    name = manifest["spec"]["name"]
    figures: dict[str, Figure] = {}
    errors = metrics[~metrics["case"].isin(["decodability", TASK_CASE])]
    if not errors.empty:
        figures["metrics_by_layer.png"] = metrics_by_layer(errors, swept, name, manifest["dtype"])
    probe = metrics[metrics["metric"] == POSITION_ACCURACY]
    if not probe.empty:
        chance = metrics.loc[metrics["metric"] == POSITION_CHANCE, "value"].iloc[0]
        figures["decodability.png"] = decodability(probe, swept, name, chance)
    accuracy = metrics[metrics["metric"] == TASK_ACCURACY]
    if not accuracy.empty:
        figures["task_accuracy.png"] = task_accuracy(accuracy, [c for c in swept if c != WEIGHTS], name)
    if attention is not None:
        shown = _attention_input(folder, manifest)
        for columns, group in _by_configuration(attention, swept):
            suffix = "_" + describe(columns).replace(" ", "_").replace("=", "-") if columns else ""
            figures[f"attention{suffix}.png"] = attention_heatmaps(group, shown, name, describe(columns))

    with claim(folder / "figures", Writer("plot")), staged_folder(folder / "figures") as staging:
        for file_name, figure in figures.items():
            figure.savefig(staging / file_name, dpi=DPI)
    return [folder / "figures" / file_name for file_name in figures]


def _attention_input(folder: Path, manifest: Manifest) -> dict[str, object]:
    """The sentence and reordering attention.csv shows, which manifest.json records once."""
    shown = manifest.get("attention")
    if not isinstance(shown, dict) or not {"words", "permutation", "permuted"} <= set(shown):
        raise OrderlabError(
            f"{folder}/manifest.json: no 'attention' entry naming attention.csv's sentence (results written before "
            "attention.csv held each sentence once); expected a folder written by this orderlab: re-run the spec"
        )
    return shown


def _by_configuration(frame: pd.DataFrame, swept: list[str]) -> Iterator[tuple[dict[str, object], pd.DataFrame]]:
    if not swept:
        yield {}, frame
        return
    for values, group in frame.groupby(swept, sort=True):
        yield dict(zip(swept, map(_plain, values), strict=True)), group


def _lines(frame: pd.DataFrame, swept: list[str]) -> Iterator[tuple[str, int, int, pd.DataFrame]]:
    """(label, colour index, style index, group) per encoding x configuration, in file order."""
    encodings = list(dict.fromkeys(frame["encoding"]))
    configurations = list(dict.fromkeys(map(tuple, frame[swept].to_numpy()))) if swept else [()]
    for e, encoding in enumerate(encodings):
        for c, values in enumerate(configurations):
            mask = frame["encoding"] == encoding
            for column, value in zip(swept, values, strict=True):
                mask &= frame[column] == value
            if mask.any():
                config = describe(dict(zip(swept, map(_plain, values), strict=True)))
                colour = e if len(encodings) > 1 else c  # one encoding: colour tells configurations apart
                yield (f"{encoding} · {config}" if config else encoding), colour, c, frame[mask]


def metrics_by_layer(frame: pd.DataFrame, swept: list[str], name: str, dtype: str) -> Figure:
    """One panel per metric: the worst value over inputs, permutations and heads, per layer, log scale."""
    names = list(dict.fromkeys(frame.sort_values("metric", kind="mergesort")["metric"]))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    figure = Figure(figsize=(5.2 * columns, 3.6 * rows + 1.2), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).flatten()
    colours = _colours()
    for ax, metric in zip(axes, names, strict=False):
        for label, e, c, group in _lines(frame[frame["metric"] == metric], swept):
            worst = group.groupby("layer")["value"].max()
            ax.plot(worst.index, np.maximum(worst.to_numpy(), FLOOR), label=label, color=colours[e % len(colours)],
                    linestyle=STYLES[c % len(STYLES)], marker=MARKERS[c % len(MARKERS)], markersize=4)  # fmt: skip
        ax.set_yscale("log")
        ax.set_title(metric)
        ax.set_xlabel("layer (0 = input)")
        ax.set_ylabel("worst value (log)")
        _integer_ticks(ax)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)), fontsize="small")
    figure.suptitle(
        f"{name}: order sensitivity by layer ({dtype}; values within round-off are 0, drawn at {FLOOR:.0e})"
    )
    return figure


def decodability(frame: pd.DataFrame, swept: list[str], name: str, chance: float) -> Figure:
    """Held-out accuracy of the slot probe vs layer, per encoding (colour) and configuration (line style)."""
    figure = Figure(figsize=(7.5, 5), layout="constrained")
    ax = figure.subplots()
    colours = _colours()
    for label, e, c, group in _lines(frame, swept):
        series = group.sort_values("layer")
        ax.plot(series["layer"], series["value"], label=label, color=colours[e % len(colours)],
                linestyle=STYLES[c % len(STYLES)], marker=MARKERS[c % len(MARKERS)])  # fmt: skip
    ax.axhline(chance, color="black", linewidth=1, linestyle=(0, (2, 2)), label=f"chance = {chance:.3f}")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("layer (0 = input, encoding added)")
    ax.set_ylabel("held-out accuracy of a linear slot probe")
    _integer_ticks(ax)
    ax.set_title(f"{name}: can position be read off the hidden state?\n{frame['input'].iloc[0]}")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return figure


def task_accuracy(frame: pd.DataFrame, swept: list[str], name: str) -> Figure:
    """A trained stack's task accuracy vs sentence length, per encoding and configuration; trained lengths shaded."""
    figure = Figure(figsize=(7.5, 5), layout="constrained")
    ax = figure.subplots()
    colours = _colours()
    frame = frame.assign(length=frame["input"].map(tested_length))
    for label, e, c, group in _lines(frame, swept):
        series = group.sort_values("length")
        ax.plot(series["length"], series["value"], label=label, color=colours[e % len(colours)],
                linestyle=STYLES[c % len(STYLES)], marker=MARKERS[c % len(MARKERS)])  # fmt: skip
    trained = frame.loc[frame["verdict"] == TRAINED_LENGTH, "length"]
    ax.axvspan(trained.min() - 0.5, trained.max() + 0.5, color="grey", alpha=0.15, label="trained lengths")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("sentence length (words)")
    ax.set_ylabel("task accuracy, held-out sentences")
    _integer_ticks(ax)
    ax.set_title(f"{name}: does what was learned carry to other lengths?\n{frame['input'].iloc[0].split(':')[0]}")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return figure


def attention_heatmaps(frame: pd.DataFrame, shown: dict[str, object], name: str, configuration: str) -> Figure:
    """Per encoding: A(X), A(PX) and A(PX) - P A(X) P^T at the deepest layer, head 0.

    shown: the manifest's record of the input, {"words": ..., "permutation": "2 1 0", "permuted": ...}.
    """
    layer = int(frame["layer"].max())
    deepest = frame[(frame["layer"] == layer) & (frame["head"] == 0)]
    encodings = list(dict.fromkeys(deepest["encoding"]))
    p = [int(i) for i in str(shown["permutation"]).split()]
    words, moved = str(shown["words"]).split(), str(shown["permuted"]).split()
    figure = Figure(figsize=(12, 3.6 * len(encodings) + 0.8), layout="constrained")
    axes = figure.subplots(len(encodings), 3, squeeze=False)
    for row, encoding in enumerate(encodings):
        original = _grid(deepest[(deepest["encoding"] == encoding) & (deepest["sentence"] == "original")])
        permuted = _grid(deepest[(deepest["encoding"] == encoding) & (deepest["sentence"] == "permuted")])
        difference = permuted - original[np.ix_(p, p)]  # A(PX) - P A(X) P^T
        panels = [(original, words, "original A(X)"), (permuted, moved, "permuted A(PX)")]
        for col, (grid, labels, title) in enumerate(panels):
            image = axes[row, col].imshow(grid, vmin=0, vmax=1, cmap="viridis")
            _label_axes(axes[row, col], labels, f"{encoding}: {title}")
        figure.colorbar(image, ax=axes[row, :2].tolist(), label="attention weight", shrink=0.9)
        limit = max(float(np.abs(difference).max()), 1e-3)  # round-off stays white
        image = axes[row, 2].imshow(difference, vmin=-limit, vmax=limit, cmap="RdBu_r")
        _label_axes(axes[row, 2], moved, f"{encoding}: A(PX) - P A(X) Pᵀ")
        figure.colorbar(
            image, ax=axes[row, 2], label=f"difference (max |Δ| = {np.abs(difference).max():.1e})", shrink=0.9
        )
    where = f" ({configuration})" if configuration else ""
    figure.suptitle(f"{name}{where}: attention at layer {layer}, head 0 (rows: queries, columns: keys)")
    return figure


def _plain(value: object) -> object:
    """numpy scalars read back from CSV -> Python values, so booleans print as true/false."""
    return value.item() if hasattr(value, "item") else value


def _grid(rows: pd.DataFrame) -> npt.NDArray[np.float64]:
    n = int(rows["query"].max()) + 1
    grid = np.zeros((n, n))
    grid[rows["query"].to_numpy(), rows["key"].to_numpy()] = rows["value"].to_numpy()
    return grid


def _integer_ticks(ax: Axes) -> None:
    """Layers are whole numbers: no tick at 0.5."""
    locator = ax.xaxis.get_major_locator()
    assert isinstance(locator, MaxNLocator)  # a linear axis's AutoLocator
    locator.set_params(integer=True)


def _label_axes(ax: Axes, words: list[str], title: str) -> None:
    ax.set_xticks(range(len(words)), words, rotation=45, ha="right")
    ax.set_yticks(range(len(words)), words)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    ax.set_title(title, fontsize="medium")


def _colours() -> list[ColorType]:
    from matplotlib import color_sequences

    return color_sequences["tab10"]  # a fresh list of the tab10 colormap's colours
