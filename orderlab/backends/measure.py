"""Single sentences through a pretrained model: tidy rows in the runner's columns, one per ablation.

The `encoding` column holds the position ablation (trained, zero, shuffled, sinusoidal). The metrics
(orderlab/metric_registry.py, docs/metrics.md) come from orderlab.metrics: word-level ones on word states
(each word's sub-token states pooled), attention maps on sub-token slots (whole words moved), sentence
vectors pooled over all tokens (mean) or taken at [CLS].
Permutations go through the model in chunks, each compared with one reference pass.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from orderlab import metrics as M
from orderlab import permutations as perms
from orderlab.backends.grouping import WordTokens
from orderlab.backends.pooling import cls, word_states
from orderlab.backends.pretrained import Forward, PretrainedBackend
from orderlab.metric_registry import (
    ATTENTION_EQUIVARIANCE,
    ATTENTION_FAMILY,
    COSINE_CLS,
    COSINE_MEAN,
    EQUIVARIANCE,
    EQUIVARIANCE_FAMILY,
    INVARIANCE_CLS,
    INVARIANCE_FAMILY,
    INVARIANCE_MEAN,
    PAIR_COSINE,
    PAIR_COSINE_CLS,
    PAIR_DISTANCE_FAMILY,
    PAIR_L2,
    TOKEN_SHIFT,
    TOKEN_SHIFT_FAMILY,
)
from orderlab.noise import NoiseCollector, judge, merge
from orderlab.runner import RowCollector
from orderlab.spec import Spec
from orderlab.text import occurrence_matching, tokenize

CHUNK = 256  # permutations per forward pass


def _ids(tokens: list[WordTokens]) -> torch.Tensor:
    return torch.tensor([t.ids for t in tokens], dtype=torch.long)  # (B, T), all of one length


def _pooling(tokens: list[WordTokens]) -> torch.Tensor:
    return torch.from_numpy(np.stack([t.pooling() for t in tokens]))  # (B, n_words, T)


def measure_sentence(
    spec: Spec, backend: PretrainedBackend, twin: PretrainedBackend, sentence: str, rule, label: str
) -> list[pd.DataFrame]:
    """Rows for one sentence and its word permutations under the backend's current position table, with verdicts.

    twin: the same model in the other precision with the same positions; its pass measures the round-off.
    """
    wanted = set(spec.metrics)
    words = tokenize(sentence)
    original = backend.word_tokens(words)
    reference = backend.forward(_ids([original]), attention=ATTENTION_FAMILY in wanted)
    ref_words = [word_states(h, _pooling([original]))[0] for h in reference.hidden]  # L+1 x (n, d)
    noise = _noise(wanted, backend, twin, original, reference)
    frames = []
    chosen = perms.generate(rule, len(words), spec.seed)
    for start in range(0, len(chosen), CHUNK):
        chunk = chosen[start : start + CHUNK]
        moved = [original.permuted(p) for p in chunk]
        output = backend.forward(_ids(moved), attention=ATTENTION_FAMILY in wanted)
        reordered = [perms.apply(p, words) for p in chunk]
        rows = RowCollector("permutation", sentence, label, [perms.label(p) for p in chunk],
                            [" ".join(r) for r in reordered])  # fmt: skip
        slots = torch.tensor(chunk, dtype=torch.long, device=backend.device)  # (B, n)
        matching = torch.tensor([occurrence_matching(words, r) for r in reordered], device=backend.device)  # (B, n)
        _record(wanted, rows, reference, output, ref_words, _pooling(moved), slots, matching, original, chunk)
        frames.append(rows.frame())
        judge(frames[-1], noise.figures, spec.model.dtype)
    return frames


def _noise(wanted, backend: PretrainedBackend, twin: PretrainedBackend, tokens: WordTokens, reference: Forward):
    """Every metric between the twin's pass and this one's over the same tokens (identity permutation)."""
    other = _cast(twin.forward(_ids([tokens]), attention=ATTENTION_FAMILY in wanted), backend.dtype)
    identity = tuple(range(len(tokens.spans)))
    other_words = [word_states(h, _pooling([tokens]))[0] for h in other.hidden]
    slots = torch.tensor([identity], device=backend.device)  # (1, n)
    noise = NoiseCollector()
    _record(wanted, noise, other, reference, other_words, _pooling([tokens]), slots, slots, tokens, [identity])
    return noise


def _cast(forward: Forward, dtype: torch.dtype) -> Forward:
    return Forward([h.to(dtype) for h in forward.hidden], [a.to(dtype) for a in forward.attention])


def _record(wanted, rows, reference: Forward, output: Forward, ref_words, pooling, slots, matching, original, chunk):
    for layer, (h_x, h_px) in enumerate(zip(reference.hidden, output.hidden, strict=True)):
        h_x = h_x[0]  # (T, d)
        if EQUIVARIANCE_FAMILY in wanted or TOKEN_SHIFT_FAMILY in wanted:
            w_px = word_states(h_px, pooling)  # (B, n, d)
            if EQUIVARIANCE_FAMILY in wanted:
                rows.add(EQUIVARIANCE, layer, M.equivariance_error(w_px, ref_words[layer], slots))
            if TOKEN_SHIFT_FAMILY in wanted:
                rows.add(TOKEN_SHIFT, layer, M.token_shift(w_px, ref_words[layer], matching))
        if INVARIANCE_FAMILY in wanted:
            rows.add(INVARIANCE_MEAN, layer, M.invariance_error(h_px, h_x, "mean"))
            rows.add(INVARIANCE_CLS, layer, M.invariance_error(h_px, h_x, "first"))
            rows.add(COSINE_MEAN, layer, M.cosine_distance(M.pool(h_px, "mean"), M.pool(h_x, "mean")[None]))
            rows.add(COSINE_CLS, layer, M.cosine_distance(cls(h_px), h_x[0][None]))
    if ATTENTION_FAMILY in wanted:
        token_slots = torch.tensor([original.token_permutation(p) for p in chunk], device=slots.device)  # (B, T)
        for layer, (a_x, a_px) in enumerate(zip(reference.attention, output.attention, strict=True), start=1):
            errors = M.attention_equivariance_error(a_px, a_x[0], token_slots)  # (B, h)
            for head in range(errors.shape[1]):
                rows.add(ATTENTION_EQUIVARIANCE, layer, errors[:, head], head)


def measure_pair(
    spec: Spec, backend: PretrainedBackend, twin: PretrainedBackend, a: str, b: str, label: str
) -> pd.DataFrame:
    """Pooled distances of two sentences per layer, plus per-word token shift when b reorders a's words; judged."""
    wanted = set(spec.metrics)
    words_a, words_b = tokenize(a), tokenize(b)
    tokens_a, tokens_b = backend.word_tokens(words_a), backend.word_tokens(words_b)
    out_a, out_b = backend.forward(_ids([tokens_a])), backend.forward(_ids([tokens_b]))
    matching = occurrence_matching(words_a, words_b)
    rows = RowCollector("probe", a, label, [perms.label(matching) if matching else ""], [b])
    _record_pair(wanted, rows, out_a, out_b, tokens_a, tokens_b, matching)
    sides = []
    for tokens, out in ((tokens_a, out_a), (tokens_b, out_b)):
        other = _cast(twin.forward(_ids([tokens])), backend.dtype)
        sides.append(NoiseCollector())
        identity = list(range(len(tokens.spans)))
        _record_pair(wanted | {TOKEN_SHIFT_FAMILY}, sides[-1], other, out, tokens, tokens, identity)
    table = rows.frame()
    judge(table, merge(*sides), spec.model.dtype)
    return table


def _record_pair(wanted, rows, out_a: Forward, out_b: Forward, tokens_a, tokens_b, matching) -> None:
    for layer, (h_a, h_b) in enumerate(zip(out_a.hidden, out_b.hidden, strict=True)):
        if PAIR_DISTANCE_FAMILY in wanted:
            mean_a, mean_b = M.pool(h_a, "mean"), M.pool(h_b, "mean")  # (1, d)
            rows.add(PAIR_COSINE, layer, M.cosine_distance(mean_a, mean_b))
            rows.add(PAIR_COSINE_CLS, layer, M.cosine_distance(cls(h_a), cls(h_b)))
            rows.add(PAIR_L2, layer, M.relative_l2(mean_a, mean_b))
        if TOKEN_SHIFT_FAMILY in wanted and matching is not None:
            w_a, w_b = word_states(h_a, _pooling([tokens_a])), word_states(h_b, _pooling([tokens_b]))
            index = torch.tensor([matching], device=h_a.device)
            rows.add(TOKEN_SHIFT, layer, M.token_shift(w_b, w_a[0], index))
