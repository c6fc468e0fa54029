"""Devices: --device cpu | cuda | auto, chunks sized from the device's free memory, the plan's device pricing and its
cache (read as input from a stranger). GPU tests skip cleanly without CUDA."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.cli import app
from orderlab.commands import pricing
from orderlab.errors import OrderlabError
from orderlab.families.family import ModelShape
from orderlab.measure.chunking import device_batching, free_memory
from orderlab.models import devices
from orderlab.models.devices import CPU
from orderlab.plan import chunks, cost, estimate, prefix_walk, rates
from orderlab.plan.device import (
    EFFICIENCY,
    KERNELS_PER_LAYER,
    RATES_FILE_LIMIT,
    Device,
    Rate,
    cpu_name,
    key,
    rates_file,
    rates_json,
    read_rates,
)
from orderlab.report.plan_table import plan_lines
from orderlab.spec.load import load_spec
from orderlab.spec.schema import Spec

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"
GPT2_SMALL = ModelShape(768, 12, 12, 3072, 50257, head=True)
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")


def measured_as(monkeypatch: pytest.MonkeyPatch, measure: object) -> None:
    """The device's measurement replaced (a fixed rate), with nothing measured earlier in this process remembered."""
    monkeypatch.setattr("orderlab.measure.chunking.measure_rate", measure)
    monkeypatch.setattr("orderlab.measure.chunking._MEASURED", {})


# --- --device ------------------------------------------------------------------------------------------


@no_cuda
@pytest.mark.parametrize("command", ["check", "compare", "run"])
def test_cuda_without_a_gpu_is_one_line_and_exit_2(cli, tmp_path, command):
    spec = str(EXPERIMENTS / "dog_bites_man.yaml")
    args = {"check": [spec], "compare": [spec], "run": [spec, "--out", str(tmp_path)]}[command]
    result = cli.invoke(app, [command, *args, "--device", "cuda"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "no CUDA device is available here" in lines[0]
    assert not any(tmp_path.iterdir())  # nothing ran, nothing written


@no_cuda
def test_auto_picks_the_cpu_without_a_gpu_and_a_gpu_where_there_is_one(monkeypatch):
    assert devices.resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.resolve_device("auto").type == "cuda"


@no_cuda
def test_auto_is_the_cpu_here_for_the_cli_and_the_api(cli, monkeypatch):
    measured_as(monkeypatch, lambda device, dtype: (2e10, 1e-6))
    result = cli.invoke(app, ["validate", "--plan", str(EXPERIMENTS / "dog_bites_man.yaml"), "--device", "auto"])
    assert result.exit_code == 0 and "priced on cpu" in result.output
    import orderlab.api as ol

    spec = {"name": "tiny", "model": {"d_model": 8, "n_heads": 2, "n_layers": 1}, "inputs": [{"sentence": "a b"}]}
    assert ol.run(spec, device="auto").manifest["device"] == "cpu"
    with pytest.raises(OrderlabError, match="no CUDA device"):
        ol.run(spec, device="cuda")


def test_an_unknown_device_is_one_line():
    with pytest.raises(OrderlabError, match="--device tpu: expected one of cpu, cuda, auto"):
        devices.resolve_device("tpu")


# --- chunks per device ---------------------------------------------------------------------------------


@given(free=st.integers(10**8, 10**12), tokens=st.integers(2, 30), itemsize=st.sampled_from([2, 4, 8]))
@settings(max_examples=60, deadline=None)
def test_a_gpu_chunk_is_sized_from_its_free_memory(free, tokens, itemsize):
    dense = chunks.orders_per_pass("pretrained", GPT2_SMALL, tokens, False, False, itemsize, free, "cuda")
    more = chunks.orders_per_pass("pretrained", GPT2_SMALL, tokens, False, False, itemsize, 4 * free, "cuda")
    values = chunks.pass_values(GPT2_SMALL, tokens, False)
    assert 1 <= dense <= chunks.GPU_MOST_ORDERS
    assert dense * values * itemsize <= free // chunks.FREE_SHARE or dense == 1  # a quarter of what is free
    assert more >= dense and (more > dense or dense == chunks.GPU_MOST_ORDERS)  # more memory, longer chunks
    shared = chunks.orders_per_pass("pretrained", GPT2_SMALL, tokens, False, True, itemsize, free, "cuda")
    assert shared % chunks.ROW_ALIGNMENT == 0 and shared <= chunks.GPU_MOST_ORDERS


def test_the_cpu_keeps_its_own_rules_whatever_memory_is_free():
    for free in (10**9, 10**12):  # a pretrained model's dense chunk on the CPU is fixed; the stack's capped
        assert chunks.orders_per_pass("pretrained", GPT2_SMALL, 9, False, False, 4, free, "cpu") == 256
        stack = ModelShape(128, 4, 4, 512, vocab=0)
        values = chunks.pass_values(stack, 8, False)
        assert chunks.orders_per_pass("stack", stack, 8, False, False, 4, free, "cpu") == min(
            chunks.CPU_CHUNK_BYTES, free // chunks.FREE_SHARE
        ) // (values * 4)


def test_on_cuda_the_models_batching_reads_the_cards_free_memory(monkeypatch):
    cuda = torch.device("cuda")
    free = {"bytes": 8 * 2**30}
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free["bytes"], 80 * 2**30))
    assert free_memory(cuda) == 8 * 2**30
    size = device_batching(cuda).chunk_size
    small = size("pretrained", GPT2_SMALL, 9, False, False, 4)
    free["bytes"] = 64 * 2**30
    assert size("pretrained", GPT2_SMALL, 9, False, False, 4) > small  # sized when asked, from what is free then


# --- pricing -------------------------------------------------------------------------------------------


@given(
    flops=st.floats(1e9, 1e16),
    rate=st.floats(1e9, 1e15),
    call_seconds=st.floats(1e-7, 1e-3),
    calls=st.integers(1, 10_000),
    layers=st.integers(1, 80),
)
@settings(max_examples=80, deadline=None)
def test_a_pass_is_priced_from_the_measured_rate_and_its_launches(flops, rate, call_seconds, calls, layers):
    gpu = Device("cuda", "a card", 10**10, {"bfloat16": Rate(flops=rate, call_seconds=call_seconds)})
    faster = Device("cuda", "a card", 10**10, {"bfloat16": Rate(flops=2 * rate, call_seconds=call_seconds)})
    seconds = gpu.forward_seconds("pretrained", "bfloat16", flops, calls, layers)
    doubled = faster.forward_seconds("pretrained", "bfloat16", flops, calls, layers)
    assert seconds is not None and doubled is not None
    launches = calls * layers * KERNELS_PER_LAYER * call_seconds
    assert math.isclose(seconds - launches, 2 * (doubled - launches), rel_tol=1e-6)  # twice the rate: half the work
    assert seconds >= flops / rate  # never faster than the matmul peak
    assert gpu.forward_seconds("pretrained", "float32", flops, calls, layers) is None  # no rate for that dtype


def test_the_plan_prices_a_run_on_a_given_device_and_dtype():
    loaded = load_spec(EXPERIMENTS / "causal_prefix.yaml")
    dtype = loaded.spec.model.dtype

    def run_seconds(flops: float) -> float:
        cpu = Device("cpu", "a cpu", 8 * 10**9, {dtype: Rate(flops=flops, call_seconds=1e-6)})
        return cost.run_seconds(estimate.estimate(loaded.spec, loaded.path, cpu))

    slow, fast = run_seconds(1e10), run_seconds(1e12)
    assert slow > fast > rates.START_SECONDS
    conservative = cost.run_seconds(estimate.estimate(loaded.spec, loaded.path))  # no rate: the built-in ones
    assert math.isclose(conservative, run_seconds(rates.FLOPS_PER_SECOND[dtype] / EFFICIENCY["stack", "cpu"]),
                        rel_tol=0.05)  # fmt: skip


def test_the_plan_shares_prefixes_on_a_device_only_where_the_walk_pays():
    spec = Spec.model_validate({
        "model": {"kind": "hf", "family": ["gpt2", "llama"], "d_model": 768, "n_heads": 12, "n_layers": 12},
        "inputs": [{"sentence": "a b c d e f g", "permutations": "all"}], "metrics": ["lm_logprob"],
    })  # fmt: skip

    def pays(call_seconds: float, kind: str = "cuda") -> bool:
        device = Device(kind, "a card", 80 * 10**9, {"float32": Rate(flops=1e14, call_seconds=call_seconds)})
        return prefix_walk.prefix_walk_pays(spec, Path("spec.yaml"), device)

    assert pays(1e-9) and not pays(1e-2)  # free launches: fewer states win; costly ones: one dense batch wins
    assert pays(1e-2, "cpu")  # on the CPU it always runs (the committed baselines were measured so)
    assert not prefix_walk.prefix_walk_pays(spec, Path("spec.yaml"), Device("cuda", "unmeasured", 10**10))


# --- the cache of measured rates -----------------------------------------------------------------------


def test_validate_plan_measures_the_device_once_and_caches_it(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("ORDERLAB_CACHE_DIR", str(tmp_path))
    measured = []

    def measure(device: torch.device, dtype: str) -> tuple[float, float]:
        measured.append(dtype)
        return 5e10, 2e-6

    measured_as(monkeypatch, measure)
    spec = str(EXPERIMENTS / "dog_bites_man.yaml")
    for _ in range(2):
        result = cli.invoke(app, ["validate", "--plan", spec, "--device", "cpu"])
        assert result.exit_code == 0, result.output
        assert "priced on cpu" in result.output and "50 GFLOP/s matmul in" in result.output
    assert len(measured) == 1  # the second plan read the cache
    dtype = load_spec(spec).spec.model.dtype
    assert list(json.loads(rates_file().read_text())["rates"]) == [key(cpu_name(), dtype)]
    assert read_rates(rates_file())[key(cpu_name(), dtype)] == Rate(flops=5e10, call_seconds=2e-6)


def test_the_plan_says_when_a_run_does_not_fit_the_cards_free_memory(monkeypatch):
    def card(free: int):
        def run_device(device: torch.device, dtype: str, cached: dict) -> Device:
            return Device("cuda", "cuda a card", free, {dtype: Rate(flops=1e14, call_seconds=1e-5)})

        return run_device

    loaded = load_spec(EXPERIMENTS / "dog_bites_man.yaml")
    monkeypatch.setattr(pricing, "run_device", card(10**6))
    small = plan_lines(pricing.priced_plan(loaded.spec, loaded.path, CPU))
    assert small[0].startswith("priced on cuda a card") and small[-1].startswith("does not fit: needs ~")
    monkeypatch.setattr(pricing, "run_device", card(80 * 10**9))
    assert pricing.priced_plan(loaded.spec, loaded.path, CPU).fits


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"[1, 2, 3]",
        b'{"version": 2, "rates": {"cpu | float32": {"flops": NaN, "call_seconds": 1e-6}}}',
        b'{"version": 2, "rates": {"cpu | float32": {"flops": -5, "call_seconds": 1e-6}}}',
        b'{"version": 2, "rates": {"cpu | float32": {"flops": 1e40, "call_seconds": 1e-6}}}',
        b'{"version": 3, "rates": {}}',
        b'{"version": 2, "rates": {"' + b"x" * 300 + b'": {"flops": 1e10, "call_seconds": 1e-6}}}',
        b'{"version": 2, "rates": {"a\\u0000b": {"flops": 1e10, "call_seconds": 1e-6}}}',
        b" " * (RATES_FILE_LIMIT + 1),
    ],
)
def test_a_cache_that_is_not_a_valid_one_is_ignored(tmp_path, content):
    path = tmp_path / "device_rates.json"
    path.write_bytes(content)
    assert read_rates(path) == {}


def test_a_cache_that_is_no_regular_file_is_ignored_and_never_written(monkeypatch, tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    monkeypatch.setenv("ORDERLAB_CACHE_DIR", str(tmp_path))
    os.mkfifo(rates_file())  # a FIFO would block a reader that opened it plainly
    assert read_rates(rates_file()) == {}
    measured_as(monkeypatch, lambda device, dtype: (1e10, 1e-6))
    priced = pricing.priced_device(torch.device("cpu"), "float32")
    assert priced.rates["float32"].flops == 1e10  # measured, used, and the FIFO left as it was
    assert rates_file().is_fifo()


def test_a_written_cache_reads_back():
    rates = {key("cpu X", "float32"): Rate(flops=3.3e11, call_seconds=2e-6)}
    path = rates_file().parent / "round_trip.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rates_json(rates))
    assert read_rates(path) == rates


# --- on a GPU ------------------------------------------------------------------------------------------


@needs_cuda
def test_a_measured_rate_is_finite_and_positive_on_the_gpu():
    flops, call_seconds = devices.measure_rate(torch.device("cuda"), "float32")
    assert math.isfinite(flops) and flops > 1e9 and 0 < call_seconds < 1


@needs_cuda
def test_seeded_weights_on_the_gpu_are_the_cpu_builds():
    from orderlab.measure.adapters import build_adapters
    from orderlab.spec.sweep import plan

    loaded = load_spec(EXPERIMENTS / "causal_prefix.yaml")
    spec = plan(loaded.spec)[-1].spec  # a sweep: its deepest causal stack, one concrete model
    cpu, gpu = (build_adapters(spec, torch.device(d), loaded.path)[0] for d in ("cpu", "cuda"))

    def weights(adapter: object) -> list[torch.Tensor]:
        layers = adapter.stack.layers  # type: ignore[attr-defined]
        return [w for layer in layers for w in (layer.w_qkv, layer.w_o, layer.w_in, layer.w_out)]

    for a, b in zip(weights(cpu), weights(gpu), strict=True):
        assert b.device.type == "cuda" and torch.equal(a, b.cpu())  # drawn once on the CPU, moved once
    assert all(w.device.type == "cuda" for w in weights(gpu.twin()))  # the round-off twin runs on the card too


@needs_cuda
@pytest.mark.parametrize("spec", ["dog_bites_man.yaml", "causal_prefix.yaml", "zoo_causal.yaml"])
def test_a_gpu_run_matches_the_cpu_baseline_within_checks_tolerances(cli, spec):
    result = cli.invoke(app, ["check", str(EXPERIMENTS / spec), "--device", "cuda"])
    assert result.exit_code == 0, result.output
