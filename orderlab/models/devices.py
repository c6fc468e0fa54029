"""Where a run computes: a torch.device from the command line down, the CPU unless asked otherwise (CI has no GPU);
and what a device is, measured: its name and its speed in a dtype (plan/device.py prices runs from them)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch

from orderlab.core.device_choices import DEVICE_CHOICES
from orderlab.errors import OrderlabError

CPU = torch.device("cpu")
# The timed matmul's side: large enough to run at the device's GEMM rate, small enough to take well under a second.
MATMUL_SIDE = {"cpu": 1024, "cuda": 8192}
MEASURE_SECONDS = 0.3  # per figure: the matmul rate, then the small op's round trip


def resolve_device(name: str) -> torch.device:
    """--device cpu | cuda | auto (a GPU where there is one, else the CPU), checked: one line where CUDA is asked for
    and absent."""
    if name not in DEVICE_CHOICES:
        raise OrderlabError(f"--device {name}: expected one of {', '.join(DEVICE_CHOICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    validate_device(device)
    return device


def validate_device(device: torch.device) -> None:
    """A one-line error for --device cuda where there is none (before any work starts)."""
    if device.type == "cuda" and not torch.cuda.is_available():
        raise OrderlabError("--device cuda: no CUDA device is available here; expected --device cpu (or auto)")


def device_name(device: torch.device) -> str:
    """The card's name on CUDA (e.g. 'cuda NVIDIA H200'); '' for the CPU, which plan/device.cpu_name names."""
    return f"cuda {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""


def measure_rate(device: torch.device, dtype: str) -> tuple[float, float]:
    """FLOP/s of a large matmul in `dtype` on `device`, and the round trip of a small op there (seconds), each from
    the fastest of its calls over about MEASURE_SECONDS: the device's own speed, not the load of a shared machine's
    other processes at that moment (the figure is cached for good). On the CPU the matmul is timed on one thread by
    that thread's CPU time, and counted for each of the threads a run uses (a large GEMM's rate scales with them):
    time spent waiting for a core does not count, where the fastest wall-clock call of all threads read 4-20x low on
    a busy 2-core machine (a core shared with another process still slows it, up to ~2x there)."""
    side = MATMUL_SIDE.get(device.type, 1024)
    a = torch.randn(side, side, device=device).to(getattr(torch, dtype))
    small = a[:16, :16].contiguous()
    small_call = _fastest_call(lambda: small @ small, device, time.perf_counter)
    if device.type != "cpu":
        return 2 * side**3 / _fastest_call(lambda: a @ a, device, time.perf_counter), small_call
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one_thread = _fastest_call(lambda: a @ a, device, time.thread_time)
    finally:
        torch.set_num_threads(threads)
    return 2 * side**3 * threads / one_thread, small_call


def _fastest_call(step: Callable[[], object], device: torch.device, clock: Callable[[], float]) -> float:
    """The fastest of calls to `step` (synchronised on CUDA) by `clock`, made over MEASURE_SECONDS of wall time, after
    a warm-up call."""
    step()
    _synchronize(device)
    fastest, deadline = math.inf, time.perf_counter() + MEASURE_SECONDS
    while time.perf_counter() < deadline or fastest == math.inf:
        start = clock()
        step()
        _synchronize(device)
        fastest = min(fastest, clock() - start)
    return fastest


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
