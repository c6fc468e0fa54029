"""Escalation is priced as the finer model re-measures (plan/escalation_cost.py): every order again, passed as the run
passes them (a causal LM's prefixes walked where the run walks), in the twin's finer dtype at the device's rate in that
dtype, not the run's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from orderlab.plan.amounts import duration
from orderlab.plan.cost import FINER_BUILD, run_seconds
from orderlab.plan.device import SIXTEEN_BIT_SHARE, Device, Rate
from orderlab.plan.estimate import estimate
from orderlab.plan.pretrained_cost import pretrained_estimate
from orderlab.plan.rates import FLOPS_PER_SECOND, SECONDS_PER_ROW
from orderlab.report.plan_table import plan_table
from orderlab.spec.schema import Spec

RE_MEASURING = "re-measuring in {} (at most)"


def zoo(family: str, dtype: str, **fields: object) -> Spec:
    return Spec.model_validate({
        "model": {"kind": "hf", "family": family, "d_model": 64, "n_heads": 4, "n_layers": 2, "dtype": dtype},
        "inputs": [{"sentence": "the old dog chased a red ball", "permutations": "all"}],
        "metrics": ["equivariance", "invariance", *(["lm_logprob"] if family == "gpt2" else [])],
        **fields,
    })  # fmt: skip


def cpu(**flops: float) -> Device:
    """A CPU with measured rates by dtype; launches all but free, so that seconds are FLOPs over rates."""
    return Device("cpu", "cpu X", 10**10, {dtype: Rate(flops=rate, call_seconds=1e-9) for dtype, rate in flops.items()})


def parts(spec: Spec, device: Device, walk: bool = True) -> dict[str, float]:
    (planned,) = estimate(spec, "spec.yaml", device) if walk else [
        pretrained_estimate(spec, {}, Path("spec.yaml"), device, walk=False)]  # fmt: skip
    return {cost.what: cost.amount for cost in planned.seconds} | {"rows": planned.metrics_rows}


def passes(spec: Spec, device: Device, walk: bool = True) -> float:
    """The forward passes' seconds, without collecting the rows."""
    figures = parts(spec, device, walk)
    return figures["the forward passes"] - figures["rows"] * SECONDS_PER_ROW


def test_a_16_bit_causal_lm_re_measures_walking_its_prefixes_in_float32_at_the_float32_rate():
    device = cpu(bfloat16=4e11, float32=1e11)
    escalation = parts(zoo("gpt2", "bfloat16"), device)[RE_MEASURING.format("float32")]
    walked_float32 = passes(zoo("gpt2", "float32"), device)
    assert math.isclose(escalation, walked_float32, rel_tol=1e-4)
    assert escalation < passes(zoo("gpt2", "float32"), device, walk=False)  # not dense: the walk's fewer token states


def test_a_16_bit_causal_lm_run_dense_re_measures_dense():
    device = cpu(bfloat16=4e11, float32=1e11)
    escalation = parts(zoo("gpt2", "bfloat16"), device, walk=False)[RE_MEASURING.format("float32")]
    assert math.isclose(escalation, passes(zoo("gpt2", "float32"), device, walk=False), rel_tol=1e-4)


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_escalation_follows_the_finer_dtypes_rate_and_not_the_runs(family):
    spec, what = zoo(family, "bfloat16"), RE_MEASURING.format("float32")
    base = parts(spec, cpu(bfloat16=4e11, float32=1e11))[what]
    assert math.isclose(parts(spec, cpu(bfloat16=8e11, float32=1e11))[what], base, rel_tol=1e-4)
    assert math.isclose(parts(spec, cpu(bfloat16=4e11, float32=2e11))[what], base / 2, rel_tol=1e-4)


def test_an_encoders_twin_repeats_its_dense_passes_at_the_ratio_of_the_rates_and_the_16_bit_share():
    """16-bit passes on the CPU reach a smaller share of their (faster) matmul rate than float32's of theirs."""
    device, share = cpu(bfloat16=4e11, float32=1e11), SIXTEEN_BIT_SHARE["pretrained", "cpu"]
    escalation = parts(zoo("bert", "bfloat16"), device)[RE_MEASURING.format("float32")]
    assert share < 1 and math.isclose(escalation, 4 * share * passes(zoo("bert", "bfloat16"), device), rel_tol=1e-4)


def test_float32_escalates_to_float64_only_below_its_round_off():
    device = cpu(float32=1e11, float64=5e10)
    assert not any(what.startswith("re-measuring") for what in parts(zoo("bert", "float32"), device))
    finer = parts(zoo("bert", "float32", resolution=1e-6), device)
    assert math.isclose(finer[RE_MEASURING.format("float64")], 2 * passes(zoo("bert", "float32"), device),
                        rel_tol=1e-4)  # fmt: skip


def test_without_a_rate_in_the_finer_dtype_the_runs_measured_rate_prices_it_at_the_built_in_ratio():
    device, what = cpu(float32=1e11), RE_MEASURING.format("float64")
    finer = parts(zoo("bert", "float32", resolution=1e-6), device)[what]
    slower = FLOPS_PER_SECOND["float32"] / FLOPS_PER_SECOND["float64"]
    assert math.isclose(finer, slower * passes(zoo("bert", "float32"), device), rel_tol=1e-4)


def test_the_plan_gives_a_range_from_no_order_to_every_order_re_measured():
    spec, device = zoo("gpt2", "bfloat16"), cpu(bfloat16=4e11, float32=1e11)
    planned = estimate(spec, "spec.yaml", device)
    figures = parts(spec, device)
    escalation, once = figures[RE_MEASURING.format("float32")], figures[FINER_BUILD]
    most, least = run_seconds(planned), run_seconds(planned, remeasured=0.0)
    assert once > 0 and math.isclose(most - least, escalation + once, rel_tol=1e-9)
    # the finer model is built once, whatever share of the orders it re-measures
    assert math.isclose(run_seconds(planned, remeasured=0.25), least + once + escalation / 4, rel_tol=1e-9)
    whole = plan_table(planned)[-2]  # the whole run's row, above the note that explains the range
    assert f"~{duration(least)} to {duration(most)}" in whole and "escalate" in plan_table(planned)[-1]


def test_a_plan_that_cannot_escalate_gives_one_time():
    planned = estimate(zoo("bert", "float32"), "spec.yaml", cpu(float32=1e11))
    assert run_seconds(planned, remeasured=0.0) == run_seconds(planned)
    assert " to " not in plan_table(planned)[-1] and "escalate" not in plan_table(planned)[-1]
