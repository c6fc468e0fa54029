"""plan/stack_cost.py: the attention stack's cost model, part by part (the whole is held against real runs in
tests/test_plan.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orderlab.metrics import ATTENTION_FAMILY
from orderlab.plan.device import Device
from orderlab.plan.stack_cost import stack_estimate, stack_flops
from orderlab.plan.written import attention_csv
from orderlab.spec.schema import Spec

CPU = Device("cpu", "cpu", 8 * 10**9)  # no measured rates: the conservative ones, whatever the host


def stack(**model: object) -> Spec:
    return Spec.model_validate({"model": model, "inputs": [{"sentence": "the dog bit the man"}]})


@given(st.integers(1, 6), st.sampled_from([8, 16, 64]), st.integers(1, 40), st.booleans(), st.integers(1, 4))
def test_stack_flops_are_projections_ffn_and_attention_per_layer(layers, d, n, ffn, mult):
    spec = stack(n_layers=layers, d_model=d, n_heads=4, ffn=ffn, ffn_mult=mult)
    ffn_flops = 4 * mult * n * d * d if ffn else 0
    assert stack_flops(spec, n) == layers * (8 * n * d * d + ffn_flops + 4 * n * n * d)


def test_attention_maps_cost_the_stack_what_attention_csv_counts_for_every_encoding():
    spec = Spec.model_validate({"metrics": [ATTENTION_FAMILY], "inputs": [{"sentence": "the dog bit the man"}],
                                "encodings": ["sinusoidal", "rope"]})  # fmt: skip
    [item] = [stack_estimate(spec, {}, CPU)]
    labels = sum(len(choice.label) for choice in spec.encodings) / 2
    shown = attention_csv(spec, 2, spec.stack.n_layers, spec.stack.n_heads, labels)
    assert (item.attention_rows, item.attention_bytes) == (shown.rows, shown.bytes)
    assert "attention maps" in [cost.what for cost in item.seconds]


def test_a_trained_spec_measures_twice_and_trains_once():
    untrained = stack_estimate(stack(), {}, CPU)
    spec = Spec.model_validate({"inputs": [{"sentence": "the dog bit the man"}], "train": {"task": "first_word"}})
    trained = stack_estimate(spec, {}, CPU)
    assert trained.sequences == 2 * untrained.sequences
    assert [cost.what for cost in trained.seconds].count("training") == 1
    assert trained.metrics_rows > 2 * untrained.metrics_rows  # and the task's accuracy rows


def test_a_bigger_model_is_named_as_what_to_change():
    wide, deep = stack_estimate(stack(d_model=512, n_heads=4), {}, CPU), stack_estimate(stack(n_layers=24), {}, CPU)
    assert wide.weights.field == ("model", "d_model") and deep.weights.field == ("model", "n_layers")
    assert wide.weights.amount > deep.weights.amount
