"""A run that reads log-probabilities alone (lm_logprob, minimal pairs) stops a causal LM's prefix walk one depth early:
the last word's own pass feeds only its state. Its numbers are the full walk's, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from causal_walks import CAUSAL, ORDERS, WORDS, fed_tokens, lm_spec

from orderlab.measure.adapters import build_adapters
from orderlab.metrics import CAUSAL_POOLINGS, ENCODER_POOLINGS, reads_logprobs, reads_states
from orderlab.models.devices import CPU
from orderlab.models.prefix_trie import trie_depths
from orderlab.plan.chunks import ROW_ALIGNMENT
from orderlab.plan.decisions import Decisions
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
    pytest.mark.usefixtures("one_thread"),
]


@pytest.mark.parametrize(
    ("families", "expected"),
    [
        (["lm_logprob"], False),
        (["lm_logprob", "minimal_pairs"], False),
        (["minimal_pairs"], False),
        (["lm_logprob", "invariance"], True),
        (["prefix_invariance", "lm_logprob"], True),
        (["attention"], True),
    ],
)
def test_only_log_probability_metrics_read_no_states(families, expected):
    assert reads_states(families, "pretrained", CAUSAL_POOLINGS) is expected
    assert reads_states(["invariance"], "pretrained", ENCODER_POOLINGS)


@pytest.mark.parametrize("family", CAUSAL)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_log_probability_run_skips_the_deepest_depth_and_gets_the_same_bytes(family, dtype):
    only, full = (build_adapters(lm_spec(family, metrics, dtype=dtype), CPU, Path("spec.yaml"))[0]
                  for metrics in (["lm_logprob"], ["lm_logprob", "invariance"]))  # fmt: skip
    assert not only.shared.states and full.shared.states
    for rows in (slice(0, 120), slice(7, 57)):  # all orders; a chunk that splits the trie below its first level
        (got, fed), (expected, fed_full) = (fed_tokens(a.sentence(WORDS), ORDERS[rows]) for a in (only, full))
        assert got.hidden == [] and got.pooled == {}
        assert torch.equal(got.logprob, expected.logprob)  # byte for byte: the same calls on the same rows
        deepest = len(trie_depths(ORDERS[rows], ROW_ALIGNMENT)[-1].word)
        assert fed == fed_full[:-1] and fed_full[-1] == deepest  # only the last word's own pass is left out


@pytest.mark.parametrize("family", CAUSAL)
def test_a_walk_with_states_runs_no_lm_head_on_the_full_orders(family):
    """The deepest depth's call feeds its word states alone: the LM head sees the root and every shallower depth."""
    (adapter,) = build_adapters(lm_spec(family, ["lm_logprob", "invariance"]), CPU, Path("spec.yaml"))[:1]
    head: list[int] = []
    handle = adapter.shared.backend.model.get_output_embeddings().register_forward_hook(
        lambda _m, args, _out: head.append(args[0].shape[0] * args[0].shape[1])
    )
    try:
        _, fed = fed_tokens(adapter.sentence(WORDS), ORDERS)
    finally:
        handle.remove()
    assert fed[-1] == len(trie_depths(ORDERS, ROW_ALIGNMENT)[-1].word) >= len(ORDERS)  # the full orders, padded
    assert head == [*fed[:-1], 0]  # the rows of every call but the deepest, which gives it no position


@pytest.mark.parametrize(
    ("families", "expected"),
    [
        (["lm_logprob"], True),
        (["minimal_pairs"], True),
        (["invariance", "lm_logprob"], True),
        (["equivariance", "invariance"], False),
        (["prefix_invariance", "attention"], False),
    ],
)
def test_only_log_probability_metrics_read_log_probabilities(families, expected):
    assert reads_logprobs(families, "pretrained", CAUSAL_POOLINGS) is expected


def head_rows(sentence, orders: torch.Tensor) -> tuple[object, list[int]]:
    """The sentence's pass over `orders`, and the positions its model's LM head was given, call by call."""
    head: list[int] = []
    module = sentence.adapter.shared.backend.model.get_output_embeddings()
    handle = module.register_forward_hook(lambda _m, args, _out: head.append(args[0].shape[0] * args[0].shape[1]))
    try:
        with torch.inference_mode():
            return sentence.forward(orders), head
    finally:
        handle.remove()


@pytest.mark.parametrize("family", CAUSAL)
@pytest.mark.parametrize("walk", [True, False])
def test_a_run_that_reads_no_log_probability_runs_no_lm_head_and_gets_the_same_states(family, walk):
    states, both = (build_adapters(lm_spec(family, metrics), CPU, Path("spec.yaml"),
                                   decisions=Decisions(walk, compile=False))[0]
                    for metrics in (["equivariance", "invariance"], ["equivariance", "lm_logprob"]))  # fmt: skip
    assert not states.shared.logprobs and both.shared.logprobs
    (got, head), (expected, head_both) = (head_rows(a.sentence(WORDS), ORDERS[7:57]) for a in (states, both))
    assert got.logprob is None and expected.logprob is not None
    assert set(head) == {0} and sum(head_both) > 0  # called, and given no position
    for layer, (mine, theirs) in enumerate(zip(got.hidden, expected.hidden, strict=True)):
        assert torch.equal(mine, theirs), layer  # byte for byte: the same calls on the same rows
    assert all(
        torch.equal(got.pooled["mean"][layer], expected.pooled["mean"][layer]) for layer in range(len(got.hidden))
    )


def test_a_run_that_reads_neither_from_its_passes_still_walks_them_with_states():  # decodability alone: its probe's
    neither, states = (build_adapters(lm_spec("gpt2", metrics), CPU, Path("spec.yaml"),  # sentences are its reading
                                      decisions=Decisions(True, compile=False))[0]
                       for metrics in (["decodability"], ["equivariance", "invariance"]))  # fmt: skip
    assert not neither.shared.logprobs and neither.shared.states  # was: a pass asked for nothing, an AssertionError
    with torch.inference_mode():
        got, expected = (adapter.sentence(WORDS).forward(ORDERS[7:57]) for adapter in (neither, states))
    assert got.logprob is None and all(torch.equal(a, b) for a, b in zip(got.hidden, expected.hidden, strict=True))
