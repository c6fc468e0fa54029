"""Guards around a user's `package.module:Class`: whatever it does wrong is one clear line, never a traceback.

`validate_class` looks at the class only (no torch: spec validation must stay fast). `guarded` runs
one step of the user's code (import, __init__, check) and turns any exception or sys.exit into an
OrderlabError naming the class and the step. `CheckedEncoding` wraps a built user encoding so that
every hook call, at run time too, is guarded and its result checked against what the caller
expects; `validate_hooks` calls the hooks once on a tiny batch before any real run. Built-in
encodings are trusted and never wrapped. A hook result holding NaN or inf (but the -inf of an attention
bias that masks a key) is a broken encoding, refused like any other misfit: its run would be NaN
throughout, not a measurement. KeyboardInterrupt always passes through.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from orderlab.encodings.encoding import EncodingContext, Kind, PositionalEncoding, torch_dtype
from orderlab.errors import OrderlabError

if TYPE_CHECKING:
    import torch

T = TypeVar("T")
KINDS = typing.get_args(Kind)
PROTOCOL_HELP = "see docs/encodings.md"


def misfit(name: str, problem: str) -> OrderlabError:
    return OrderlabError(f"encoding {name!r} does not fit the protocol: {problem} ({PROTOCOL_HELP})")


def validate_class(name: str, found: object) -> type[PositionalEncoding]:
    """`found`, if it is a PositionalEncoding subclass with the class attributes set; else raise OrderlabError."""
    if not (isinstance(found, type) and issubclass(found, PositionalEncoding)):
        raise misfit(name, "expected a subclass of orderlab.encodings.encoding.PositionalEncoding")
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
    return found


def guarded(
    name: str, step: str, function: Callable[..., T], *args: Any, passing: tuple[type[Exception], ...] = ()
) -> T:
    """function(*args), with any exception (but those `passing`) or sys.exit in it an OrderlabError naming the step."""
    try:
        return function(*args)
    except passing:
        raise
    except (Exception, SystemExit) as error:
        raise misbehaved(name, step, error) from None


def misbehaved(name: str, step: str, error: BaseException) -> OrderlabError:
    """'encoding 'm:C' raised ZeroDivisionError in __init__: division by zero' or '... called sys.exit(3) at import'."""
    if isinstance(error, SystemExit):
        code = "" if error.code is None else repr(error.code)
        return OrderlabError(f"encoding {name!r} called sys.exit({code}) {step}")
    reason = " ".join(str(error).split())
    return OrderlabError(f"encoding {name!r} raised {type(error).__name__} {step}" + (f": {reason}" if reason else ""))


class CheckedEncoding(PositionalEncoding):
    """A user's encoding whose every hook call is guarded and whose results are checked against the protocol.

    Anything but a real tensor of the expected shape (on q's device, for rotate and attention_bias) with
    finite entries is an OrderlabError naming the class and the call. Tensors from rotate and attention_bias are
    cast to q's dtype, so that a float64 table does not promote a float32 run. The checks cost a
    few attribute reads per call; messages are only built for a misfit.
    """

    def __init__(self, name: str, inner: PositionalEncoding):
        self.spec_name, self.inner = name, inner
        self.context, self.params = inner.context, inner.params
        for attribute in ("name", "kind", "relative", "reference", "shares_prefixes", "Params"):
            setattr(self, attribute, getattr(inner, attribute))

    def input_offsets(self, n: int) -> torch.Tensor | None:
        offsets = guarded(self.spec_name, f"in input_offsets({n})", self.inner.input_offsets, n)
        if offsets is None:
            return None
        shape = (n, self.context.d_model)  # any real dtype and device: callers move offsets onto the token vectors
        found = _misfit(offsets, lambda got: got == shape)
        if found:
            raise self.wrong(f"input_offsets({n})", found, f"None or a real tensor of shape {shape}")
        self.require_finite(f"input_offsets({n})", offsets)
        return offsets

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rotated = guarded(self.spec_name, "in rotate(q, k)", self.inner.rotate, q, k)
        if isinstance(rotated, tuple | list) and len(rotated) == 2:
            like_q = q.shape.__eq__
            found = _misfit(rotated[0], like_q, q.device) or _misfit(rotated[1], like_q, q.device)
        else:
            found = _describe(rotated)
        if found:
            expected = f"a pair of real tensors shaped like q {tuple(q.shape)} on {q.device}"
            raise self.wrong("rotate(q, k)", found, expected)
        for tensor in rotated:
            self.require_finite("rotate(q, k)", tensor)
        return _cast(rotated[0], q.dtype), _cast(rotated[1], q.dtype)

    def attention_bias(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor | None:
        bias = guarded(self.spec_name, "in attention_bias(q, k)", self.inner.attention_bias, q, k)
        if bias is None:
            return None
        scores = (*q.shape[:-1], k.shape[-2])  # (B, h, n, n)
        found = _misfit(bias, lambda got: _broadcasts(got, scores), q.device)
        if found:
            expected = f"None or a real tensor broadcastable to {scores} on {q.device}"
            raise self.wrong("attention_bias(q, k)", found, expected)
        self.require_finite("attention_bias(q, k)", bias, masks=True)
        return _cast(bias, q.dtype)

    def require_finite(self, call: str, tensor: torch.Tensor, masks: bool = False) -> None:
        """Raise when the tensor holds NaN or inf; with `masks` (an attention bias), -inf, a masked key, is allowed."""
        import torch

        if not tensor.dtype.is_floating_point or bool(torch.isfinite(tensor).all()):
            return
        if bool(tensor.isnan().any()):
            holds = "NaN"
        elif not masks or bool((tensor == torch.inf).any()):
            holds = "inf"
        else:
            return  # -inf alone: keys masked out
        expected = "finite values, or -inf to mask a key" if masks else "finite values"
        raise self.wrong(call, f"a tensor holding {holds}", expected)

    def wrong(self, call: str, found: str, expected: str) -> OrderlabError:
        problem = f"{call} returned {found}; expected {expected} ({PROTOCOL_HELP})"
        return OrderlabError(f"encoding {self.spec_name!r}: {problem}")


def validate_hooks(encoding: CheckedEncoding) -> None:
    """Call each hook once, as the stack does, on a (B=2, h, n=3, d_head) batch: a misfit fails before any run."""
    import torch

    context: EncodingContext = encoding.context
    shape = (2, context.n_heads, 3, context.d_head)
    generator = torch.Generator().manual_seed(0)  # its own: trying a plugin must not move torch's global RNG
    q, k = (torch.randn(*shape, generator=generator, dtype=torch_dtype(context)).to(context.device) for _ in range(2))
    encoding.input_offsets(shape[2])
    encoding.attention_bias(*encoding.rotate(q, k))


def _misfit(value: Any, fits: Callable[[tuple[int, ...]], bool], device: Any = None) -> str:
    """What is wrong with a hook's result ('a list', 'shape (3, 16)', ...); '' for a real tensor whose shape fits."""
    import torch

    if not isinstance(value, torch.Tensor):
        return _describe(value)
    if value.dtype.is_complex:
        return f"a {str(value.dtype).removeprefix('torch.')} tensor"
    if not fits(tuple(value.shape)):
        return f"shape {tuple(value.shape)}"
    if device is not None and value.device != device:
        return f"a tensor on {value.device}"
    return ""


def _describe(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True when a tensor of `shape` broadcasts to exactly `target` (torch's rules, without a torch call)."""
    if len(shape) > len(target):
        return False
    return all(size in (1, wanted) for size, wanted in zip(shape, target[len(target) - len(shape) :], strict=True))


def _cast(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return tensor if tensor.dtype == dtype else tensor.to(dtype)
