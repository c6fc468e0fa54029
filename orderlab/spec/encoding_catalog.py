"""The encodings a spec may name, as the spec layer sees them: their context and a catalog passed in from above.

The spec is the bottom layer and imports no encoding: orderlab/encodings registers its registry here when it is
imported (orderlab/__init__.py imports it, so any use of orderlab has it), and load/relations validate names and
parameters through the `EncodingCatalog` protocol. A test may register another catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class EncodingContext:
    """What an encoding may depend on: the stack's shape, the seed and where tensors live."""

    d_model: int
    n_heads: int
    causal: bool
    seed: int
    dtype: str = "float64"
    max_len: int = 512
    device: str = "cpu"

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


class EncodingCatalog(Protocol):
    """What the spec asks of the encodings: their names, and whether one runs in a context with its parameters."""

    def names(self) -> list[str]: ...

    def __contains__(self, name: object) -> bool: ...

    def validate(self, name: str, context: EncodingContext, params: dict[str, Any]) -> None:
        """Raise ValueError (or OrderlabError for a user's class) when `name` cannot run in `context`."""


_registered: list[EncodingCatalog] = []


def register_catalog(catalog: EncodingCatalog) -> None:
    _registered[:] = [catalog]


def encoding_catalog() -> EncodingCatalog:
    """The registered catalog; orderlab/__init__ imports orderlab.encodings, which registers it."""
    if not _registered:
        raise RuntimeError("no encoding catalog registered: import orderlab.encodings before loading a spec")
    return _registered[0]
