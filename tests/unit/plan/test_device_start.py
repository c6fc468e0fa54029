"""A run on a GPU pays once for bringing the card up in a fresh process (plan/device.py START_SECONDS_ON): an H200
machine's `orderlab run` took ~15 s longer than the same run in a warm process, most of it outside the CPU's start."""

from __future__ import annotations

from orderlab.plan.cost import DEVICE_START
from orderlab.plan.device import START_SECONDS_ON, Device, Rate
from orderlab.plan.estimate import estimate
from orderlab.spec.schema import Spec

RATES = {"float32": Rate(flops=5e13, call_seconds=2.4e-5)}
SWEPT = Spec.model_validate({
    "model": {"kind": "hf", "family": ["gpt2", "llama"], "d_model": 64, "n_heads": 2, "n_layers": 2},
    "inputs": [{"sentence": "a b c d e", "permutations": "all"}], "metrics": ["lm_logprob"],
})  # fmt: skip
STACK = Spec.model_validate({"model": {"n_layers": [1, 2]}, "inputs": [{"sentence": "a b c", "permutations": "all"}]})


def starts(spec: Spec, device: Device) -> list[list[float]]:
    return [[cost.amount for cost in e.seconds if cost.what == DEVICE_START] for e in estimate(spec, "s.yaml", device)]


def test_a_gpu_run_pays_for_the_card_once_whatever_it_sweeps_and_the_cpu_never():
    card, cpu = Device("cuda", "a card", 80 * 10**9, RATES), Device("cpu", "cpu", 80 * 10**9, RATES)
    for spec in (SWEPT, STACK):  # the transformers families and the attention stack alike
        assert starts(spec, card) == [[START_SECONDS_ON["cuda"]], []]  # the first combination, not every one
        assert starts(spec, cpu) == [[], []]
