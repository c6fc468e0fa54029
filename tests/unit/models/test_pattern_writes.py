"""A user's function at `L.pattern` on a transformers model (models/hf/pattern_writes.py): on every family whose
attention goes through transformers' AttentionInterface, one returning its argument changes no bit, and one returning
other probabilities gives the attention output those probabilities times the values make through the module's own
output projection; BLOOM's and DeBERTa's patterns, formed in attention code of their own, are refused in one line.
Tiny seeded models (d_model 16, 2 heads, 2 layers), one sentence of four words."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from orderlab.families import FAMILIES
from orderlab.spec.extras import installed

pytestmark = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")

WORDS = ("the", "dog", "bites", "man")
POINTS = ["1.v", "1.attn_out", "1.output", "2.output"]
# Per family: attention's output projection below a block, the module `1.attn_out` is computed from
PROJECTIONS = {
    "bert": "attention.output.dense", "roberta": "attention.output.dense", "distilbert": "attention.out_lin",
    "gpt2": "attn.c_proj", "llama": "self_attn.o_proj", "qwen2": "self_attn.o_proj", "opt": "self_attn.out_proj",
    "gpt_neox": "attention.dense", "t5": "layer.0.SelfAttention.o",
}  # fmt: skip
WRITABLE = sorted(PROJECTIONS)
READ_ONLY = ["bloom", "deberta"]


def test_the_families_that_declare_their_attention_goes_through_the_interface_are_those_whose_code_does():
    """Family.attention_interface against transformers' own modeling file (read, not imported), the test transformers
    makes before it takes a named implementation (an Attention module calling ALL_ATTENTION_FUNCTIONS.get_interface)."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    assert sorted(WRITABLE + READ_ONLY) == sorted(FAMILIES.names())
    for family in FAMILIES.names():
        code = FAMILIES.get(family)
        kind = model_type_to_module_name(code.model_types[0])  # deberta-v2's folder is deberta_v2
        found = importlib.util.find_spec(f"transformers.models.{kind}.modeling_{kind}")
        assert found is not None and found.origin is not None, family
        source = Path(found.origin).read_text()
        assert f"class {code.model_class}(" in source, family  # the file of the family's class
        assert code.attention_interface == ("ALL_ATTENTION_FUNCTIONS.get_interface(" in source), family


@pytest.fixture(scope="module", params=WRITABLE)
def backend(request):
    """A family's seeded model, with grouped key-value heads where the family has them (one for two heads)."""
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    kv_heads = 1 if "n_kv_heads" in FAMILIES.get(request.param).seeded_fields else None
    return PretrainedBackend(Seeded(16, 2, 2, WORDS, 0, kv_heads), attention=True, family=request.param)


def passed(backend, hooks: dict) -> tuple:
    """One pass of the sentence (two rows) under `hooks`: what it returns, and its points."""
    from orderlab.models.pretrained import record_hooks

    ids = torch.tensor([backend.word_tokens(list(WORDS)).ids] * 2)
    backend.user_hooks = hooks
    try:
        with torch.no_grad():
            output = backend.forward(ids, attention=True, points=POINTS)
    finally:
        backend.user_hooks = {}
    return output, record_hooks(output)


def test_a_function_returning_the_pattern_it_was_given_changes_no_bit(backend):
    seen: list[tuple[int, ...]] = []

    def same(pattern: torch.Tensor) -> torch.Tensor:
        seen.append(tuple(pattern.shape))
        return pattern

    plain, _ = passed(backend, {})
    hooked, _ = passed(backend, {"1.pattern": same})
    tokens = len(WORDS) + (1 if backend.code.causal else 2)
    assert seen == [(2, 2, tokens, tokens)]  # called once a pass, on the pass's (B, heads, T, T)
    for mine, theirs in zip([*hooked.hidden, *hooked.attention], [*plain.hidden, *plain.attention], strict=True):
        assert torch.equal(mine, theirs)
    assert (hooked.logits is None) == (plain.logits is None)
    assert hooked.logits is None or torch.equal(hooked.logits, plain.logits)
    assert backend.model.config._attn_implementation == "eager"  # the model's own, restored


def test_a_written_pattern_gives_the_attention_output_its_probabilities_times_the_values_make(backend):
    """Uniform weights over the keys each query may see (all, or those up to it in a causal model): layer 1's
    attention output is their mean value through the output projection, and what follows computes from it."""

    def uniform(pattern: torch.Tensor) -> torch.Tensor:
        allowed = (pattern > 0).to(pattern.dtype)
        return allowed / allowed.sum(dim=-1, keepdim=True)

    _, plain = passed(backend, {})
    output, written = passed(backend, {"1.pattern": uniform})
    pattern = output.attention[0]
    assert torch.equal(pattern, uniform(plain["1.pattern"]))  # what the pass returns at layer 1: the written
    values = written["1.v"]  # (B, key-value heads, T, d_head), formed before the pattern
    values = values.repeat_interleave(pattern.shape[1] // values.shape[1], dim=1)
    heads = (pattern @ values).transpose(1, 2).flatten(2)  # (B, T, heads x d_head)
    projection = backend.model.get_submodule(f"{blocks_path(backend)}.0.{PROJECTIONS[backend.code.name]}")
    with torch.no_grad():
        expected = projection(heads)
    torch.testing.assert_close(written["1.attn_out"], expected, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(written["1.attn_out"], plain["1.attn_out"], atol=1e-3)
    assert not torch.allclose(written["2.output"], plain["2.output"], atol=1e-3)
    torch.testing.assert_close(output.attention[1].sum(-1), torch.ones_like(output.attention[1].sum(-1)))


def blocks_path(backend) -> str:
    from orderlab.models.hf.sites import blocks_path

    return blocks_path(backend.model)


@pytest.mark.parametrize("family", READ_ONLY)
def test_a_family_whose_attention_is_its_own_code_refuses_its_pattern_in_one_line(family: str):
    from orderlab.errors import OrderlabError
    from orderlab.models.hf.interventions import checked_hooks
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    seeded = PretrainedBackend(Seeded(16, 2, 1, WORDS, 0), family=family)
    with pytest.raises(OrderlabError) as refused:
        checked_hooks(seeded.model, seeded.code, {"1.pattern": torch.clone})
    assert str(refused.value).startswith(
        "hooks: '1.pattern' is formed inside attention code of the family's own (not transformers' "
        f"AttentionInterface): read only on {family}; expected one of input, q, k, v, "
    )
    assert "pattern" not in str(refused.value).partition("expected")[2] and "\n" not in str(refused.value)
