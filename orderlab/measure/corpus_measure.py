"""Corpus mode as a Measurement: every line of a text file against shuffles of its words, under each position
ablation of a pretrained model (measure/corpus.py encodes and compares them).

metrics.csv holds one row per shuffle and pooling; the tables derived from it are sentences.csv (per sentence) and
summary.csv (per sentence-length group). Single sentences of a pretrained model go through the one measuring loop
like the stack's (orderlab/models/pretrained.py). Never prints.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from orderlab.core.corpustext import read_corpus
from orderlab.core.progress import Progress
from orderlab.measure import corpus
from orderlab.measure.chunking import device_batching
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.models.precision import require_dtype, use_matmul_precision
from orderlab.models.pretrained import PretrainedAdapter, pretrained_adapters
from orderlab.spec.families import CorpusInputs
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
        self.derived = {"sentences": tables["sentences"], "summary": tables["summary"]}
        yield tables["metrics"]
        return Digest()

    def tables(self, digest: Digest) -> dict[str, pd.DataFrame]:
        """sentences.csv and summary.csv, from the rows `frames()` measured."""
        return self.derived

    def write_beside(self, folder: Path) -> list[str]:
        return []


def run_corpus(
    spec: Spec, spec_path: Path, adapters: list[PretrainedAdapter], advance: Progress
) -> dict[str, pd.DataFrame]:
    """Every corpus sentence against its shuffles, under every position ablation (one adapter each)."""
    inputs = spec.inputs
    assert isinstance(inputs, CorpusInputs)
    ablations = spec.pretrained.position_embeddings
    work = corpus.plan(read_corpus(spec_path.parent / inputs.file), inputs)
    total, frames = len(ablations) * len(work.owner), []
    for index, adapter in enumerate(adapters):

        def step(done: int, _total: int, before: int = index * len(work.owner)) -> None:  # after earlier adapters'
            advance(before + done, total)

        with torch.inference_mode():
            pooled = corpus.encode(adapter, work, inputs.batch_size, step)
        frames.append(corpus.shuffle_rows(work, corpus.similarities(work, pooled), adapter.label))
    metrics = pd.concat(frames, ignore_index=True)
    metrics = metrics.sort_values(["sentence_id", "encoding", "shuffle", "metric"], kind="mergesort", ignore_index=True)
    sentences = corpus.sentence_rows(metrics, work, inputs.threshold)
    summary = corpus.summary_rows(metrics, spec.pretrained.labels, inputs.threshold)
    return {"metrics": metrics, "sentences": sentences, "summary": summary}
