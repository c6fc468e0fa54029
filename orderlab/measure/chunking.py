"""The plan's chunk rule (plan/chunks.py) bound to the device a run computes on: the Batching the models receive;
and the device as the plan prices it (run_device).

A chunk is sized when a sentence starts, from the memory free at that moment: on a GPU the card's
(torch.cuda.mem_get_info, after the model is on it), on the CPU the machine's.
"""

from __future__ import annotations

import torch

from orderlab.families.family import ModelShape
from orderlab.metrics import Model
from orderlab.models.batching import Batching
from orderlab.models.devices import device_name, measure_rate
from orderlab.plan.chunks import ROW_ALIGNMENT, orders_per_pass
from orderlab.plan.device import Device, Rate, available_memory, cpu_name, key


def device_batching(device: torch.device) -> Batching:
    """Passes on `device` in whole row tiles, their chunks sized from the memory free there."""

    def chunk_size(model: Model, shape: ModelShape, tokens: int, attention: bool, shared: bool, itemsize: int) -> int:
        return orders_per_pass(model, shape, tokens, attention, shared, itemsize, free_memory(device), device.type)

    return Batching(ROW_ALIGNMENT, chunk_size)


def free_memory(device: torch.device) -> int:
    """Bytes free now where `device` computes: on the card for CUDA, else the machine's available memory."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return available_memory()


def run_device(device: torch.device, dtype: str, cached: dict[str, Rate]) -> Device:
    """`device` as the plan prices it: the memory free there now, and its speed in `dtype` as `cached`
    (plan/device.read_rates) holds it, or measured now (about a second)."""
    name = device_name(device) or cpu_name()
    rate = cached.get(key(name, dtype)) or _MEASURED.get(key(name, dtype))
    if rate is None:
        flops, call_seconds = measure_rate(device, dtype)
        rate = _MEASURED[key(name, dtype)] = Rate(flops=flops, call_seconds=call_seconds)
    return Device(device.type, name, free_memory(device), {dtype: rate})


_MEASURED: dict[str, Rate] = {}  # rates measured in this process (a run on a GPU asks once per combination)
