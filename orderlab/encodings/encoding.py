"""The one protocol every positional encoding follows, whatever its kind.

An encoding can act at three places in the stack, and overrides only the hook(s) it needs:
  - `input_offsets(n)`   -> (n, d_model) added to the token vectors (absolute: sinusoidal, learned)
  - `attention_bias(q, k)` -> broadcastable to (B, h, n, n), added to the scores (ALiBi, T5)
  - `rotate(q, k)`       -> (q, k) transformed by slot before the scores (RoPE, xPos)
The stack calls all three and never looks at an encoding's name.

Encoding modules must not import torch at import time (the registry is read by fast commands
such as `validate`); they import it inside the hooks, which only run during a computation.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ValidationError

from orderlab.core.registry import did_you_mean
from orderlab.core.strict_model import StrictModel
from orderlab.encodings.context import EncodingContext as EncodingContext  # re-exported for encodings

if TYPE_CHECKING:
    import torch

Kind = Literal["none", "additive", "bias", "rotary"]
TableKey = tuple[tuple[int, ...], float]  # a seeded table's shape and sigma


class EncodingParams(StrictModel):
    """The base of every encoding's parameters: unknown keys are refused, NaN and inf too, booleans are no numbers,
    values never change."""


class NoParams(EncodingParams):
    """An encoding without parameters."""


class PositionalEncoding:
    """Base class: no position at all. Subclasses set the class attributes and override hooks."""

    name: ClassVar[str]
    kind: ClassVar[Kind]
    relative: ClassVar[bool]  # True when attention scores depend on slot offsets i - j only
    reference: ClassVar[str]  # the paper, for `orderlab encodings` and docs
    # True when, under a causal mask, every hook's result at slot i depends on slots <= i only and not on the
    # sentence's length, and rotate is linear slot by slot: then a causal stack computes each distinct prefix of
    # a chunk once (orderlab/models/prefix_trie.py; docs/encodings.md)
    shares_prefixes: ClassVar[bool] = False
    Params: ClassVar[type[BaseModel]] = NoParams

    def __init__(self, context: EncodingContext, params: dict[str, Any] | None = None):
        self.context = context
        self.params: Any = self.parse_params(params or {})

    @classmethod
    def parse_params(cls, params: dict[str, Any]) -> Any:
        try:
            return cls.Params.model_validate(params)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(map(str, first["loc"])) or "params"
            if first["type"] == "extra_forbidden":
                hint = (
                    did_you_mean(field, list(cls.Params.model_fields)) if cls.Params.model_fields else "It takes none."
                )
                raise ValueError(f"{cls.name}: unknown parameter {field!r}. {hint}") from None
            raise ValueError(f"{cls.name}: {field}: {first['msg'].replace('Input should be', 'expected')}") from None

    @classmethod
    def validate(cls, context: EncodingContext, params: dict[str, Any]) -> None:
        """Raise ValueError when this encoding cannot run in `context` with `params`."""
        cls.parse_params(params)

    def input_offsets(self, n: int) -> torch.Tensor | None:
        """(n, d_model) vectors added to the token vectors at slots 0..n-1, or None."""
        return None

    def attention_bias(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor | None:
        """A bias broadcastable to the (B, h, n, n) scores, or None. q, k: (B, h, n, d_head)."""
        return None

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q and k transformed by slot before the scores are taken. q, k: (B, h, n, d_head)."""
        return q, k

    def tables(self) -> dict[TableKey, torch.Tensor]:
        """The seeded tables drawn so far, by (shape, sigma): training adjusts them, checkpoints store them."""
        # kept in the instance's __dict__: a subclass need not call __init__
        tables: dict[TableKey, torch.Tensor] = self.__dict__.setdefault("_tables", {})
        return tables

    def table(self, *shape: int, sigma: float = 1.0) -> torch.Tensor:
        """This encoding's seeded table of `shape` (see `seeded_table`), drawn once per instance and shape.

        Hooks run once per chunk: drawing a 512 x d table each time cost more than the hook's own arithmetic.
        """
        tables = self.tables()
        key = (shape, sigma)
        if key not in tables:
            tables[key] = seeded_table(self.context, self.name, *shape, sigma=sigma)
        return tables[key]


def torch_dtype(context: EncodingContext) -> torch.dtype:
    """The context's dtype as torch's (imported here: encodings import torch only when they compute)."""
    import torch

    dtype = getattr(torch, context.dtype)
    assert isinstance(dtype, torch.dtype)
    return dtype


def seeded_table(context: EncodingContext, salt: str, *shape: int, sigma: float = 1.0) -> torch.Tensor:
    """A N(0, sigma^2) table drawn in float64 on the CPU from (seed, salt), then cast: the same on every machine.

    The salt (the encoding's name) keeps tables of different encodings independent of each other
    and of the stack's weights, which are drawn from the bare seed.
    """
    import torch

    digest = hashlib.sha256(f"{context.seed}\x00{salt}".encode()).digest()
    generator = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)
    table = torch.randn(*shape, generator=generator, dtype=torch.float64) * sigma
    return table.to(dtype=torch_dtype(context), device=context.device)
