"""Loading or building a model of the zoo offline, and running it under a position ablation.

Nothing is downloaded, ever: HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before transformers is
imported and every load passes local_files_only. A model comes from a checkpoint folder (its own
tokenizer; its files checked before transformers opens them, its weights held to the parts the
measurement runs: models/hf/folder.py) or is built from its family's small config with seeded
weights and a word-level tokenizer over the spec's words (`Seeded`). The tokenizer splits each
white-space word separately (is_split_into_words), so a reordered sentence has exactly the
sub-tokens the tokenizer would give it, and words can be moved as groups of sub-tokens. An
ablation is applied around each pass by the family's hooks (orderlab/families), never by writing
weights.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import warnings
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import torch

from orderlab.errors import OrderlabError, first_line
from orderlab.families import FAMILIES, Family
from orderlab.families.family import SeededSize
from orderlab.families.hooks import stacked
from orderlab.models.batching import aligned_batch
from orderlab.models.hf.activations import inplace_activations
from orderlab.models.hf.folder import (
    ModelFolderError,
    WeightsFit,
    checked_folder,
    refuse_too_few_weights,
    weights_fit,
)
from orderlab.models.hf.given import UserModel, eager_attention
from orderlab.models.hf.grouping import WordTokens, spans_from_word_ids
from orderlab.models.hf.interventions import user_hooks_applied
from orderlab.models.hf.sites import points_read
from orderlab.models.kept_draws import built_drawing_kept
from orderlab.models.precision import borrowed_weights, widened, widened_ops
from orderlab.models.user_hooks import UserHook
from orderlab.spec.extras import MissingExtraError, missing_message, packaged_model_folder
from orderlab.spec.fields import LOW_PRECISION
from orderlab.spec.model_specs import HFModelSpec, PretrainedModelSpec

# A seeded model's word-level tokenizer: ids 0..3, the start token named as its family names it (Family.start_token).
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")


def transformers_class(transformers: Any, name: str, family: str) -> Any:
    """The transformers class a family names (its model or config class): a plug-in's name that transformers does
    not have is one line, not an AttributeError at run."""
    found = getattr(transformers, name, None) if name.isidentifier() else None
    if not isinstance(found, type):
        raise OrderlabError(f"model family {family}: transformers {transformers.__version__} has no class {name!r}; "
                            "expected the name of one of its model or config classes")  # fmt: skip
    return found


def import_transformers() -> ModuleType:
    """transformers, switched to offline mode and silent; MissingExtraError if the extra is absent."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        with warnings.catch_warnings():  # in Jupyter without ipywidgets, tqdm.auto's first import warns (TqdmWarning)
            warnings.filterwarnings("ignore", message="IProgress not found")
            importlib.import_module("tqdm.auto")  # here, silently, before transformers' hub code imports it
            import transformers
    except ImportError:
        raise MissingExtraError(missing_message("hf", "transformers")) from None
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return cast(ModuleType, transformers)  # typed as Any: mypy skips transformers' own modules (pyproject.toml)


def model_folder(model: PretrainedModelSpec | HFModelSpec, spec_file: Path) -> Path | None:
    """The checkpoint folder of a spec's model; None for seeded weights."""
    if isinstance(model, PretrainedModelSpec):
        return packaged_model_folder(model.name)
    return model.folder(spec_file)


@dataclass(frozen=True)
class Seeded:
    """A model with seeded random weights from its family's small config, and a word-level tokenizer over `words`."""

    d_model: int
    n_heads: int
    n_layers: int
    words: tuple[str, ...]
    seed: int
    kv_heads: int | None = None  # Llama's key-value heads (None: one per head)
    ffn: int | None = None  # Llama's feed-forward width (None: 4 x d_model)
    vocab: int = 0  # rows of the token table, at least the tokenizer's (0: the tokenizer's)


@dataclass
class Forward:
    hidden: list[torch.Tensor]  # n_layers + 1 tensors (B, T, d); hidden[0]: embeddings output
    attention: list[torch.Tensor]  # n_layers tensors (B, h, T, T) when asked for, else empty
    logits: torch.Tensor | None  # (B, T, V) next-token logits of a causal LM, else None
    points: dict[str, torch.Tensor] = field(default_factory=dict)  # the points asked for that a module forms


def word_level_tokenizer(transformers: ModuleType, words: tuple[str, ...], causal: bool, start: str = "[CLS]") -> Any:
    """A fast tokenizer with one id per word (tokenizers library, offline): [CLS] w... [SEP], or START w... (causal),
    the start token (id 2) named as the family names it (GPT-2's <|endoftext|>); the ids are the same whatever the
    names."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors  # lazy: the hf extra

    pad, unknown, _, end = SPECIALS
    vocabulary = {token: index for index, token in enumerate((pad, unknown, start, end, *sorted(set(words))))}
    tokenizer = Tokenizer(models.WordLevel(vocabulary, unk_token=unknown))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    template = f"{start} $A" if causal else f"{start} $A {end}"
    pair = f"{start} $A $B:1" if causal else f"{start} $A {end} $B:1 {end}:1"  # a sentence pair (a classifier's)
    tokenizer.post_processor = processors.TemplateProcessing(single=template, pair=pair,
                                                             special_tokens=[(start, 2), (end, 3)])  # fmt: skip
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token=pad, unk_token=unknown, cls_token=start, sep_token=end,
        bos_token=start, eos_token=end,
    )  # fmt: skip


def load_folder(
    transformers: ModuleType,
    folder: Path,
    code: Family,
    implementation: str | None,
    heads_read: bool,
    allow_random_init: bool = False,
    dtype: torch.dtype | None = None,
) -> tuple[Any, Any, WeightsFit]:
    """The tokenizer and model of a checked folder (safetensors only), and how its weights fit the model.

    Tensors the files lack are initialised from seed 0, so that a run allowed to measure them is reproducible.
    dtype: load the weights straight into it, a tensor at a time (a 16-bit run: never a float32 copy of the model).
    """
    checked_folder(folder, code)
    model_class = transformers_class(transformers, code.model_class, code.name)
    if not allow_random_init:
        refuse_too_few_weights(folder, model_class, implementation, code.name, heads_read, code.unused_parts)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True,
                                                               **dict(code.tokenizer_options))  # fmt: skip
    except (OSError, ValueError, RuntimeError) as error:
        raise ModelFolderError(f"{folder}: cannot load its tokenizer ({first_line(error)}); expected tokenizer.json, "
                               "or the vocabulary files its tokenizer_config.json's class reads") from None  # fmt: skip
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model, info = model_class.from_pretrained(
                folder, local_files_only=True, attn_implementation=implementation, use_safetensors=True,
                output_loading_info=True, ignore_mismatched_sizes=True, **({} if dtype is None else {"dtype": dtype}),
            )  # fmt: skip
    except (OSError, ValueError, RuntimeError) as error:
        raise ModelFolderError(f"cannot load a model from {folder}: {first_line(error)}") from None
    return tokenizer, model, weights_fit(model, info, heads_read, code.unused_parts)


def converted_copy(model: torch.nn.Module, dtype: torch.dtype) -> Any:
    """A deep copy of the model with its floating parameters and buffers cast to dtype, as
    `copy.deepcopy(model).to(dtype=dtype)` gives, without first copying every weight in its own dtype
    (at GPT-2-small size: 0.5 GB and about a second saved)."""
    memo: dict[int, Any] = {}
    for parameter in model.parameters():
        memo[id(parameter)] = torch.nn.Parameter(parameter.detach().to(dtype, copy=True), parameter.requires_grad)
    for buffer in model.buffers():
        memo[id(buffer)] = buffer.to(dtype, copy=True) if buffer.is_floating_point() else buffer.clone()
    return copy.deepcopy(model, memo).to(dtype=dtype)


def drawn_in(dtype: str) -> dict[str, torch.dtype]:
    """How a 16-bit model is built: its weights created, drawn or loaded straight in its dtype (transformers'
    `dtype`), so that no float32 copy of it is ever held; a seeded draw is made in float32 a piece at a time and
    rounded in (kept_draws.built_drawing_kept, rounded_draws.py), the float32 model's weights rounded on any torch.
    float32 and float64 models are drawn in float32 and cast, as they always were (their seeded weights, and the
    committed baselines, stay the same)."""
    return {"dtype": getattr(torch, dtype)} if dtype in LOW_PRECISION else {}


class PretrainedBackend:
    """A tokenizer and a model of one family in eval mode, run under a position ablation (`set_positions`).

    From a folder: `fit` says how its weights fit the model (models/hf/folder.py); weights missing or of another
    shape in the parts the measurement runs are refused (ModelFolderError, one line) unless `allow_random_init`;
    `heads_read`: whether a causal LM's head counts among those parts (lm_logprob reads its logits).
    `row_alignment`: batches padded to a multiple of this many rows (forward; 1: unpadded).
    """

    def __init__(
        self,
        source: Path | Seeded | UserModel,
        dtype: str = "float32",
        device: torch.device | str = "cpu",
        attention: bool = False,
        family: str = "bert",
        allow_random_init: bool = False,
        heads_read: bool = True,
        user_hooks: Mapping[str, UserHook] | None = None,
        row_alignment: int = 1,
    ):
        transformers = import_transformers()
        self.code = FAMILIES.get(family)
        self.device, self.dtype = torch.device(device), getattr(torch, dtype)
        self.fit: WeightsFit | None = None  # seeded weights: nothing to fit
        self.given = False  # a model object passed from Python: its eval mode is the caller's (given.evaluating)
        self.user_hooks = dict(user_hooks or {})  # the user's functions at hook points, around every pass
        self.ablation, self.seed = "trained", 0
        self.row_alignment = row_alignment
        self.widened_from: torch.dtype | None = None  # a 16-bit model's twin: the model's dtype, widened to `dtype`
        self.borrowed = False  # a float32 or float64 model's twin: its weights read in `dtype` (reading)
        self.borrowed_pass = False  # whether a borrowing twin has run its one pass (reading)
        implementation = "eager" if attention else None  # eager returns attention maps; else the fastest
        model_class = transformers_class(transformers, self.code.model_class, self.code.name)
        if isinstance(source, Seeded):
            self.tokenizer = word_level_tokenizer(transformers, source.words, self.code.causal, self.code.start_token)
            vocab = max(len(self.tokenizer), source.vocab)
            size = SeededSize(source.d_model, source.n_heads, source.n_layers, vocab, source.kv_heads, source.ffn)
            config = transformers_class(transformers, self.code.config_class, self.code.name)(
                **self.code.seeded_config(size)
            )
            with torch.random.fork_rng(devices=[]):  # seeded weights, the caller's random state left alone
                torch.manual_seed(source.seed)
                self.model = built_drawing_kept(  # the same weights without the draws overwritten (kept_draws.py)
                    lambda: model_class._from_config(config, attn_implementation=implementation, **drawn_in(dtype))
                )
        elif isinstance(source, UserModel):  # the object itself, never written; a copy in another dtype or device
            self.tokenizer, self.given = source.tokenizer, True
            weight = next(source.model.parameters())
            own = weight.dtype == self.dtype and weight.device == self.device
            self.model = source.model if own else converted_copy(source.model, self.dtype).to(self.device)
            return
        else:
            self.tokenizer, self.model, self.fit = load_folder(transformers, source, self.code, implementation,
                                                               heads_read, allow_random_init,
                                                               drawn_in(dtype).get("dtype"))  # fmt: skip
            refusal = self.fit.refusal(source, family, allow_random_init)
            if refusal is not None:
                raise refusal
        inplace_activations(self.model)  # the same numbers in fewer buffers (activations.py)
        self.model.to(device=self.device, dtype=self.dtype).eval()

    def twin(self, dtype: str) -> PretrainedBackend:
        """The same model in another precision, sharing the tokenizer: its passes measure this one's round-off.

        A 16-bit model's twin borrows its weights and widens every 16-bit tensor an op at a time
        (precision.widened_ops): a model of billions of parameters has room for itself, not for a float32 copy. A
        float32 or float64 model's twin borrows them for its first pass (reading), then holds a copy."""
        other = self.aligned(1)  # one order a pass: unpadded (forward)
        other.dtype = getattr(torch, dtype)
        if self.dtype in (torch.bfloat16, torch.float16):
            other.widened_from = self.dtype
        else:
            other.borrowed = True
        return other

    def hold_copy(self) -> None:
        """A borrowing twin's own copy of the model in its dtype, from now on: a borrowed pass converts every weight
        again (a 12-layer Llama-shaped model: 0.25 s a pass more than a copy's), about what making the copy costs
        once. Nothing to do for any other backend."""
        if self.borrowed:
            self.model, self.borrowed = converted_copy(self.model, self.dtype).eval(), False

    def aligned(self, rows: int) -> PretrainedBackend:
        """The same model (shared, not copied), its batches padded to a multiple of `rows` rows: a twin's passes as
        the run's where it measures orders a chunk at a time (escalation), so that no number depends on the chunk."""
        other = copy.copy(self)
        other.row_alignment = rows
        return other

    def widening(self) -> AbstractContextManager[None]:
        """While open, a 16-bit model's twin computes in its own dtype, each borrowed weight widened while an op reads
        it (precision.widened_ops); any other backend's passes as they are. Around every pass: dense or walked."""
        return nullcontext() if self.widened_from is None else widened_ops(self.widened_from, self.dtype)

    def reading(self) -> AbstractContextManager[None]:
        """Around every pass, dense or walked, before anything else: the ablation (set_positions) over the weights as
        this backend reads them. A borrowing twin's first pass reads the model's weights in its own dtype
        (precision.borrowed_weights), its ablation tables made from them, computing what a copy would, bit for bit:
        a run that asks its twin for one pass (one sentence, one condition) never copies the model (0.2-0.3 s a run
        at the zoo's 12-layer shapes, and room for the copy). A second pass holds a copy (hold_copy). A 16-bit twin's
        tables are the model's own, widened as read (widening), as every 16-bit baseline was measured."""
        if self.borrowed and self.borrowed_pass:
            self.hold_copy()
        ablate: AbstractContextManager[None] = self.code.ablate(self.model, self.ablation, self.seed)
        if not self.borrowed:
            return ablate
        self.borrowed_pass = True
        return stacked(borrowed_weights(self.model, self.dtype), ablate)

    @property
    def max_tokens(self) -> int | None:
        """The longest sequence the model's positions cover (None: relative positions, no table to run out of)."""
        return self.code.max_tokens(self.model.config)

    @property
    def width(self) -> int:
        return int(self.model.get_input_embeddings().weight.shape[1])

    def set_positions(self, ablation: str, seed: int) -> None:
        """Run later passes under `ablation` (the family's hooks around each pass; weights are never written)."""
        self.ablation, self.seed = ablation, seed

    def word_tokens(self, words: list[str]) -> WordTokens:
        """Tokenize white-space words one by one, keeping each word's span of sub-tokens.

        A causal LM's sequence starts with its BOS token, so that every word's log-probability is conditioned.
        """
        encoded = self.tokenizer(words, is_split_into_words=True, add_special_tokens=True)
        ids, word_ids = list(encoded["input_ids"]), list(encoded.word_ids())
        bos = self.tokenizer.bos_token_id
        if self.code.causal and bos is not None and ids[:1] != [bos]:
            ids, word_ids = [bos, *ids], [None, *word_ids]
        try:
            spans = spans_from_word_ids(word_ids, len(words))
        except ValueError as error:
            raise OrderlabError(f"cannot split {' '.join(words)!r} into words: {error}") from None
        if self.max_tokens is not None and len(ids) > self.max_tokens:
            shown = " ".join(words) if len(words) <= 8 else " ".join(words[:8]) + " ..."
            raise OrderlabError(f"{shown!r}: {len(ids)} tokens with the model's special tokens; its positions cover "
                                f"{self.max_tokens}; expected a shorter sentence")  # fmt: skip
        return WordTokens(tuple(ids), spans)

    def forward(
        self, ids: torch.Tensor, attention: bool = False, points: Sequence[str] = (), logits: bool = True
    ) -> Forward:
        """ids: (B, T). All hidden states (attention maps if asked for; next-token logits of a causal LM, unless
        logits=False, which skips its LM head where the model can: no_logits; the named `points` that a module forms,
        read by forward hooks: models/hf/sites.py).

        The batch is padded (repeating its first row) so that B * T fills whole matmul row tiles
        (see orderlab/models/batching.py): a sequence's numbers then do not depend on the batch it is in
        or on the thread count, so the identity permutation matches its reference pass exactly. A round-off twin
        runs one order a pass, never in another batch, so it is not padded: at 9 tokens padding made its float64
        pass 16 sequences (16 / gcd(9, 16)), 10% of a GPT-2-shaped loop over 1,024 orders of 8 words.
        """
        count = ids.shape[0]
        ids = aligned_batch(ids.to(self.device), self.row_alignment)
        mask = torch.ones_like(ids) if self.code.needs_mask else None  # e.g. BLOOM builds ALiBi from it
        rows, formed = (ids.shape[0], ids.shape[1]), dict[str, torch.Tensor]()
        with (
            self.reading(),
            eager_attention(self.model, attention and self.given),
            user_hooks_applied(self.model, self.code, self.user_hooks, rows),
            points_read(self.model, self.code, list(points), rows, formed),
            self.widening(),
        ):
            out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                             output_attentions=attention, **({} if logits else no_logits(self.model, ids)))  # fmt: skip
        kept = logits and self.code.causal and getattr(out, "logits", None) is not None
        logits_read = out.logits[:count] if kept else None
        if attention and not (out.attentions and all(a is not None for a in out.attentions)):
            implementation = self.model.config._attn_implementation
            raise OrderlabError(f"{self.code.name}: its {implementation!r} attention returns no attention "
                                "probabilities; expected a family whose eager attention does, or leave `attention` out "
                                "of metrics")  # fmt: skip
        attentions = [widened(a[:count]) for a in out.attentions] if attention else []
        return Forward([widened(h[:count]) for h in out.hidden_states], attentions,
                       None if logits_read is None else widened(logits_read),
                       {name: widened(tensor[:count]) for name, tensor in formed.items()})  # fmt: skip


def no_logits(model: Any, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """The forward's argument that asks a causal LM for logits at no position, skipping its LM head (GPT-2's, 768 x
    50,257, is 31% of a token's matmul work at 12 layers): `logits_to_keep` (transformers 4.50 and later); none
    where the forward has no such argument, or is no LM's."""
    return {"logits_to_keep": ids.new_empty(0)} if keeps_logits(model) else {}


def keeps_logits(model: Any) -> bool:
    """Whether the model's forward computes logits at the positions it is given alone (`logits_to_keep`)."""
    return "logits_to_keep" in inspect.signature(model.forward).parameters
