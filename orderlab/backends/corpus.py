"""Corpus mode: every sentence of a file against K random word shuffles of itself, in batched passes.

All sequences (each sentence and its shuffles) are sorted by token count and cut into batches, so
padding stays small; each batch is one forward pass under the attention mask. Only the last
layer is kept, pooled two ways (mean as sentence-transformers, and [CLS]); the similarity of a
shuffle is the cosine between its pooled vector and its sentence's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from orderlab import permutations as perms
from orderlab.backends.corpustext import CorpusLine
from orderlab.backends.pooling import cls, masked_mean
from orderlab.backends.pretrained import PretrainedBackend
from orderlab.backends.specs import CorpusInputs
from orderlab.metric_registry import SIMILARITY_CLS, SIMILARITY_MEAN

# Sentence-length groups (words) of the summary: [low, high) -> label.
LENGTH_GROUPS = ((2, 5, "2-4"), (5, 9, "5-8"), (9, 13, "9-12"), (13, 21, "13-20"), (21, 10**9, "21+"))
POOLINGS = {"mean": SIMILARITY_MEAN, "cls": SIMILARITY_CLS}  # pooling -> the metric its similarities are written as

Progress = Callable[[int], None]  # called with the number of sequences just encoded


@dataclass(frozen=True)
class Plan:
    """Every sequence to encode; sequence s is shuffle `shuffle[s]` (0: the sentence itself) of sentence `owner[s]`."""

    lines: list[CorpusLine]
    permutations: list[list[perms.Permutation]]  # per sentence, its shuffles
    sequences: list[tuple[int, ...]]  # token ids
    owner: np.ndarray  # (S,)
    shuffle: np.ndarray  # (S,)


def shuffle_seed(seed: int, index: int) -> int:
    """A seed per sentence, independent of the corpus around it."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def plan(lines: list[CorpusLine], inputs: CorpusInputs, backend: PretrainedBackend) -> Plan:
    chosen: list[list[perms.Permutation]] = []
    sequences: list[tuple[int, ...]] = []
    owner: list[int] = []
    shuffle: list[int] = []
    for index, line in enumerate(lines):
        tokens = backend.word_tokens(line.words)
        count = min(inputs.shuffles, math.factorial(len(line.words)) - 1)
        shuffles = list(perms.random_distinct(len(line.words), count, shuffle_seed(inputs.seed, index)))
        chosen.append(shuffles)
        sequences += [tokens.ids] + [tokens.permuted(p).ids for p in shuffles]
        owner += [index] * (count + 1)
        shuffle += range(count + 1)
    return Plan(lines, chosen, sequences, np.array(owner), np.array(shuffle))


def encode(backend: PretrainedBackend, sequences: list[tuple[int, ...]], batch_size: int,
           progress: Progress | None = None) -> dict[str, torch.Tensor]:  # fmt: skip
    """Pooled last-layer vectors of every sequence, in input order: {"mean": (S, d), "cls": (S, d)}."""
    order = sorted(range(len(sequences)), key=lambda s: len(sequences[s]))
    width = backend.trained.shape[1]
    pooled = {how: torch.empty(len(sequences), width, dtype=torch.float64) for how in POOLINGS}
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        longest = len(sequences[batch[-1]])
        ids = torch.full((len(batch), longest), backend.pad_id, dtype=torch.long)  # (B, T)
        mask = torch.zeros(len(batch), longest, dtype=torch.long)  # (B, T)
        for row, s in enumerate(batch):
            ids[row, : len(sequences[s])] = torch.tensor(sequences[s])
            mask[row, : len(sequences[s])] = 1
        h = backend.last_hidden(ids, mask)  # (B, T, d)
        index = torch.tensor(batch)
        pooled["mean"][index] = masked_mean(h, mask.to(h.device)).double().cpu()
        pooled["cls"][index] = cls(h).double().cpu()
        if progress:
            progress(len(batch))
    return pooled


def similarities(work: Plan, pooled: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Cosine similarity of every shuffle with its own sentence, per pooling: {how: (S,)}; 1 for the originals."""
    originals = torch.from_numpy(np.flatnonzero(work.shuffle == 0))[torch.from_numpy(work.owner)]  # (S,)
    return {
        how: torch.nn.functional.cosine_similarity(vectors, vectors[originals], dim=-1).numpy()
        for how, vectors in pooled.items()
    }


def shuffle_rows(work: Plan, similarity: dict[str, np.ndarray], label: str) -> pd.DataFrame:
    """Tidy rows, one per (sentence, shuffle, pooling)."""
    keep = work.shuffle > 0
    owner, shuffle = work.owner[keep], work.shuffle[keep]
    base = pd.DataFrame({
        "sentence_id": [work.lines[o].line for o in owner],
        "words": [len(work.lines[o].words) for o in owner],
        "encoding": label,
        "shuffle": shuffle,
        "permutation": [perms.label(work.permutations[o][s - 1]) for o, s in zip(owner, shuffle, strict=True)],
    })  # fmt: skip
    frames = [base.assign(metric=metric, value=similarity[how][keep]) for how, metric in POOLINGS.items()]
    return pd.concat(frames, ignore_index=True)


def sentence_rows(shuffles: pd.DataFrame, work: Plan, threshold: float) -> pd.DataFrame:
    """One row per (sentence, encoding): mean, median, min similarity and share above the threshold."""
    wide = shuffles.pivot_table(index=["encoding", "sentence_id", "shuffle"], columns="metric", values="value")
    grouped = wide.groupby(level=["encoding", "sentence_id"])
    mean = grouped[SIMILARITY_MEAN]
    table = pd.DataFrame({
        "shuffles": mean.size(),
        "mean_similarity": mean.mean(),
        "median_similarity": mean.median(),
        "min_similarity": mean.min(),
        "share_above": mean.agg(lambda v: float((v > threshold).mean())),
        "cls_mean_similarity": grouped[SIMILARITY_CLS].mean(),
    }).reset_index()  # fmt: skip
    text = {line.line: (line.sentence, len(line.words)) for line in work.lines}
    table.insert(2, "sentence", table["sentence_id"].map(lambda i: text[i][0]))
    table.insert(3, "words", table["sentence_id"].map(lambda i: text[i][1]))
    return table


def length_group(words: int) -> str:
    return next(label for low, high, label in LENGTH_GROUPS if low <= words < high)


def summary_rows(shuffles: pd.DataFrame, encodings: list[str], threshold: float) -> pd.DataFrame:
    """Per encoding and sentence-length group (and 'all'): similarity statistics over all shuffles."""
    wide = shuffles.pivot_table(
        index=["encoding", "sentence_id", "words", "shuffle"], columns="metric", values="value"
    ).reset_index()
    groups = [(label, wide[wide["words"].map(length_group) == label]) for *_, label in LENGTH_GROUPS]
    rows = []
    for encoding in encodings:
        for label, part in [*groups, ("all", wide)]:
            part = part[part["encoding"] == encoding]
            if part.empty:
                continue
            rows.append({
                "encoding": encoding, "length": label, "sentences": part["sentence_id"].nunique(),
                "shuffles": len(part), "mean_similarity": part[SIMILARITY_MEAN].mean(),
                "median_similarity": part[SIMILARITY_MEAN].median(),
                "share_above": float((part[SIMILARITY_MEAN] > threshold).mean()),
                "cls_mean_similarity": part[SIMILARITY_CLS].mean(),
                "cls_median_similarity": part[SIMILARITY_CLS].median(),
            })  # fmt: skip
    return pd.DataFrame(rows)
