"""plan/cost.py: what an estimate adds up, and a forward pass priced at a device's rate or the built-in one."""

from __future__ import annotations

import math

from orderlab.plan.cost import Cost, Estimate, forward_seconds, run_seconds
from orderlab.plan.device import Device, Rate
from orderlab.plan.rates import BASE_BYTES, START_SECONDS


def cost(amount: float) -> Cost:
    return Cost(amount, "part", ("model",), "x", "less")


def estimate(weights: float, working: float, *seconds: float) -> Estimate:
    return Estimate({}, "", cost(weights), cost(working), 0, 1, [cost(s) for s in seconds], 1, 1, cost(0), 0, cost(0))


def test_a_peak_is_the_imports_the_weights_and_the_largest_working_set():
    assert estimate(10, 5).peak_bytes == BASE_BYTES + 15


def test_a_run_starts_once_and_adds_every_combinations_parts():
    assert math.isclose(run_seconds([estimate(0, 0, 1.5, 2.0), estimate(0, 0, 0.5)]), START_SECONDS + 4.0)


def test_a_pass_is_priced_at_the_devices_rate_and_else_at_the_conservative_one():
    assert forward_seconds(Device("cpu", "cpu", 10**9), "stack", "float32", 3e9, 10, 2, rate=1e9) == 3.0
    measured = Device("cpu", "cpu", 10**9, {"float32": Rate(flops=1e12, call_seconds=1e-6)})
    priced = forward_seconds(measured, "stack", "float32", 3e9, 10, 2, rate=1e9)
    assert priced < 3.0 and priced == measured.forward_seconds("stack", "float32", 3e9, 10, 2)
