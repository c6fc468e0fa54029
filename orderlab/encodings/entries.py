"""The entries `orderlab encodings` lists: one plain record per encoding class. Torch-free, like the registry."""

from __future__ import annotations

from dataclasses import dataclass

from orderlab.encodings.encoding import PositionalEncoding

KIND_WORDS = {"none": "none", "additive": "additive (input)", "bias": "attention bias", "rotary": "rotary (q, k)"}


@dataclass(frozen=True)
class EncodingEntry:
    name: str
    kind: str
    position: str  # absolute | relative | -
    params: list[tuple[str, str, str]]  # (name, default, description)
    reference: str


def describe(name: str, cls: type[PositionalEncoding]) -> EncodingEntry:
    params = [(field, repr(info.default), info.description or "") for field, info in cls.Params.model_fields.items()]
    position = "-" if cls.kind == "none" else ("relative" if cls.relative else "absolute")
    return EncodingEntry(name, KIND_WORDS.get(cls.kind, cls.kind), position, params, cls.reference)
