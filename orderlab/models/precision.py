"""What a pass really computes in, and the dtypes a run may ask for on its device.

A model may compute part of a pass in a coarser precision than its weights: transformers' Llama and T5 take their
RMS norms in float32, BLOOM its softmax, whatever the model's dtype. A float64 run of such a model carries
float32's round-off in those steps, and its verdicts must be judged by that (measure/verdicts.py). `computed_dtype`
watches one pass op by op (a TorchDispatchMode) and returns the coarsest floating dtype any op turned a tensor of
the run's dtype into; ops that build their own coarser tensors from nothing (ALiBi's slopes, bucket arithmetic on
integers) do not count: they round constants, the same for every order, not the states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from orderlab.errors import OrderlabError

# The most numbers of one weight a 16-bit model's twin widens at once (64 Mi: 256 MB in float32); bigger ones (a
# vocabulary-wide LM head) are widened a piece at a time.
WIDEN_NUMBERS = 64 * 2**20
# Ops a pass in a 16-bit dtype needs on its device (the stack's and the zoo's), tried once before a run starts.
PROBED_OPS = "matmul, softmax, layer_norm, gelu, exp"


class _DowncastWatch(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Records the floating dtypes that ops produce from inputs of `dtype` where those are coarser."""

    def __init__(self, dtype: torch.dtype):
        super().__init__()  # type: ignore[no-untyped-call]
        self.dtype, self.seen = dtype, {dtype}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if any(isinstance(t, torch.Tensor) and t.dtype == self.dtype for t in tree_leaves((args, kwargs))):
            self.seen.update(t.dtype for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point())
        return out


class _Converting(TorchFunctionMode):
    """Every op reads the tensors `converts` picks in `dtype`, each converted while the op reads it: an embedding's
    table after the lookup (its rows, not the whole table; rounding commutes with a gather), a linear weight above
    WIDEN_NUMBERS a piece of output rows at a time."""

    def __init__(self, dtype: torch.dtype):
        super().__init__()
        self.dtype = dtype

    def converts(self, tensor: torch.Tensor) -> bool:
        raise NotImplementedError

    def _convert(self, item: Any) -> Any:
        return item.to(self.dtype) if isinstance(item, torch.Tensor) and self.converts(item) else item

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is F.embedding and isinstance(args[1], torch.Tensor) and self.converts(args[1]):
            return func(*args, **kwargs).to(self.dtype)
        if func is F.linear and self.converts(args[1]) and args[1].numel() > WIDEN_NUMBERS:
            return self._linear_in_pieces(*args, **kwargs)
        args = tuple(self._convert(item) for item in args)
        kwargs = {name: self._convert(item) for name, item in kwargs.items()}
        return func(*args, **kwargs)

    def _linear_in_pieces(
        self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """x @ weight.T (+ bias) with a weight too big to convert whole (an LM head over a 128k vocabulary): its output
        rows in pieces of WIDEN_NUMBERS numbers, each piece converted while it is used."""
        x, rows = self._convert(x), max(1, WIDEN_NUMBERS // weight.shape[1])
        pieces = [F.linear(x, weight[start : start + rows].to(self.dtype),
                           None if bias is None else bias[start : start + rows].to(self.dtype))
                  for start in range(0, weight.shape[0], rows)]  # fmt: skip
        return torch.cat(pieces, dim=-1)


class _Widening(_Converting):
    """Every op computes in `wide`: 16-bit tensor arguments are widened to it, and a cast to the 16-bit dtype (a
    model's `.to(self.weight.dtype)`, `dtype=` of a factory) asks for `wide` instead."""

    def __init__(self, narrow: torch.dtype, wide: torch.dtype):
        super().__init__(wide)
        self.narrow = narrow

    def converts(self, tensor: torch.Tensor) -> bool:
        return tensor.dtype == self.narrow

    def _convert(self, item: Any) -> Any:
        return self.dtype if item is self.narrow else super()._convert(item)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func in (torch.Tensor.bfloat16, torch.Tensor.half):
            return args[0].to(self.dtype)
        return super().__torch_function__(func, types, args, kwargs)


class _Borrowing(_Converting):
    """Every op that reads one of `model`'s own weights (a parameter or floating buffer, known by identity) reads it
    in `dtype`; nothing else is touched, so a cast the model makes on purpose (Llama's RMS norm in float32) stays
    as a copy of the model in `dtype` would make it."""

    def __init__(self, model: torch.nn.Module, dtype: torch.dtype):
        super().__init__(dtype)
        owned = [*model.parameters(), *model.buffers()]
        self.owned = {id(tensor) for tensor in owned if tensor.is_floating_point() and tensor.dtype != dtype}

    def converts(self, tensor: torch.Tensor) -> bool:
        return id(tensor) in self.owned


@contextmanager
def widened_ops(narrow: torch.dtype, wide: torch.dtype) -> Iterator[None]:
    """While open, a model whose weights are `narrow` computes in `wide`, each weight widened only while an op reads
    it: a 16-bit model's round-off twin without a copy of the model (at most one widened matrix at a time)."""
    with _Widening(narrow, wide):
        yield


@contextmanager
def borrowed_weights(model: torch.nn.Module, dtype: torch.dtype) -> Iterator[None]:
    """While open, `model` computes as a copy of it in `dtype` would, bit for bit, each weight converted only while an
    op reads it: a float32 model's float64 round-off twin (or a float64 one's float32 twin) for one pass, without
    the copy (0.9 GB for a 12-layer Llama-shaped model), which takes longer to make than the pass."""
    with _Borrowing(model, dtype):
        yield


def coarsest(dtypes: set[torch.dtype]) -> torch.dtype:
    return max(dtypes, key=lambda dtype: torch.finfo(dtype).eps)


def computed_dtype(run: Callable[[], object], dtype: torch.dtype) -> torch.dtype:
    """The coarsest precision `run()` (one pass of a model in `dtype`) computes in: `dtype`, or coarser where an op
    casts the states down."""
    watch = _DowncastWatch(dtype)
    with watch:
        run()
    return coarsest(watch.seen)


def widened(tensor: torch.Tensor) -> torch.Tensor:
    """A 16-bit pass's tensor in float32, so that the metrics, log-probabilities and norms computed from it add no
    16-bit round-off of their own (what is measured is the model's); any other tensor as it is."""
    return tensor.float() if tensor.dtype in (torch.bfloat16, torch.float16) else tensor


def pass_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the passes a model computing in `dtype` hands the loop (widened)."""
    return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def require_dtype(dtype: str, device: torch.device) -> None:
    """One line, before any work, where the device cannot run the ops a pass needs in `dtype` (float16 on a CPU
    whose torch lacks a kernel)."""
    if dtype not in ("bfloat16", "float16"):
        return
    kind = getattr(torch, dtype)
    try:
        x = torch.ones(4, 4, dtype=kind, device=device)
        torch.exp(torch.nn.functional.gelu(torch.nn.functional.layer_norm(torch.softmax(x @ x, -1), (4,))))
    except (RuntimeError, NotImplementedError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise OrderlabError(f"model.dtype: {dtype} on {device.type}: torch cannot run {PROBED_OPS} there ({first}); "
                            "expected float32 or bfloat16, or a device that supports it") from None  # fmt: skip


def use_matmul_precision(precision: str, device: torch.device) -> None:
    """Set CUDA's float32 matmuls to TensorFloat-32 or not, as the spec says (each run sets it: a process that runs
    several specs gets each one's); tf32 is a CUDA mode: one line on any other device. Its round-off is measured
    like any other: the float64 twin never runs in TF32."""
    if precision == "tf32" and device.type != "cuda":
        raise OrderlabError(f"model.matmul_precision: tf32 runs on CUDA only, not on {device.type}; expected "
                            "'highest' (the default) or --device cuda")  # fmt: skip
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
