"""Causal prefix sharing for a causal LM of the zoo: each distinct word prefix of a chunk run once, through a KV cache.

The synthetic stack's trie walk (orderlab/models/prefix_trie.py: trie_depths, state_rows) over a transformers model's
own cache. BOS is the root, run once; at depth t every distinct prefix of t + 1 words feeds its last word's token
after its parent prefix's keys and values (gathered on the batch dimension by Cache.reorder_cache), with the
position ids (GPT-2's table, Llama's rotation) and the attention mask (BLOOM's ALiBi) that the model derives
from the cache's length, under the ablation's hooks as a dense pass. Token states are gathered back to (B, T, d)
per layer; a reordering's log-probability sums its words' terms, each read from its parent's next-token
distribution. Every call runs on whole row tiles (pad_to_tiles), so results do not depend on the chunk.

Valid only for a sentence of one token per word after a single BOS (a word is one trie edge), for the ablations
a family declares (Family.cached_ablations), and without attention maps or hook points: models/pretrained.py
runs the rest dense. Knows nothing of metrics or of the measuring loop.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from orderlab.families import FAMILIES, Family
from orderlab.metrics import ATTENTION_FAMILY
from orderlab.models.batching import pad_to_tiles
from orderlab.models.hf.grouping import WordTokens
from orderlab.models.hf.loader import PretrainedBackend
from orderlab.models.hf.slot_cache import slot_cache
from orderlab.models.precision import widened
from orderlab.models.prefix_trie import gather_rows, state_rows, trie_depths
from orderlab.spec.model_specs import HFModelSpec
from orderlab.spec.schema import Spec


@dataclass(frozen=True)
class SharedForward:
    """What the dense pass gives the adapter, computed once per prefix."""

    hidden: list[torch.Tensor]  # L+1 x (B, T, d): token states, BOS at slot 0, as the dense pass's (none: not asked)
    logprob: torch.Tensor  # (B,): each reordering's log-probability, as sentence_logprob's


def one_token_words(tokens: WordTokens) -> bool:
    """Whether the sentence is one BOS, then one token per word and nothing after: each word is one trie edge."""
    n = len(tokens.spans)
    return tokens.n_tokens == n + 1 and tokens.spans == tuple((slot, slot + 1) for slot in range(1, n + 1))


def shared_pass(
    backend: PretrainedBackend, tokens: WordTokens, orders: torch.Tensor, states: bool = True
) -> SharedForward:
    """The dense pass over tokens reordered by orders (B, n), each distinct word prefix run once (see the module).

    states=False: log-probabilities only (hidden empty). The last word's term is read from its parent's logits, so the
    deepest depth, which runs each order's last word for its own state alone (the most prefixes: n! of all orders),
    is never run; every term is computed as with states (the same calls, on the same rows)."""
    B, n = orders.shape
    orders = orders.to(backend.device)
    depths = trie_depths(orders, backend.row_alignment)
    words = torch.tensor([tokens.ids[start] for start, _ in tokens.spans], device=backend.device)  # (n,) token ids
    root = pad_to_tiles(torch.tensor(tokens.ids[:1], device=backend.device), backend.row_alignment)  # BOS: a row tile
    terms = []  # per depth (B,): log P(slot t's word | the prefix before it)
    keyword = cache_keyword(backend.model)
    with backend.code.ablate(backend.model, backend.ablation, backend.seed):
        out = next_tokens(backend, root, slot_cache(backend.model.config.num_hidden_layers, n + 1), keyword)
        kept = [[h[:1, 0]] for h in out.hidden_states]  # per layer, per depth (U, d); the root once
        parents = 1  # distinct prefixes at the previous depth (the root: BOS)
        for depth in depths:
            new = words.index_select(0, depth.word)  # (U,)
            terms.append(torch.log_softmax(widened(out.logits[:, -1]), dim=-1)[depth.parent, new][depth.of_order])
            if not states and depth is depths[-1]:
                break  # the last word's own pass feeds only its state
            if depth.distinct != parents:  # else parent[i] == i (sorted keys; padding repeats row 0): keep the cache
                getattr(out, keyword).reorder_cache(depth.parent)  # each prefix's cache: its parent's
            out, parents = next_tokens(backend, new, getattr(out, keyword), keyword), depth.distinct
            for layer, h in zip(kept, out.hidden_states, strict=True) if states else ():
                layer.append(h[:, 0])
    logprob = torch.stack(terms, dim=1).sum(dim=-1)
    if not states:
        return SharedForward([], logprob)
    rows = torch.cat([torch.zeros_like(orders[:, :1]), 1 + state_rows(depths)], dim=1).flatten()  # (B T): BOS row 0
    hidden = [widened(gather_rows(torch.cat(layer), rows).view(B, n + 1, -1)) for layer in kept]
    return SharedForward(hidden, logprob)


def next_tokens(backend: PretrainedBackend, ids: torch.Tensor, cache: Any, keyword: str) -> Any:
    """One token per row, ids (U,), after the cache's prefixes (None: the first token); the model's output."""
    past = 0 if cache is None else cache.get_seq_length()
    mask = torch.ones(len(ids), past + 1, dtype=torch.long, device=ids.device) if backend.code.needs_mask else None
    return backend.model(input_ids=ids[:, None], attention_mask=mask, use_cache=True, output_hidden_states=True,
                         **{keyword: cache})  # fmt: skip


def cache_keyword(model: Any) -> str:
    """The KV cache's name in the model's forward and output: `cache` from transformers 5.24 (which deprecates
    `past_key_values`, a warning that would be an error under the tests' filterwarnings), `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def prefix_sharing(spec: Spec) -> dict[str, str]:
    """For a spec with a causal zoo model, how each ablation runs (manifest.json's `prefix_sharing`); else empty.

    Keyed by the ablation's label (spec/model_specs.py), or by 'family/label' where the family is swept.
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
        )
        for family in families
        if FAMILIES.get(family).causal
        for ablation in model.position_embeddings
    }


def sharing_note(code: Family, ablation: str, maps: bool, checkpoint: bool, hooked: bool = False) -> str:
    """'shared', or 'dense: why', for one ablation of a causal family (checkpoint: its own tokenizer, which may split
    a word; hooked: with the user's functions at hook points)."""
    if maps:
        return "dense: attention maps asked for (the attention metric); cached passes do not return them"
    if hooked:
        return "dense: the user's hooks (model.user_hooks) see whole sequences, never one token after a cache"
    if ablation not in code.cached_ablations:
        return f"dense: {code.name} does not declare {ablation} exact with a KV cache (Family.cached_ablations)"
    if checkpoint:
        return "shared for sentences whose every word is one token; dense for the others"
    return "shared"
