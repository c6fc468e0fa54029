"""GPT-2's and BLOOM's tanh GELU computed with the same float ops in the same order, in place.

transformers writes these GELUs as a Python expression: each of its elementwise ops (GPT-2's eight, BLOOM's nine)
allocates and writes a tensor the size of the feed-forward layer's activations. Here the same ops, with the same
constants, in the same order, run in place on one scratch tensor beside the output (BLOOM's: two): every number is
the same, bit for bit (tests/unit/models/test_inplace_gelu.py), and the activation runs 1.2-2.6x faster at
GPT-2-small's width, from the walk's rows to a dense chunk's (docs/performance.md, "What was tried"). The input
is never written (a hook may hold it). Where a gradient is taken, transformers' own expression runs.

Swapped in only in models orderlab builds (seeded, or loaded from a folder); a model object passed from Python is
the caller's and is never written (models/hf/given.py).
"""

from __future__ import annotations

import math

import torch

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)  # transformers' NewGELUActivation constant, as it computes it
BLOOM_SCALE = 0.79788456  # BLOOM's rounded sqrt(2 / pi), as bloom_gelu_forward writes it


def new_gelu(x: torch.Tensor) -> torch.Tensor:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))), as NewGELUActivation evaluates it."""
    if torch.is_grad_enabled() and x.requires_grad:
        return 0.5 * x * (1.0 + torch.tanh(SQRT_2_OVER_PI * (x + 0.044715 * torch.pow(x, 3.0))))
    inner = torch.pow(x, 3.0).mul_(0.044715).add_(x).mul_(SQRT_2_OVER_PI).tanh_().add_(1.0)
    return (0.5 * x).mul_(inner)


def bloom_gelu(x: torch.Tensor) -> torch.Tensor:
    """x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x))), as bloom_gelu_forward evaluates it."""
    if torch.is_grad_enabled() and x.requires_grad:
        return x * 0.5 * (1.0 + torch.tanh(BLOOM_SCALE * x * (1 + 0.044715 * x * x)))
    inner = (0.044715 * x).mul_(x).add_(1).mul_(BLOOM_SCALE * x).tanh_().add_(1.0)
    return (x * 0.5).mul_(inner)


class InPlaceGELU(torch.nn.Module):
    """One of the GELUs above, where transformers' module was: its name, and so its hook points, are kept."""

    def __init__(self, function: str):
        super().__init__()
        self.function = function

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return FUNCTIONS[self.function](x)

    def extra_repr(self) -> str:
        return self.function


FUNCTIONS = {"new_gelu": new_gelu, "bloom_gelu": bloom_gelu}
REPLACED = {"NewGELUActivation": "new_gelu", "BloomGelu": "bloom_gelu"}  # transformers' class -> its twin here


def inplace_activations(model: torch.nn.Module) -> int:
    """Swap each of transformers' tanh GELU modules in `model` (its exact class, not a subclass) for its in-place twin;
    the count swapped."""
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            function = REPLACED.get(type(child).__name__)
            if function is not None and type(child).__module__.startswith("transformers."):
                setattr(parent, name, InPlaceGELU(function))
                swapped += 1
    return swapped
