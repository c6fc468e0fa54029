"""Corpus mode: every sentence of a file against K random word shuffles of itself, through a model adapter.

Sentences are bound and reordered by a pretrained adapter (models/pretrained.py), so every family of
the zoo gets corpus mode from the same tokens and ablations as single sentences; the adapter runs
reorderings of several sentences with one token count in one pass (last_pooled), batch_size at a time.
Only the last layer is kept, pooled the ways the adapter defines (mean as sentence-transformers, and
[CLS] for encoders); the similarity of a shuffle is the cosine between its pooled vector and its sentence's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from orderlab.core import permutations as perms
from orderlab.core.corpustext import CorpusLine
from orderlab.core.progress import Progress
from orderlab.metrics import SIMILARITY_CLS, SIMILARITY_MEAN, all_metrics
from orderlab.spec.model_specs import CorpusInputs

if TYPE_CHECKING:
    from orderlab.models.pretrained import PretrainedAdapter

# Sentence-length groups (words) of the summary: [low, high) -> label.
LENGTH_GROUPS = ((2, 5, "2-4"), (5, 9, "5-8"), (9, 13, "9-12"), (13, 21, "13-20"), (21, 10**9, "21+"))
# pooling -> the metric its similarities are written as: the registry's corpus metrics, each with its pooling
POOLINGS: dict[str, str] = {m.pooling: m.name for m in all_metrics() if m.reduction == "corpus" and m.pooling}


@dataclass(frozen=True)
class Plan:
    """Every sequence to encode; sequence s is shuffle `shuffle[s]` (0: the sentence itself) of sentence `owner[s]`."""

    lines: list[CorpusLine]
    permutations: list[list[perms.Permutation]]  # per sentence, its shuffles
    owner: np.ndarray  # (S,)
    shuffle: np.ndarray  # (S,)

    def order(self, s: int) -> perms.Permutation:
        """Sequence s's word order (slot i holds word order[i])."""
        owner, shuffle = int(self.owner[s]), int(self.shuffle[s])
        return self.permutations[owner][shuffle - 1] if shuffle else tuple(range(len(self.lines[owner].words)))


def shuffle_seed(seed: int, index: int) -> int:
    """A seed per sentence, independent of the corpus around it."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def plan(lines: list[CorpusLine], inputs: CorpusInputs) -> Plan:
    """Every line and its shuffles: K seeded draws (fewer where the line has fewer orders), each a word sequence
    other than the line's and each other's as written, so swapping two copies of a word is never a shuffle."""
    chosen: list[list[perms.Permutation]] = []
    owner: list[int] = []
    shuffle: list[int] = []
    for index, line in enumerate(lines):
        count = line.shuffles(inputs.shuffles)
        chosen.append(list(perms.random_distinct(len(line.words), count, shuffle_seed(inputs.seed, index), line.words)))
        owner += [index] * (count + 1)
        shuffle += range(count + 1)
    return Plan(lines, chosen, np.array(owner), np.array(shuffle))


def poolings(adapter: PretrainedAdapter) -> dict[str, str]:
    """pooling -> the similarity metric it is written as, for the poolings the adapter defines."""
    return {how: metric for how, metric in POOLINGS.items() if how in adapter.poolings}


def encode(
    adapter: PretrainedAdapter, work: Plan, batch_size: int, progress: Progress | None = None
) -> dict[str, torch.Tensor]:
    """Pooled last-layer vectors of every sequence, in plan order: {"mean": (S, d), "cls": (S, d)} (as defined).

    Sequences of one token count share passes, batch_size at a time, whichever sentences they come from (every
    order of a sentence has its tokens): nothing is padded or masked, so each vector is the one its sentence's
    own pass gives, and the model runs full batches instead of one small batch per sentence.
    """
    bound = [adapter.sentence(line.words) for line in work.lines]
    tokens = np.array([bound[o].tokens.n_tokens for o in work.owner])  # (S,)
    pooled: dict[str, list[torch.Tensor]] = {how: [] for how in poolings(adapter)}
    encoded: list[np.ndarray] = []  # the plan indices of each pass's rows
    done = 0
    for count in np.unique(tokens):
        same = np.flatnonzero(tokens == count)
        for start in range(0, len(same), batch_size):
            batch = same[start : start + batch_size]
            output = adapter.last_pooled([(bound[work.owner[s]], work.order(s)) for s in batch])
            for how, vectors in pooled.items():
                vectors.append(output[how].double().cpu())
            encoded.append(batch)
            done += len(batch)
            if progress:
                progress(done, len(work.owner))
    in_plan_order = torch.from_numpy(np.argsort(np.concatenate(encoded)))
    return {how: torch.cat(vectors)[in_plan_order] for how, vectors in pooled.items()}


def similarities(work: Plan, pooled: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Cosine similarity of every shuffle with its own sentence, per pooling: {how: (S,)}; 1 for the originals."""
    originals = torch.from_numpy(np.flatnonzero(work.shuffle == 0))[torch.from_numpy(work.owner)]  # (S,)
    return {
        how: torch.nn.functional.cosine_similarity(vectors, vectors[originals], dim=-1).numpy()
        for how, vectors in pooled.items()
    }


def shuffle_rows(work: Plan, similarity: dict[str, np.ndarray], label: str) -> pd.DataFrame:
    """Tidy rows, one per (sentence, shuffle, pooling)."""
    keep, base = shuffle_frame(work, label)
    frames = [base.assign(metric=POOLINGS[how], value=values[keep]) for how, values in similarity.items()]
    return pd.concat(frames, ignore_index=True)


def shuffle_frame(work: Plan, label: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Which of the plan's passes are shuffles, and a row per shuffle (sentence, words, condition, shuffle, its
    order) that each metric's rows extend with their values."""
    keep = work.shuffle > 0
    owner, shuffle = work.owner[keep], work.shuffle[keep]
    base = pd.DataFrame({
        "sentence_id": [work.lines[o].line for o in owner],
        "words": [len(work.lines[o].words) for o in owner],
        "encoding": label,
        "shuffle": shuffle,
        "permutation": [perms.label(work.permutations[o][s - 1]) for o, s in zip(owner, shuffle, strict=True)],
    })  # fmt: skip
    return keep, base


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
    } | ({"cls_mean_similarity": grouped[SIMILARITY_CLS].mean()} if SIMILARITY_CLS in wide else {})
    ).reset_index()  # fmt: skip
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
            } | ({"cls_mean_similarity": part[SIMILARITY_CLS].mean(),
                  "cls_median_similarity": part[SIMILARITY_CLS].median()}
                 if SIMILARITY_CLS in part else {}))  # fmt: skip
    return pd.DataFrame(rows)
