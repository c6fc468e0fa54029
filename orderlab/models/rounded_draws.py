"""A 16-bit seeded weight is its float32 draw, rounded: the same model whichever torch draws it.

torch's CPU kernels draw bfloat16 and float16 numbers their own way, and that way changes between releases: from one
generator, torch 2.11 and 2.13 give other 16-bit normal and uniform numbers at every size (their float32 draws
agree), and 2.11's bfloat16 normal_ runs 4.8x slower than its float32 one. A 16-bit seeded model would be another
model on another torch, and slow to build there. So a 16-bit draw runs in float32 and is rounded in: the numbers and
the generator's stream are the float32 build's, on every torch. A tensor's own normal_ or uniform_ draws into a
scratch a piece at a time, never a float32 copy of a large table (a normal_ piece holds whole blocks of 16, as the
kernel fills them, the remainder with the last); torch.nn.init's kaiming_uniform_, whose bound depends on the
tensor's shape, into a scratch of its shape. An init that torch does not hand to a mode (trunc_normal_,
orthogonal_: none of the zoo's families keeps one) has its tensor's own draws rounded and its arithmetic in 16 bits.
On torch 2.13, whose 16-bit normal_ of whole blocks of 16 is float32's rounded, the zoo's weights are the ones they
were.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from itertools import pairwise
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

SIXTEEN_BIT = (torch.bfloat16, torch.float16)
PIECE = 1 << 20  # float32 numbers a piece of a tensor's own draw holds at most (4 MiB); a multiple of 16
TENSOR_DRAWS = frozenset({"normal_", "uniform_"})  # each number placed by position: drawn a piece at a time
# torch.nn.init's draws (its fills write the same rounded numbers in any dtype); of these, torch 2.13 hands uniform_,
# normal_ and kaiming_uniform_ to a mode, the others only their tensor's own draws
INIT_DRAWS = frozenset({"uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                        "kaiming_normal_", "orthogonal_", "sparse_"})  # fmt: skip


class RoundedDraws(TorchFunctionMode):
    """While on, every draw into a 16-bit CPU tensor runs in float32 and is rounded in (drawn_rounded): a seeded
    build that draws everything (kept_draws.py holds its draws back and rounds them itself)."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if rounds(func, args[0] if args else kwargs.get("tensor")):
            return drawn_rounded(func, *args, **kwargs)
        return func(*args, **kwargs)


def rounds(func: Callable[..., Any], tensor: object) -> bool:
    """Whether this call draws into a 16-bit CPU tensor, and so runs in float32 (drawn_rounded): a tensor's own
    normal_ or uniform_ (or a wrapper of that name, as transformers' initialisation), or a torch.nn.init draw."""
    name = getattr(func, "__name__", "")
    draws = name in TENSOR_DRAWS or (initialises(func) and name in INIT_DRAWS)
    return (
        draws
        and isinstance(tensor, torch.Tensor)
        and tensor.dtype in SIXTEEN_BIT
        and tensor.device.type == "cpu"
        and tensor.layout == torch.strided
        and tensor.is_contiguous()
    )


def initialises(func: Callable[..., Any]) -> bool:
    """Whether func is one of torch.nn.init's functions (which write outside autograd)."""
    return getattr(func, "__module__", "") == "torch.nn.init"


def drawn_rounded(func: Callable[..., Any], tensor: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """func(tensor, *args, **kwargs) as it draws into a float32 tensor of the same shape, rounded into `tensor`
    (as torch.nn.init writes, outside autograd; a tensor's own draw within it, refused on a leaf that needs grad)."""
    name = getattr(func, "__name__", "")
    with torch.no_grad() if initialises(func) else nullcontext():
        if name not in TENSOR_DRAWS:  # an init whose numbers depend on the shape (a fan, a matrix): one scratch
            scratch = torch.empty(tensor.shape, dtype=torch.float32)
            func(scratch, *args, **kwargs)
            return tensor.copy_(scratch)
        flat = tensor.view(-1)
        for start, stop in pieces(flat.numel(), name == "normal_"):
            scratch = torch.empty(stop - start, dtype=torch.float32)
            func(scratch, *args, **kwargs)
            flat[start:stop].copy_(scratch)
    return tensor


def pieces(numbers: int, normal: bool) -> list[tuple[int, int]]:
    """[start, stop) of each piece, in order: PIECE numbers each, the last what is left. normal_ fills whole blocks
    of 16 and then draws its last 16 again after a remainder, so a piece of it starts on a block and the last holds
    16 numbers or more (a float32 tensor of under 16 is drawn another way: whole)."""
    cuts = [*range(0, numbers, PIECE), numbers]
    if normal and len(cuts) > 2 and cuts[-1] - cuts[-2] < 16:
        del cuts[-2]
    return list(pairwise(cuts))
