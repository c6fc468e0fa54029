"""Causal prefix sharing for a causal LM of the zoo: each distinct word prefix of a chunk run once, through a KV cache.

The synthetic stack's trie walk (orderlab/models/prefix_trie.py: trie_depths, state_rows) over a transformers model's
own cache. BOS is the root, run once; at depth t every distinct prefix of t + 1 words feeds its last word's token
after its parent prefix's keys and values (gathered on the batch dimension by Cache.reorder_cache), with the
position ids (GPT-2's table, Llama's rotation) and the attention mask (BLOOM's ALiBi) that the model derives
from the cache's length, under the ablation's hooks as a dense pass. Token states are gathered back to (B, T, d)
per layer; a reordering's log-probability sums its words' terms, each read from its parent's next-token
distribution. Every call runs on whole row tiles (pad_to_tiles), so results do not depend on the chunk.
Opt-in (Batching.packed_tokens), the top depths run first as one call over a packed tree of their prefixes
(top_pass, models/packed_trie.py), for the families that declare it (Family.packed_ablations): fewer, larger calls
for a GPU, the walk's numbers to round-off.

Valid only for a sentence of one token per word after a single BOS (a word is one trie edge), for the ablations
a family declares (Family.cached_ablations), and without attention maps or writes at hook points: models/pretrained.py
runs the rest dense. Points read per token (models/walk_points.py) come from the walk's own calls. Knows nothing of
metrics or of the measuring loop.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from orderlab.core.hook_points import LOGITS
from orderlab.families import FAMILIES, Family
from orderlab.metrics import ATTENTION_FAMILY
from orderlab.models.batching import pad_to_tiles, padded_to
from orderlab.models.hf.capture import Capture, bucket
from orderlab.models.hf.grouping import WordTokens
from orderlab.models.hf.loader import PretrainedBackend, no_logits
from orderlab.models.hf.slot_cache import cache_classes, slot_cache
from orderlab.models.packed_trie import TreeLayout, packed_depths, tree_layout
from orderlab.models.precision import widened
from orderlab.models.prefix_trie import gather_rows, state_rows, trie_depths
from orderlab.models.walk_points import WalkPoints
from orderlab.spec.model_specs import HFModelSpec
from orderlab.spec.schema import Spec


@dataclass(frozen=True)
class SharedForward:
    """What the dense pass gives the adapter, computed once per prefix."""

    hidden: list[torch.Tensor]  # L+1 x (B, T, d): token states, BOS at slot 0, as the dense pass's (none: not asked)
    logprob: torch.Tensor | None  # (B,): each reordering's log-probability, as sentence_logprob's (None: not asked)
    logits: torch.Tensor | None = None  # (B, T, V): next-token logits, as the dense pass's (None: not asked)
    points: dict[str, torch.Tensor] = field(default_factory=dict)  # the points asked for that a module forms


def one_token_words(tokens: WordTokens) -> bool:
    """Whether the sentence is one BOS, then one token per word and nothing after: each word is one trie edge."""
    n = len(tokens.spans)
    return tokens.n_tokens == n + 1 and tokens.spans == tuple((slot, slot + 1) for slot in range(1, n + 1))


def shared_pass(
    backend: PretrainedBackend,
    tokens: WordTokens,
    orders: torch.Tensor,
    states: bool = True,
    packed_tokens: int = 0,
    points: Sequence[str] = (),
    logprobs: bool = True,
    capture: Capture | None = None,
) -> SharedForward:
    """The dense pass over tokens reordered by orders (B, n), each distinct word prefix run once (see the module).

    states=False: log-probabilities only (hidden empty). The last word's term is read from its parent's logits, so the
    deepest depth, which runs each order's last word for its own state alone (the most prefixes: n! of all orders),
    is never run; every term is computed as with states (the same calls, on the same rows).
    packed_tokens: the top depths that fit this many tokens run as one call (top_pass), where the family declares it
    exact (Family.packed_ablations); the same numbers to round-off, not bit for bit. 0: one call per depth.
    points: hook points to read (models/walk_points.py: those a module forms; logits), each as the dense pass's; with
    states and one call per depth only.
    logprobs=False: no log-probabilities (logprob None), and no call runs the LM head unless the logits are a point
    read: a run whose metrics read states alone.
    capture: each depth's own call runs through it (models/hf/capture.py) on its rows padded to a static shape
    bucket; the root's and the packed call run eager. Not with points, whose hooks change at every call."""
    assert not points or (states and not packed_tokens and capture is None), "points are read at each depth's call"
    assert states or logprobs, "a pass reads its states, its log-probabilities or both"
    heads = logprobs or LOGITS in points  # whether any call's logits are read
    B, n = orders.shape
    orders = orders.to(backend.device)
    depths = trie_depths(orders, backend.row_alignment)
    run = depths if states else depths[:-1]  # the depths whose own pass is read
    words = torch.tensor([tokens.ids[start] for start, _ in tokens.spans], device=backend.device)  # (n,) token ids
    terms = []  # per depth (B,): log P(slot t's word | the prefix before it)
    keyword = cache_keyword(backend.model)
    packed = packed_depths(run, packed_tokens, backend.row_alignment) if packs(backend, packed_tokens) else 0
    read = WalkPoints(backend, points)
    with backend.reading(), backend.widening():
        if packed:
            logits, kept, cache = top_pass(backend, tree_layout(run[:packed], backend.row_alignment), words,
                                           tokens.ids[0], keyword, n, heads)  # fmt: skip
        else:  # BOS: the root, run once on a row tile
            root = pad_to_tiles(torch.tensor(tokens.ids[:1], device=backend.device), backend.row_alignment)
            with read.call(len(root), keep=1):
                cache = slot_cache(backend.model.config.num_hidden_layers, n + 1)
                out = next_tokens(backend, root, cache, keyword, logits=heads)
            logits = [out.logits[:, -1]] if heads else []
            kept, cache = [[h[:1, 0]] for h in out.hidden_states], getattr(out, keyword)
        parents = 1 if packed == 0 else run[packed - 1].distinct  # distinct prefixes in the cache
        cached = len(kept[0][-1]) if packed else backend.row_alignment  # rows in the cache (its prefixes, padded)
        for t, depth in enumerate(depths):  # logits[t]: the next-token logits of depth t's parents
            new = words.index_select(0, depth.word)  # (U,)
            if logprobs:
                terms.append(torch.log_softmax(widened(logits[t]), dim=-1)[depth.parent, new][depth.of_order])
            if heads and LOGITS not in points:  # read: its rows (prefixes x vocabulary) freed, as one call's were
                logits[t] = logits[t][:0]
            if t < packed:
                continue  # its own pass is in the packed call
            if t == len(run):
                break  # the last word's own pass feeds only its state
            size = len(new) if capture is None else bucket(len(new), backend.row_alignment)
            if depth.distinct != parents or cached != size:  # else parent[i] == i (sorted keys; padding repeats row 0)
                cache.reorder_cache(padded_to(depth.parent, size))  # each prefix's cache: its parent's
            head = heads and (t < len(depths) - 1 or LOGITS in points)  # nothing reads the full orders' logits
            with read.call(len(new)):
                out = next_tokens(backend, padded_to(new, size), cache, keyword, logits=head, capture=capture)
            parents, cached = depth.distinct, size
            if head:
                logits.append(out.logits[: len(new), -1])
            cache = getattr(out, keyword)
            for layer, h in zip(kept, out.hidden_states, strict=True) if states else ():
                layer.append(h[: len(new), 0])
    logprob = torch.stack(terms, dim=1).sum(dim=-1) if logprobs else None
    if not states:
        return SharedForward([], logprob)
    rows = torch.cat([torch.zeros_like(orders[:, :1]), 1 + state_rows(depths)], dim=1).flatten()  # (B T): BOS row 0
    hidden = [widened(gather_rows(torch.cat(layer), rows).view(B, n + 1, -1)) for layer in kept]
    every = None
    if LOGITS in points:  # the root's row, then each depth's prefixes', as the states
        every = widened(gather_rows(torch.cat([logits[0][:1], *logits[1:]]), rows).view(B, n + 1, -1))
    return SharedForward(hidden, logprob, every, read.gathered(rows, B, n + 1))


MASKED_ATTENTION = ("eager", "sdpa")  # implementations that apply a 4D mask as given (flash attention drops it)


def packs(backend: PretrainedBackend, packed_tokens: int) -> bool:
    """Whether top depths may run packed: asked for, declared exact for the ablation, attention that applies the
    ancestor mask (a model passed from Python may run another), and a slot cache to fill."""
    implementation = getattr(backend.model.config, "_attn_implementation", None)
    return (packed_tokens > 0 and backend.ablation in backend.code.packed_ablations
            and implementation in MASKED_ATTENTION and cache_classes() is not None)  # fmt: skip


def top_pass(
    backend: PretrainedBackend,
    layout: TreeLayout,
    words: torch.Tensor,
    bos: int,
    keyword: str,
    n: int,
    heads: bool = True,
) -> tuple[list[torch.Tensor], list[list[torch.Tensor]], Any]:
    """The packed depths of `layout` in one call (ancestor mask, each token at its depth's position): the next-token
    logits of the root and of each depth's prefixes, each layer's states of the root and of each depth's prefixes
    (as the walk keeps them), and a slot cache of n + 1 slots holding the deepest packed depth's prefixes' keys and
    values, each gathered from its tokens' slots in order. heads=False: no logits (none returned, no LM head run)."""
    ids = torch.where(layout.word < 0, bos, words.index_select(0, layout.word.clamp(min=0)))
    blocked = torch.finfo(backend.dtype).min  # as transformers' own additive masks: eager adds it, sdpa takes it
    mask = torch.zeros(layout.mask.shape, dtype=backend.dtype, device=ids.device).masked_fill(~layout.mask, blocked)
    layers = backend.model.config.num_hidden_layers
    given = {keyword: slot_cache(layers, len(ids))}  # filled with every packed token's keys and values
    out = backend.model(input_ids=ids[None], attention_mask=mask[None, None], position_ids=layout.position[None],
                        use_cache=True, output_hidden_states=True, **given,
                        **({} if heads else no_logits(backend.model, ids)))  # fmt: skip
    rows = [torch.zeros(1, dtype=torch.long, device=ids.device), *layout.rows]  # the root's slot, then each depth's
    logits = [out.logits[0].index_select(0, slots) for slots in rows] if heads else []
    kept = [[h[0].index_select(0, slots) for slots in rows] for h in out.hidden_states]
    cache = slot_cache(layers, n + 1)
    for walked, packed in zip(cache.layers, getattr(out, keyword).layers, strict=True):
        walked.update(*(tensor[0][:, layout.ancestors].transpose(0, 1) for tensor in (packed.keys, packed.values)))
    return logits, kept, cache


def next_tokens(
    backend: PretrainedBackend, ids: torch.Tensor, cache: Any, keyword: str, logits: bool = True,
    capture: Capture | None = None,
) -> Any:  # fmt: skip
    """One token per row, ids (U,), after the cache's prefixes (None: the first token); the model's output, from the
    model itself or through `capture` (models/hf/capture.py).
    logits=False: the LM head skipped where the model's forward can (`logits_to_keep`, transformers 4.50 and later):
    its logits then hold no position. At 8 words the deepest depth holds 37% of a chunk's prefixes, and GPT-2's head
    (768 x 50,257) is 31% of a token's matmul work."""
    past = 0 if cache is None else cache.get_seq_length()
    mask = torch.ones(len(ids), past + 1, dtype=torch.long, device=ids.device) if backend.code.needs_mask else None
    kept = {} if logits else no_logits(backend.model, ids)
    model = backend.model if capture is None else capture
    return model(input_ids=ids[:, None], attention_mask=mask, use_cache=True, output_hidden_states=True,
                 **{keyword: cache}, **kept)  # fmt: skip


def cache_keyword(model: Any) -> str:
    """The KV cache's name in the model's forward and output: `cache` from transformers 5.24 (which deprecates
    `past_key_values`, a warning that would be an error under the tests' filterwarnings), `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def prefix_sharing(spec: Spec, packed_tokens: int = 0, capture: str = "") -> dict[str, str]:
    """For a spec with a causal zoo model, how each ablation runs (manifest.json's `prefix_sharing`); else empty.

    Keyed by the ablation's label (spec/model_specs.py), or by 'family/label' where the family is swept.
    packed_tokens: the run's budget for packed top depths (Decisions.packed_tokens; 0: off); capture: the walk
    calls' torch.compile backend (Decisions.capture; "": eager).
    """
    model = spec.model
    if not isinstance(model, HFModelSpec):
        return {}
    families = model.family if isinstance(model.family, list) else [model.family]
    maps = ATTENTION_FAMILY in spec.metrics
    return {
        model.label(ablation) if len(families) == 1 else f"{family}/{model.label(ablation)}": sharing_note(
            FAMILIES.get(family),
            ablation,
            maps,
            not model.seeded,
            bool(model.user_hooks),
            packed_tokens,
            capture,
        )
        for family in families
        if FAMILIES.get(family).causal
        for ablation in model.position_embeddings
    }


def sharing_note(
    code: Family, ablation: str, maps: bool, checkpoint: bool, hooked: bool = False, packed_tokens: int = 0,
    capture: str = "",
) -> str:  # fmt: skip
    """'shared', or 'dense: why', for one ablation of a causal family (checkpoint: its own tokenizer, which may split
    a word; hooked: with the user's functions at hook points; packed_tokens: the run's budget for packed top depths,
    named where the family packs this ablation; capture: the walk calls' torch.compile backend, named if any)."""
    if maps:
        return "dense: attention maps asked for (the attention metric); cached passes do not return them"
    if hooked:
        return "dense: the user's hooks (model.user_hooks) see whole sequences, never one token after a cache"
    if ablation not in code.cached_ablations:
        return f"dense: {code.name} does not declare {ablation} exact with a KV cache (Family.cached_ablations)"
    packs = packed_tokens and ablation in code.packed_ablations
    how = f", top depths packed in one call up to {packed_tokens} tokens" if packs else ""
    how += f", calls captured by torch.compile ({capture}) in static shape buckets" if capture else ""
    if checkpoint:
        return f"shared{how} for sentences whose every word is one token; dense for the others"
    return f"shared{how}"
