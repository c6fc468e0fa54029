"""A user's function at a hook point (orderlab.api.run(spec, hooks={"2.output": fn})), called the same way on the
attention stack and on a transformers model: it maps the point's tensor to one of the same shape, floating point, on
the same device, or the run stops with one line naming the point."""

from __future__ import annotations

from collections.abc import Callable

import torch

from orderlab.errors import OrderlabError

UserHook = Callable[[torch.Tensor], torch.Tensor]


def applied(name: str, function: UserHook, tensor: torch.Tensor) -> torch.Tensor:
    """function(tensor), checked, in the tensor's dtype."""
    result = function(tensor)
    if not isinstance(result, torch.Tensor) or result.shape != tensor.shape:
        got = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
        raise OrderlabError(f"hooks: {name!r} returned {got}; expected a tensor of shape {tuple(tensor.shape)}")
    if not result.is_floating_point() or result.device != tensor.device:
        raise OrderlabError(f"hooks: {name!r} returned a {result.dtype} tensor on {result.device}; expected a "
                            f"floating-point tensor on {tensor.device}, as it was given")  # fmt: skip
    return result.to(tensor.dtype)
