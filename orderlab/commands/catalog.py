"""`orderlab encodings` and `orderlab models`: the catalog of what can be measured, as entries (drawn by
report/catalog_tables.py)."""

from __future__ import annotations

from orderlab.encodings import ENCODINGS
from orderlab.encodings.entries import EncodingEntry, describe
from orderlab.models.hf.zoo import ModelCatalog, catalog


def encodings() -> list[EncodingEntry]:
    """Every built-in positional encoding: kind, absolute or relative, parameters with defaults, reference."""
    return [describe(name, ENCODINGS.get(name)) for name in ENCODINGS]


def models() -> ModelCatalog:
    """The model zoo's families with the real weights found locally, and its broken plug-ins; loads and downloads
    nothing."""
    return catalog()
