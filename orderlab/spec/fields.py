"""Field types shared by the spec models of the stack (spec/schema.py) and of pretrained models (spec/model_specs.py).

Bounded counts and `Sweepable[T]`, a field that may hold one value or a list to sweep over. Torch-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import Discriminator, Field, Tag

from orderlab.core import bounds

# Positive ints no larger than one of orderlab/core/bounds.py's limits.
Width = Annotated[int, Field(ge=1, le=bounds.MAX_D_MODEL)]  # d_model, n_heads
LayerCount = Annotated[int, Field(ge=1, le=bounds.MAX_LAYERS)]
FfnMultiple = Annotated[int, Field(ge=1, le=bounds.MAX_FFN_MULT)]
Seed = Annotated[int, Field(ge=0, le=bounds.MAX_SEED)]
# The attention stack's named choices (spec/schema.py's ModelSpec; a checkpoint's metadata holds them too).
Norm = Literal["pre", "post", "none"]
Scale = Literal["sqrt", "none"]
FloatType = Literal["float32", "float64"]  # a trained checkpoint's stack (training runs in float32)
# What a run computes in: the stack, the zoo, a model folder, the packaged MiniLM (docs/metrics.md: what each resolves).
ComputeType = Literal["bfloat16", "float16", "float32", "float64"]
LOW_PRECISION = ("bfloat16", "float16")  # 16-bit floats: their passes are measured in float32 (models/precision.py)
MatmulPrecision = Literal["highest", "tf32"]
# The spec's `resolution`, unless set: the widest round-off line (relative) within which a value may still read
# invariant or equivariant (measure/verdicts.py); a wider line leaves the value unresolved.
RESOLUTION = 1e-2
DTYPE_HELP = (
    "Floating-point type of the forward passes (bfloat16 | float16 | float32 | float64); the round-off line is "
    "measured for it (docs/metrics.md: what each resolves). float16 where the device runs its ops."
)
MATMUL_PRECISION_HELP = "tf32: float32 matmuls on TensorFloat-32 units (CUDA only, float32 only); highest: not."


if TYPE_CHECKING:
    T = TypeVar("T")
    # To the type checker a sweepable field holds one value: sweep.py alone reads the lists (by field name), and
    # every spec the rest of orderlab works on is one combination of the sweep (sweep.plan), each field one value.
    Sweepable: TypeAlias = Annotated[T, "one value, or a list of values to sweep over"]
else:

    class Sweepable:
        """Sweepable[T]: one value, or a non-empty list of them to sweep over (a run takes the product of all lists)."""

        def __class_getitem__(cls, scalar: Any) -> Any:
            return Annotated[
                Annotated[scalar, Tag("one")] | Annotated[list[scalar], Tag("many"), Field(min_length=1)],
                Discriminator(lambda value: "many" if isinstance(value, list) else "one"),
            ]


def twin_dtype(dtype: str) -> str:
    """The precision in which the reference pass is repeated to measure the noise: float64 for float32, float32 for
    float64 and for the 16-bit floats (whose round-off is 2^13 to 2^16 float32's: a float32 twin measures it as well
    as a float64 one would, in half the memory, so a billion-parameter model's twin fits beside it)."""
    return "float64" if dtype == "float32" else "float32"
