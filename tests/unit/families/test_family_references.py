"""Each family's adapter hooks against transformers' own: a pass under each ablation gives the hidden states and
attention probabilities (output_attentions) that transformers gives for the same model with the ablation made by
hand, the position table's weights replaced in a copy of the model, or the position ids passed to it."""

from __future__ import annotations

import copy

import pytest
import torch

from orderlab.families import FAMILIES
from orderlab.families.family import MAX_POSITIONS
from orderlab.families.hooks import submodule
from orderlab.families.position_tables import position_table
from orderlab.models.hf.loader import PretrainedBackend, Seeded
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]
WORDS = ("the", "dog", "bites", "a", "man")
SEED = 5
TABLES = {  # family -> its learned absolute table, by the end of its module name
    "bert": "embeddings.position_embeddings",
    "roberta": "embeddings.position_embeddings",
    "distilbert": "embeddings.position_embeddings",
    "gpt2": "wpe",
    "opt": "embed_positions",
}
ROTARY = ("llama", "qwen2", "gpt_neox")
CASES = [(family, ablation) for family in (*TABLES, *ROTARY) for ablation in FAMILIES.get(family).ablations]


def by_hand(model: torch.nn.Module, ids: torch.Tensor, family: str, ablation: str):
    """transformers' own pass with the ablation done to its inputs or to a copy of its weights."""
    options = {"input_ids": ids, "output_hidden_states": True, "output_attentions": True}
    if family in TABLES:
        model = copy.deepcopy(model)
        table = submodule(model, TABLES[family])
        with torch.no_grad():
            table.weight.copy_(position_table(ablation, table.weight, SEED))
        return model(**options)
    positions = torch.arange(ids.shape[1])[None]
    if ablation == "zero":
        positions = torch.zeros_like(positions)
    elif ablation == "shuffled":
        positions = torch.randperm(MAX_POSITIONS, generator=torch.Generator().manual_seed(SEED))[positions]
    return model(**options, position_ids=positions)


@pytest.mark.parametrize(("family", "ablation"), CASES)
def test_a_pass_under_an_ablation_is_transformers_pass_with_the_ablation_made_by_hand(family, ablation):
    backend = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=1), "float64", attention=True, family=family)
    ids = torch.tensor([backend.word_tokens(list(WORDS)).ids, backend.word_tokens(list(reversed(WORDS))).ids])
    backend.set_positions(ablation, SEED)
    with torch.inference_mode():
        ours = backend.forward(ids, attention=True)
        theirs = by_hand(backend.model, ids, family, ablation)
    assert len(ours.hidden) == len(theirs.hidden_states) == 3 and len(ours.attention) == 2
    for mine, reference in zip(
        [*ours.hidden, *ours.attention], [*theirs.hidden_states, *theirs.attentions], strict=True
    ):
        torch.testing.assert_close(mine, reference, rtol=1e-10, atol=1e-12)
    if backend.code.causal:
        torch.testing.assert_close(ours.logits, theirs.logits, rtol=1e-10, atol=1e-12)


def test_every_family_has_a_check_by_hand():
    assert {*TABLES, *ROTARY} | {"bloom", "t5", "deberta"} == set(FAMILIES.names())  # those three: test_zoo.py


@pytest.mark.parametrize("family", sorted(FAMILIES.names()))
def test_a_checkpoint_folder_of_each_family_loads_as_the_model_it_was_saved_from(tmp_path, family):
    seeded = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=3), "float64", family=family)
    seeded.model.save_pretrained(tmp_path)
    seeded.tokenizer.save_pretrained(tmp_path)
    loaded = PretrainedBackend(tmp_path, "float64", family=family)
    assert loaded.fit is not None and loaded.fit.random == [] and loaded.fit.missing_unused == []
    ids = torch.tensor([seeded.word_tokens(list(WORDS)).ids])
    with torch.inference_mode():
        torch.testing.assert_close(loaded.forward(ids).hidden[-1], seeded.forward(ids).hidden[-1])


@pytest.mark.parametrize(
    ("family", "heads", "expected"),
    [
        ("gpt_neox", 4, "16 does not split into n_heads=4 heads for gpt_neox; expected a multiple of 32 (RoPE rotates "
         "pairs of a quarter of each head)"),
        ("qwen2", 16, "expected a multiple of 32 (RoPE rotates pairs)"),
        ("opt", 3, "16 does not split into n_heads=3 heads for opt; expected a multiple"),
    ],
)  # fmt: skip
def test_a_seeded_shape_is_held_to_its_familys_head_width(tmp_path, family, heads, expected):
    from typer.testing import CliRunner

    from orderlab.cli import app

    spec = tmp_path / "s.yaml"
    spec.write_text(f"model: {{kind: hf, family: {family}, d_model: 16, n_heads: {heads}}}\n"
                    "inputs: [{sentence: dog bites man}]\n")  # fmt: skip
    result = CliRunner().invoke(app, ["validate", str(spec)], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and expected in " ".join(result.output.split()), result.output
