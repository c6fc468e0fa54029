"""The `patching:` block of a spec: which activations of one order's run are copied into another order's run, and
which output tells how much of the difference between the two runs moved with them. Torch-free.

A *slot* is a word position of the run patched into (the target order): slot k holds the k-th word of that order
and its sub-tokens; specials ([CLS], [SEP], a causal LM's BOS) are never patched. `match` says which of the source
run's tokens slot k receives: `position`, the source's slot k (whatever word sits there); `word`, the tokens of the
same word in the source order. The measurement is measure/patching.py's; docs/spec.md has the reference.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from orderlab.core import bounds
from orderlab.core.strict_model import StrictModel

EFFECTS = ("state", "last_logprob")  # the outputs a patch's effect is read on (measure/patching.py)
MATCHES = ("position", "word")  # what a target slot receives from the source run


class PatchingSpec(StrictModel):
    """Activation patching between two orders of each input: per hook point, layer and slot group, the share of the
    difference between the source's and the target's output that patching recovers."""

    points: list[str] = Field(
        ["output"],
        min_length=1,
        description="Hook points of a layer that a function may write (orderlab models lists them), e.g. [output].",
    )
    layers: Literal["all"] | list[int] = Field(
        "all", description="Layers (from 1) whose points are patched, each on its own; all: every layer."
    )
    slots: Literal["each", "all"] | list[list[int]] = Field(
        "each",
        description=(
            "Slot groups patched together: each (every slot alone, then all of them), all (one group of every "
            "slot), or a list of groups of slots (from 0; an empty group patches nothing)."
        ),
    )
    match: Literal["position", "word"] = Field(
        "position",
        description="What a target slot receives: the source's tokens at the same slot, or those of the same word.",
    )
    effect: Literal["state", "last_logprob"] = Field(
        "state",
        description=(
            "The output judged at the last slot: state (its word state at the last layer; share 1 - |patched - "
            "source| / |target - source|) or last_logprob (a causal LM's log P of its word given the words before; "
            "share (patched - target) / (source - target))."
        ),
    )
    pairs: Literal["reorderings"] | list[tuple[list[int], list[int]]] = Field(
        "reorderings",
        max_length=bounds.MAX_SHOWN_REORDERINGS,
        description=(
            "[source, target] orders of each input, each a permutation of its word slots; reorderings: the input as "
            "written into each reordering its permutations give."
        ),
    )

    @field_validator("layers")
    @classmethod
    def _layers_from_one(cls, value: Literal["all"] | list[int]) -> Literal["all"] | list[int]:
        if isinstance(value, list) and (not value or min(value) < 1 or len(set(value)) != len(value)):
            raise ValueError(f"layers {value}: expected 'all' or distinct layers from 1")
        return value

    @field_validator("slots")
    @classmethod
    def _slots_from_zero(cls, value: str | list[list[int]]) -> str | list[list[int]]:
        if isinstance(value, list) and (not value or any(slot < 0 for group in value for slot in group)):
            raise ValueError(f"slots {value}: expected 'each', 'all' or groups of slots from 0")
        return value

    @field_validator("points")
    @classmethod
    def _points_named_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value) or any(not point or "." in point for point in value):
            raise ValueError(f"points {value}: expected distinct point names without a layer, e.g. [output]")
        return value
