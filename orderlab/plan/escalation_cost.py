"""The price of escalation (measure/escalation.py): the worst case, every input and probe measured again in the twin's
finer precision. stack_cost.py and pretrained_cost.py add it to their forward passes. Pure and torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from orderlab.plan.cost import ESCALATE, Cost
from orderlab.plan.rates import FLOPS_PER_SECOND
from orderlab.spec.fields import LOW_PRECISION, twin_dtype

if TYPE_CHECKING:
    from orderlab.spec.schema import Spec

# The widest round-off lines float32 runs measure, with room (docs/metrics.md: 2e-5 at most on the shipped specs): a
# float32 run is priced to escalate only where its resolution is finer than this. 16-bit lines reach 1e-2 and more.
FLOAT32_LINES = 1e-4


def escalation_dtype(spec: Spec) -> str | None:
    """The twin's precision a run re-measures in (16-bit: float32; float32: float64), or None where it does not
    escalate (a float64 run, `escalate: false`, a float32 run whose resolution is above its lines)."""
    dtype = spec.model.dtype
    if not spec.escalate or dtype == "float64" or (dtype not in LOW_PRECISION and spec.resolution >= FLOAT32_LINES):
        return None
    return twin_dtype(dtype)


def escalation_seconds(spec: Spec, twin_seconds: Callable[[str], float]) -> Cost | None:
    """The worst case of escalation: every input and probe measured again in the twin's finer precision, passed as the
    run passes them (a causal LM's shared prefixes walked again: models/pretrained.Shared.finer); twin_seconds(finer):
    those passes' seconds in `finer`. None where the run does not escalate."""
    finer = escalation_dtype(spec)
    if finer is None:
        return None
    expected = "escalate: false, or a resolution above this run's round-off"
    return Cost(twin_seconds(finer), f"re-measuring in {finer} (at most)", ESCALATE,
                f"escalate: true ({spec.model.dtype})", expected)  # fmt: skip


def at_built_in_rates(dtype: str, seconds: float) -> Callable[[str], float]:
    """`seconds` of passes in `dtype` priced in another dtype at the ratio of the conservative built-in rates (where no
    device rate prices the twin's passes)."""
    return lambda finer: seconds * FLOPS_PER_SECOND[dtype] / FLOPS_PER_SECOND[finer]
