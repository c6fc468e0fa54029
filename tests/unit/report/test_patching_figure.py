"""The patching heat map (report/patching_figure.py) on a hand-made frame: a share below 0 (the patch moved the output
away from the source's) is coloured as such, never clipped to the colour of 0, on one scale centred on 0."""

from __future__ import annotations

import numpy as np
import pandas as pd

from orderlab.report.patching_figure import patching_heat_map


def shares(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"encoding": "zero", "input": "a b c", "source": "0 1 2", "target": "1 0 2", "point": "output",
                          "layer": 1, "slots": slots, "share": share} for slots, share in values.items()])  # fmt: skip


def cell_colours(figure) -> dict[str, tuple[float, ...]]:
    ax = figure.axes[0]
    image = ax.images[0]
    rgba = image.to_rgba(image.get_array())[0]  # the one row: output 1
    return {tick.get_text(): tuple(rgba[j]) for j, tick in enumerate(ax.get_xticklabels())}


def test_a_negative_share_gets_its_own_colour_on_a_scale_centred_on_zero():
    figure = patching_heat_map(shares({"0": -0.5, "1": 0.0, "2": 0.5, "0+1+2": 1.0}))
    colours = cell_colours(figure)
    assert colours["0"] != colours["1"] != colours["2"] != colours["0+1+2"]
    red, _, blue, _ = colours["0"]
    assert blue > red  # below 0 on the blue side, a recovered share on the red
    assert colours["2"][0] > colours["2"][2]
    image = figure.axes[0].images[0]
    assert image.get_clim() == (-1.0, 1.0)  # the whole honest range even where the data stay inside it
    assert figure.axes[-1].get_ylabel() == "share recovered"  # the colour bar's


def test_the_scale_widens_symmetrically_to_the_largest_share():
    figure = patching_heat_map(shares({"0": -3.0, "1": 0.0, "0+1": 1.0}))
    low, high = figure.axes[0].images[0].get_clim()
    assert (low, high) == (-3.0, 3.0)
    colours = cell_colours(figure)
    assert np.allclose(colours["1"][:3], 0.97, atol=0.03)  # 0 stays white whatever the span
