"""What a model family is, as data: everything the spec, the plan, `orderlab models` and the loader read of it.

One `Family` per file of orderlab/families (bert.py, gpt2.py, ...): its config.json's keys (a `FamilyConfig`
subclass), the model_type and architecture names of its checkpoints, its position ablations in words, its hook
points, its seeded config (plain numbers: the estimate sizes a seeded model by reading that config as it reads a
checkpoint's), and its adapter hooks (`ablate`, a context manager around one pass). Torch-free at import: the spec
reads these objects to validate a spec, and a family imports torch and transformers only inside its hooks.

A checkpoint's config.json is read here, torch- and transformers-free (validate must answer fast), by each
family's own key names and defaults, as transformers' config class of that family reads them
(tests/unit/families/test_folder_config.py holds the two together).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, Strict

from orderlab.core import bounds
from orderlab.core.hook_points import LAYER_POINTS, LOGITS
from orderlab.core.userfiles import FileModel, FileProblem, read_json

# --- the ablation vocabulary, shared by every family ----------------------------------------------------------------

PositionAblation = Literal["trained", "zero", "shuffled", "sinusoidal"]
ABLATIONS: tuple[PositionAblation, ...] = ("trained", "zero", "shuffled", "sinusoidal")
UNABLATED = "trained"  # the ablation that leaves the model's positions as built or loaded
SEEDED = "seeded"  # its label for a zoo model with seeded random weights (no path)

# What a transformers model returns of a pass, per layer on its token slots: the layer's input (layer 1: the
# embeddings, absolute positions added), its attention probabilities (eager attention) and its output (the block's
# own, before any final norm). A family's HookSites add the rest of the vocabulary (core/hook_points.LAYER_POINTS).
HF_HOOK_POINTS = ("input", "pattern", "output")


@dataclass(frozen=True)
class HookSite:
    """Where a family's block forms a hook point: the output (or, `side` input, the first argument) of its module at
    `module`, a dotted path below the block (a tuple's first element; "" the block itself). `part`: which third of a
    fused query-key-value projection (0 q, 1 k, 2 v), laid out as `fused` says: 'blocks' [q | k | v] along the width
    (GPT-2's c_attn), 'heads' interleaved per head (BLOOM's and GPT-NeoX's query_key_value). A point read at a
    module's input is formed inline (GPT-2's residual between attention and MLP is ln_2's input): read only, as
    replacing that argument would change the next module's input and not the residual stream, unless `in_place`: the
    argument is the very tensor the block goes on with (GPT-2's `residual = hidden_states; self.ln_2(hidden_states)`),
    so a function's output copied into it writes the point for every later use (models/hf/sites.points_written)."""

    module: str
    side: Literal["output", "input"] = "output"
    part: int | None = None
    fused: Literal["blocks", "heads"] = "blocks"
    in_place: bool = False

    @property
    def writable(self) -> bool:
        return self.side == "output" or self.in_place


HookSites = Callable[[Any], dict[str, HookSite]]  # (a loaded config, or None for the documented default) -> sites


def no_sites(_config: Any) -> dict[str, HookSite]:
    """A family that declares none (a plug-in's default): input, pattern and output only."""
    return {}


def fixed_sites(sites: dict[str, HookSite]) -> HookSites:
    """A family whose blocks form every point at the same modules, whatever their config."""
    return lambda _config: sites


# --- seeded configs -------------------------------------------------------------------------------------------------

MAX_POSITIONS = 512  # seeded configs: rows of a learned table, range of rotary position ids
FFN_MULT = 4  # seeded configs: feed-forward width over d_model


@dataclass(frozen=True)
class SeededSize:
    """A seeded model's size, from the spec."""

    d_model: int
    n_heads: int
    n_layers: int
    vocab: int
    kv_heads: int | None = None  # key-value heads of grouped-query attention (Llama); None: one per head
    ffn: int | None = None  # feed-forward width; None: FFN_MULT x d_model

    @property
    def ffn_width(self) -> int:
        return self.ffn or FFN_MULT * self.d_model

    @property
    def init_std(self) -> float:
        """Seeded weights' standard deviation, 1/sqrt(d_model): attention scores of order one, not HF's near-zero
        0.02 (with which a small model's attention is almost uniform and position barely shows)."""
        return float(self.d_model**-0.5)


def standard_config(size: SeededSize) -> dict[str, Any]:
    """The config arguments that BERT-like configs (and Llama's) name alike; each family adds its own."""
    return {
        "vocab_size": size.vocab,
        "initializer_range": size.init_std,
        "hidden_size": size.d_model,
        "num_hidden_layers": size.n_layers,
        "num_attention_heads": size.n_heads,
        "intermediate_size": size.ffn_width,
        "max_position_embeddings": MAX_POSITIONS,
    }


# --- a checkpoint's config.json, as a family reads it ---------------------------------------------------------------

# A vocabulary or a position table read from config.json: 64x the largest vocabularies (~256k entries). The numbers
# are bounded before they size anything; what fits the bounds but not this machine the estimate refuses.
MAX_TABLE_ROWS = 2**24

ConfigWidth = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_D_MODEL)]  # hidden, head and attention widths
ConfigDepth = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_LAYERS)]  # layers
ConfigHeads = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_D_MODEL)]
ConfigFfn = Annotated[int, Strict(), Field(ge=1, le=bounds.MAX_D_MODEL * bounds.MAX_FFN_MULT)]
ConfigRows = Annotated[int, Strict(), Field(ge=1, le=MAX_TABLE_ROWS)]  # vocabulary, position table
ConfigCount = Annotated[int, Strict(), Field(ge=0, le=MAX_TABLE_ROWS)]  # token types, a position offset
ConfigName = Annotated[str, Strict(), Field(max_length=200)]
ConfigFlag = Annotated[bool, Strict()]


@dataclass(frozen=True)
class ModelShape:
    """What sizes a model's weights and passes (plan/pretrained_cost.py), whatever its family calls each number."""

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


# --- the family ------------------------------------------------------------------------------------------------------

Ablate = Callable[[Any, str, int], Any]  # (model, ablation, seed) -> a context manager around one pass


def table_rows(config: Any) -> int | None:
    """The tokens a sequence may hold: its config's position count (n_positions or max_position_embeddings)."""
    limit = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    return None if limit is None else int(limit)


def no_limit(_config: Any) -> int | None:
    """Relative positions: no table to run out of."""
    return None


def unablated(what: str) -> str:
    """What the unablated condition runs, and what its rows read (HFModelSpec.label, less allow_random_init's)."""
    return f"{what}; rows read '{SEEDED}' for seeded weights, '{UNABLATED}' for loaded weights"


TABLE_ABLATIONS = {
    UNABLATED: unablated("the position table as built (seeded) or loaded"),
    "zero": "the table replaced by zeros: no position information",
    "shuffled": "the table's rows in a seeded random order",
    "sinusoidal": "Vaswani et al.'s codes, scaled to the table's mean row norm",
}
ROTARY_ABLATIONS = {
    UNABLATED: unablated("RoPE on (position ids 0..T-1)"),
    "zero": "RoPE off: every position id 0, the identity rotation",
    "shuffled": "position ids in a seeded random order",
}


@dataclass(frozen=True)
class Family:
    """A model family of the zoo: how it knows position, what each position ablation does to it, how its config.json
    reads, how a seeded model is configured, and its adapter hooks (models/hf/loader.py runs them)."""

    name: str
    positions: str  # the kind of positional information, in words
    causal: bool  # a decoder (causal mask, language-model head) or an encoder
    ablations: dict[str, str]  # ablation name (ABLATIONS) -> what it does to this family
    model_types: tuple[str, ...]  # config.json `model_type` values of this family's checkpoints
    architectures: tuple[str, ...]  # how config.json's `architectures` names of this family's checkpoints begin
    config_file: type[FamilyConfig]  # its config.json's keys
    config_class: str  # transformers class of the seeded config
    model_class: str  # transformers class built from a config or a checkpoint (a causal LM keeps its head)
    seeded_config: Callable[[SeededSize], dict[str, Any]]  # config arguments of a seeded model (plain numbers)
    ablate: Ablate  # imports torch inside: the family's file stays torch-free at import
    # Where its blocks form the vocabulary's points beyond HF_HOOK_POINTS, by config (a parallel-residual block has
    # no `mid`); named per layer: 1.q, 1.mid, ... (hook_points)
    hook_sites: HookSites = no_sites
    tokenizer_options: tuple[tuple[str, Any], ...] = ()  # AutoTokenizer arguments for pre-split words
    # The family's own name for the token a sequence starts with ([CLS] of an encoder, GPT-2's <|endoftext|>): a
    # seeded model's word-level tokenizer names its first special so, as trace shows it.
    start_token: str = "[CLS]"
    # The spec's seeded-size fields beyond d_model, n_heads and n_layers that its seeded config reads (Llama's
    # grouped-query key-value heads and feed-forward width)
    seeded_fields: tuple[str, ...] = ()
    needs_mask: bool = False  # give every pass an all-ones attention mask (the ablation reads it)
    # A causal family's ablations under which a pass fed one token at a time, after its prefix's KV cache, equals
    # the dense pass (positions at token t depend on t alone): these share prefixes (models/kv_prefix.py).
    cached_ablations: tuple[str, ...] = ()
    # Of those, the ablations under which the top depths packed in one pass (models/packed_trie.py: an ancestor mask
    # given as a 4D attention mask, each token at its depth's position id) equal the walk to round-off: the model takes
    # both as given (not BLOOM's ALiBi, which is built from a 2D mask).
    packed_ablations: tuple[str, ...] = ()
    # Children of the base model that no measurement runs (BERT's pooler): a checkpoint may lack or add them.
    unused_parts: tuple[str, ...] = ()
    # The most tokens a sequence may hold, from the loaded model's config (None: no limit).
    max_tokens: Callable[[Any], int | None] = table_rows
    # A seeded model's head width must be a multiple of this (2 where rotary positions rotate pairs), and why.
    head_width_multiple: int = 1
    head_width_reason: str = ""
    # Whether its attention goes through transformers' AttentionInterface (ALL_ATTENTION_FUNCTIONS.get_interface), so
    # that a pass may run an implementation of orderlab's that replaces a layer's probabilities: `L.pattern` is then
    # writable (models/hf/pattern_writes.py); else its attention is its own code, and the pattern read only.
    attention_interface: bool = False

    def hook_points(self, config: Any = None) -> tuple[str, ...]:
        """Its per-layer points in the vocabulary's order (core/hook_points.LAYER_POINTS), for a loaded model's config
        or (None) the documented default."""
        sites = self.hook_sites(config)
        return tuple(point for point in LAYER_POINTS if point in HF_HOOK_POINTS or point in sites)

    @property
    def pass_points(self) -> tuple[str, ...]:
        """Its whole pass's points: a causal LM's logits."""
        return (LOGITS,) if self.causal else ()

    def seeded_shape(
        self, d_model: int, n_heads: int, n_layers: int, vocab: int, kv_heads: int | None = None, ffn: int | None = None
    ) -> ModelShape:
        """A seeded model's shape: its seeded config read as a checkpoint's config.json is."""
        config = self.seeded_config(SeededSize(d_model, n_heads, n_layers, vocab, kv_heads, ffn))
        return self.config_file.model_validate(config).shape()

    def read_config(self, folder: Path) -> FamilyConfig:
        """A checkpoint folder's config.json as this family reads it. FileProblem (one line naming the file and the
        field) for a file that is not a JSON object of bounded numbers, or that declares another architecture:
        transformers would build this family's model and fill it with whatever weights matched, leaving the rest
        random."""
        path = folder / "config.json"
        config = read_json(path, self.config_file, f"the config of a {self.name} checkpoint")
        if config.model_type not in self.model_types:
            got = "missing" if config.model_type is None else f"got {config.model_type!r}"
            types = " or ".join(repr(name) for name in self.model_types)
            raise FileProblem(path, f"{got}; expected a {self.name} checkpoint (model_type {types})", "model_type")
        foreign = [name for name in config.architectures or [] if not name.startswith(self.architectures)]
        if foreign:
            names = " or ".join(f"{prefix}..." for prefix in self.architectures)
            raise FileProblem(path, f"got {foreign[0]!r}; expected a {self.name} architecture ({names})",
                              "architectures")  # fmt: skip
        return config
