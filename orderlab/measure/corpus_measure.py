"""Corpus mode as a Measurement: every line of a text file against shuffles of its words, under each position
ablation of a pretrained model (measure/corpus.py encodes and compares them).

metrics.csv holds one row per shuffle and pooling (and a causal LM's log P rows); the tables derived from it are
sentences.csv (per sentence) and summary.csv (per sentence-length group), and with lm_logprob lm_sentences.csv and
lm_summary.csv (measure/corpus_lm.py). Single sentences of a pretrained model go through the one measuring loop
like the stack's (orderlab/models/pretrained.py). Never prints.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from orderlab.core.corpustext import read_corpus
from orderlab.core.progress import Progress
from orderlab.measure import corpus, corpus_lm
from orderlab.measure.chunking import device_batching
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.metrics import INVARIANCE_FAMILY, LM_LOGPROB_FAMILY
from orderlab.models.precision import require_dtype, use_matmul_precision
from orderlab.models.pretrained import PretrainedAdapter, pretrained_adapters
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import Spec
from orderlab.vocabulary.digest import Digest, Frames


class CorpusMeasurement:
    """A corpus-mode spec: its pretrained model loaded and every sentence measured when `frames()` runs; the
    model folder's unmeasured parts (`model_files`) known after."""

    def __init__(self, spec: Spec, spec_path: Path, options: RunOptions = DEFAULTS):
        """spec_path: where the corpus file and a model folder named in the spec are found from."""
        assert isinstance(spec.inputs, CorpusInputs)  # corpus inputs need a pretrained model (relations.py)
        self.spec, self.spec_path, self.options, self.inputs = spec, spec_path, options, spec.inputs
        self.model_files: dict[str, list[str]] | None = None
        self.token_logprobs: list[pd.DataFrame] = []  # corpus mode writes none
        self.derived: dict[str, pd.DataFrame] = {}

    def frames(self) -> Frames:
        spec, device, notes = self.spec, self.options.device, self.options.notes
        if notes:
            notes("loading the pretrained model")
        require_dtype(spec.model.dtype, device)
        use_matmul_precision(spec.model.matmul_precision, device)
        adapters = pretrained_adapters(spec, device, self.spec_path, device_batching(device), given=self.options.model,
                                       user_hooks=self.options.hooks)  # fmt: skip
        self.model_files = adapters[0].model_files
        if notes:
            notes("encoding the corpus and its shuffles")
        tables = run_corpus(spec, self.spec_path, adapters, self.options.progress or (lambda done, total: None))
        self.derived = {name: table for name, table in tables.items() if name != "metrics"}
        yield tables["metrics"]
        return Digest()

    def tables(self, digest: Digest) -> dict[str, pd.DataFrame]:
        """sentences.csv and summary.csv (the similarities), lm_sentences.csv and lm_summary.csv (lm_logprob), from
        the rows `frames()` measured."""
        return self.derived

    def write_beside(self, folder: Path) -> list[str]:
        return []


def run_corpus(
    spec: Spec, spec_path: Path, adapters: list[PretrainedAdapter], advance: Progress
) -> dict[str, pd.DataFrame]:
    """Every corpus sentence against its shuffles, under every position ablation (one adapter each): the pooled
    vectors' similarities (invariance) and a causal LM's log P (lm_logprob, measure/corpus_lm.py), as the spec asks."""
    inputs = spec.inputs
    assert isinstance(inputs, CorpusInputs)
    ablations = spec.pretrained.position_embeddings
    work = corpus.plan(read_corpus(spec_path.parent / inputs.file), inputs)
    similar, scored = measures_similarity(spec), LM_LOGPROB_FAMILY in spec.metrics
    passes = len(work.owner) * (similar + scored)
    total, frames, lm_sentences = len(ablations) * passes, [], []
    for index, adapter in enumerate(adapters):

        def step(done: int, _total: int, before: int = index * passes) -> None:  # after earlier passes'
            advance(before + done, total)

        def lm_step(done: int, _total: int, before: int = index * passes + similar * len(work.owner)) -> None:
            advance(before + done, total)

        with torch.inference_mode():
            if similar:
                pooled = corpus.encode(adapter, work, inputs.batch_size, step)
                frames.append(corpus.shuffle_rows(work, corpus.similarities(work, pooled), adapter.label))
            if scored:
                scores = corpus_lm.score(adapter, work, inputs.batch_size, lm_step)
                frames.append(corpus_lm.shuffle_rows(work, scores, adapter.label))
                tokens = corpus_lm.predicted_tokens(adapter, work)
                round_off = corpus_lm.round_offs(adapter, adapter.twin(), work)
                lm_sentences.append(
                    corpus_lm.sentence_rows(work, scores, tokens, adapter.label, round_off, spec.model.dtype)
                )
    metrics = pd.concat(frames, ignore_index=True)
    metrics = metrics.sort_values(["sentence_id", "encoding", "shuffle", "metric"], kind="mergesort", ignore_index=True)
    tables = {"metrics": metrics}
    if similar:
        similarities = metrics[metrics["metric"].isin(list(corpus.POOLINGS.values()))]
        tables["sentences"] = corpus.sentence_rows(similarities, work, inputs.threshold)
        tables["summary"] = corpus.summary_rows(similarities, spec.pretrained.labels, inputs.threshold)
    if scored:
        sentences = pd.concat(lm_sentences, ignore_index=True)
        tables[corpus_lm.LM_SENTENCES] = sentences
        tables[corpus_lm.LM_SUMMARY] = corpus_lm.summary_rows(sentences, spec.pretrained.labels)
    return tables


def measures_similarity(spec: Spec) -> bool:
    """Whether a corpus run measures its pooled vectors' similarities: unless metrics leaves invariance out."""
    return "metrics" not in spec.model_fields_set or INVARIANCE_FAMILY in spec.metrics
