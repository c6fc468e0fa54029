"""Escalation to the twin: the orders a run cannot resolve, measured again in the finer precision.

A bfloat16 pass carries round-off near 1e-2, and its round-off line (16 x that) is wider than many real effects: a
value within it could be 0.08 or 0. Where a condition's line for an input is wider than the spec's `resolution` at
some judged layer, head and metric (`escalates`, from the measured round-off alone, before the orders run), the loop
measures every order in the run's precision as usual, and an order with some judged value within such a line
(`unresolved_orders`) is measured again in the twin's precision (16-bit: float32; float32: float64; float64 never
escalates), passed as the run passes them (Adapter.finer: a causal LM's shared prefixes walked again, where the
round-off twin runs dense, one identity pass per input), judged by that model's own round-off (measured against its
own twin, so that its line covers the walk). An order whose values all clear their
lines, or whose lines are no wider than the resolution, keeps the run's values and verdicts. The decision is taken
per order from that order's own values, which do not depend on the chunk it ran in, so every shard decides alike.
Never prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from orderlab.measure.verdicts import round_off_lines
from orderlab.metrics import METRICS, all_metrics
from orderlab.vocabulary.digest import NoiseKey, Reach

FINEST = "float64"  # a float64 run never escalates: no finer twin to ask


def judged_sources() -> set[str]:
    """The metrics whose measured round-off judges some metric's rows (the metrics judged by round-off, or their
    noise source)."""
    return {m.noise_source for m in all_metrics() if m.passing is not None}


def judged_lines(noise: Mapping[NoiseKey, float], dtype: str) -> dict[NoiseKey, float]:
    """The finite round-off line of every judged metric's noise key (layer, head, noise source)."""
    sources = judged_sources()
    keys = [key for key in noise if key[2] in METRICS and key[2] in sources]
    lines = round_off_lines(np.array([noise[key] for key in keys], dtype=np.float64), dtype)
    return {key: float(line) for key, line in zip(keys, lines, strict=True) if math.isfinite(line)}


def widest_lines(noise: Mapping[NoiseKey, float], dtype: str) -> dict[int, float]:
    """Per layer, the widest finite round-off line of any judged metric and head: effects above it are resolved."""
    return per_layer(judged_lines(noise, dtype))


def per_layer(lines: Mapping[NoiseKey, float]) -> dict[int, float]:
    widest: dict[int, float] = {}
    for (layer, _head, _metric), line in lines.items():
        widest[layer] = max(widest.get(layer, 0.0), line)
    return widest


def unresolvable(noise: Mapping[NoiseKey, float], dtype: str, resolution: float) -> dict[NoiseKey, float]:
    """The judged lines wider than the resolution: a value within one of them is unresolved in `dtype`."""
    return {key: line for key, line in judged_lines(noise, dtype).items() if line > resolution}


def reached_lines(
    noise: Mapping[NoiseKey, float], dtype: str, resolution: float, finer: tuple[Mapping[NoiseKey, float], str] | None
) -> tuple[dict[int, float], str]:
    """Per layer, the widest line an input's verdicts were judged against, and the precision of the widest: the run's
    line where it is no wider than the resolution, else (where the input escalates: `finer`, the twin's round-off and
    precision) the twin's, which judges every order within the run's line."""
    lines = judged_lines(noise, dtype)
    if finer is None:
        return per_layer(lines), dtype
    twin_lines = judged_lines(*finer)
    chosen = {
        key: (line, dtype) if line <= resolution else (twin_lines.get(key, math.nan), finer[1])
        for key, line in lines.items()
    }
    kept = {key: (line, judged) for key, (line, judged) in chosen.items() if math.isfinite(line)}
    if not kept:
        return {}, dtype
    widest = max(kept.values(), key=lambda pair: pair[0])[1]
    return per_layer({key: line for key, (line, _) in kept.items()}), widest


def escalates(noise: Mapping[NoiseKey, float], dtype: str, resolution: float, allowed: bool) -> bool:
    """Whether an input measured under `noise` in `dtype` is measured again in the twin's precision: allowed by the
    spec, a finer twin exists, and some judged line is wider than the resolution."""
    if not allowed or dtype == FINEST:
        return False
    return any(line > resolution for line in widest_lines(noise, dtype).values())


def coarse(reach: Mapping[str, Reach], resolution: float) -> bool:
    """Whether any condition re-measured something or was judged against a line wider than the resolution."""
    return any(r.remeasured or r.line > resolution for r in reach.values())


def resolution_record(resolution: float, reach: Mapping[str, Reach]) -> dict[str, object] | None:
    """manifest.json's `resolution`: the promise and, per condition, what it reached and what was re-measured; None
    where every condition resolved everything in its own precision (nothing to say beyond the spec)."""
    if not coarse(reach, resolution):
        return None
    return {"promised": resolution, "conditions": {label: r.record() for label, r in sorted(reach.items())}}


def reach_note(dtype: str, resolution: float, reach: Mapping[str, Reach]) -> str:
    """The terminal's line on what each condition resolved, e.g. 'zero: effects above 3.1e-02 resolved (bfloat16,
    widest line at layer 3)' or '..., 24 orders re-measured in float32'; empty where nothing needs saying."""
    if not coarse(reach, resolution):
        return ""
    parts = []
    for label, r in sorted(reach.items()):
        judged = r.dtype or dtype
        part = f"{label}: effects above {r.line:.1e} resolved ({judged}, widest line at layer {r.layer})"
        if r.remeasured:
            part += f", {r.remeasured:,} orders or probes re-measured in {r.remeasured_in}"
        parts.append(part)
    return f"resolution {resolution:.0e} promised; " + "; ".join(parts)
