"""A causal LM's hook points read per token keep the shared-prefix walk (models/walk_points.py): each point is the
dense pass's to float32 round-off, the same keys and shapes; attention probabilities still run dense."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from causal_walks import CAUSAL, ORDERS, WORDS

from orderlab.core.hook_points import LOGITS, hook_name
from orderlab.measure.adapters import build_adapters
from orderlab.models.devices import CPU
from orderlab.models.pretrained import PretrainedSentence
from orderlab.plan.decisions import Decisions
from orderlab.spec.extras import installed
from orderlab.spec.schema import Spec

pytestmark = [
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
    pytest.mark.usefixtures("one_thread"),
]
TOLERANCE = 1e-5  # float32, relative to each tensor's largest magnitude


def sentences(
    family: str, ablation: str = "trained", packed_tokens: int = 0, metrics: tuple[str, ...] = ("lm_logprob",)
) -> tuple[PretrainedSentence, ...]:
    """The sentence bound to a seeded model's shared-prefix adapter and to its dense one."""
    spec = Spec.model_validate({
        "model": {"kind": "hf", "family": family, "d_model": 32, "n_heads": 2, "n_layers": 2,
                  "position_embeddings": [ablation]},
        "inputs": [{"sentence": " ".join(WORDS), "permutations": "all"}],
        "metrics": ["equivariance", *metrics],
    })  # fmt: skip
    adapters = (build_adapters(spec, CPU, Path("spec.yaml"), decisions=Decisions(share, compile=False,
                                                                                   packed_tokens=packed_tokens))[0]
                for share in (True, False))  # fmt: skip
    return tuple(adapter.sentence(WORDS) for adapter in adapters)


def read_points(sentence: PretrainedSentence) -> list[str]:
    """Every point the family reads per token: logits, and each layer's but the attention probabilities."""
    points = [point for point in sentence.adapter.hook_points if point not in (LOGITS, "pattern")]
    return [LOGITS, *(hook_name(layer, point) for layer in (1, 2) for point in points)]


def assert_same_reads(shared: PretrainedSentence, dense: PretrainedSentence, points: list[str]) -> None:
    """The shared sentence's reads, chunk by chunk below the trie's first level, against the dense pass's."""
    with torch.inference_mode():
        expected = dense.forward(ORDERS, points).hooks
        for start in range(0, len(ORDERS), 50):
            rows = slice(start, start + 50)
            got = shared.forward(ORDERS[rows], points).hooks
            assert list(got) == list(expected)
            for name, tensor in expected.items():
                scale = tensor.abs().max().item()
                torch.testing.assert_close(got[name], tensor[rows], rtol=TOLERANCE, atol=TOLERANCE * scale)


def no_dense(*_args: object) -> None:
    raise AssertionError("ran dense")


@pytest.mark.parametrize("family", CAUSAL)
def test_every_point_read_per_token_comes_from_the_walk_as_the_dense_pass_reads_it(family, monkeypatch):
    shared, dense = sentences(family)
    points = read_points(shared)
    assert {"1.q", "1.k", "1.v", "1.attn_out", "1.mlp_out", "1.output", "2.input", LOGITS} <= set(points)
    monkeypatch.setattr(shared, "dense", no_dense)
    assert_same_reads(shared, dense, points)


@pytest.mark.parametrize(
    ("family", "ablation", "points"),
    [
        ("gpt2", "shuffled", ["2.k"]),
        ("gpt2", "sinusoidal", [LOGITS]),
        ("llama", "zero", ["1.v", "2.mid"]),
        ("llama", "trained", ["2.output", "1.input"]),
    ],
)
def test_a_few_points_under_an_ablation_read_as_the_dense_pass_reads_them(family, ablation, points):
    shared, dense = sentences(family, ablation)
    assert_same_reads(shared, dense, points)
    with torch.inference_mode():
        got, expected = shared.forward(ORDERS[:50], points), dense.forward(ORDERS[:50], points)
    assert got.hooks.keys() == set(points)
    torch.testing.assert_close(got.logprob, expected.logprob, rtol=TOLERANCE, atol=TOLERANCE)
    torch.testing.assert_close(got.hidden[-1], expected.hidden[-1], rtol=TOLERANCE, atol=TOLERANCE)


def no_walk(*_args: object) -> None:
    raise AssertionError("walked")


def test_attention_probabilities_need_whole_rows_so_a_pass_reading_them_runs_dense(monkeypatch):
    shared, _ = sentences("gpt2", metrics=("attention",))  # eager attention, which returns them
    monkeypatch.setattr(shared, "shared_prefixes", no_walk)
    with torch.inference_mode():
        hooks = shared.forward(ORDERS[:2], ["1.q", "2.pattern"]).hooks
    assert hooks["2.pattern"].shape == (2, 2, len(WORDS) + 1, len(WORDS) + 1)
    with pytest.raises(AssertionError, match="walked"), torch.inference_mode():
        shared.forward(ORDERS[:2], ["1.q"])


def test_a_pass_reading_points_walks_unpacked_where_top_depths_would_pack(monkeypatch):
    shared, dense = sentences("gpt2", packed_tokens=10_000)
    monkeypatch.setattr(shared, "dense", no_dense)
    calls = []
    handle = shared.adapter.backend.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        with torch.inference_mode():
            got = shared.forward(ORDERS, ["2.v"]).hooks
            packed = len(calls)
            shared.forward(ORDERS)
    finally:
        handle.remove()
    assert packed == len(WORDS) + 1 > len(calls) - packed  # the root and one call per depth; packed: fewer
    with torch.inference_mode():
        expected = dense.forward(ORDERS, ["2.v"]).hooks["2.v"]
    torch.testing.assert_close(got["2.v"], expected, rtol=TOLERANCE, atol=TOLERANCE * expected.abs().max().item())
