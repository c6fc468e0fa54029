"""Checks that a user's `package.module:Class` fits the PositionalEncoding protocol, with one clear line if not.

`check_class` looks at the class only (no torch: spec validation must stay fast); `check_hooks`
calls the hooks once on a tiny batch and checks the shapes they return, before any real run.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel

from orderlab.encodings.base import EncodingContext, Kind, PositionalEncoding
from orderlab.errors import OrderlabError

KINDS = typing.get_args(Kind)
PROTOCOL_HELP = "see docs/encodings.md"


def misfit(name: str, problem: str) -> OrderlabError:
    return OrderlabError(f"encoding {name!r} does not fit the protocol: {problem} ({PROTOCOL_HELP})")


def check_class(name: str, found: Any) -> None:
    """Raise OrderlabError unless `found` is a PositionalEncoding subclass with the class attributes set."""
    if not (isinstance(found, type) and issubclass(found, PositionalEncoding)):
        raise misfit(name, "expected a subclass of orderlab.encodings.base.PositionalEncoding")
    expected = {"name": str, "kind": str, "relative": bool, "reference": str}
    for attribute, kind in expected.items():
        if not isinstance(getattr(found, attribute, None), kind):
            raise misfit(name, f"class attribute {attribute!r} must be a {kind.__name__}")
    if found.kind not in KINDS:
        raise misfit(name, f"kind {found.kind!r}; expected one of {', '.join(KINDS)}")
    if not (isinstance(found.Params, type) and issubclass(found.Params, BaseModel)):
        raise misfit(name, "Params must be a pydantic BaseModel")
    required = [field for field, info in found.Params.model_fields.items() if info.is_required()]
    if required:
        raise misfit(name, f"parameter {required[0]!r} has no default; every parameter needs one")


def check_hooks(name: str, encoding: PositionalEncoding) -> None:
    """Call each hook on a (B=2, h, n=3, d_head) batch and check what it returns."""
    import torch

    context: EncodingContext = encoding.context
    B, h, n, d_head = 2, context.n_heads, 3, context.d_head
    q = torch.randn(B, h, n, d_head, dtype=context.torch_dtype)
    k = torch.randn(B, h, n, d_head, dtype=context.torch_dtype)
    try:
        offsets = encoding.input_offsets(n)
        bias = encoding.attention_bias(q, k)
        rotated = encoding.rotate(q, k)
    except Exception as error:
        raise misfit(name, f"a hook raised {type(error).__name__}: {error}") from None
    if offsets is not None and tuple(getattr(offsets, "shape", ())) != (n, context.d_model):
        raise misfit(name, f"input_offsets({n}) must return None or a ({n}, {context.d_model}) tensor")
    if bias is not None and not _broadcasts(bias, (B, h, n, n)):
        raise misfit(name, f"attention_bias must return None or a tensor broadcastable to {(B, h, n, n)}")
    shapes_kept = isinstance(rotated, tuple) and len(rotated) == 2 and all(_shape(t) == q.shape for t in rotated)
    if not shapes_kept:
        raise misfit(name, f"rotate(q, k) must return a pair of tensors shaped like q {tuple(q.shape)}")


def _shape(tensor: Any) -> tuple[int, ...]:
    return tuple(getattr(tensor, "shape", ()))


def _broadcasts(tensor: Any, shape: tuple[int, ...]) -> bool:
    import torch

    try:
        return torch.broadcast_shapes(_shape(tensor), shape) == shape
    except RuntimeError:
        return False
