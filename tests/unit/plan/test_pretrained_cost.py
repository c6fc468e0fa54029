"""plan/pretrained_cost.py: a zoo model's shape, weights and passes, read without torch or transformers."""

from __future__ import annotations

from pathlib import Path

import pytest

from orderlab.families.family import ModelShape
from orderlab.metrics import ATTENTION_FAMILY
from orderlab.plan.device import Device
from orderlab.plan.pretrained_cost import backend_shape, model_weight_bytes, pretrained_estimate, sequence_flops
from orderlab.plan.written import attention_csv
from orderlab.spec.schema import Spec

CPU = Device("cpu", "cpu", 8 * 10**9)
SHAPE = ModelShape(64, 2, 4, 256, vocab=1000)


def zoo(family: str = "gpt2", **fields: object) -> Spec:
    return Spec.model_validate({"model": {"kind": "hf", "family": family}, "inputs": [{"sentence": "a b c d"}],
                                **fields})  # fmt: skip


def test_float32_and_float64_models_hold_a_float32_load_and_both_precisions():
    assert model_weight_bytes(SHAPE, "float32") == model_weight_bytes(SHAPE, "float64") == SHAPE.parameters * 16


def test_a_16_bit_model_holds_itself_and_what_its_twin_widens_at_once():
    assert model_weight_bytes(SHAPE, "bfloat16") == SHAPE.parameters * 2 + SHAPE.vocab * SHAPE.d_model * 4


@pytest.mark.parametrize("n", [1, 4, 30])
def test_a_causal_lm_pays_for_its_logits_and_an_encoder_does_not(n):
    encoder = ModelShape(64, 2, 4, 256, vocab=1000)
    causal = ModelShape(64, 2, 4, 256, vocab=1000, head=True)
    assert sequence_flops(causal, n) - sequence_flops(encoder, n) == 2 * n * 64 * 1000


def test_a_seeded_model_is_sized_from_its_spec():
    shape = backend_shape(zoo("llama", model={"kind": "hf", "family": "llama", "d_model": 128, "n_layers": 3}),
                          Path("spec.yaml"))  # fmt: skip
    assert (shape.d_model, shape.n_layers) == (128, 3)


def test_a_zoo_models_attention_csv_is_counted_per_ablation_by_the_shared_rule():
    spec = zoo(metrics=[ATTENTION_FAMILY])
    shape = backend_shape(spec, Path("spec.yaml"))
    item = pretrained_estimate(spec, {}, Path("spec.yaml"), CPU, walk=True)
    ablations = len(spec.pretrained.position_embeddings)
    labels = sum(map(len, spec.pretrained.labels)) / ablations
    shown = attention_csv(spec, ablations, shape.n_layers, shape.n_heads, labels)
    assert (item.attention_rows, item.attention_bytes) == (shown.rows, shown.bytes) and shown.rows > 0


def test_walking_shared_prefixes_computes_fewer_token_states_than_dense_passes():
    spec = Spec.model_validate({"model": {"kind": "hf", "family": "gpt2"}, "metrics": ["lm_logprob"],
                                "inputs": [{"sentence": "a b c d e f", "permutations": "all"}]})  # fmt: skip
    shared = pretrained_estimate(spec, {}, Path("spec.yaml"), CPU, walk=True)
    dense = pretrained_estimate(spec, {}, Path("spec.yaml"), CPU, walk=False)
    assert shared.metrics_rows == dense.metrics_rows and shared.sequences == dense.sequences
    assert shared.total_seconds < dense.total_seconds
