"""A causal LM's prefix walk with its top depths packed in one call (models/kv_prefix.top_pass, opt-in: the run's
Decisions.packed_tokens): the walk's log-probabilities, states and verdicts to float32 round-off, in fewer calls."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from causal_walks import ORDERS, WORDS, fed_tokens, lm_spec

from orderlab.families import FAMILIES
from orderlab.measure.adapters import build_adapters, prefix_sharing
from orderlab.measure.run_options import RunOptions
from orderlab.measure.sweep_measure import run_sweep
from orderlab.models.devices import CPU
from orderlab.models.kv_prefix import packs
from orderlab.plan.decisions import Decisions
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
    pytest.mark.usefixtures("one_thread"),
]
# float32: the packed call's attention sums over more (masked) keys and its matmuls have other shapes than the walk's,
# so the two agree to a few ulps of each tensor's largest magnitude, not bit for bit (measured: under 1e-6)
TOLERANCE = 1e-5
PACKING = [family.name for family in FAMILIES.values() if family.packed_ablations]
ALL, TOP_TWO = 512, 64  # budgets: every depth in one call; the root and 5 + 20 prefixes (32 slots in row tiles)


def adapters(family: str, metrics: list[str], packed_tokens: int):
    decisions = Decisions(share_prefixes=True, compile=False, packed_tokens=packed_tokens)
    return build_adapters(lm_spec(family, metrics), CPU, Path("spec.yaml"), decisions=decisions)


def calls(sentence, orders: torch.Tensor):
    """The pass over `orders`, and how many times its model was called."""
    done, fed = fed_tokens(sentence, orders)
    return done, len(fed)


def assert_close(got: torch.Tensor, expected: torch.Tensor) -> None:
    scale = expected.abs().max().item()
    torch.testing.assert_close(got, expected, rtol=TOLERANCE, atol=TOLERANCE * scale)


@pytest.mark.parametrize("family", PACKING)
@pytest.mark.parametrize("metrics", [["lm_logprob", "invariance"], ["lm_logprob"]], ids=["states", "lm-only"])
def test_packed_top_depths_give_the_walks_numbers_in_fewer_calls(family, metrics):
    walks = adapters(family, metrics, 0)
    states = len(metrics) > 1
    for budget, packed in ((ALL, len(WORDS)), (TOP_TWO, 2)):
        for walk, packing in zip(walks, adapters(family, metrics, budget), strict=True):
            expected, walked = calls(walk.sentence(WORDS), ORDERS)
            for rows in (slice(0, 120), slice(7, 57)):  # all orders; a chunk that splits the trie below the top
                got, called = calls(packing.sentence(WORDS), ORDERS[rows])
                assert_close(got.logprob, expected.logprob[rows])
                assert len(got.hidden) == len(expected.hidden) == (3 if states else 0)  # embeddings, 2 layers
                for layer, states_of_layer in enumerate(expected.hidden):
                    assert_close(got.hidden[layer], states_of_layer[rows])
                    assert_close(got.pooled["mean"][layer], expected.pooled["mean"][layer][rows])
                if rows.start == 0:
                    assert walked == len(WORDS) + states  # the root, then a call per depth (the last's for its states)
                    assert called == walked - min(packed, len(WORDS) - 1 + states)  # packed depths ride the root's


def test_a_family_that_does_not_declare_packing_walks_depth_by_depth():  # BLOOM: ALiBi built from a 2D mask
    for walk, asked in zip(adapters("bloom", ["lm_logprob"], 0), adapters("bloom", ["lm_logprob"], ALL), strict=True):
        (expected, walked), (got, called) = (calls(a.sentence(WORDS), ORDERS) for a in (walk, asked))
        assert torch.equal(got.logprob, expected.logprob) and called == walked  # the same calls, bit for bit


def test_every_packed_ablation_is_one_the_family_walks_with_a_cache():
    for family in FAMILIES.values():
        assert set(family.packed_ablations) <= set(family.cached_ablations), family.name
    assert set(PACKING) == {"gpt2", "llama", "opt", "qwen2", "gpt_neox"}


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_run_asked_to_pack_reaches_the_same_verdicts(family, monkeypatch):
    spec = lm_spec(family, ["equivariance", "invariance", "lm_logprob"], WORDS[:4])
    walked = run_sweep(spec, RunOptions()).metrics
    monkeypatch.setenv("ORDERLAB_PACKED_TOKENS", str(ALL))
    packed = run_sweep(spec, RunOptions()).metrics
    assert packed["verdict"].tolist() == walked["verdict"].tolist()
    assert not packed["value"].equals(walked["value"])  # packed indeed: round-off apart, not bit for bit
    scale = walked["value"].abs().max()
    assert ((packed["value"] - walked["value"]).abs() <= TOLERANCE * scale).all()
    rows = [column for column in walked.columns if column not in ("value", "verdict")]
    assert packed[rows].equals(walked[rows])


def test_the_manifest_says_which_conditions_pack_their_top_depths():
    packing, walking = (Decisions(share_prefixes=True, compile=False, packed_tokens=budget) for budget in (ALL, 0))
    notes = prefix_sharing(lm_spec("gpt2", ["lm_logprob"]), packing)
    assert set(notes.values()) == {f"shared, top depths packed in one call up to {ALL} tokens"}
    assert set(prefix_sharing(lm_spec("bloom", ["lm_logprob"]), packing).values()) == {"shared"}  # declares none
    assert set(prefix_sharing(lm_spec("gpt2", ["lm_logprob"]), walking).values()) == {"shared"}


@pytest.mark.parametrize(
    ("implementation", "packs_there"), [("sdpa", True), ("eager", True), ("flash_attention_2", False)]
)
def test_only_attention_that_applies_the_mask_as_given_packs(implementation, packs_there, monkeypatch):
    backend = adapters("gpt2", ["lm_logprob"], ALL)[0].backend
    monkeypatch.setattr(backend.model.config, "_attn_implementation", implementation, raising=False)
    assert packs(backend, ALL) is packs_there and not packs(backend, 0)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_eager_attention_adds_the_mask_to_the_same_numbers(family):  # a model passed from Python may run eager
    walk, packing = (adapters(family, ["equivariance", "lm_logprob"], budget)[0] for budget in (0, ALL))
    for adapter in (walk, packing):
        adapter.backend.model.set_attn_implementation("eager")
    (expected, walked), (got, called) = (calls(a.sentence(WORDS), ORDERS) for a in (walk, packing))
    assert called == 1 < walked
    assert_close(got.logprob, expected.logprob)
    for layer, states in enumerate(expected.hidden):
        assert_close(got.hidden[layer], states)
