"""The figure of activation patching (measure/patching.py): per condition, a heat map of layers (and points) by slot
groups, each cell the share of the difference between two orders' outputs that the patch recovered (0: none, 1: all;
below 0, the patch moved the output away from the source's, past 1 beyond it), averaged over the inputs and pairs of
orders measured. Draws the frame orderlab.api.patch returns; never measures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from orderlab.errors import OrderlabError

DPI = 150
CELL_INCHES = 0.62  # one slot group's width, one layer's height
COLOURS = "RdBu_r"  # diverging: 0 white, a recovered share red, a share of the wrong sign blue


def patching_heat_map(shares: pd.DataFrame, title: str = "") -> Figure:
    """One panel per condition: rows `point L` from the first layer down, columns the slot groups in the order
    measured, cells the mean share (annotated; blank where no pair had that group), coloured on one scale centred on
    0 (white) from -limit to limit, limit 1 or the largest |share| drawn: a negative share is never clipped to 0's
    colour, and the panels compare."""
    needed = {"encoding", "point", "layer", "slots", "share"}
    if shares.empty or not needed <= set(shares.columns):
        raise OrderlabError(f"patching figure: expected api.patch's shares, columns {', '.join(sorted(needed))}")
    conditions = list(dict.fromkeys(shares["encoding"]))
    groups = list(dict.fromkeys(shares["slots"]))
    rows = shares.assign(row=shares["point"] + " " + shares["layer"].astype(str))
    names = list(dict.fromkeys(rows.sort_values(["point", "layer"], kind="mergesort")["row"]))
    width = max(3.0, CELL_INCHES * len(groups) + 1.4)
    figure = Figure(figsize=(width * len(conditions) + 0.8, CELL_INCHES * len(names) + 1.8), dpi=DPI,
                    layout="constrained")  # fmt: skip
    axes = figure.subplots(1, len(conditions), squeeze=False)[0]
    grids = [_grid(rows[rows["encoding"] == condition], names, groups) for condition in conditions]
    drawn = np.concatenate([grid.ravel() for grid in grids])
    limit = max(1.0, float(np.abs(drawn[np.isfinite(drawn)]).max(initial=0.0)))
    image = None
    for ax, condition, grid in zip(axes, conditions, grids, strict=True):
        image = ax.imshow(grid, cmap=COLOURS, vmin=-limit, vmax=limit, aspect="auto")
        for (i, j), value in np.ndenumerate(grid):
            if np.isfinite(value):
                ax.text(j, i, f"{round(value, 2) + 0.0:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(value) > 0.6 * limit else "black")  # fmt: skip
        ax.set_xticks(range(len(groups)), groups, rotation=45 if max(map(len, groups)) > 3 else 0, fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set_xlabel("slots patched (target order)")
        ax.set_title(condition, fontsize=9)
    axes[0].set_ylabel("point, layer")
    pairs = shares.groupby(["input", "source", "target"]).ngroups if {"input", "source", "target"} <= set(shares) else 1
    figure.suptitle(f"{title or 'activation patching'}: share of the difference recovered (mean of {pairs} pair(s))",
                    fontsize=10)  # fmt: skip
    assert image is not None
    figure.colorbar(image, ax=list(axes), shrink=0.9, label="share recovered")
    return figure


def _grid(part: pd.DataFrame, names: list[str], groups: list[str]) -> np.ndarray:
    """(rows, groups): one condition's mean share per `point L` row and slot group, NaN where none was measured."""
    grid = part.groupby(["row", "slots"], sort=False)["share"].mean().unstack("slots")
    return grid.reindex(index=names, columns=groups).to_numpy(dtype=np.float64)
