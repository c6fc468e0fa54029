"""Activations show what they hold, not every number: a one-line repr and a short notebook view."""

from __future__ import annotations

import pandas as pd
import torch

from orderlab.measure.activations import POINTS_SHOWN, Activations


def activations(points: int) -> Activations:
    index = pd.DataFrame({"input": ["the dog bit the man"] * 24, "order": range(24)})
    tensors = {f"{layer}.output": torch.randn(24, 5, 32) for layer in range(points)}
    return Activations(index, tensors)


def test_the_repr_is_one_short_line_of_shapes_never_the_tensors():
    shown = repr(activations(3))
    assert shown == (
        "Activations(rows=24, points={'0.output': (24, 5, 32) float32, '1.output': (24, 5, 32) float32, "
        "'2.output': (24, 5, 32) float32})"
    )
    many = repr(activations(POINTS_SHOWN + 4))
    assert "\n" not in many and many.endswith(", ... and 4 more})") and len(many) < 500  # a small case printed 13,000


def test_a_notebook_shows_the_points_and_the_first_rows_of_the_index():
    shown = activations(2)._repr_html_()
    assert "<td>1.output</td><td>(24, 5, 32) float32</td>" in shown and "24 rows, 2 hook points" in shown
    assert shown.count("the dog bit the man") == 10 and len(shown) < 5_000  # the index's head, not its 24 rows
