"""A model family's hook points (or the attention stack's: `stack`), each with its shape on a small seeded model,
whether a user's function may write it, and its names in TransformerLens and nnsight (`orderlab hooks FAMILY`); and
docs/python.md's tables of them (`python -m orderlab.measure.hook_listing` prints them), generated from the vocabulary
(core/hook_points.py) and the families' declarations, so that a point or family added is a row without touching the
docs by hand (tests/e2e/test_docs.py holds the page to them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from orderlab.core.hook_points import (
    HOOK_POINTS,
    LAYER_POINTS,
    LOGITS,
    PASS_POINTS,
    TRANSFORMER_LENS,
    WHOLE_PASS_POINTS,
    hook_name,
    point_of,
    transformer_lens_name,
)
from orderlab.core.registry import did_you_mean
from orderlab.errors import OrderlabError
from orderlab.families import FAMILIES
from orderlab.measure.adapters import build_adapters
from orderlab.models.devices import CPU
from orderlab.spec.schema import Spec

STACK = "stack"  # the attention stack's points, listed beside the families'
WORDS = ["dog", "bites", "man"]
SIZE = {"d_model": 32, "n_heads": 4, "n_layers": 2}  # the seeded model whose shapes are shown


@dataclass(frozen=True)
class HookPoint:
    """One point, named at layer 1 (the same at every layer)."""

    name: str  # '1.q', 'logits'
    shape: tuple[int, ...]  # on one sentence of WORDS
    writable: bool  # run(spec, hooks={name: fn}) may replace it
    transformer_lens: str  # '' where TransformerLens has no such hook
    nnsight: str  # '' for the attention stack


@dataclass(frozen=True)
class HookListing:
    family: str
    model: str  # the seeded model and sentence the shapes are from, in words
    points: list[HookPoint]


def hook_listing(family: str) -> HookListing:
    """The points of `family` (or `stack`), in the order a pass forms them; OrderlabError (one line) for a name that
    is neither."""
    if family != STACK and family not in FAMILIES.names():
        names = [STACK, *FAMILIES.names()]
        raise OrderlabError(f"hooks: {family!r} is no model family; expected one of {', '.join(names)}. "
                            f"{did_you_mean(family, names)}".rstrip(". ") )  # fmt: skip
    model = {"kind": "hf", "family": family, **SIZE} if family != STACK else SIZE
    spec = Spec.model_validate({"name": "hooks", "model": model, "inputs": [{"sentence": " ".join(WORDS)}]})
    (adapter, *_) = build_adapters(spec, CPU, Path("hooks.yaml"), attention_maps=True)
    names = [name for name in adapter.hook_points if name in WHOLE_PASS_POINTS]
    names += [hook_name(1, point) for point in adapter.hook_points if point not in WHOLE_PASS_POINTS]
    with torch.inference_mode():
        formed = adapter.sentence(WORDS).forward(torch.arange(len(WORDS))[None], names).hooks
    writable, nnsight = _writable_and_paths(adapter, names)
    points = [HookPoint(name, tuple(formed[name].shape), name in writable, transformer_lens_name(name),
                        nnsight.get(name, "")) for name in names if name in formed]  # fmt: skip
    shown = ", ".join(f"{key} {value}" for key, value in SIZE.items())
    return HookListing(family, f"a seeded {family} ({shown}) on {' '.join(WORDS)!r}", points)


def _writable_and_paths(adapter: object, names: list[str]) -> tuple[set[str], dict[str, str]]:
    """The points a user's function may replace, and each point's nnsight path (a transformers model's only)."""
    from orderlab.models.pretrained import PretrainedAdapter

    if not isinstance(adapter, PretrainedAdapter):  # the stack: every point a pass forms but the whole pass's
        return {name for name in names if name not in WHOLE_PASS_POINTS}, {}
    from orderlab.models.hf.sites import nnsight_path, writable_points

    backend = adapter.shared.backend
    writable = set(writable_points(backend.code, backend.model.config)) | set(backend.code.pass_points)
    return ({name for name in names if point_of(name) in writable},
            {name: nnsight_path(backend.model, backend.code, name) for name in names})  # fmt: skip


def markdown_table() -> str:
    """docs/python.md's tables: each point's TransformerLens name (layer 2 shown), and per family its blocks as
    nnsight reaches layer 1 (nnsight counts from 0) and where below them each point is (k and v beside q; '—' where the
    family has no such point)."""
    lines = ["| orderlab | TransformerLens | on |", "| --- | --- | --- |"]
    for point in (*PASS_POINTS, *HOOK_POINTS, LOGITS):
        name = point if point in WHOLE_PASS_POINTS else hook_name(2, point)
        where = "causal LM families" if point == LOGITS else "all" if point in LAYER_POINTS else "the stack"
        theirs = f"`{transformer_lens_name(name)}`" if TRANSFORMER_LENS[point] else "—"
        lines.append(f"| `{name}` | {theirs} | {where} |")
    columns = ["q", "attn_out", "mid", "mlp_out"]
    header = " | ".join(f"`L.{column}`" for column in columns)
    lines += ["", f"| family | layer 1 (`L.input`: `.input`, `L.output`: `.output`) | {header} |",
              "| --- " * (len(columns) + 2) + "|"]  # fmt: skip
    for family in FAMILIES.names():
        paths = {point_of(point.name): point.nnsight for point in hook_listing(family).points}
        block = paths["input"].removesuffix(".input")
        cells = [f"`{paths[column].removeprefix(block)}`" if column in paths else "—" for column in columns]
        lines.append(f"| `{family}` | `{block}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
