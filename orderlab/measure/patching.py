"""Activation patching between orders (the spec's `patching:` block; orderlab.api.patch is its door).

For a source order and a target order of one input, the source's run is recorded at every chosen hook point and
layer, then the target's run is repeated with one slot group's tokens of one point replaced by the source's
(spec/patching_block.py defines a slot and how a target slot is matched to the source's tokens). The effect is read
on one output and normalised as the share of the full difference that the patch recovers:

    a scalar (the last word's log P):           (patched - target) / (source - target)
    a state (the last slot's last-layer state): 1 - |patched - source| / |target - source|

The scalar is the last word's log P given the words before it, not the whole sentence's: two orders' sentences score
different tokens at every moved slot, so no patch could move one's log P to the other's; the last word (kept in place
by a reordering of the words before it) is the same token in both runs.
so 0 is "nothing moved with the patch" and 1 "everything did". Reading and writing both go through the one hook
channel of the model (the user's hooks: models/hf/interventions.py on a transformers model, the stack's record() on
the attention stack; measure/patch_targets.py), at the same place of the pass, so any point a function may write
there can be patched, q, k, v and attention's maps on their own token axis (core/hook_points.TOKEN_AXES); the
patched runs of one point and layer (one per slot group) go through the model together. Every share is measured
again by the round-off twin, and judged against that round-off as every metric is (measure/verdicts.py): within its
line of 0 the patch recovers none, within its line of 1 the whole, else part; a pair whose full difference is itself
round-off has nothing to recover (indistinguishable, share NaN).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from orderlab.core import permutations as perms
from orderlab.core.hook_points import hook_name, point_of, token_axes
from orderlab.core.text import tokenize
from orderlab.errors import OrderlabError
from orderlab.measure.adapters import Adapter, build_adapters
from orderlab.measure.patch_targets import Channel, Ran, check_writable, patchable
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.measure.verdicts import noise_scale, round_off_lines
from orderlab.models.precision import dtype_name
from orderlab.models.user_hooks import UserHook
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.patching_block import PatchingSpec
from orderlab.spec.schema import Spec
from orderlab.spec.sweep import SweptValue, plan
from orderlab.vocabulary.verdict_words import INDISTINGUISHABLE, NON_FINITE, PATCH_NONE, PATCH_PART, PATCH_WHOLE

if TYPE_CHECKING:
    from orderlab.models.hf.grouping import WordTokens

PATCHING = "patching"  # a run's patching.csv (beside metrics.csv), as results/run_writer.py writes its tables
SHARE = "share"  # the column of the recovered share
COLUMNS = ("encoding", "input", "source", "target", "point", "layer", "slots", SHARE, "round_off", "verdict")


@dataclass(frozen=True)
class OrderPair:
    """The order whose activations are copied (source) and the order whose run receives them (target)."""

    source: perms.Permutation
    target: perms.Permutation


@dataclass(frozen=True)
class Recovered:
    """One pair's effects in one precision: the full difference, and per hook name x slot group the share."""

    full: float
    shares: np.ndarray  # (names, groups)


def measure_patching(spec: Spec, spec_file: Path, options: RunOptions = DEFAULTS) -> pd.DataFrame:
    """One row per sweep combination x condition x input x pair x point x layer x slot group (COLUMNS after the
    sweep's own), with the share recovered, its round-off line and its verdict."""
    block = spec.patching
    if block is None:
        raise OrderlabError("patching: the spec has no patching block; expected patching: {points: [output]}")
    if isinstance(spec.inputs, CorpusInputs):
        raise OrderlabError("patching: a corpus spec's sentences are a file; expected inputs: - sentence: ...")
    rows: list[dict[str, object]] = []
    configurations = plan(spec)
    for done, configuration in enumerate(configurations, start=1):
        concrete = configuration.spec
        adapters = build_adapters(concrete, options.device, spec_file, given=options.model, user_hooks=options.hooks)
        for adapter in adapters:
            rows += _condition_rows(adapter, concrete, block, configuration.columns)
        if options.progress:
            options.progress(done, len(configurations))  # sweep combinations patched
    return pd.DataFrame(rows)


def _condition_rows(
    adapter: Adapter, spec: Spec, block: PatchingSpec, columns: dict[str, SweptValue]
) -> list[dict[str, object]]:
    names = _names(block, adapter)  # refused here, once: no point to write
    twin = adapter.twin()
    rows: list[dict[str, object]] = []
    for sentence, words, pairs in _inputs(spec, block):
        groups = slot_groups(block.slots, len(words))
        scale = noise_scale(dtype_name(adapter.computed_dtype(words)), dtype_name(twin.dtype))
        for pair in pairs:
            measured = recovered(adapter, words, pair, names, groups, block)
            finer = recovered(twin, words, pair, names, groups, block)
            shares, lines, verdicts = judged(measured, finer, scale, spec.model.dtype)
            for i, name in enumerate(names):
                layer, _, point = name.partition(".")
                for j, group in enumerate(groups):
                    rows.append({**columns, "encoding": adapter.label, "input": sentence,
                                 "source": perms.label(pair.source), "target": perms.label(pair.target),
                                 "point": point, "layer": int(layer), "slots": group_label(group),
                                 SHARE: shares[i, j], "round_off": lines[i, j], "verdict": verdicts[i, j]})  # fmt: skip
    return rows


def _names(block: PatchingSpec, adapter: Adapter) -> list[str]:
    """The hook names patched, point by point and layer by layer; a layer past the model's or a point no function may
    write on it is refused in one line, by the check the user's own hooks pass (patch_targets.check_writable)."""
    n_layers = adapter.n_layers
    layers = list(range(1, n_layers + 1)) if block.layers == "all" else block.layers
    if max(layers) > n_layers:
        raise OrderlabError(f"patching: layers {block.layers}: the model has {n_layers}; expected layers 1..{n_layers}")
    names = [hook_name(layer, point) for point in block.points for layer in layers]
    try:
        check_writable(adapter, recorders(names, {}))
    except OrderlabError as refused:
        raise OrderlabError(f"patching: points: {str(refused).removeprefix('hooks: ')}") from None
    return names


def _inputs(spec: Spec, block: PatchingSpec) -> Iterator[tuple[str, list[str], list[OrderPair]]]:
    """Each distinct input (sorted, as metrics.csv's) with its words and the pairs of orders patched."""
    rules: dict[str, list[perms.Rule]] = {}
    for item in spec.sentences:
        rules.setdefault(item.sentence, []).append(item.permutations)
    for sentence in sorted(rules):
        words = tokenize(sentence, spec.embeddings.lowercase)
        identity = tuple(range(len(words)))
        if block.pairs == "reorderings":
            targets = perms.in_label_order_range(rules[sentence], words, spec.seed)
            pairs = [OrderPair(identity, target) for target in targets if target != identity]
        else:
            pairs = [OrderPair(_order(source, words), _order(target, words)) for source, target in block.pairs]
        yield sentence, words, pairs


def _order(order: list[int], words: list[str]) -> perms.Permutation:
    if sorted(order) != list(range(len(words))):
        raise OrderlabError(f"patching: pairs: {order} is no order of the {len(words)} words of "
                            f"{' '.join(words)!r}; expected a permutation of 0..{len(words) - 1}")  # fmt: skip
    return tuple(order)


def slot_groups(slots: str | list[list[int]], n: int) -> list[tuple[int, ...]]:
    """The slot groups patched together: each slot alone and then all (each), all of them (all), or as listed."""
    every = tuple(range(n))
    if slots == "each":
        return [(slot,) for slot in every] + [every]
    if slots == "all":
        return [every]
    assert isinstance(slots, list)
    for group in slots:
        if any(slot >= n for slot in group):
            raise OrderlabError(f"patching: slots: {group} reaches past the {n} word slots of an input; expected "
                                f"slots from 0 to {n - 1}")  # fmt: skip
    return [tuple(group) for group in slots]


def group_label(group: tuple[int, ...]) -> str:
    """'0+2': slots 0 and 2 patched together; 'none': nothing patched."""
    return "+".join(str(slot) for slot in group) or "none"


def recovered(
    adapter: Adapter, words: list[str], pair: OrderPair, names: list[str], groups: list[tuple[int, ...]],
    block: PatchingSpec,
) -> Recovered:  # fmt: skip
    """The share each slot group of each hook name recovers, in this adapter's precision: one pass of the source and
    the target, recording every name, then one pass per name with every group's patched run in it."""
    model = patchable(adapter, words)
    tokens = model.tokens
    source, target = tokens.permuted(pair.source), tokens.permuted(pair.target)
    reads = source_tokens(source, target, pair, block.match)
    masks = slot_masks(target, groups)
    recorded: dict[str, torch.Tensor] = {}
    ids = torch.tensor([source.ids, target.ids])
    with torch.inference_mode(), added_hooks(model.channel, recorders(names, recorded)):
        ends = effect_of(model.forward(ids), ids, [source.spans[-1], target.spans[-1]], block.effect)
    patched_ids = torch.tensor([target.ids] * len(groups))
    shares = np.empty((len(names), len(groups)))
    for i, name in enumerate(names):
        with torch.inference_mode(), added_hooks(model.channel, writers([name], recorded, reads, masks)):
            patched = effect_of(model.forward(patched_ids), patched_ids, [target.spans[-1]] * len(groups),
                                block.effect)  # fmt: skip
        shares[i] = share_of(ends[0], ends[1], patched, block.effect)
    return Recovered(float((ends[0] - ends[1]).norm()), shares)  # |source - target|: a scalar's, a state's


def source_tokens(source: WordTokens, target: WordTokens, pair: OrderPair, match: str) -> torch.Tensor:
    """(T,): the source token each target token reads when patched. By position, target slot k reads the source's
    slot k; by word, the source's slot that holds the same word. Specials read their own place (never patched). A
    slot whose token count differs from the one it reads is refused: no token-by-token copy exists."""
    reads = list(range(target.n_tokens))
    for slot, (start, stop) in enumerate(target.spans):
        read = slot if match == "position" else pair.source.index(pair.target[slot])
        begin, end = source.spans[read]
        if end - begin != stop - start:
            raise OrderlabError(f"patching: slot {slot} has {stop - start} token(s) in the target and {end - begin} in "
                                "the source slot it reads; expected match: word, or one token a word")  # fmt: skip
        reads[start:stop] = range(begin, end)
    return torch.tensor(reads)


def in_target_slots(source: torch.Tensor, reads: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    """The source's point (one row, its batch axis gone) in the target's slots: each token axis (token_axes: the
    queries' and the keys' of an attention map) reordered by `reads`."""
    for axis in axes:
        source = source.index_select(axis - 1, reads.to(source.device))
    return source


def slot_masks(target: WordTokens, groups: list[tuple[int, ...]]) -> torch.Tensor:
    """(G, T) bool: the target tokens each group patches."""
    masks = torch.zeros(len(groups), target.n_tokens, dtype=torch.bool)
    for row, group in enumerate(groups):
        for slot in group:
            masks[row, slice(*target.spans[slot])] = True
    return masks


@contextmanager
def added_hooks(channel: Channel, hooks: Mapping[str, UserHook]) -> Iterator[None]:
    """While open, `hooks` run beside the user's own (the one hook channel); a point that has the user's is refused."""
    own = channel.user_hooks
    clash = sorted(set(own) & set(hooks))
    if clash:
        raise OrderlabError(f"patching: {clash[0]!r} has a function of yours (hooks=); expected patching elsewhere")
    channel.user_hooks = {**own, **hooks}
    try:
        yield
    finally:
        channel.user_hooks = own


def recorders(names: list[str], into: dict[str, torch.Tensor]) -> dict[str, UserHook]:
    """A function per name that keeps what passes its point in `into` and changes nothing."""
    return {name: _recorder(name, into) for name in names}


def writers(
    names: list[str], recorded: Mapping[str, torch.Tensor], reads: torch.Tensor, masks: torch.Tensor
) -> dict[str, UserHook]:
    """A function per name that writes the source's recorded point (row 0 of `recorded`) in the target's slots
    (`reads`) into each slot group of a pass (`masks`): several names at once patch their points together."""
    return {
        name: _writer(name, in_target_slots(recorded[name][0], reads, token_axes(point_of(name))), masks)
        for name in names
    }


def _recorder(name: str, into: dict[str, torch.Tensor]) -> UserHook:
    """A function that keeps what passes its point and changes nothing."""

    def record(tensor: torch.Tensor) -> torch.Tensor:
        into[name] = tensor.detach().clone()
        return tensor

    return record


def _writer(name: str, value: torch.Tensor, masks: torch.Tensor) -> UserHook:
    """A function that gives row g of a pass the source's `value` (the point without its batch axis) at the tokens
    masks[g] marks on the point's slot axis (token_axes' first: q's third); rows past the groups' (a batch padded to
    whole row tiles) pass unchanged."""
    axis = token_axes(point_of(name))[0]

    def write(tensor: torch.Tensor) -> torch.Tensor:
        groups, tokens = masks.shape
        if tensor.dim() <= axis or tensor.shape[axis] != tokens or tensor.shape[1:] != value.shape:
            raise OrderlabError(f"patching: {name!r} is {tuple(tensor.shape)}; expected {tokens} tokens on its axis "
                                f"{axis}, as its source's {tuple(value.shape)} after the batch")  # fmt: skip
        shape = [groups if dim == 0 else tokens if dim == axis else 1 for dim in range(tensor.dim())]
        where = masks.to(tensor.device).reshape(shape)
        head = torch.where(where, value.to(tensor)[None], tensor[:groups])
        return torch.cat([head, tensor[groups:]])

    return write


def effect_of(forward: Ran, ids: torch.Tensor, lasts: list[tuple[int, int]], effect: str) -> torch.Tensor:
    """Each row's output judged, in float64, at its last slot (tokens start..stop-1): the last word's log P given the
    words before it (B,), or its word state at the last layer (B, d) (the mean of its tokens, as every word state)."""
    from orderlab.models.pretrained import token_logprobs

    if effect == "last_logprob":
        if forward.logits is None:
            raise OrderlabError("patching: effect: last_logprob needs a causal LM's logits; expected effect: state")
        logprobs = token_logprobs(forward.logits, ids).double().cpu()  # (B, T-1): token t's at t-1
        return torch.stack([logprobs[row, start - 1 : stop - 1].sum() for row, (start, stop) in enumerate(lasts)])
    last = forward.hidden[-1]
    return torch.stack([last[row, start:stop].mean(0) for row, (start, stop) in enumerate(lasts)]).double().cpu()


def share_of(source: torch.Tensor, target: torch.Tensor, patched: torch.Tensor, effect: str) -> np.ndarray:
    """(G,) the share of the source-target difference each patched row recovers (0: none, 1: all)."""
    if effect == "last_logprob":
        shares = (patched - target) / (source - target)
    else:
        shares = 1 - (patched - source).norm(dim=-1) / (target - source).norm(dim=-1)
    return np.asarray(shares.numpy(), dtype=np.float64)


def judged(measured: Recovered, finer: Recovered, scale: float, dtype: str) -> tuple[np.ndarray, ...]:
    """Shares, their round-off lines and verdicts: within the line of 0 none, of 1 the whole, else part (written as 0
    and 1 within their lines, so digits of round-off never churn); NaN with indistinguishable where the full
    difference is itself within its round-off."""
    full_line = round_off_lines(np.array([abs(measured.full - finer.full) * scale]), dtype)[0]
    lines = round_off_lines(np.abs(measured.shares - finer.shares) * scale, dtype)
    shares = measured.shares
    finite = np.isfinite(shares) & np.isfinite(lines)
    none, whole = np.abs(shares) <= lines, np.abs(1 - shares) <= lines
    verdicts = np.where(none, PATCH_NONE, np.where(whole, PATCH_WHOLE, PATCH_PART)).astype(object)
    verdicts = np.where(finite, verdicts, NON_FINITE)
    shares = np.where(finite & none, 0.0, np.where(finite & whole, 1.0, shares))
    if np.isfinite(full_line) and measured.full <= full_line:
        return np.full_like(shares, np.nan), lines, np.full(shares.shape, INDISTINGUISHABLE, dtype=object)
    return shares, lines, verdicts
