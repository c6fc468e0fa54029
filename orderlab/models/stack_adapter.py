"""The attention stack (models/attention_stack.py) as an adapter: one per encoding, all with the same seeded weights.

Words are the stack's tokens: a sentence is its seeded (or explicit) word vectors, a reordering
gathers them, and poolings are taken over words. Passes run on whole row tiles (batching.py), so a
sequence's numbers do not depend on the chunk it landed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import ClassVar

import torch

from orderlab.core.hook_points import ATTENTION_POINTS, HOOK_POINTS, PASS_POINTS, hook_name, point_of, unknown_point
from orderlab.core.permutations import Permutation
from orderlab.encodings import ENCODINGS, PositionalEncoding, build_encoding
from orderlab.errors import OrderlabError
from orderlab.families.family import ModelShape
from orderlab.metrics import STACK_POOLINGS, Model, Pooling
from orderlab.models.adapter_protocol import Adapter, HookRequest, Pass, requested
from orderlab.models.attention_stack import Hooks, LayerWeights, Requested
from orderlab.models.batching import Batching, aligned_batch
from orderlab.models.pooling import pool
from orderlab.models.precision import pass_dtype, widened
from orderlab.models.prefix_trie import shared_prefix_pass
from orderlab.models.stack_builder import build_stack, layer_weights, random_sentences, word_vectors
from orderlab.models.user_hooks import UserHook
from orderlab.spec.fields import twin_dtype
from orderlab.spec.schema import DecodabilitySpec, EncodingChoice, ModelSpec, Spec, encoding_context, longest_sentence

# (probe, d_model, seed) -> (S, length, d) float64: the position probe's input sentences
ProbeInputs = Callable[[DecodabilitySpec, int, int], torch.Tensor]


def random_probe_inputs(probe: DecodabilitySpec, d_model: int, seed: int) -> torch.Tensor:
    """(S, length, d) float64: the position probe's uniform random sentences (the default ProbeInputs)."""
    return random_sentences(probe.sentences, probe.length, probe.vocabulary, d_model, seed)


def stack_adapters(
    spec: Spec,
    device: torch.device,
    batching: Batching,
    share_prefixes: bool = True,
    compile_dense: bool = False,
    probe_inputs: ProbeInputs = random_probe_inputs,
    user_hooks: Mapping[str, UserHook] | None = None,
) -> list[Adapter]:
    """One adapter per encoding, in label order, with the same seeded weights (encodings differ only in position),
    its passes cut and padded by `batching`; user_hooks: the user's functions at the points the spec records by name
    (`model.user_hooks`), in every pass.

    share_prefixes=False runs causal stacks dense, as the benchmark's comparison does. compile_dense: dense passes go
    through torch.compile; the round-off twins, which run one sequence per input, never do. probe_inputs gives
    the position probe's sentences (a train: spec passes its task's, orderlab/train/adapters.py).
    """
    weights = layer_weights(spec)
    choices = sorted(spec.encodings, key=lambda choice: choice.label)
    writes = checked_writes(spec.stack, user_hooks or {})
    return [
        StackAdapter(spec, choice, weights, device, batching, None, share_prefixes, compile_dense, probe_inputs,
                     user_hooks=writes)
        for choice in choices
    ]  # fmt: skip


def prefix_sharing(spec: Spec) -> dict[str, str]:
    """For a spec with causal stacks, how each encoding runs them (manifest.json's `prefix_sharing`); else empty.

    'shared': each distinct prefix of a chunk computed once (orderlab/models/prefix_trie.py); 'dense: ...': every
    reordering computed whole, because the encoding does not declare that its hooks read earlier slots only.
    """
    if not isinstance(spec.model, ModelSpec):
        return {}  # a pretrained model, or a checkpoint's stack
    causal = spec.stack.causal
    if not any(causal if isinstance(causal, list) else [causal]):
        return {}
    notes = {}
    for choice in spec.encodings:
        shares = ENCODINGS.resolve(choice.name).shares_prefixes
        note = "shared" if shares else f"dense: {choice.name} does not declare shares_prefixes"
        notes[spec.stack.hooked_label(choice.label)] = HOOKED_DENSE if spec.stack.user_hooks else note
    return notes


HOOKED_DENSE = "dense: the user's hooks (model.user_hooks) change what later slots see; every order computed whole"


def formed_points(config: ModelSpec) -> tuple[str, ...]:
    """The per-layer points a stack of this shape forms (normed with norm: pre only; mid and mlp_out with an FFN)."""
    absent = {"normed"} if config.norm != "pre" else set()
    absent |= set() if config.ffn else {"mid", "mlp_out"}
    return tuple(point for point in HOOK_POINTS if point not in absent)


def checked_writes(config: ModelSpec, user_hooks: Mapping[str, UserHook]) -> dict[str, UserHook]:
    """The user's functions, checked to be the ones the spec records (`model.user_hooks`), each at a point this stack
    forms and callable; OrderlabError (one line naming the valid points) otherwise."""
    if set(config.user_hooks) != set(user_hooks):
        raise OrderlabError(f"hooks: the spec records {sorted(config.user_hooks)}, the run was given "
                            f"{sorted(user_hooks)}; expected orderlab.api.run(spec, hooks=...)")  # fmt: skip
    writable_on_stack(config, user_hooks)
    return dict(user_hooks)


def writable_on_stack(config: ModelSpec, hooks: Mapping[str, UserHook]) -> None:
    """OrderlabError ('hooks: ...', one line naming the valid points) for a function at a point this stack does not
    form (every point it forms may be written), or one that is not a function."""
    for name, function in hooks.items():
        problem = unknown_point(name, int(config.n_layers), formed_points(config))
        if problem is None and not callable(function):
            problem = f"{name!r}: {function!r}; expected a function of the point's tensor"
        if problem is not None:
            raise OrderlabError(f"hooks: {problem}")


class StackAdapter:
    """One encoding's stack; its twin shares the weights and the encoding object, in the other precision."""

    model: ClassVar[Model] = "stack"
    poolings: ClassVar[tuple[Pooling, ...]] = STACK_POOLINGS  # over the words
    hook_points: ClassVar[tuple[str, ...]] = (*PASS_POINTS, *HOOK_POINTS)  # position: an additive encoding's only

    def __init__(
        self,
        spec: Spec,
        choice: EncodingChoice,
        weights: list[LayerWeights],
        device: torch.device,
        batching: Batching,
        encoding: PositionalEncoding | None = None,
        share_prefixes: bool = True,
        compile_dense: bool = False,
        probe_inputs: ProbeInputs = random_probe_inputs,
        dtype: str | None = None,
        user_hooks: Mapping[str, UserHook] | None = None,
    ):
        """dtype: the stack's where it is not the spec's (the twin's other precision); user_hooks: the user's
        functions at hook points, checked (checked_writes), in every pass: its rows are labelled USER_HOOK."""
        self.spec, self.choice, self.weights, self.device, self.batching = spec, choice, weights, device, batching
        self.user_hooks = dict(user_hooks or {})
        self.label, self.probe_inputs = spec.stack.hooked_label(choice.label), probe_inputs
        context = replace(encoding_context(spec, longest_sentence(spec)), device=str(device))
        self.encoding = encoding or build_encoding(choice.name, context, choice.params)
        self.stack = build_stack(spec.stack, self.encoding, weights, device, dtype)
        self.config, self.dtype = self.stack.config, pass_dtype(self.stack.dtype)
        self.allow_sharing = share_prefixes
        self.compiles = compile_dense and not self.shares_prefixes and not self.user_hooks
        if self.compiles:
            self.stack.compile()

    @property
    def n_layers(self) -> int:
        return self.config.n_layers

    @property
    def shares_prefixes(self) -> bool:
        """Whether a causal stack computes each distinct prefix of a chunk once (prefix_trie.py): where its encoding
        allows, and while no function changes what later slots see (the user's, or patching's, added for a while:
        measure/patching.py)."""
        return self.allow_sharing and self.config.causal and self.encoding.shares_prefixes and not self.user_hooks

    def sentence(self, words: list[str]) -> StackSentence:
        return StackSentence(self, words)

    def compilation(self) -> dict[str, float | str] | None:
        """How torch.compile served this stack's dense passes (manifest.json's torch_compile); None if not asked.

        compile_seconds: the first compiled call's wall time, compilation included; or fallback: why it ran eager.
        """
        if not self.compiles:
            return None
        if self.stack.compile_failure:
            return {"fallback": self.stack.compile_failure}
        seconds = self.stack.compile_seconds
        return {"compile_seconds": round(seconds, 2)} if seconds is not None else {"fallback": "no dense pass ran"}

    def twin(self) -> StackAdapter:
        return StackAdapter(self.spec, self.choice, self.weights, self.device, self.batching, self.encoding,
                            self.allow_sharing, probe_inputs=self.probe_inputs,
                            dtype=twin_dtype(self.config.dtype), user_hooks=self.user_hooks)  # fmt: skip

    def finer(self) -> StackAdapter:
        """The twin: a stack's twin already cuts its passes as this one's (prefixes shared alike, the same batching)."""
        return self.twin()

    def computed_dtype(self, words: list[str]) -> torch.dtype:
        computed: torch.dtype = self.stack.dtype  # one dtype throughout (a user's encoding's output is cast to it)
        return computed

    def chunk_size(self, n: int, attention: bool) -> int:
        c = self.config
        shape = ModelShape(c.d_model, c.n_layers, c.n_heads, c.ffn_mult * c.d_model, vocab=0)
        return self.batching.chunk_size("stack", shape, n, attention, False, self.dtype.itemsize)

    def random_sentences(self, probe: DecodabilitySpec, seed: int) -> list[torch.Tensor]:
        """The probe's sentences through a stack built for their length (an encoding may depend on max_len)."""
        spec = self.spec
        context = replace(encoding_context(spec, max(longest_sentence(spec), probe.length)), device=str(self.device))
        encoding = build_encoding(self.choice.name, context, self.choice.params)
        stack = build_stack(spec.stack, encoding, self.weights, self.device, self.config.dtype)
        written = Requested((), self.user_hooks) if self.user_hooks else None
        return [widened(h) for h in stack(self.probe_inputs(probe, self.config.d_model, seed), hooks=written).hidden]


class StackSentence:
    """A sentence's word vectors, ready to be reordered and run through one stack."""

    def __init__(self, adapter: StackAdapter, words: list[str]):
        self.adapter, self.words = adapter, words
        self.x = word_vectors(adapter.spec, words).to(device=adapter.device, dtype=adapter.dtype)  # (n, d)

    def forward(self, orders: torch.Tensor, hooks: HookRequest = ()) -> Pass:
        """Asked for attention maps alone, a causal stack that shares prefixes forms them in its shared pass; other
        points come from the dense pass, explicit only when one of them, read or written by the user's functions, is
        attention's own (ATTENTION_POINTS), so that a request for states keeps the fused kernel."""
        B, adapter = orders.shape[0], self.adapter
        points = {point_of(name) for name in hooks}
        if adapter.shares_prefixes and points <= {"pattern"}:
            output = shared_prefix_pass(adapter.stack, self.x, orders, bool(hooks), adapter.batching.row_alignment)
            filled: Hooks = {hook_name(layer, "pattern"): a for layer, a in enumerate(output.attention, 1)}
        else:  # padded to whole row tiles
            filled = Requested(hooks, adapter.user_hooks)
            explicit = bool((points | {point_of(name) for name in adapter.user_hooks}) & set(ATTENTION_POINTS))
            x = aligned_batch(self.x[orders], adapter.batching.row_alignment)
            output = adapter.stack(x, explicit, filled if hooks or adapter.user_hooks else None)
        hidden = [widened(h[:B]) for h in output.hidden]  # L+1 x (B, n, d)
        pooled: dict[str, list[torch.Tensor]] = {how: [pool(h, how) for h in hidden] for how in adapter.poolings}
        return Pass(hidden, pooled, hooks={name: widened(t) for name, t in requested(filled, hooks, B).items()})

    def slot_names(self) -> list[str]:
        return self.words

    def attention_slots(self, orders: torch.Tensor) -> torch.Tensor:
        return orders  # the stack's slots are the words

    def word_maps(self, maps: list[torch.Tensor], order: Permutation) -> list[torch.Tensor]:
        return maps  # the stack's slots are the words
