"""The experiment spec: the pydantic models of the YAML file (spec/load.py's `load_spec` is the one loader).

Every problem in a spec surfaces as one SpecError `file:line: field.path: what, expected what`.
Structure is checked here by pydantic; relations between fields (d_model vs n_heads, vectors vs words,
permutations vs sentence length, encoding constraints) by spec/relations.py. Must not import
torch or pandas: `orderlab validate` has to answer fast.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from orderlab.core import bounds
from orderlab.core.displacement import parse_problem
from orderlab.core.pair_relations import RELATIONS, REORDERING
from orderlab.core.registry import did_you_mean
from orderlab.core.strict_model import StrictModel
from orderlab.core.text import tokenize
from orderlab.core.userfiles import NAME_LIMIT, SafeName, folder_name_problem
from orderlab.encodings import ENCODINGS, EncodingContext
from orderlab.metrics import METRIC_FAMILIES, default_families, family_names
from orderlab.spec.fields import (
    DTYPE_HELP,
    MATMUL_PRECISION_HELP,
    RESOLUTION,
    ComputeType,
    FfnMultiple,
    LayerCount,
    MatmulPrecision,
    Norm,
    Scale,
    Seed,
    Sweepable,
    Width,
)
from orderlab.spec.model_specs import CorpusInputs, HFModelSpec, PretrainedModelSpec, UserHooked
from orderlab.spec.patching_block import PatchingSpec
from orderlab.spec.train_block import TrainSpec
from orderlab.spec.yamlsource import read_yaml


def registered_family(entry: str) -> str:
    """A `metrics:` entry, checked against the registry's families when the spec is read (a family registered after
    import counts); refused with pydantic's own literal message, which spec/messages.py turns into one line."""
    if entry not in METRIC_FAMILIES:
        names = [repr(name) for name in family_names()]
        expected = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return entry


Metric = Annotated[str, AfterValidator(registered_family)]  # a `metrics:` entry
Matrix = list[list[float]]


class ExplicitWeights(StrictModel):
    """Projection matrices typed in by hand (row-vector convention: q = x @ W_Q), used in every layer."""

    W_Q: Matrix = Field(description="d_model x d_model query projection; q = x @ W_Q.")
    W_K: Matrix = Field(description="d_model x d_model key projection; k = x @ W_K.")
    W_V: Matrix = Field(description="d_model x d_model value projection; v = x @ W_V.")
    W_O: Matrix | None = Field(None, description="d_model x d_model output projection; identity if omitted.")


class ModelSpec(UserHooked):
    """The attention stack: every knob that changes what it can know about order.

    Every field but `dtype` and `weights` may also be a list: the run sweeps over the product of all lists
    (see orderlab/spec/sweep.py), and each output row names its combination.
    """

    kind: Literal["stack"] = Field("stack", description="stack: the synthetic attention stack (the default).")
    d_model: Sweepable[Width] = Field(64, description="Width of token vectors and hidden states.")
    n_heads: Sweepable[Width] = Field(4, description="Attention heads per layer; must divide d_model.")
    n_layers: Sweepable[LayerCount] = Field(2, description="Number of attention layers (blocks).")
    residual: Sweepable[bool] = Field(
        True, description="Add each sub-layer's input to its output (the residual stream)."
    )
    norm: Sweepable[Norm] = Field(
        "pre", description="LayerNorm before each sub-layer (pre), after the residual sum (post), or none."
    )
    ffn: Sweepable[bool] = Field(True, description="Follow attention with a position-wise feed-forward network (GELU).")
    ffn_mult: Sweepable[FfnMultiple] = Field(4, description="FFN hidden width as a multiple of d_model.")
    causal: Sweepable[bool] = Field(False, description="Mask attention so a token sees only itself and earlier slots.")
    scale: Sweepable[Scale] = Field(
        "sqrt", description="Scale attention scores by 1/sqrt(d_head) (sqrt) or leave them raw (none)."
    )
    dtype: ComputeType = Field("float64", description=DTYPE_HELP)
    matmul_precision: MatmulPrecision = Field("highest", description=MATMUL_PRECISION_HELP)
    weights: ExplicitWeights | None = Field(
        None, description="Explicit W_Q, W_K, W_V (and W_O) for every layer; seeded random weights if omitted."
    )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


class CheckpointModelSpec(ModelSpec):
    """A stack orderlab trained (results/<name>/checkpoints/*.safetensors): its shape, encoding and seed come from
    the file, filled in when the spec is loaded (load.py), so the rest of the spec is as for any stack."""

    kind: Literal["checkpoint"] = Field(description="checkpoint: a trained stack from a .safetensors file.")  # type: ignore[assignment]
    path: str = Field(description="The checkpoint file, relative to the spec file.")


class RandomEmbeddings(StrictModel):
    """Each distinct word gets a seeded random vector that depends only on word, seed and d_model."""

    kind: Literal["random"] = Field("random", description="Seeded random vector per distinct word.")
    lowercase: bool = Field(False, description="Lowercase words before looking up their vectors.")


class ExplicitEmbeddings(StrictModel):
    """Vectors typed in by hand, e.g. to reproduce a textbook's worked example."""

    kind: Literal["explicit"] = Field(description="Use the vectors given here.")
    lowercase: bool = Field(False, description="Lowercase words before looking up their vectors.")
    vectors: dict[str, list[float]] = Field(description="word -> vector of length d_model, for every word used.")


Embeddings = Annotated[RandomEmbeddings | ExplicitEmbeddings, Field(discriminator="kind")]


Distinct = Literal["exactly", "up_to"]
DISTINCT_DOC = (
    "exactly: K distinct other sentences, refused where fewer exist; up_to: as many as exist, at most K (one rule "
    "for sentences of mixed lengths)."
)


class RandomPermutations(StrictModel):
    random: int = Field(
        ge=1,
        le=bounds.MAX_RANDOM_PERMUTATIONS,
        description="How many distinct non-identity permutations to draw (seeded).",
    )
    distinct: Distinct = Field("exactly", description=DISTINCT_DOC)


class _Drawn(StrictModel):
    """distinct applies to draws: a family listed whole has nothing for it to change."""

    @model_validator(mode="after")
    def _distinct_needs_draws(self) -> _Drawn:
        if getattr(self, "distinct", None) == "up_to" and getattr(self, "random", None) is None:
            raise ValueError("distinct: up_to applies to draws; expected random: K beside it")
        return self


class LocalShuffles(_Drawn):
    """Shuffles within consecutive windows of K words (Clouatre et al. 2022): a word moves at most K - 1 slots."""

    local: int = Field(ge=2, le=bounds.MAX_PROBE_LENGTH, description="Words per window; the last holds the rest.")
    random: int | None = Field(
        None, ge=1, le=bounds.MAX_RANDOM_PERMUTATIONS, description="Draw this many (seeded); omitted: every one."
    )
    distinct: Distinct = Field("exactly", description=DISTINCT_DOC)


class NgramShuffles(_Drawn):
    """Shuffles of consecutive N-word units, each kept whole (Sinha et al. 2021, Pham et al. 2021)."""

    ngram: int = Field(ge=1, le=bounds.MAX_PROBE_LENGTH, description="Words per unit; the last holds the rest.")
    random: int | None = Field(
        None, ge=1, le=bounds.MAX_RANDOM_PERMUTATIONS, description="Draw this many (seeded); omitted: every one."
    )
    distinct: Distinct = Field("exactly", description=DISTINCT_DOC)


def _family_tag(value: Any) -> str | None:
    """Which family a mapping (or a validated rule) names: local, ngram, else random."""
    keys = set(value) if isinstance(value, dict) else {k for k in ("local", "ngram") if hasattr(value, k)}
    return "local" if "local" in keys else "ngram" if "ngram" in keys else "random"


ShuffleFamily = Annotated[
    Annotated[RandomPermutations, Tag("random")]
    | Annotated[LocalShuffles, Tag("local")]
    | Annotated[NgramShuffles, Tag("ngram")],
    Discriminator(_family_tag),
]
PermutationRule = Literal["identity", "reverse", "all", "swaps", "shifts", "prefixes"] | ShuffleFamily | list[list[int]]
FAMILY_KEYS = {"random", "local", "ngram", "distinct"}
FAMILY_SHAPES = "{random: K}, {local: K} or {ngram: N} (each with random: K draws and distinct: up_to if wanted)"


class InputSpec(StrictModel):
    """A sentence and the reorderings of it to measure."""

    sentence: str = Field(description="Words separated by white space, e.g. 'dog bites man'.")
    permutations: PermutationRule = Field(
        "all",
        description=(
            "identity | reverse | all | swaps (adjacent) | shifts (cyclic) | prefixes (all orders of the words "
            "before the last, which stays put) | {random: K} | {local: K} (shuffles within windows of K words) | "
            "{ngram: N} (shuffles of N-word units), either with random: K draws | distinct: up_to on any draws | "
            "explicit list like "
            "[[2, 1, 0]], where slot i of the new sentence holds the word from slot p[i]."
        ),
    )
    parse: list[int] | None = Field(
        None,
        max_length=bounds.MAX_PROBE_LENGTH,
        description=(
            "The sentence's dependency parse as each word's head, CoNLL-style (1-based, 0 for the root), e.g. "
            "[2, 0, 2] for 'dog bites man': orders.csv then gives each order's dependency_displacement."
        ),
    )

    @field_validator("parse")
    @classmethod
    def _parse_is_a_tree(cls, parse: list[int] | None, info: ValidationInfo) -> list[int] | None:
        sentence = info.data.get("sentence")
        problem = None if parse is None or sentence is None else parse_problem(parse, len(tokenize(sentence)))
        if problem:
            raise ValueError(problem)
        return parse

    @field_validator("permutations", mode="before")
    @classmethod
    def _permutations_shape(cls, value: Any) -> Any:
        named = ("identity", "reverse", "all", "swaps", "shifts", "prefixes")
        if value == "random":
            raise ValueError("'random' needs a count of orderings to draw; expected {random: K}, e.g. {random: 100}")
        if isinstance(value, str) and value not in named:
            raise ValueError(f"unknown permutation rule {value!r}. {did_you_mean(value, [*named, 'random'])}")
        if isinstance(value, dict) and (
            not set(value) <= FAMILY_KEYS
            or {"local", "ngram"} <= set(value)
            or not set(value) & {"random", "local", "ngram"}
        ):
            raise ValueError(f"expected {FAMILY_SHAPES}")
        if isinstance(value, list) and not all(isinstance(p, list) for p in value):
            raise ValueError("expected a list of permutations, each a list of slots like [2, 1, 0]")
        if not isinstance(value, str | dict | list):
            raise ValueError(f"expected identity, reverse, all, swaps, shifts, {FAMILY_SHAPES} or [[2, 1, 0], ...]")
        return value


class LabelledExample(StrictModel):
    """One labelled example typed into the spec: a sentence (and its pair's second sentence), its gold label and its
    group."""

    text: str = Field(description="The sentence (a premise, for a pair).")
    pair: str | None = Field(None, description="The pair's second sentence (a hypothesis), if any.")
    label: str | int | None = Field(None, description="The gold label: a name of the model's id2label, or its id.")
    group: str | None = Field(None, description="A group the summary reports apart (a phenomenon, a genre).")


PermutedSide = Literal["text", "pair", "both"]


class DatasetInputs(StrictModel):
    """Labelled examples (a file, or typed in) whose words a sequence-classification model sees shuffled."""

    dataset: str | None = Field(
        None,
        description="A JSONL, CSV or Parquet file of labelled examples (relative to the spec file), one example a "
        "row; its kind from its extension, checked against its contents.",
    )
    hf_dataset: str | None = Field(
        None,
        description="A dataset in the local Hugging Face datasets cache, by name (needs the `datasets` library; "
        "nothing is downloaded).",
    )
    split: str = Field("validation", description="hf_dataset only: which split.")
    examples: list[LabelledExample] | None = Field(
        None, min_length=1, max_length=bounds.MAX_EXAMPLES, description="Examples typed in, in place of a file."
    )
    text: str = Field("text", description="The file's column of sentences (premises, for pairs).")
    pair: str | None = Field(None, description="The file's column of second sentences (hypotheses); none: single.")
    label: str | None = Field("label", description="The file's column of gold labels (names or ids); none: unlabelled.")
    group: str | None = Field(None, description="The file's column of groups the summary reports apart.")
    permute: PermutedSide = Field(
        "text", description="Which side of a pair is shuffled: text, pair or both (each side its own order)."
    )
    permutations: ShuffleFamily | Literal["reverse", "shifts", "swaps"] = Field(
        default_factory=lambda: RandomPermutations(random=10, distinct="up_to"),
        description="The orders of each example's words: {random: K, distinct: up_to} (the default, K = 10), "
        "{local: K}, {ngram: N}, reverse, shifts or swaps.",
    )
    seed: Seed = Field(0, description="Seed of the drawn orders.")
    batch_size: int = Field(64, ge=1, le=bounds.MAX_BATCH_SIZE, description="Sequences per forward pass.")
    resamples: int = Field(
        1000, ge=0, le=bounds.MAX_RESAMPLES, description="Bootstrap resamples of the examples behind each interval."
    )

    @model_validator(mode="after")
    def _one_source(self) -> DatasetInputs:
        if sum(source is not None for source in (self.dataset, self.hf_dataset, self.examples)) != 1:
            raise ValueError("expected one of dataset: FILE, hf_dataset: NAME or examples: [...]")
        if self.permute != "text" and self.pair is None and self.examples is None:
            raise ValueError(f"permute: {self.permute} shuffles the pair's second sentence; expected pair: COLUMN")
        return self


class ProbePair(StrictModel):
    """Two sentences whose sentence vectors are compared, and what the second is to the first."""

    pair: tuple[str, str] = Field(description="The sentences [a, b].")
    relation: str = Field(
        REORDERING,
        description=(
            "What b is to a: " + "; ".join(f"{name}: {RELATIONS.get(name).doc}" for name in RELATIONS.names()) + "."
        ),
        json_schema_extra={"enum": list[JsonValue](RELATIONS.names())},
    )
    phenomenon: SafeName | None = Field(
        None, description="The pair's phenomenon (BLiMP's linguistics_term): summary.csv's accuracy per phenomenon."
    )
    uid: SafeName | None = Field(None, description="The pair's paradigm (BLiMP's UID): accuracy per UID.")
    field: SafeName | None = Field(None, description="The pair's field of linguistics (BLiMP's field), as read.")

    @field_validator("relation")
    @classmethod
    def _relation_known(cls, value: str) -> str:
        if value not in RELATIONS:
            raise ValueError(f"unknown relation {value!r}. {did_you_mean(value, RELATIONS.names())}")
        return value

    @property
    def reorders(self) -> bool:
        """Whether b reorders a's words, so that the pair's distances get order verdicts."""
        return RELATIONS.get(self.relation).reorders


# The error type of a name no registry knows: its message names the name given (messages.py adds no "got").
UNKNOWN_NAME = "unknown_name"


class EncodingChoice(StrictModel):
    """A positional encoding by registry name (or `package.module:Class`) and its parameters."""

    name: str = Field(description="Registry name (see `orderlab encodings`) or 'package.module:Class'.")
    params: dict[str, Any] = Field(default_factory=dict, description="Parameters of the encoding.")

    @field_validator("name")
    @classmethod
    def _known_name(cls, name: str) -> str:
        """A built-in's name is checked here, with the spec's other fields; a plug-in's class when the run loads it."""
        if ":" not in name and name not in ENCODINGS:
            message = f"Unknown encoding {name!r}. {did_you_mean(name, ENCODINGS.names())}"
            raise PydanticCustomError(UNKNOWN_NAME, "{message}", {"message": message})
        return name

    @field_validator("params")
    @classmethod
    def _finite_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        for key, value in params.items():
            if not all(math.isfinite(number) for number in _numbers(value)):
                raise ValueError(f"{key}: {value!r} is not finite; expected finite numbers")
        return params

    @property
    def label(self) -> str:
        if not self.params:
            return self.name
        return self.name + "(" + ",".join(f"{k}={v}" for k, v in sorted(self.params.items())) + ")"


class AttentionMapsSpec(StrictModel):
    """Which reorderings attention.csv (and the attention grids) show, beside the input as written."""

    input: int = Field(0, ge=0, description="Index in inputs of the sentence whose maps are kept.")
    permutations: list[list[int]] | None = Field(
        None,
        min_length=1,
        max_length=bounds.MAX_SHOWN_REORDERINGS,
        description=(
            "Reorderings of that sentence to show, each a permutation of its word slots (slot i takes word p[i]); "
            "default: the first one its rule gives that moves a word."
        ),
    )


class DecodabilitySpec(StrictModel):
    """Position probe: a linear classifier predicts each token's slot from its hidden state, per layer."""

    sentences: int = Field(
        512, ge=8, le=bounds.MAX_PROBE_SENTENCES, description="Random sentences the probe is trained and scored on."
    )
    length: int = Field(
        8, ge=2, le=bounds.MAX_PROBE_LENGTH, description="Words per random sentence; chance accuracy is 1/length."
    )
    vocabulary: int = Field(
        64, ge=2, le=bounds.MAX_PROBE_VOCABULARY, description="Distinct random words the sentences are drawn from."
    )
    held_out: float = Field(0.25, gt=0, lt=1, description="Fraction of sentences kept out of training for scoring.")
    from_task: bool = Field(
        False, description="Probe the train: task's own sentences (its words, its arrangement) instead of random ones."
    )

    @property
    def training_sentences(self) -> int:
        """How many of the sentences the probe is fit on; the rest are scored."""
        return round(self.sentences * (1 - self.held_out))

    @model_validator(mode="after")
    def _both_sides(self) -> DecodabilitySpec:
        if not 0 < self.training_sentences < self.sentences:
            raise ValueError(
                f"held_out {self.held_out} of {self.sentences} sentences leaves {self.training_sentences} to fit "
                f"and {self.sentences - self.training_sentences} to score; expected at least one on each side"
            )
        return self


class CheckTolerances(StrictModel):
    """How far `orderlab check` lets a value move from its baseline before calling it drift."""

    rtol: float | None = Field(
        None, ge=0, description="Relative tolerance; default max(1000 * eps of the dtype, 2e-6, the CSV's precision)."
    )
    atol: float | None = Field(
        None, ge=0, description="Absolute tolerance for values near zero; default 1000 * eps of the dtype."
    )


MODEL_KINDS = ("stack", "pretrained", "hf", "checkpoint")


def _numbers(value: Any) -> list[float]:
    """Every float in a parameter value, however nested in lists and mappings (YAML's .nan and .inf are floats)."""
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [n for item in value for n in _numbers(item)] if isinstance(value, list) else []


def _model_kind(value: Any) -> str:
    return value.get("kind", "stack") if isinstance(value, dict) else getattr(value, "kind", "stack")


DATASET_SOURCES = {"dataset", "hf_dataset", "examples"}  # the keys that make inputs a classifier's labelled examples


def _inputs_kind(value: Any) -> str:
    if isinstance(value, DatasetInputs) or (isinstance(value, dict) and DATASET_SOURCES & set(value)):
        return "dataset"
    return "corpus" if isinstance(value, dict | CorpusInputs) else "sentences"


def spec_kinds(path: Path) -> tuple[str, str]:
    """A spec file's model kind (stack, pretrained, hf, checkpoint) and inputs kind (sentences, corpus), read from
    its raw YAML: no model or extra needed."""
    data = read_yaml(path).data
    data = data if isinstance(data, dict) else {}
    return str(_model_kind(data.get("model"))), _inputs_kind(data.get("inputs"))


# `kind` may be left out: a model without one is the attention stack, as before pretrained backends.
ModelChoice = Annotated[
    Annotated[ModelSpec, Tag("stack")]
    | Annotated[PretrainedModelSpec, Tag("pretrained")]
    | Annotated[HFModelSpec, Tag("hf")]
    | Annotated[CheckpointModelSpec, Tag("checkpoint")],
    Discriminator(_model_kind),
]
# A list of sentences, or {file: corpus.txt, shuffles: K} for corpus mode.
Inputs = Annotated[
    Annotated[list[InputSpec], Tag("sentences")]
    | Annotated[CorpusInputs, Tag("corpus")]
    | Annotated[DatasetInputs, Tag("dataset")],
    Discriminator(_inputs_kind),
]


class Spec(StrictModel):
    """One experiment: sentences and probes, run through one stack per positional encoding."""

    name: str = Field(
        "",
        description="Results folder name; the file's stem if empty.",
        json_schema_extra={"pattern": rf"^([A-Za-z0-9_-][A-Za-z0-9_.-]{{0,{NAME_LIMIT - 1}}})?$"},
    )
    description: str = Field("", description="What the experiment asks, in a sentence.")
    seed: Sweepable[Seed] = Field(
        0,
        description=(
            "Seed of word vectors, weights, encodings and random permutations (and of training, unless train.seed "
            "is set); a list sweeps over seeds, and summaries give the mean and a Student's t 95% interval over them."
        ),
    )
    model: ModelChoice = Field(
        default_factory=ModelSpec, description="The attention stack, or a pretrained model (kind: pretrained | hf)."
    )
    embeddings: Embeddings = Field(default_factory=RandomEmbeddings, description="How words become vectors.")
    encodings: list[EncodingChoice] = Field(
        default_factory=lambda: [EncodingChoice(name=n) for n in ("none", "sinusoidal", "rope")],
        min_length=1,
        description="Positional encodings to compare; each as a name or {name: ..., <param>: ...}.",
    )
    inputs: Inputs = Field(
        default_factory=list,
        description="Sentences and their permutations, or {file: corpus.txt, shuffles: K, seed: S} (pretrained only), "
        "or {dataset: FILE, text: COLUMN, pair: COLUMN, label: COLUMN, group: COLUMN} (a classifier's predictions).",
    )
    probes: list[ProbePair] = Field(
        default_factory=list,
        description=(
            "Sentence pairs whose pooled representations are compared: [a, b], b a reordering of a's words, or "
            "{pair: [a, b], relation: different_words} for b of other words (no order verdict), or {file: PATH}: "
            "a BLiMP-format JSONL file of minimal pairs, relative to the spec file (spec/probe_file.py)."
        ),
    )
    metrics: list[Metric] = Field(default_factory=default_families, description="Which metrics to compute.")
    token_logprobs: bool = Field(
        False,
        description="With lm_logprob (a causal LM): also write token_logprobs.csv, each token's log-probability given "
        "the ones before it, of every input sentence as written and every probe sentence, under each condition.",
    )
    rows: Literal["per_permutation", "summary"] = Field(
        "per_permutation",
        description=(
            "metrics.csv holds one row per permutation x layer x head x metric (per_permutation), or per "
            "layer x head x metric the max over permutations (with the permutation that attains it) and the "
            "mean, reduced while the sweep streams (summary; needed past 8! = 40,320 permutations)."
        ),
    )
    resolution: float = Field(
        RESOLUTION,
        gt=0,
        le=1,
        description=(
            "The smallest relative effect the verdicts promise to tell from round-off: a value within a round-off line "
            "wider than this reads `unresolved` (kept as measured), never invariant or equivariant."
        ),
    )
    escalate: bool = Field(
        True,
        description=(
            "Re-measure in the twin's finer precision (16-bit: float32; float32: float64) each input and condition "
            "whose round-off lines are wider than `resolution`, so that its verdicts are the finer precision's."
        ),
    )
    decodability: DecodabilitySpec = Field(
        default_factory=lambda: DecodabilitySpec(), description="The position probe (metric `decodability`)."
    )
    attention_maps: AttentionMapsSpec = Field(
        default_factory=lambda: AttentionMapsSpec(),
        description="What attention.csv shows when the `attention` metric is on: one input, as written and reordered.",
    )
    train: TrainSpec | None = Field(
        None, description="Train one stack per encoding on a synthetic task, then measure it beside the untrained one."
    )
    check: CheckTolerances = Field(
        default_factory=CheckTolerances,
        description="Tolerances of `orderlab check` against the baseline; --rtol/--atol override them.",
    )
    patching: PatchingSpec | None = Field(
        None,
        description="Activation patching between orders (orderlab.api.patch): which points, layers and slots of one "
        "order's run are copied into another's, and the share of the output's difference that moves with them.",
    )

    @field_validator("name")
    @classmethod
    def _name_is_one_folder(cls, value: str) -> str:
        problem = folder_name_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("probes", mode="before")
    @classmethod
    def _probe_entries(cls, value: Any) -> Any:
        """[a, b] is {pair: [a, b]} (a reordering); a mapping is read as written."""
        if not isinstance(value, list):
            return value
        return [{"pair": entry} if isinstance(entry, list | tuple) else entry for entry in value]

    @field_validator("model", mode="before")
    @classmethod
    def _model_kind_known(cls, value: Any) -> Any:
        kind = _model_kind(value)
        if kind not in MODEL_KINDS:
            raise ValueError(f"unknown model kind {kind!r}. {did_you_mean(str(kind), list(MODEL_KINDS))}")
        return value

    @field_validator("encodings", mode="before")
    @classmethod
    def _encoding_entries(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        entries = []
        for entry in value:
            if isinstance(entry, dict) and "params" not in entry and "name" in entry:
                entry = {"name": entry["name"], "params": {k: v for k, v in entry.items() if k != "name"}}
            entries.append({"name": entry} if isinstance(entry, str) else entry)
        return entries

    @property
    def stack(self) -> ModelSpec:
        """The attention stack, for code that runs it: a spec with a pretrained model has none (uses_backend)."""
        assert isinstance(self.model, ModelSpec), "a pretrained-model spec has no attention stack"
        return self.model

    @property
    def pretrained(self) -> PretrainedModelSpec | HFModelSpec:
        """The pretrained model, for the backends: a spec that runs the attention stack has none."""
        assert isinstance(self.model, PretrainedModelSpec | HFModelSpec), (
            "an attention-stack spec has no pretrained model"
        )
        return self.model

    @property
    def sentences(self) -> list[InputSpec]:
        """The inputs as sentences with their permutation rules: corpus inputs (a file) have none."""
        assert isinstance(self.inputs, list), "corpus inputs are a file, not a list of sentences"
        return self.inputs


def encoding_context(spec: Spec, max_len: int) -> EncodingContext:
    m = spec.stack
    return EncodingContext(
        d_model=m.d_model, n_heads=m.n_heads, causal=m.causal, seed=spec.seed, dtype=m.dtype, max_len=max_len
    )


def written_sentences(spec: Spec) -> list[str]:
    """Every input and probe sentence as the spec writes it, once each, sorted."""
    return sorted({i.sentence for i in spec.sentences} | {s for probe in spec.probes for s in probe.pair})


def input_parses(spec: Spec) -> dict[str, list[int]]:
    """Each input sentence's dependency parse (CoNLL heads) where the spec supplies one: orders.csv's dependency
    displacement; none for a corpus."""
    inputs = spec.inputs if isinstance(spec.inputs, list) else []
    return {entry.sentence: entry.parse for entry in inputs if entry.parse is not None}


def longest_sentence(spec: Spec) -> int:
    trained = spec.train.longest if spec.train else 0  # a trained stack also runs its task's sentences
    return max([trained, *(len(tokenize(s)) for s in written_sentences(spec))])


def uses_backend(spec: Spec) -> bool:
    """True when the spec runs a pretrained model or reads a corpus file or labelled examples (orderlab/backends)."""
    pretrained = isinstance(spec.model, PretrainedModelSpec | HFModelSpec)
    return pretrained or isinstance(spec.inputs, CorpusInputs | DatasetInputs)


def relative_to_spec(spec_file: str | Path, path: str) -> Path:
    """A path written in a spec (a model folder, a corpus file) is relative to the spec file."""
    return Path(spec_file).parent / path
