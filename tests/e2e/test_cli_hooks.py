"""`orderlab hooks FAMILY`: a family's hook points (or the stack's) with their shapes and their TransformerLens and
nnsight names; a name that is neither is one line, exit 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.spec.extras import installed


def hooks(family: str):
    return CliRunner().invoke(app, ["hooks", family], env={"COLUMNS": "220"})


def test_the_stack_s_points_with_their_shapes_and_transformer_lens_names():
    result = hooks("stack")
    assert result.exit_code == 0, result.output
    assert "1.mid" in result.output and "blocks.0.hook_resid_mid" in result.output  # TransformerLens counts from 0
    assert "(1, 4, 3, 8)" in result.output  # q: batch, heads, words, head width of the seeded stack


@pytest.mark.slow
@pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")
def test_a_family_s_points_name_the_modules_nnsight_reaches():
    import orderlab.api as ol

    result = hooks("bloom")
    assert result.exit_code == 0, result.output
    pattern = next(line for line in result.output.splitlines() if "1.pattern" in line)
    assert "read only" in pattern  # BLOOM's attention is its own code (models/hf/pattern_writes.py)
    assert "model.transformer.h[0].post_attention_layernorm.input" in result.output
    frame = ol.hooks("gpt_neox").set_index("name")
    assert "1.mid" not in frame.index  # a parallel-residual block has no stream between attention and MLP
    assert frame.loc["logits", "transformer_lens"] == "unembed.hook_out"
    assert frame.loc["1.pattern", "writable"] and frame["writable"].all()


def test_a_name_that_is_no_family_is_one_line():
    result = CliRunner().invoke(app, ["hooks", "gtp2"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "Did you mean: gpt2?" in result.output
