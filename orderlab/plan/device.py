"""The device a run computes on, as the plan prices it: its memory, and its measured speed per dtype.

A device's speed is measured once per device and dtype (models/devices.measure_rate: a large matmul's FLOP/s and a
small op's round trip, about a second) and cached in the user's cache folder (`rates_file`), which is read back as
input from a stranger: a regular file, bounded in size, its keys and numbers typed and bounded; a cache that is not
is ignored and measured again. Without a measured rate the plan falls back on the conservative CPU rates in
plan/rates.py, as `validate` does (it never imports torch).

A pass's time is its FLOPs at the share of the matmul rate that such passes reach (EFFICIENCY), plus one round trip
per kernel it launches (KERNELS_PER_LAYER a layer): on a GPU small passes are bound by their launches, which is what
decides whether a causal LM's prefix walk (n + 1 calls of few rows) pays against one dense batch (`sharing_pays`).
Pure and torch-free.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import Field, StringConstraints

from orderlab.core.userfiles import FileModel, FileProblem, read_json
from orderlab.metrics import Model
from orderlab.plan.memory import memory_room
from orderlab.spec.fields import LOW_PRECISION

# The share of a large matmul's measured rate that a run's passes reach, per model kind and device type: the stack's
# small matmuls and elementwise work on the CPU; a transformers forward's dense GEMMs (BERT-base shape: 310 GFLOP/s
# against a ~330 GFLOP/s float32 peak on 2 threads; a 12-layer d_model 768 BERT's dense batches of 9 tokens 0.77-0.85
# of a 1,024-side matmul on one thread, float32 and bfloat16, by CPU time); on a GPU, an H200's 40,320-order 8-word
# GPT-2 run (12 x 768 x 12, two ablations, float32, benchmarks/gpu_check.py) passed its prefixes in about 3.9 s where
# 0.1 of the card's measured 51 TFLOP/s priced 11.7 s. The stack on a GPU is unmeasured.
EFFICIENCY: dict[tuple[Model, str], float] = {
    ("stack", "cpu"): 0.25,
    ("pretrained", "cpu"): 0.8,
    ("stack", "cuda"): 0.05,
    ("pretrained", "cuda"): 0.3,
}
# A causal LM's prefix walk (models/kv_prefix.py) reaches this share of what dense passes reach: each depth gathers its
# prefixes' cached keys and values and runs a call of few rows (GPT-2 shape, 7 words, one thread: 0.45-0.6 of the
# matmul rate where dense BERT passes reached 0.77-0.85).
WALK_SHARE = 0.7
# A transformers model's 16-bit passes on the CPU reach this share of what its float32 passes reach of their dtype's
# measured matmul rate: what is not a matmul (norms, activations, gathers, the walk's calls of few rows) runs no faster
# in 16 bits, and a fresh process's first bfloat16 passes are slower still. bench_zoo's GPT-2 shape, 8 words,
# 1,024 orders, log-probabilities alone, bfloat16: the loop took 2.5 s fresh and 1.9 s warm where the full share
# priced 1.3 s (the matmul rate 2.45x float32's; the loop 1.5-1.9x float32's speed).
# On an H200 the same all-orders run's bfloat16 passes took about 2.2 s, 1.8x faster than float32's, where the card's
# bfloat16 matmuls run 15x faster: small passes there are bound by their launches and memory, not their matmuls.
SIXTEEN_BIT_SHARE: dict[tuple[Model, str], float] = {("pretrained", "cpu"): 0.6, ("pretrained", "cuda"): 0.25}
# Bringing a GPU up in a fresh process: the CUDA context, cuBLAS and the kernels torch loads on first use. On an H200
# machine (torch 2.11, 16 cores) `orderlab run` of five 1,024-order zoo specs took 14-21 s (median 15.4 s) longer than
# the same runs in a warm process, of which the start-up and transformers' import that rates.py prices hold 5.5 s.
START_SECONDS_ON: dict[str, float] = {"cuda": 10.0}
KERNELS_PER_LAYER = 12  # norms, projections, attention, FFN, residuals: the round trips of one layer's pass
RATES_FILE_LIMIT = 2**16  # bytes: a cache of a few devices' rates; a larger file is no cache of orderlab's
RATES_VERSION = 2  # 2: the CPU's matmul timed by CPU time (models/devices.measure_rate); older caches measured again

DeviceKey = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[\x20-\x7e]+$")]


class Rate(FileModel):
    """A device's measured speed in one dtype."""

    flops: float = Field(ge=1e6, le=1e18)  # FLOP/s of a large matmul
    call_seconds: float = Field(ge=1e-9, le=1.0)  # one small op's round trip (a kernel launch on a GPU)


class RatesFile(FileModel):
    """The cache: rates by `key(device name, dtype)`."""

    version: int = Field(ge=RATES_VERSION, le=RATES_VERSION)
    rates: dict[DeviceKey, Rate] = Field(max_length=256)


@dataclass(frozen=True)
class Device:
    """Where a run computes: its kind (a torch device type), its name, the memory a run may plan on there, and its
    measured rates per dtype (none: the conservative CPU rates)."""

    kind: str  # "cpu" or "cuda"
    name: str  # e.g. the CPU's model name, or the card's
    memory: int  # bytes
    rates: dict[str, Rate] = field(default_factory=dict)  # by dtype

    @property
    def start_seconds(self) -> float:
        """Seconds a fresh process takes to bring this device up (0 on the CPU: rates.START_SECONDS covers it)."""
        return START_SECONDS_ON.get(self.kind, 0.0)

    def forward_seconds(self, model: Model, dtype: str, flops: float, calls: float, layers: int, walk: bool = False
                        ) -> float | None:  # fmt: skip
        """Seconds of `calls` forward passes of `layers` layers doing `flops` in all, at this device's measured rate
        for `dtype`; None without one. walk: a causal LM's prefix walk (WALK_SHARE)."""
        rate = self.rates.get(dtype)
        if rate is None:
            return None
        efficiency = EFFICIENCY[model, self.kind] * (WALK_SHARE if walk else 1.0)
        if dtype in LOW_PRECISION:
            efficiency *= SIXTEEN_BIT_SHARE.get((model, self.kind), 1.0)
        return pass_seconds(flops, calls * layers * KERNELS_PER_LAYER, rate, efficiency)

    def sharing_pays(self, dtype: str, layers: int, tokens: int, dense_states: float, shared_states: float,
                     flops_per_state: float) -> bool:  # fmt: skip
        """Whether a causal LM's prefix walk (tokens + 1 calls over `shared_states` token states) beats one dense
        batch of `dense_states` on this device. On the CPU it always runs (its committed baselines were measured
        so); elsewhere from the measured rate, and not without one."""
        if self.kind == "cpu":
            return True
        rate = self.rates.get(dtype)
        if rate is None:
            return False
        efficiency, launches = EFFICIENCY["pretrained", self.kind], layers * KERNELS_PER_LAYER
        shared = pass_seconds(shared_states * flops_per_state, (tokens + 1) * launches, rate, efficiency)
        return shared < pass_seconds(dense_states * flops_per_state, launches, rate, efficiency)


def pass_seconds(flops: float, launches: float, rate: Rate, efficiency: float) -> float:
    """FLOPs at a share of the measured matmul rate, plus a round trip per kernel launched."""
    return flops / (rate.flops * efficiency) + launches * rate.call_seconds


def key(device_name: str, dtype: str) -> str:
    return f"{device_name} | {dtype}"


def cache_folder() -> Path:
    """$ORDERLAB_CACHE_DIR, else $XDG_CACHE_HOME/orderlab, else ~/.cache/orderlab."""
    explicit = os.environ.get("ORDERLAB_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "orderlab"


def rates_file() -> Path:
    return cache_folder() / "device_rates.json"


def read_rates(path: Path) -> dict[str, Rate]:
    """The cached rates by key; empty where there is no cache, or one that is not a valid cache (read as hostile:
    regular file, bounded, typed). It is then measured again."""
    if not path.exists() and not path.is_symlink():
        return {}
    try:
        return dict(read_json(path, RatesFile, "orderlab's cache of measured device rates", RATES_FILE_LIMIT).rates)
    except FileProblem:
        return {}


def rates_json(rates: dict[str, Rate]) -> bytes:
    """The cache's bytes (read back by read_rates)."""
    return RatesFile(version=RATES_VERSION, rates=rates).model_dump_json(indent=1).encode()


def cpu_name() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else 'cpu'."""
    for line in _cpuinfo_lines():
        if line.startswith("model name"):
            return "cpu " + line.partition(":")[2].strip()[:150]
    return "cpu"


def cpu_flags() -> dict[str, bool]:
    """Whether the CPU has AMX (bfloat16 tiles) and AVX512-BF16: what bfloat16 runs at on it."""
    flags: set[str] = set()
    for line in _cpuinfo_lines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            break
    return {"amx": "amx_bf16" in flags or "amx_tile" in flags, "avx512_bf16": "avx512_bf16" in flags}


def _cpuinfo_lines() -> list[str]:
    try:
        with open("/proc/cpuinfo") as info:
            return info.read(2**20).splitlines()
    except OSError:
        return []


def available_memory() -> int:
    """Bytes of memory a run may still take: the machine's available memory, or less under an address-space or
    cgroup limit (plan/memory.py)."""
    return memory_room().amount


def this_cpu(rates: dict[str, Rate] | None = None) -> Device:
    """This machine's CPU, with the memory available now, and the given measured rates by dtype (if any)."""
    return Device("cpu", cpu_name(), available_memory(), rates or {})
