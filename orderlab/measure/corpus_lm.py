"""Corpus mode's language-model scores (metric family lm_logprob): each line's log P against its shuffles'.

A causal LM scores every line of the file and the shuffles corpus.plan drew for it (the same orders the similarity
rows use), each through the adapter's sentence passes: a line of one token per word walks the shared-prefix trie
(models/kv_prefix.py), others run dense. Per line: the original's log P, its shuffles', whether the original is
preferred (scored at least as high as every shuffle: rank 1, as in original_rank), whether that answer is a tie,
and the mean log P change per token; per length group: the share of lines whose original is preferred over the
lines it decides, the ties beside it, the mean change per token, and the perplexity of the originals and of the
shuffles over their tokens (Sinha et al. 2021's "acceptance" read from the original's side). Kept apart from
corpus.py's similarities: either runs without the other.

A tie is the tie rule of the rest of orderlab (measure/verdicts.ties, as the loop judges permutation_preferred and
minimal_pair_preferred): the margin between the original's log P and its best shuffle's lies within the round-off
of the original's log P, measured against the condition's twin in its finer precision.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from orderlab.core.progress import Progress
from orderlab.measure.corpus import LENGTH_GROUPS, Plan, length_group, shuffle_frame
from orderlab.measure.verdicts import noise_scale, ties
from orderlab.metrics import LOGPROB, LOGPROB_DELTA
from orderlab.models.precision import dtype_name

if TYPE_CHECKING:
    from orderlab.models.pretrained import PretrainedAdapter

LM_SENTENCES, LM_SUMMARY = "lm_sentences", "lm_summary"  # the tables' names: lm_sentences.csv, lm_summary.csv


def score(adapter: PretrainedAdapter, work: Plan, batch_size: int, progress: Progress | None = None) -> np.ndarray:
    """log P of every sequence of the plan, in plan order (S,): each line with its shuffles, batch_size at a time."""
    scores = np.empty(len(work.owner), dtype=np.float64)
    at = 0
    for line, shuffles in zip(work.lines, work.permutations, strict=True):
        bound = adapter.sentence(line.words)
        orders = [tuple(range(len(line.words))), *shuffles]  # plan order: the line (shuffle 0), then its shuffles
        for start in range(0, len(orders), batch_size):
            chunk = torch.tensor(orders[start : start + batch_size], dtype=torch.long, device=adapter.device)
            logprob = bound.forward(chunk).logprob
            if logprob is None:
                raise ValueError(f"{adapter.label}: the model gives no log-probabilities; expected a causal LM")
            scores[at : at + len(chunk)] = logprob.double().cpu().numpy()
            at += len(chunk)
        if progress:
            progress(at, len(work.owner))
    return scores


def round_offs(adapter: PretrainedAdapter, twin: PretrainedAdapter, work: Plan) -> np.ndarray:
    """Per line (L,), the round-off of its original's log P: |log P - the twin's log P|, scaled to the adapter's
    own precision (verdicts.noise_scale), as the loop measures a sentence's (loop.measure_noise)."""
    found = np.empty(len(work.lines), dtype=np.float64)
    for index, line in enumerate(work.lines):
        identity = torch.arange(len(line.words), device=adapter.device)[None]  # (1, n)
        mine, theirs = adapter.sentence(line.words).forward(identity), twin.sentence(line.words).forward(identity)
        assert mine.logprob is not None and theirs.logprob is not None, "a causal LM's passes give log P"
        scale = noise_scale(dtype_name(adapter.computed_dtype(line.words)), dtype_name(twin.dtype))
        found[index] = float((mine.logprob.double() - theirs.logprob.double().to(mine.logprob.device)).abs()) * scale
    return found


def predicted_tokens(adapter: PretrainedAdapter, work: Plan) -> list[int]:
    """Per line, the tokens log P sums over: every token after the first (BOS), the same for each of its orders."""
    return [adapter.sentence(line.words).tokens.n_tokens - 1 for line in work.lines]


def shuffle_rows(work: Plan, scores: np.ndarray, label: str) -> pd.DataFrame:
    """metrics.csv rows, as corpus.shuffle_rows writes them: per shuffle its log P and its change from the line's."""
    keep, base = shuffle_frame(work, label)
    original = scores[np.flatnonzero(work.shuffle == 0)][work.owner[keep]]
    values = {LOGPROB: scores[keep], LOGPROB_DELTA: scores[keep] - original}
    return pd.concat([base.assign(metric=name, value=v) for name, v in values.items()], ignore_index=True)


def sentence_rows(
    work: Plan, scores: np.ndarray, tokens: list[int], label: str, round_off: np.ndarray, dtype: str
) -> pd.DataFrame:
    """lm_sentences.csv: one row per line of the file under this condition; `tie` 1 where the original's margin over
    its best shuffle lies within the round-off of its log P (round_off, per line; dtype: the run's)."""
    rows = []
    for index, line in enumerate(work.lines):
        mine = scores[work.owner == index]  # the line, then its shuffles (plan order)
        original, shuffled = float(mine[0]), mine[1:]
        best = float(shuffled.max())
        tied = ties(np.array([original - best]), float(round_off[index]), np.array([max(abs(original), abs(best))]),
                    dtype)  # fmt: skip
        rows.append({
            "encoding": label, "sentence_id": line.line, "sentence": line.sentence, "words": len(line.words),
            "tokens": tokens[index], "shuffles": len(shuffled), "logprob_original": original,
            "logprob_shuffled_mean": float(shuffled.mean()), "logprob_shuffled_max": float(shuffled.max()),
            "original_preferred": int(bool((shuffled <= original).all())), "tie": int(tied[0]),
            "logprob_round_off": float(round_off[index]),
            "logprob_change_per_token": float((shuffled - original).mean()) / tokens[index],
        })  # fmt: skip
    return pd.DataFrame(rows)


def summary_rows(sentences: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """lm_summary.csv: per condition and length group (and 'all'): the share of lines whose original is preferred
    over the lines it decides (a tie left out, and counted in `ties`), with its count, the mean log P change per
    token, and perplexity exp(-sum log P / sum tokens) of the originals and of the shuffles."""
    groups = [(label, sentences[sentences["words"].map(length_group) == label]) for *_, label in LENGTH_GROUPS]
    rows = []
    for encoding in encodings:
        for label, part in [*groups, ("all", sentences)]:
            part = part[part["encoding"] == encoding]
            if part.empty:
                continue
            decided = part[part["tie"] == 0]
            preferred = int(decided["original_preferred"].sum())
            shuffled_tokens = float((part["tokens"] * part["shuffles"]).sum())
            shuffled_logprob = float((part["logprob_shuffled_mean"] * part["shuffles"]).sum())
            rows.append({
                "encoding": encoding, "length": label, "sentences": len(part), "original_preferred": preferred,
                "original_preferred_rate": preferred / len(decided) if len(decided) else math.nan,
                "ties": len(part) - len(decided),
                "logprob_change_per_token": float(part["logprob_change_per_token"].mean()),
                "perplexity_original": math.exp(-float(part["logprob_original"].sum()) / float(part["tokens"].sum())),
                "perplexity_shuffled": math.exp(-shuffled_logprob / shuffled_tokens),
            })  # fmt: skip
    return pd.DataFrame(rows)
