"""Corpus mode end to end: every line of a text file against shuffles of its words, under each position ablation.

Writes metrics.csv (one row per shuffle and pooling), sentences.csv (per sentence) and summary.csv
(per sentence-length group). Single sentences of a pretrained model go through the one measuring
loop like the stack's (orderlab/models/pretrained.py); `describe_model` adds what both write to the manifest.
"""

from __future__ import annotations

import hashlib
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
from orderlab.results.agreeing import KeepAgreeing
from orderlab.results.baseline_diff import tolerances_for
from orderlab.results.folder import Manifest, build_manifest, write_results
from orderlab.results.outcome import Outcome, RunView, run_title
from orderlab.results.versions import versions
from orderlab.spec.families import CorpusInputs, HFModelSpec
from orderlab.spec.load import LoadedSpec
from orderlab.spec.schema import Spec


def write_corpus_experiment(loaded: LoadedSpec, folder: Path, options: RunOptions = DEFAULTS) -> Outcome:
    """Run a corpus-mode spec and write its results folder atomically (see commands/run.write_experiment)."""
    spec, device, progress, notes = loaded.spec, options.device, options.progress, options.notes
    inputs = spec.inputs
    assert isinstance(inputs, CorpusInputs)
    if notes:
        notes("loading the pretrained model")
    require_dtype(spec.model.dtype, device)
    use_matmul_precision(spec.model.matmul_precision, device)
    # corpus inputs need a pretrained model (relations.py)
    adapters = pretrained_adapters(spec, device, loaded.path, device_batching(device), given=options.model,
                                   user_hooks=options.hooks)  # fmt: skip
    if notes:
        notes("encoding the corpus and its shuffles")
    tables = run_corpus(spec, loaded.path, adapters, progress or (lambda done, total: None))
    manifest = build_manifest(
        spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
        dtype=spec.model.dtype, device=device, rows=len(tables["metrics"]), libraries=versions(spec),
    )  # fmt: skip
    describe_model(spec, manifest, adapters[0].model_files)
    corpus_file = loaded.path.parent / inputs.file
    manifest["corpus"] = {"file": inputs.file, "sha256": hashlib.sha256(corpus_file.read_bytes()).hexdigest()}
    agreeing = KeepAgreeing(folder, tolerances_for(spec))
    write_results(folder, tables, manifest, agreeing)
    files = [f"{name}.csv" for name in tables] + ["manifest.json"]
    ablations = spec.pretrained.labels
    view = RunView(
        run_title(spec), spec.model.dtype, ablations, [], tables["summary"], corpus_threshold=inputs.threshold
    )
    return Outcome(folder, len(tables["metrics"]), files, view, 0, agreeing.kept)


def describe_model(spec: Spec, manifest: Manifest, model_files: dict[str, list[str]] | None) -> None:
    """The pretrained model's spec, its folder's tensors outside the parts measured (`model_files`, when it has a
    folder), added to a run's manifest."""
    manifest["model"] = spec.model.model_dump()
    if isinstance(spec.model, HFModelSpec) and spec.model.given is not None:
        manifest["model"]["given"] = spec.model.given.model_dump()  # class, config, weights hash: the object run
    if isinstance(spec.model, HFModelSpec) and spec.model.user_hooks:
        manifest["model"]["user_hooks"] = spec.model.user_hooks  # point -> the user's function: no built-in ablation
    if model_files is not None:
        manifest["model_files"] = model_files


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
