"""Causal prefix sharing: a chunk of reorderings run through a causal stack once per distinct prefix.

Under a causal mask the state of slot t depends only on the words in slots 0..t, so reorderings
that share a prefix share those states. Reorderings arrive in label (lexicographic) order, so a
chunk is a contiguous walk of the permutation trie: depth by depth, each distinct prefix of the
chunk is computed once, its new token attending over the keys and values cached from its parent
prefix. At n = 8 a chunk of 862 reorderings holds about 2,350 distinct prefixes against 6,896
token positions. Memory is one chunk's: the walk goes layer by layer, and a layer's cache holds two
depths' prefixes at a time.

Valid only for encodings whose hooks, at slot t, depend on slots <= t and not on the sentence's
length, with a rotation linear slot by slot (`PositionalEncoding.shares_prefixes`); others run dense. The result
is the dense pass's (same StackOutput, word-level) to round-off, and the same whatever the chunk:
every matmul runs on whole row tiles (batching.py). Knows nothing of specs or metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from orderlab.models.attention_stack import AttentionStack, RunLayer, StackOutput
from orderlab.models.batching import pad_to_tiles

Rotation = tuple[torch.Tensor, torch.Tensor] | None  # slot t's rotation of q and of k, (h, dh, dh) each


@dataclass(frozen=True)
class Depth:
    """The distinct prefixes of length t + 1 in a chunk, padded to whole row tiles."""

    parent: torch.Tensor  # (U,) index of each prefix's parent among the previous depth's prefixes
    word: torch.Tensor  # (U,) the word each prefix adds at slot t
    of_order: torch.Tensor  # (B,) which prefix each reordering has at this depth
    distinct: int  # prefixes before padding


def trie_depths(orders: torch.Tensor, alignment: int) -> list[Depth]:
    """orders (B, n): per depth t, the distinct prefixes orders[:, :t+1], each linked to its parent prefix, padded to
    a multiple of `alignment` rows."""
    B, n = orders.shape
    depths: list[Depth] = []
    parent_of_order = torch.zeros(B, dtype=torch.long, device=orders.device)
    for t in range(n):
        keys, of_order = torch.unique(parent_of_order * n + orders[:, t], return_inverse=True)  # sorted, so trie order
        distinct = len(keys)
        keys = pad_to_tiles(keys, alignment)
        depths.append(Depth(keys // n, keys % n, of_order, distinct))
        parent_of_order = of_order
    return depths


def state_rows(depths: list[Depth]) -> torch.Tensor:
    """(B, n): row of each reordering's slot-t prefix in the depths' (padded) states stacked one after another."""
    starts = [0]
    for depth in depths[:-1]:
        starts.append(starts[-1] + len(depth.word))
    return torch.stack([start + depth.of_order for start, depth in zip(starts, depths, strict=True)], dim=1)


def gather_rows(states: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """states[rows] for states (N, d), as an embedding lookup: several times faster than index_select into a fresh
    tensor for these shapes (docs/performance.md, "What was tried")."""
    return torch.nn.functional.embedding(rows, states)


def distinct_prefixes(orders: torch.Tensor) -> int:
    """How many token states the shared pass computes for these reorderings (the dense pass: B * n)."""
    return sum(depth.distinct for depth in trie_depths(orders, 1))


def shared_prefix_pass(
    stack: AttentionStack, x: torch.Tensor, orders: torch.Tensor, attention: bool, alignment: int
) -> StackOutput:
    """stack(x[orders]) for a causal stack, computed once per distinct prefix: x (n, d) words, orders (B, n); each
    depth's rows padded to a multiple of `alignment`.

    Layer by layer: a layer needs only its input layer's prefix states, so one layer's cache and two layers' states
    are held at a time. Every depth's prefixes go through the layer's block together (norms, projections, FFN: one
    op each over all of them, each depth's rows on whole row tiles); only the one-query attention walks the trie
    depth by depth, since a prefix attends over its parent's cache.
    """
    B, n = orders.shape
    x = x.to(device=stack.device, dtype=stack.dtype)
    offsets = stack.encoding.input_offsets(n)
    words = x if offsets is None else x[None] + offsets.to(x)[:, None]  # (n words, d) or (n slots, n words, d)
    depths = trie_depths(orders.to(stack.device), alignment)
    rows = state_rows(depths).flatten()  # (B n): where each reordering's slot-t state lies among all depths' states
    rotations = slot_rotations(stack, n)
    states = torch.cat([(words if offsets is None else words[t]).index_select(0, depth.word)
                        for t, depth in enumerate(depths)])  # (all depths' prefixes, d)  # fmt: skip
    hidden, maps = [gather_rows(states, rows).view(B, n, -1)], []
    for layer in stack.layers:
        walk = partial(trie_attention, stack, layer, depths=depths, rotations=rotations, maps=attention)
        states, layer_maps = stack.block(states, layer, walk)
        hidden.append(gather_rows(states, rows).view(B, n, -1))
        maps += [] if layer_maps is None else [layer_maps]
    return StackOutput(hidden, maps)


def trie_attention(
    stack: AttentionStack, layer: RunLayer, x: torch.Tensor, depths: list[Depth], rotations: list[Rotation], maps: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One layer's attention for every depth's prefixes: x (all depths' prefixes, d) normed -> output (same shape) and,
    if maps, the reorderings' weights (B, h, n, n).

    The projections run once over all depths (one op each rather than a block per depth: fewer, larger matmuls), the
    one-query attention depth by depth. Every depth's rows start on a whole row tile (pad_to_tiles), so the one matmul
    gives each row the numbers a matmul per depth gave (the shipped causal results stay byte-equal). Figures, and why
    longer chunks do not pay here: docs/performance.md, "What was tried".
    """
    c = stack.config
    n = len(depths)
    qkv = (x @ layer.w_qkv).split_with_sizes([len(depth.word) for depth in depths])  # per depth (U, 3d) = [q | k | v]
    cache = x.new_empty(len(depths[0].word), n, 2 * c.d_model)  # (U, n, 2d): rotated key and value per slot
    heads, layer_maps = [], x.new_zeros(len(depths[0].of_order), c.n_heads, n, n) if maps else None
    for t, depth in enumerate(depths):
        if t:
            cache = inherit(cache, depth, depths[t - 1], t)
        attended, weights = one_query_attention(stack, qkv[t], cache, t, rotations[t])
        heads.append(attended)
        if layer_maps is not None:
            layer_maps[:, :, t, : t + 1] = weights[depth.of_order]
    return torch.cat(heads) @ layer.w_o, layer_maps


def slot_rotations(stack: AttentionStack, n: int) -> list[Rotation]:
    """The encoding's rotation of q and of k at each slot t as (h, dh, dh) matrices (row vectors: q @ R), or Nones.

    The encoding rotates the unit vectors placed in every slot of an n-slot sequence once; slot t is read back.
    Rotating the one new token of each prefix is then a small matmul, where rotating a sequence per prefix
    cost more than the prefix's own projections.
    """
    h, dh = stack.config.n_heads, stack.config.d_head
    basis = torch.eye(dh, dtype=stack.dtype, device=stack.device)[:, None, None, :].expand(dh, h, n, dh)
    q, k = stack.encoding.rotate(basis, basis)
    if q is basis and k is basis:
        return [None] * n
    q, k = q.to(stack.dtype).permute(2, 1, 0, 3), k.to(stack.dtype).permute(2, 1, 0, 3)  # (n, h, dh, dh)
    return [(q[t], k[t]) for t in range(n)]


def inherit(cache: torch.Tensor, depth: Depth, parents: Depth, t: int) -> torch.Tensor:
    """Depth t's cache from its parents' (U, n, 2d): slots 0..t-1 gathered row by row, slot t left to be written.

    Where each parent has one child (the last slot of a full trie) the parents' cache is taken over as it is.
    """
    if depth.distinct == parents.distinct:  # parent[i] == i: the trie's keys are sorted, padding repeats row 0
        return cache
    inherited = cache.new_empty(len(depth.parent), *cache.shape[1:])
    torch.index_select(cache[:, :t], 0, depth.parent, out=inherited[:, :t])
    return inherited


def one_query_attention(
    stack: AttentionStack, qkv: torch.Tensor, cache: torch.Tensor, t: int, rotation: Rotation
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of the token at slot t of U prefixes over slots 0..t: its projections qkv (U, 3d) -> the heads (U, d),
    before the output projection, and weights (U, h, t + 1), the dense attention's row t
    (tests/unit/models/test_prefix_sharing.py).
    Writes the token's rotated key and value into slot t of cache (U, n, 2d), whose slots 0..t-1 hold its prefix's.

    One query per prefix: its scores and weighted sum are elementwise products summed over the head's dimensions and
    over the slots, rather than the fused kernel's U * h one-row products: they are bound by memory, not dispatch, and
    the alternatives tried were no faster or moved the round-off (docs/performance.md, "What was tried").
    """
    c = stack.config
    U, d = qkv.shape[0], c.d_model
    h, dh = c.n_heads, c.d_head
    if rotation is None:
        q = qkv[:, :d]
        cache[:, t] = qkv[:, d:]
    else:  # slot t's rotation, as (h, dh, dh) matrices
        q = torch.einsum("uhd,hde->uhe", qkv[:, :d].view(U, h, dh), rotation[0]).reshape(U, d)
        cache[:, t, :d] = torch.einsum("uhd,hde->uhe", qkv[:, d : 2 * d].view(U, h, dh), rotation[1]).reshape(U, d)
        cache[:, t, d:] = qkv[:, 2 * d :]
    keys = cache[:, : t + 1, :d].view(U, t + 1, h, dh)  # strided views
    values = cache[:, : t + 1, d:].view(U, t + 1, h, dh)
    scores = stack.scaled((keys * q.view(U, 1, h, dh)).sum(-1))  # (U, t + 1, h)
    # the bias hook sees t + 1 query slots (this token's query in each); slot t's row is read back
    head_q = q.view(U, h, 1, dh)
    bias = stack.encoding_bias(head_q.expand(-1, -1, t + 1, -1), keys.transpose(1, 2))
    if bias is not None:
        row = bias[..., t:, :]  # slot t's row: no mask needed
        row = row.reshape((1,) * (4 - row.dim()) + row.shape)[:, :, 0]  # (U or 1, h or 1, t + 1)
        scores = scores + row.transpose(1, 2)
    weights = scores.softmax(dim=1)  # (U, t + 1, h)
    heads = (weights[..., None] * values).sum(1)  # (U, h, dh)
    return heads.view(U, d), weights.transpose(1, 2)
