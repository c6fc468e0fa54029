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
from orderlab.plan.estimate import MEMORY_SHARE, estimate, plan_lines, size
from orderlab.results.artifact import write_file
from orderlab.spec.schema import Spec


def plan_report(spec: Spec, spec_file: Path, device: torch.device) -> list[str]:
    """`validate --plan`'s lines: the device priced, the plan's table on it, and on a GPU whether the weights and
    the largest working set fit the memory free on the card."""
    priced = priced_device(device, spec.model.dtype)
    rate = priced.rates[spec.model.dtype]
    where = f"{priced.name}: {rate.flops / 1e9:,.0f} GFLOP/s matmul in {spec.model.dtype}, {size(priced.memory)} free"
    estimates = estimate(spec, spec_file, priced)
    lines = [f"priced on {where} (measured once, cached in {rates_file()})", *plan_lines(estimates)]
    on_card = max(e.weights.amount + e.working.amount for e in estimates)  # Python and torch stay on the host
    if priced.kind != "cpu" and on_card > MEMORY_SHARE * priced.memory:
        lines.append(f"does not fit: needs ~{size(on_card)} on {priced.name}, which has {size(priced.memory)} free")
    return lines


def priced_device(device: torch.device, dtype: str) -> Device:
    """`device` with the memory free there and its measured rate in `dtype` (cached, or measured now and cached)."""
    path = rates_file()
    cached = read_rates(path)
    priced = run_device(device, dtype, cached)
    entry = key(priced.name, dtype)
    if entry not in cached:
        with suppress(OrderlabError):  # not cached: measured again next time
            write_file(path, rates_json(cached | {entry: priced.rates[dtype]}), "the device rates cache")
    return priced
