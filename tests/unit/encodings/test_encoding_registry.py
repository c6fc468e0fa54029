"""Every registered encoding: runs in a stack (causal and bidirectional), lists its parameters, stays one small file."""

from __future__ import annotations

import inspect
import math
import re

import pytest
import torch
from stacks import config_of, make_stack

from orderlab.encodings import ENCODINGS, EncodingContext, build_encoding
from orderlab.errors import OrderlabError
from orderlab.models.attention_stack import seeded_weights
from orderlab.models.stack_builder import build_stack
from orderlab.spec.schema import ModelSpec

NAMES = ENCODINGS.names()


def test_the_registry_holds_the_zoo():
    assert set(NAMES) >= {"none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "cope"}


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("name", NAMES)
def test_every_encoding_runs_a_batch_through_the_stack(name, causal):
    stack = make_stack(name, max_len=6, d_model=16, n_heads=4, n_layers=2, causal=causal)
    x = torch.randn(3, 6, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    out = stack(x)
    assert len(out.hidden) == 3 and all(h.shape == (3, 6, 16) and h.isfinite().all() for h in out.hidden)
    for attention in out.attention:
        assert attention.shape == (3, 4, 6, 6)
        assert torch.allclose(attention.sum(-1), torch.ones(3, 4, 6, dtype=torch.float64))
        if causal:
            assert attention.triu(1).abs().max() == 0


@pytest.mark.parametrize("name", NAMES)
def test_every_encoding_changes_the_stack_unless_it_is_none(name):
    model = ModelSpec(d_model=16, n_heads=4, n_layers=1)
    context = EncodingContext(d_model=16, n_heads=4, causal=False, seed=0)
    x = torch.randn(1, 5, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    weights = seeded_weights(config_of(d_model=16, n_heads=4, n_layers=1), 0)
    with_it = build_stack(model, build_encoding(name, context), weights)(x).hidden[-1]
    without = build_stack(model, build_encoding("none", context), weights)(x).hidden[-1]
    assert torch.equal(with_it, without) == (name == "none")


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_has_a_default_and_a_description(name):
    for field, info in ENCODINGS.get(name).Params.model_fields.items():
        assert not info.is_required(), field
        assert info.description, field


@pytest.mark.parametrize("name", NAMES)
def test_every_encoding_is_one_small_file_citing_its_paper(name):
    module = inspect.getmodule(ENCODINGS.get(name))
    source = inspect.getsource(module)
    assert len(source.splitlines()) <= 80
    if name != "none":
        assert re.search(r"(19|20)\d\d", module.__doc__.splitlines()[0]), "docstring cites a paper and year"


def test_unknown_encoding_gets_a_did_you_mean():
    with pytest.raises(OrderlabError, match="Did you mean: rope"):
        ENCODINGS.resolve("rpoe")


def test_a_seeded_table_is_drawn_once_per_instance_and_is_the_seeded_one():
    from orderlab.encodings.encoding import seeded_table

    encoding = build_encoding("learned", EncodingContext(d_model=8, n_heads=2, causal=False, seed=3))
    first = encoding.table(16, 8)
    assert encoding.table(16, 8) is first  # no second draw
    assert torch.equal(first, seeded_table(encoding.context, "learned", 16, 8))
    other = build_encoding("learned", EncodingContext(d_model=8, n_heads=2, causal=False, seed=3))
    assert torch.equal(other.table(16, 8), first) and other.table(16, 8) is not first  # per instance


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_encoding_parameters_refuse_non_finite_numbers(value):
    with pytest.raises(ValueError, match="alibi: max_bias"):
        ENCODINGS.get("alibi").parse_params({"max_bias": value})
