"""plan/decisions.py: how a run computes, decided once before its first pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from orderlab.errors import OrderlabError
from orderlab.plan.decisions import Decisions, compile_pays, decide, walks
from orderlab.plan.device import Device, Rate
from orderlab.spec.schema import Spec

CAUSAL = Spec.model_validate({"model": {"causal": True}, "inputs": [{"sentence": "a b c d", "permutations": "all"}]})
LONG = Spec.model_validate({"model": {"d_model": 256}, "inputs": [{"sentence": " ".join(f"w{i}" for i in range(10)),
                                                                   "permutations": "all"}]})  # fmt: skip


def test_the_cpu_always_shares_prefixes_so_its_baselines_stay_as_measured():
    assert decide(CAUSAL, Path("spec.yaml"), None, "never") == Decisions(share_prefixes=True, compile=False)
    cpu = Device("cpu", "cpu", 10**10)  # no rates: still shared on the CPU
    assert decide(CAUSAL, Path("spec.yaml"), cpu, "never").share_prefixes


def test_a_card_without_a_measured_rate_runs_dense():
    unmeasured = Device("cuda", "a card", 10**10)
    assert not decide(CAUSAL, Path("spec.yaml"), unmeasured, "never").share_prefixes


def test_a_card_shares_where_its_launches_are_cheap_enough():
    spec = Spec.model_validate({
        "model": {"kind": "hf", "family": ["gpt2", "llama"], "d_model": 768, "n_heads": 12, "n_layers": 12},
        "inputs": [{"sentence": "a b c d e f g", "permutations": "all"}], "metrics": ["lm_logprob"],
    })  # fmt: skip

    def card(call_seconds: float) -> Device:
        return Device("cuda", "a card", 80 * 10**9, {"float32": Rate(flops=1e14, call_seconds=call_seconds)})

    assert decide(spec, Path("spec.yaml"), card(1e-9), "never").share_prefixes  # fewer token states win
    assert not decide(spec, Path("spec.yaml"), card(1e-2), "never").share_prefixes  # n + 1 slow launches lose


@pytest.mark.parametrize(("setting", "spec", "wanted"), [
    ("always", CAUSAL, True), ("never", LONG, False), ("auto", CAUSAL, False), ("auto", LONG, True),
])  # fmt: skip
def test_compilation_is_asked_for_or_pays_for_itself_on_long_runs(setting, spec, wanted):
    assert compile_pays(spec, setting) is wanted  # LONG: 10! orders at d_model 256, hours by the estimate


def test_an_unknown_compile_setting_is_refused_in_one_line():
    with pytest.raises(OrderlabError, match=r"ORDERLAB_COMPILE='sometimes'; expected one of auto, always, never"):
        compile_pays(CAUSAL, "sometimes")


def test_packed_top_depths_are_off_unless_asked_for_and_a_bad_budget_is_refused_in_one_line():
    assert decide(CAUSAL, Path("spec.yaml"), None, "never").packed_tokens == 0  # no committed number moves
    assert decide(CAUSAL, Path("spec.yaml"), None, "never", "512").packed_tokens == 512
    for setting in ("-1", "lots", "1e3", "", "4097"):
        with pytest.raises(OrderlabError, match=rf"ORDERLAB_PACKED_TOKENS={setting!r}; expected a whole number of "
                                                r"tokens from 0 \(off\) to 4096$"):  # fmt: skip
            decide(CAUSAL, Path("spec.yaml"), None, "never", setting)


def test_the_walk_can_be_forced_either_way_and_a_bad_setting_is_refused_in_one_line():
    card = Device("cuda", "a card", 10**10)  # unmeasured: auto runs dense there
    assert not walks(CAUSAL, Path("spec.yaml"), card, "auto") and walks(CAUSAL, Path("spec.yaml"), card, "always")
    assert walks(CAUSAL, Path("spec.yaml"), None, "auto") and not walks(CAUSAL, Path("spec.yaml"), None, "never")
    assert not decide(CAUSAL, Path("spec.yaml"), None, "never", "0", "never").share_prefixes
    with pytest.raises(OrderlabError, match=r"^ORDERLAB_PREFIX_WALK='sometimes'; expected one of auto, always, never$"):
        decide(CAUSAL, Path("spec.yaml"), None, "never", "0", "sometimes")
