"""A spec's hook points per order and condition, held in memory (TransformerLens's run_with_cache, for orderlab).

`collect_activations` runs each reordering of each input under each condition through the adapters a run builds
(the same passes, the same hook points as `trace`), and stacks each requested point over those rows: row r of every
tensor is row r of the index frame. Rows of different lengths (inputs of other word or token counts) are padded
with NaN past their own slots. What the tensors will hold is measured on one pass per input and condition before
the rest runs, and refused in one line if it does not fit beside the run's own estimate (plan/limits.memory_beside_run).
Compute only: orderlab.api.activations is its door.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path

import pandas as pd
import torch

from orderlab.core import permutations as perms
from orderlab.core.hook_points import UNBATCHED_POINTS, WHOLE_PASS_POINTS, hook_name, point_of
from orderlab.core.text import tokenize
from orderlab.errors import OrderlabError
from orderlab.measure.adapters import Adapter, build_adapters, run_decisions
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.plan.amounts import size
from orderlab.plan.limits import memory_beside_run
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import Spec
from orderlab.spec.sweep import SweptValue, plan


@dataclass(frozen=True)
class Activations:
    """Hook points per reordering and condition: `index` (one row per combination x condition x input x order,
    in that order; `slots`: the row's own slot count) and `tensors` (point -> (rows, ...)), row for row."""

    index: pd.DataFrame
    tensors: dict[str, torch.Tensor]

    def __getitem__(self, point: str) -> torch.Tensor:
        return self.tensors[point]

    @property
    def points(self) -> list[str]:
        return list(self.tensors)

    def __repr__(self) -> str:
        """One line: the rows and each point's shape, never the tensors (a small case printed 13,000 characters)."""
        shown = ", ".join(f"{name!r}: {shape}" for name, shape in self._shapes()[:POINTS_SHOWN])
        more = f", ... and {len(self.tensors) - POINTS_SHOWN} more" if len(self.tensors) > POINTS_SHOWN else ""
        return f"Activations(rows={len(self.index):,}, points={{{shown}{more}}})"

    def _repr_html_(self) -> str:
        """A notebook's view: the points' shapes, and the first rows of the index."""
        points = "".join(f"<tr><td>{escape(name)}</td><td>{escape(shape)}</td></tr>" for name, shape in self._shapes())
        return (
            f"<div><strong>Activations</strong>: {len(self.index):,} rows, {len(self.tensors)} hook points</div>"
            f"<table><thead><tr><th>point</th><th>shape</th></tr></thead><tbody>{points}</tbody></table>"
            f"{self.index.head(INDEX_ROWS_SHOWN).to_html(index=False)}"
        )

    def _shapes(self) -> list[tuple[str, str]]:
        """(point, '(rows, slots, d) float32') per point."""
        return [(name, f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}") for name, t in self.tensors.items()]


POINTS_SHOWN = 8  # hook points named in the one-line repr
INDEX_ROWS_SHOWN = 10  # rows of the index in a notebook's view


@dataclass(frozen=True)
class _Group:
    """One sweep combination: its columns, its adapters (one per condition), its inputs."""

    columns: dict[str, SweptValue]
    adapters: list[Adapter]
    work: list[_Work]


@dataclass(frozen=True)
class _Work:
    """One input of one combination: its words and the orders asked for."""

    sentence: str
    words: list[str]
    orders: list[perms.Permutation]


def collect_activations(
    spec: Spec,
    spec_file: Path,
    points: list[str],
    orders: perms.Rule | None = None,
    options: RunOptions = DEFAULTS,
) -> Activations:
    """The requested hook points of every reordering (the spec's own permutations, or `orders` applied to each input)
    under every condition of every sweep combination; OrderlabError (one line) for a point no condition exposes or
    tensors that would not fit."""
    if not points:
        raise OrderlabError("points: none asked for; expected hook point names such as '1.output' (orderlab models)")
    maps = any(point_of(point) == "pattern" for point in points)
    decisions = run_decisions(spec, spec_file, options.device)  # once, for every combination
    groups = []
    for configuration in plan(spec):
        concrete = configuration.spec
        adapters = build_adapters(concrete, options.device, spec_file, attention_maps=maps, decisions=decisions,
                                  given=options.model, user_hooks=options.hooks)  # fmt: skip
        groups.append(_Group(configuration.columns, adapters, _inputs(concrete, orders)))
    shapes = _shapes(groups, points)
    rows = sum(len(group.adapters) * len(item.orders) for group in groups for item in group.work)
    _refuse_what_cannot_fit(spec, spec_file, shapes, rows, groups[0].adapters[0].dtype)
    return _gather(groups, points, shapes, rows, options)


def _inputs(spec: Spec, orders: perms.Rule | None) -> list[_Work]:
    """Each distinct input sentence, in the sorted order of metrics.csv, with its orders in label order."""
    if isinstance(spec.inputs, CorpusInputs):
        raise OrderlabError("inputs: a corpus spec's sentences are a file, measured in batched passes; expected "
                            "inputs: - sentence: ... (one corpus line traced: trace(spec, input_index=N))")  # fmt: skip
    rules: dict[str, list[perms.Rule]] = {}
    for item in spec.sentences:
        rules.setdefault(item.sentence, []).append(item.permutations)
    work = []
    for sentence in sorted(rules):
        words = tokenize(sentence, spec.embeddings.lowercase)
        asked = rules[sentence] if orders is None else [orders]
        if orders is not None:
            try:
                perms.validate_rule(orders, words)
            except ValueError as error:
                raise OrderlabError(f"orders: {error} (input {sentence!r})") from None
        work.append(_Work(sentence, words, list(perms.in_label_order_range(asked, words, spec.seed))))
    if not work:
        raise OrderlabError("inputs: the spec has no input sentences; expected inputs: - sentence: ...")
    return work


def _names(adapter: Adapter) -> list[str]:
    """The point names an adapter's passes expose: the whole pass's, then each layer's."""
    layers = [point for point in adapter.hook_points if point not in WHOLE_PASS_POINTS]
    whole = [point for point in adapter.hook_points if point in WHOLE_PASS_POINTS]
    return whole + [hook_name(layer, point) for layer in range(1, adapter.n_layers + 1) for point in layers]


def _shapes(groups: list[_Group], points: list[str]) -> dict[str, list[int]]:
    """Each point's shape per row, padded to the largest any input gives (one identity pass per input and condition);
    a point that a condition does not expose is refused."""
    shapes: dict[str, list[int]] = {}
    for group in groups:
        for adapter in group.adapters:
            exposed = _names(adapter)
            for point in points:
                if point not in exposed:
                    raise OrderlabError(f"points: {point!r} is not a hook point of {adapter.label}; expected one of "
                                        f"{', '.join(exposed)}")  # fmt: skip
            for item in group.work:
                identity = torch.arange(len(item.words), device=adapter.device)[None]
                with torch.inference_mode():
                    hooks = adapter.sentence(item.words).forward(identity, points).hooks
                for point in points:
                    if point not in hooks:
                        raise OrderlabError(f"points: {point!r} is not formed by {adapter.label}'s passes (an additive "
                                            "encoding's 'position' only); expected another point")  # fmt: skip
                    shape = list(hooks[point].shape[0 if point in UNBATCHED_POINTS else 1 :])
                    known = shapes.setdefault(point, shape)
                    shapes[point] = [max(a, b) for a, b in zip(known, shape, strict=True)]
    return shapes


def _refuse_what_cannot_fit(
    spec: Spec, spec_file: Path, shapes: dict[str, list[int]], rows: int, dtype: torch.dtype
) -> None:
    needed = rows * sum(torch.Size(shape).numel() for shape in shapes.values()) * dtype.itemsize
    free = memory_beside_run(spec, spec_file)
    if needed > free:
        raise OrderlabError(f"activations: {size(needed)} for {len(shapes)} point(s) x {rows:,} rows (conditions x "
                            f"inputs x orders), over the {size(max(free, 0))} this machine has beside the run's own "
                            "estimate; expected fewer points, orders or inputs")  # fmt: skip


def _gather(
    groups: list[_Group],
    points: list[str],
    shapes: dict[str, list[int]],
    rows: int,
    options: RunOptions,
) -> Activations:
    dtype = groups[0].adapters[0].dtype
    maps = any(point_of(point) == "pattern" for point in points)  # chunks sized for attention maps
    tensors = {point: torch.full((rows, *shape), float("nan"), dtype=dtype) for point, shape in shapes.items()}
    index: list[dict[str, object]] = []
    for group in groups:
        for adapter in group.adapters:
            for item in group.work:
                bound = adapter.sentence(item.words)
                slots = len(bound.slot_names())
                for chunk in perms.chunks(iter(item.orders), adapter.chunk_size(len(item.words), maps)):
                    orders = torch.tensor(chunk, device=adapter.device)
                    with torch.inference_mode():
                        hooks = bound.forward(orders, points).hooks
                    start = len(index)
                    for point in points:
                        _place(tensors[point], start, len(chunk), hooks[point], point in UNBATCHED_POINTS)
                    index += [_row(group.columns, adapter.label, item, order, slots) for order in chunk]
                    if options.progress:
                        options.progress(len(index), rows)
    return Activations(pd.DataFrame(index), tensors)


def _row(
    columns: dict[str, SweptValue], label: str, item: _Work, order: perms.Permutation, slots: int
) -> dict[str, object]:
    """The index frame's row of one reordering: the sweep's columns, then what metrics.csv calls each thing."""
    permuted = " ".join(perms.apply(order, item.words))
    return {**columns, "encoding": label, "input": item.sentence, "permutation": perms.label(order),
            "permuted": permuted, "slots": slots}  # fmt: skip


def _place(held: torch.Tensor, start: int, count: int, tensor: torch.Tensor, unbatched: bool) -> None:
    """Rows start..start+count-1 of `held` from a pass's tensor (B, ...) or, for a whole pass's point, (...)."""
    value = tensor.detach().to("cpu", held.dtype)
    value = value[None].expand(count, *value.shape) if unbatched else value
    target = held[(slice(start, start + count), *(slice(0, extent) for extent in value.shape[1:]))]
    target.copy_(value)
