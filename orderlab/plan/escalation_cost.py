"""The price of escalation (measure/escalation.py): the worst case, every input and probe measured again in the twin's
finer precision. stack_cost.py and pretrained_cost.py add it to their forward passes. Pure and torch-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orderlab.plan.cost import Cost
from orderlab.plan.rates import FLOPS_PER_SECOND
from orderlab.spec.fields import LOW_PRECISION

if TYPE_CHECKING:
    from orderlab.spec.schema import Spec

# The widest round-off lines float32 runs measure, with room (docs/metrics.md: 2e-5 at most on the shipped specs): a
# float32 run is priced to escalate only where its resolution is finer than this. 16-bit lines reach 1e-2 and more.
FLOAT32_LINES = 1e-4


def escalation_seconds(spec: Spec, passes: list[Cost]) -> Cost | None:
    """The worst case of escalation: every input and probe measured again, in the twin's finer precision (16-bit:
    float32; float32: float64), at that precision's rate; None where a run does not escalate (a float64 run,
    `escalate: false`, a float32 run whose resolution is above its lines). passes: the costs of the run's own forward
    passes over inputs and probes."""
    dtype = spec.model.dtype
    low = dtype in LOW_PRECISION
    if not spec.escalate or dtype == "float64" or (not low and spec.resolution >= FLOAT32_LINES):
        return None
    finer = "float32" if low else "float64"
    slower = FLOPS_PER_SECOND[dtype] / FLOPS_PER_SECOND[finer]
    seconds = slower * sum(cost.amount for cost in passes)
    return Cost(seconds, f"re-measuring in {finer} (at most)", ("escalate",), f"escalate: true ({dtype})",
                "escalate: false, or a resolution above this run's round-off")  # fmt: skip
