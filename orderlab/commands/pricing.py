"""The device that `validate --plan` prices: its speed in the spec's dtype measured once and cached.

The cache (plan/device.rates_file) is read as input from a stranger and replaced whole, only where it is a regular
file; one that cannot be written is measured again next time, and the plan goes on.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import torch

from orderlab.errors import OrderlabError
from orderlab.measure.chunking import run_device
from orderlab.plan.device import Device, key, rates_file, rates_json, read_rates
from orderlab.plan.escalation_cost import escalation_dtype
from orderlab.plan.estimate import PricedPlan, estimate
from orderlab.plan.patching_cost import patching_cost
from orderlab.results.artifact import write_file
from orderlab.spec.schema import Spec


def priced_plan(spec: Spec, spec_file: Path, device: torch.device) -> PricedPlan:
    """`validate --plan`'s data: the run's estimates on `device`, priced at its measured rate in the spec's dtype
    (report/plan_table.py writes it out)."""
    priced = priced_device(device, spec.model.dtype, escalation_dtype(spec))
    estimates = estimate(spec, spec_file, priced)
    return PricedPlan(priced, spec.model.dtype, rates_file(), estimates, patching_cost(spec, spec_file, estimates))


def priced_device(device: torch.device, dtype: str, twin: str | None = None) -> Device:
    """`device` with the memory free there and its measured rate in `dtype`, and in `twin` where given (the precision
    a run escalates to: plan/escalation_cost.py), each cached, or measured now and cached."""
    path = rates_file()
    cached = read_rates(path)
    measured = [run_device(device, wanted, cached) for wanted in (dtype, *([twin] if twin else []))]
    rates = {wanted: rate for priced in measured for wanted, rate in priced.rates.items()}
    entries = {key(measured[0].name, wanted): rate for wanted, rate in rates.items()}
    if not entries.keys() <= cached.keys():
        with suppress(OrderlabError):  # not cached: measured again next time
            write_file(path, rates_json(cached | entries), "the device rates cache")
    return Device(measured[0].kind, measured[0].name, measured[0].memory, rates)
