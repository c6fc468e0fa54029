"""A model of the zoo (models/hf/loader.py) as adapters: one per position ablation, sharing one loaded model.

A word's state is the mean of its sub-tokens' states; a reordering moves whole words and leaves
specials ([CLS], [SEP], a causal LM's BOS) in place (models/hf/grouping.py). Sentence vectors are
sentence-transformers' mean over all tokens and, for encoders, the first ([CLS]) state; a causal
LM's first token is its BOS, the same in every order, so it has the mean only, and its passes
carry each reordering's log-probability (metric family lm_logprob). The ablation is applied
around each pass by the family's hooks (orderlab/families), never by writing weights.
Named hook points of a pass (hook_points.hook_name: the family's points per layer, on token slots, and a causal LM's
logits) come from the same forward pass as its metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from orderlab.core.corpustext import read_corpus
from orderlab.core.hook_points import LOGITS, hook_name, point_of
from orderlab.core.permutations import Permutation
from orderlab.core.text import tokenize
from orderlab.errors import OrderlabError
from orderlab.families.family import ModelShape
from orderlab.metrics import (
    ATTENTION_FAMILY,
    CAUSAL_POOLINGS,
    ENCODER_POOLINGS,
    LM_LOGPROB_FAMILY,
    Model,
    Pooling,
    reads_logprobs,
    reads_states,
)
from orderlab.models.adapter_protocol import HookRequest, Pass, requested
from orderlab.models.attention_stack import Hooks
from orderlab.models.batching import Batching
from orderlab.models.hf.capture import Capture
from orderlab.models.hf.folder import refuse_unknown_words
from orderlab.models.hf.given import UserModel
from orderlab.models.hf.grouping import WordTokens
from orderlab.models.hf.interventions import checked_hooks
from orderlab.models.hf.loader import Forward, PretrainedBackend, Seeded, model_folder
from orderlab.models.kv_prefix import one_token_words, shared_pass
from orderlab.models.pooling import cls, pool, word_states
from orderlab.models.precision import computed_dtype, pass_dtype
from orderlab.models.user_hooks import UserHook
from orderlab.spec.fields import twin_dtype
from orderlab.spec.model_specs import CorpusInputs, HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import DecodabilitySpec, Spec, relative_to_spec

WORDS_DRAWN_FROM = 20_000  # the decodability probe's random words come from the vocabulary's first whole words


def pretrained_adapters(
    spec: Spec,
    device: torch.device,
    spec_file: Path,
    batching: Batching,
    share_prefixes: bool = True,
    attention_maps: bool = False,
    given: UserModel | None = None,
    user_hooks: Mapping[str, UserHook] | None = None,
) -> list[PretrainedAdapter]:
    """One adapter per position ablation, in label order, all on one loaded model (and one twin), its passes cut and
    padded by `batching`.

    A folder whose tokenizer does not know every word of the spec, or whose weights do not fit the parts measured,
    is refused (models/hf/folder.py). share_prefixes=False runs causal models dense, as the benchmark's comparison
    does. With attention maps (the spec's attention metrics, or attention_maps: trace's pattern hooks) the model runs
    eager attention, the implementation that returns its probabilities. given: the model object a spec describes
    (`model.given`: orderlab.api.run(spec, model=...)), run in place of a seeded model; user_hooks: the user's
    functions at hook points that the spec records by name (`model.user_hooks`), around every pass.
    """
    model = spec.model
    assert isinstance(model, PretrainedModelSpec | HFModelSpec)
    family = model.family
    assert isinstance(family, str), "a swept family reaches the adapters one combination at a time"
    folder, words = model_folder(model, spec_file), spec_words(spec, spec_file)
    source = folder if folder is not None else given_source(model, given) or seeded(spec, words)
    attention = attention_maps or ATTENTION_FAMILY in spec.metrics
    allow_random_init = isinstance(model, HFModelSpec) and model.allow_random_init
    backend = PretrainedBackend(
        source,
        model.dtype,
        device,
        attention=attention,
        family=family,
        allow_random_init=allow_random_init,
        heads_read=LM_LOGPROB_FAMILY in spec.metrics,
        row_alignment=batching.row_alignment,
        user_hooks=hooked(model, user_hooks),
    )
    if user_hooks:
        checked_hooks(backend.model, backend.code, user_hooks)
    if folder is not None or given is not None:
        refuse_unknown_words(folder or "tokenizer", backend.tokenizer, words)
    # an LM-only run (log-probabilities alone) never reads a state: its shared passes skip the last word's
    poolings = CAUSAL_POOLINGS if backend.code.causal else ENCODER_POOLINGS
    # and a run that reads no log-probability never runs the LM head
    logprobs = reads_logprobs(spec.metrics, "pretrained", poolings)
    # a run that reads neither from its passes (decodability alone: its probe's sentences) still passes its own
    # sentences, with states, as a dense pass would give them
    states = attention or reads_states(spec.metrics, "pretrained", poolings) or not logprobs
    shared = Shared(backend, spec.seed, batching, share_prefixes, states, logprobs)
    kind = CausalAdapter if backend.code.causal else PretrainedAdapter
    return [kind(shared, ablation, model.label(ablation)) for ablation in sorted(model.position_embeddings,
                                                                                 key=model.label)]  # fmt: skip


def spec_words(spec: Spec, spec_file: Path) -> list[str]:
    """Every word the spec (or its corpus) puts through the model, once each, sorted."""
    if isinstance(spec.inputs, CorpusInputs):
        words = [w for line in read_corpus(relative_to_spec(spec_file, spec.inputs.file)) for w in line.words]
    else:
        words = [w for item in spec.sentences for w in tokenize(item.sentence)]
        words += [w for probe in spec.probes for sentence in probe.pair for w in tokenize(sentence)]
    return sorted(set(words))


def given_source(model: PretrainedModelSpec | HFModelSpec, given: UserModel | None) -> UserModel | None:
    """The model object of a spec that describes one (its `given` record), checked to be that object."""
    record = model.given if isinstance(model, HFModelSpec) else None
    if record is None and given is None:
        return None
    if record is None or given is None or given.record != record:
        raise OrderlabError("model: the spec describes a model object that this run was not given; expected "
                            "orderlab.api.run(spec, model=..., tokenizer=...)")  # fmt: skip
    return given


def hooked(model: PretrainedModelSpec | HFModelSpec, user_hooks: Mapping[str, UserHook] | None) -> dict[str, UserHook]:
    """The user's functions, checked to be the ones the spec records (`model.user_hooks`, by point)."""
    recorded = model.user_hooks if isinstance(model, HFModelSpec) else {}
    if set(recorded) != set(user_hooks or {}):
        raise OrderlabError(f"hooks: the spec records {sorted(recorded)} but this run was given "
                            f"{sorted(user_hooks or {})}; expected orderlab.api.run(spec, hooks=...)")  # fmt: skip
    return dict(user_hooks or {})


def seeded(spec: Spec, words: list[str]) -> Seeded:
    """A seeded model's shape from the spec, and its vocabulary: the spec's words."""
    model = spec.model
    assert isinstance(model, HFModelSpec)
    return Seeded(model.d_model, model.n_heads, model.n_layers, tuple(words), spec.seed, model.n_kv_heads, model.d_ffn,
                  model.vocab_size or 0)  # fmt: skip


class Shared:
    """The loaded model, its round-off twin (made when first asked for), the seed of the ablations, how passes are
    cut, whether causal passes may share prefixes, whether the run reads their states (states=False: their
    log-probabilities alone, so that a shared pass skips the last word's own: models/kv_prefix.py), and whether it
    reads a causal LM's log-probabilities (logprobs=False: its states alone, so that no pass runs the LM head)."""

    def __init__(
        self, backend: PretrainedBackend, seed: int, batching: Batching, share_prefixes: bool = True,
        states: bool = True, logprobs: bool = True,
    ):  # fmt: skip
        self.backend, self.seed, self.batching, self.share_prefixes = backend, seed, batching, share_prefixes
        self.states, self.logprobs = states, logprobs
        self.twin_backend: PretrainedBackend | None = None
        self.finer_shared: Shared | None = None
        self.computed: torch.dtype | None = None
        self.walk_capture: Capture | None = None

    def capture(self) -> Capture | None:
        """The prefix walk's calls through torch.compile as the run asks (Batching.capture; None: eager), made once:
        every ablation's walk shares its graphs."""
        if self.batching.capture and self.walk_capture is None:
            self.walk_capture = Capture(self.backend.model, self.batching.capture)
        return self.walk_capture

    def computed_dtype(self, tokens: WordTokens) -> torch.dtype:
        """What the model computes in, watched over one dense pass of `tokens` (models/precision.py), once."""
        if self.computed is None:
            ids = torch.tensor([tokens.ids])
            with torch.inference_mode():
                self.computed = computed_dtype(lambda: self.backend.forward(ids), self.backend.dtype)
        return self.computed

    def twin(self) -> Shared:
        """The round-off twin runs dense: its one identity pass per input is then one call, where the prefix walk makes
        one per token (n + 1 small calls against one); the round-off line it draws is the same."""
        return Shared(self.twin_model(), self.seed, self.batching, share_prefixes=False, logprobs=self.logprobs)

    def finer(self) -> Shared:
        """The twin's model as the run measures with it (escalation: measure/escalation.py). Escalated orders come a
        chunk at a time, as the run's do, so they are passed as the run's passes are: walking shared prefixes where
        the run does (a prefix computed once, not once per order) and padded to the run's row tiles, so that no
        order's number depends on which others escalated with it. Made once: every ablation's shares it, and its own
        round-off twin."""
        if self.finer_shared is None:
            twin = self.twin_model()
            twin.hold_copy()  # the finer model walks every escalated chunk: a copy, shared with the twin's passes
            backend = twin.aligned(self.backend.row_alignment)
            self.finer_shared = Shared(backend, self.seed, self.batching, self.share_prefixes, self.states,
                                       self.logprobs)  # fmt: skip
        return self.finer_shared

    def twin_model(self) -> PretrainedBackend:
        """The model in its twin's precision (PretrainedBackend.twin), made when first asked for."""
        if self.twin_backend is None:
            self.twin_backend = self.backend.twin(twin_dtype(str(self.backend.dtype).removeprefix("torch.")))
        return self.twin_backend


class PretrainedAdapter:
    """One position ablation of the shared model (an encoder: mean and [CLS] sentence vectors); `label` names its
    rows (the ablation, or `<ablation>+random_init` where the spec allows random weights: spec/model_specs.py)."""

    model: ClassVar[Model] = "pretrained"
    poolings: ClassVar[tuple[Pooling, ...]] = ENCODER_POOLINGS

    def __init__(self, shared: Shared, ablation: str, label: str | None = None):
        self.shared, self.ablation, self.label = shared, ablation, label or ablation
        self.dtype, self.device = pass_dtype(shared.backend.dtype), shared.backend.device

    @property
    def backend(self) -> PretrainedBackend:
        """The model, with this adapter's ablation around its passes."""
        backend = self.shared.backend
        backend.set_positions(self.ablation, self.shared.seed)
        return backend

    @property
    def n_layers(self) -> int:
        return int(self.shared.backend.model.config.num_hidden_layers)

    @property
    def hook_points(self) -> tuple[str, ...]:
        """Its family's points on this model's config (families/family.py), a causal LM's logits first."""
        backend = self.shared.backend
        return (*backend.code.pass_points, *backend.code.hook_points(backend.model.config))

    @property
    def model_files(self) -> dict[str, list[str]] | None:
        """manifest.json's `model_files`: a checkpoint folder's tensors outside the parts measured, and those left
        randomly initialised (None for seeded weights)."""
        fit = self.shared.backend.fit
        return None if fit is None else fit.manifest()

    @property
    def shares_prefixes(self) -> bool:
        """Whether passes compute each distinct prefix once (models/kv_prefix.py): a causal family's declared
        ablations only (an encoder declares none)."""
        backend = self.shared.backend
        return self.shared.share_prefixes and not backend.user_hooks and self.ablation in backend.code.cached_ablations

    def sentence(self, words: list[str]) -> PretrainedSentence:
        return PretrainedSentence(self, words)

    def compilation(self) -> dict[str, float | str] | None:
        """How torch.compile served this model's prefix walk (manifest.json's torch_compile); None if not asked or
        no walk ran. Every ablation's walk runs through one Capture, so each reports the same record."""
        capture = self.shared.walk_capture
        return None if capture is None else capture.record()

    def twin(self) -> PretrainedAdapter:
        return type(self)(self.shared.twin(), self.ablation, self.label)

    def finer(self) -> PretrainedAdapter:
        return type(self)(self.shared.finer(), self.ablation, self.label)

    def computed_dtype(self, words: list[str]) -> torch.dtype:
        return self.shared.computed_dtype(self.backend.word_tokens(words))

    def chunk_size(self, n: int, attention: bool) -> int:
        """Reorderings per pass of an n-word sentence (its specials counted), as the batching's rule sizes them."""
        return self.orders_per_pass(n, attention, shared=self.shares_prefixes and not attention)

    def orders_per_pass(self, n: int, attention: bool, shared: bool) -> int:
        """Reorderings per pass of an n-word sentence: dense, or walking shared prefixes."""
        tokens = n + 1 if self.shared.backend.code.causal else n + 2  # BOS; or [CLS] and [SEP]
        return self.shared.batching.chunk_size("pretrained", self.shape, tokens, attention, shared, self.dtype.itemsize)

    @property
    def shape(self) -> ModelShape:
        """What sizes its passes, from the loaded model's config."""
        config = self.shared.backend.model.config
        d = int(config.hidden_size)
        ffn = int(getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * d)
        layers, heads, vocab = int(config.num_hidden_layers), int(config.num_attention_heads), int(config.vocab_size)
        width = int(getattr(config, "head_dim", None) or d // heads)
        kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)  # fewer with grouped-query attention
        return ModelShape(d, layers, heads, ffn, vocab, query_width=heads * width, kv_width=kv_heads * width,
                          head=self.shared.backend.code.causal)  # fmt: skip

    def last_pooled(self, rows: Sequence[tuple[PretrainedSentence, Permutation]]) -> dict[str, torch.Tensor]:
        """Last-layer sentence vectors {"mean"/"cls": (R, d)} of reorderings of several sentences, in one dense pass.

        Corpus mode's batches across sentences: every row must have the same token count, so that no row is
        padded or masked and each gets the numbers of its own sentence's pass (rows fill whole row tiles).
        A causal model runs dense here: random shuffles of different sentences share few prefixes.
        """
        moved = [sentence.tokens.permuted(order) for sentence, order in rows]
        if len({t.n_tokens for t in moved}) > 1:
            raise ValueError("rows of one pass need the same token count")
        output = self.backend.forward(torch.tensor([t.ids for t in moved]), logits=False)  # (R, T): states alone
        return sentence_vectors(output.hidden[-1])

    def random_sentences(self, probe: DecodabilitySpec, seed: int) -> list[torch.Tensor]:
        """Seeded sentences of whole-word tokens (each word one token), so that slot i is word i."""
        backend = self.backend
        vocabulary = whole_words(backend)
        generator = np.random.Generator(np.random.PCG64(seed))
        chosen = generator.choice(len(vocabulary), size=min(probe.vocabulary, len(vocabulary)), replace=False)
        words = np.array(vocabulary)[np.sort(chosen)]
        sentences = generator.integers(0, len(words), size=(probe.sentences, probe.length))  # (S, n)
        tokens = [backend.word_tokens([str(words[k]) for k in row]) for row in sentences]
        states: list[list[torch.Tensor]] = []
        chunk = self.orders_per_pass(probe.length, attention=False, shared=False)
        for start in range(0, len(tokens), chunk):
            part = tokens[start : start + chunk]
            output = backend.forward(torch.tensor([t.ids for t in part]), logits=False)  # states alone
            pooling = torch.from_numpy(np.stack([t.pooling() for t in part]))
            states.append([word_states(h, pooling) for h in output.hidden])
        return [torch.cat(layer) for layer in zip(*states, strict=True)]


class CausalAdapter(PretrainedAdapter):
    """A causal LM's ablation: its first token is BOS in every order, so only the mean pools the sentence."""

    poolings: ClassVar[tuple[Pooling, ...]] = CAUSAL_POOLINGS


def whole_words(backend: PretrainedBackend) -> list[str]:
    """Alphabetic vocabulary entries that the tokenizer keeps as one token (no '##' pieces, no specials)."""
    vocabulary = sorted(backend.tokenizer.get_vocab().items(), key=lambda item: item[1])[:WORDS_DRAWN_FROM]
    return [word for word, _ in vocabulary if word.isalpha() and word.isascii() and len(word) > 1]


def sentence_logprob(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """log P(tokens 1..T-1 | the ones before), summed: logits (B, T, V), ids (B, T) -> (B,). Token 0 is BOS."""
    return token_logprobs(logits, ids).sum(dim=-1)


def token_logprobs(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """log P(token t | tokens before t) for t = 1..T-1: logits (B, T, V), ids (B, T) -> (B, T-1)."""
    logprobs = torch.log_softmax(logits[:, :-1], dim=-1)  # (B, T-1, V): the distribution of the next token
    return logprobs.gather(-1, ids[:, 1:, None].to(logits.device))[..., 0]


class PretrainedSentence:
    """A sentence's tokens, moved word by word."""

    def __init__(self, adapter: PretrainedAdapter, words: list[str]):
        self.adapter, self.words = adapter, words
        self.tokens: WordTokens = adapter.shared.backend.word_tokens(words)
        self.shares_prefixes = adapter.shares_prefixes and one_token_words(self.tokens)  # else a word is no trie edge

    def forward(self, orders: torch.Tensor, hooks: HookRequest = ()) -> Pass:
        """B reorderings through the model, with the requested hook points it exposes (record_hooks).

        A sentence that shares prefixes gets the dense pass's numbers from the KV-cached one, its points too where each
        is read per token (models/walk_points.py); attention probabilities need whole rows: dense.
        """
        if self.shares_prefixes and all(point_of(name) != "pattern" for name in hooks):
            return self.shared_prefixes(orders, hooks)
        return self.dense(orders, hooks)

    def token_logprobs(self) -> list[tuple[str, int | None, float]]:
        """The sentence as written, token by token after BOS: (token, its word's index or None for a special, log P
        of the token given the ones before it), from one dense pass."""
        ids = torch.tensor([self.tokens.ids])
        output = self.adapter.backend.forward(ids)
        if output.logits is None:
            raise OrderlabError(
                f"{self.adapter.label}: the model has no LM head (logits); expected a causal LM with one"
            )
        values = token_logprobs(output.logits, ids)[0].double().tolist()
        word = {t: index for index, (start, stop) in enumerate(self.tokens.spans) for t in range(start, stop)}
        return [(name, word.get(t), value) for t, (name, value) in enumerate(zip(self.slot_names()[1:], values,
                                                                                  strict=True), start=1)]  # fmt: skip

    def slot_names(self) -> list[str]:
        return [str(token) for token in self.adapter.shared.backend.tokenizer.convert_ids_to_tokens(self.tokens.ids)]

    def shared_prefixes(self, orders: torch.Tensor, hooks: HookRequest = ()) -> Pass:
        """Each distinct prefix of the reorderings computed once (models/kv_prefix.py); no attention maps. A run that
        reads no state (Shared.states) and no point gets the log-probabilities alone: a Pass without states or
        sentence vectors. Points are read at each depth's own call, so a pass reading them walks every depth unpacked
        (Batching.packed_tokens: the walk's numbers to round-off)."""
        settings = self.adapter.shared
        packed = 0 if hooks else settings.batching.packed_tokens
        capture = None if hooks else settings.capture()
        shared = shared_pass(self.adapter.backend, self.tokens, orders, settings.states or bool(hooks), packed,
                             list(hooks), settings.logprobs, capture)  # fmt: skip
        if not shared.hidden:
            return Pass([], {}, shared.logprob)
        words = [h[:, 1:] for h in shared.hidden]  # one token per word after BOS: word slot i is token slot i + 1
        read = Forward(shared.hidden, [], shared.logits, shared.points)
        points = requested(record_hooks(read), hooks, len(orders)) if hooks else None  # none asked: none gathered
        return token_pass(shared.hidden, words, shared.logprob, points)

    def dense(self, orders: torch.Tensor, hooks: HookRequest) -> Pass:
        """Every reordering's tokens computed whole (with its attention probabilities when a pattern is requested:
        eager attention, the only kind that returns them)."""
        moved = [self.tokens.permuted(tuple(p)) for p in orders.tolist()]
        ids = torch.tensor([t.ids for t in moved])  # (B, T)
        output = self.adapter.backend.forward(ids, any(point_of(name) == "pattern" for name in hooks), list(hooks),
                                              self.adapter.shared.logprobs or LOGITS in hooks)  # fmt: skip
        pooling = torch.from_numpy(np.stack([t.pooling() for t in moved]))  # (B, n_words, T)
        words = [word_states(h, pooling) for h in output.hidden]  # L+1 x (B, n, d)
        logprob = None if output.logits is None else sentence_logprob(output.logits, ids)
        points = requested(record_hooks(output), hooks, len(moved)) if hooks else None  # none asked: none gathered
        return token_pass(output.hidden, words, logprob, points)

    def attention_slots(self, orders: torch.Tensor) -> torch.Tensor:
        slots = [self.tokens.token_permutation(tuple(p)) for p in orders.tolist()]
        return torch.tensor(slots, device=orders.device)  # (B, T)

    def word_maps(self, maps: list[torch.Tensor], order: Permutation) -> list[torch.Tensor]:
        """Tokens grouped to words as the word states are: a word's query row is the mean of its sub-tokens' rows,
        its key column the sum of theirs. Specials ([CLS], [SEP], BOS) are no words: each row is then divided by
        the attention its query gave the words, so that it is a distribution over them (float64)."""
        queries = torch.from_numpy(self.tokens.permuted(order).pooling())  # (n, T): mean over a word's sub-tokens
        keys = (queries > 0).double()  # (n, T): sum over them
        grouped = [queries @ grid.double().cpu() @ keys.T for grid in maps]  # L x (h, n, n)
        return [grid / grid.sum(dim=-1, keepdim=True) for grid in grouped]


def token_pass(
    tokens: list[torch.Tensor], words: list[torch.Tensor], logprob: torch.Tensor | None, hooks: Hooks | None = None
) -> Pass:
    """The Pass of token states L+1 x (B, T, d) and their word states L+1 x (B, n, d), with each layer's
    sentence vectors."""
    vectors = [sentence_vectors(h) for h in tokens]
    return Pass(words, {how: [v[how] for v in vectors] for how in vectors[0]}, logprob, hooks or {})


def sentence_vectors(tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """Token states (B, T, d) -> {pooling: (B, d)}: the mean over all tokens (BOS, [CLS] and [SEP] included, as
    sentence-transformers') and the first token's."""
    return {"mean": pool(tokens, "mean"), "cls": cls(tokens)}


def record_hooks(output: Forward) -> Hooks:
    """A transformers model's hook points, on its token slots: per layer l (from 1) the input (l = 1: the
    embeddings, absolute positions added) and the attention pattern (when the pass formed it) as it returns them, the
    points its modules formed (models/hf/sites.py: the block's output among them, before any final norm), and a
    causal LM's logits."""
    hooks: Hooks = {}
    for layer in range(1, len(output.hidden)):
        hooks[hook_name(layer, "input")] = output.hidden[layer - 1]  # (B, T, d)
        if output.attention:
            hooks[hook_name(layer, "pattern")] = output.attention[layer - 1]  # (B, h, T, T)
    if output.logits is not None:
        hooks[LOGITS] = output.logits  # (B, T, V)
    return {**hooks, **output.points}
