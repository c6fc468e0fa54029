"""GPT-2's and BLOOM's tanh GELU, computed in place (models/hf/activations.py), give transformers' numbers bit for bit,
in every dtype, and are swapped into the models orderlab builds, never into a model object a caller passed."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from orderlab.measure.adapters import build_adapters
from orderlab.models.devices import CPU
from orderlab.models.hf.activations import InPlaceGELU, bloom_gelu, inplace_activations, new_gelu
from orderlab.spec.extras import installed
from orderlab.spec.schema import Spec

pytestmark = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTEGERS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
values = arrays(np.float64, st.integers(1, 300), elements=st.floats(-1e4, 1e4, allow_subnormal=True))


def bits(x: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns: equal only where every number is the same float, its sign included."""
    return x.view(INTEGERS[x.element_size()])


def transformers_gelus():
    from transformers.activations import NewGELUActivation
    from transformers.models.bloom.modeling_bloom import bloom_gelu_forward

    return {"new_gelu": (new_gelu, NewGELUActivation()), "bloom_gelu": (bloom_gelu, bloom_gelu_forward)}


@pytest.mark.parametrize("name", ["new_gelu", "bloom_gelu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=60, deadline=None)
@given(numbers=values)
def test_the_inplace_gelu_gives_transformers_bits_and_leaves_its_input(name, dtype, numbers):
    ours, theirs = transformers_gelus()[name]
    x = torch.from_numpy(numbers).to(dtype)
    kept = x.clone()
    with torch.inference_mode():
        got, expected = ours(x), theirs(x)
    assert torch.equal(bits(got), bits(expected))
    assert torch.equal(bits(x), bits(kept))


@pytest.mark.parametrize("name", ["new_gelu", "bloom_gelu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_inplace_gelu_gives_transformers_bits_over_a_dense_grid(name, dtype):
    """Every 1/4096 from -12 to 12, where a float's last bits differ between two ways of computing the tanh GELU."""
    ours, theirs = transformers_gelus()[name]
    x = torch.linspace(-12, 12, 24 * 4096 + 1, dtype=torch.float64).to(dtype)
    with torch.inference_mode():
        assert torch.equal(bits(ours(x)), bits(theirs(x)))


@pytest.mark.parametrize("name", ["new_gelu", "bloom_gelu"])
def test_under_a_gradient_the_gelu_is_transformers_expression(name):
    ours, theirs = transformers_gelus()[name]
    x = torch.linspace(-6, 6, 101, dtype=torch.float64, requires_grad=True)
    (gradient,) = torch.autograd.grad(ours(x).sum(), x)
    (expected,) = torch.autograd.grad(theirs(x).sum(), x)
    assert torch.equal(gradient, expected)


def seeded(family: str) -> Spec:
    return Spec.model_validate({
        "model": {"kind": "hf", "family": family, "d_model": 32, "n_heads": 2, "n_layers": 2},
        "inputs": [{"sentence": "the dog bit a man"}],
    })  # fmt: skip


def stock(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of `model` with transformers' own GELU modules put back."""
    from transformers.activations import NewGELUActivation
    from transformers.models.bloom.modeling_bloom import BloomGelu

    copied = copy.deepcopy(model)
    for parent in list(copied.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, InPlaceGELU):
                setattr(parent, name, {"new_gelu": NewGELUActivation, "bloom_gelu": BloomGelu}[child.function]())
    return copied


@pytest.mark.parametrize("family", ["gpt2", "bloom"])
def test_a_built_model_runs_the_inplace_gelu_and_its_states_are_transformers_bits(family):
    (adapter,) = build_adapters(seeded(family), CPU, Path("spec.yaml"))[:1]
    model = adapter.shared.backend.model
    swapped = [module for module in model.modules() if isinstance(module, InPlaceGELU)]
    assert len(swapped) == 2  # one a layer
    ids = torch.tensor([[0, 4, 5, 6, 7, 8], [0, 8, 7, 6, 5, 4]])
    with torch.inference_mode():
        got = model(input_ids=ids, output_hidden_states=True)
        expected = stock(model)(input_ids=ids, output_hidden_states=True)
    for ours, theirs in zip(got.hidden_states, expected.hidden_states, strict=True):
        assert torch.equal(ours, theirs)
    assert torch.equal(got.logits, expected.logits)


def test_a_callers_model_object_keeps_its_own_modules():
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    import orderlab.api as ol

    (adapter,) = build_adapters(seeded("gpt2"), CPU, Path("spec.yaml"))[:1]
    tokenizer: PreTrainedTokenizerFast = adapter.shared.backend.tokenizer
    config = GPT2Config(n_embd=32, n_head=2, n_layer=2, vocab_size=len(tokenizer), n_positions=16)
    model = GPT2LMHeadModel(config).eval()
    before = [type(module).__name__ for module in model.modules()]
    ol.run(
        {"name": "given", "inputs": [{"sentence": "the dog bit a man"}]},
        model=model,
        tokenizer=tokenizer,
        progress=False,
    )
    assert [type(module).__name__ for module in model.modules()] == before
    assert "NewGELUActivation" in before


def test_only_transformers_own_classes_are_swapped():
    class NewGELUActivation(torch.nn.Module):  # a user's module of the same name
        pass

    model = torch.nn.Sequential(NewGELUActivation(), torch.nn.Linear(2, 2))
    assert inplace_activations(model) == 0
    assert type(model[0]) is NewGELUActivation
