"""A pretrained-model spec end to end: load the model once, run every ablation, write the results folder.

Single sentences give the runner's tidy metrics.csv and summary.csv (the `encoding` column names
the position ablation); corpus mode writes metrics.csv (one row per shuffle and pooling),
sentences.csv (per sentence) and summary.csv (per sentence-length group).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pandas as pd
import torch

from orderlab import report
from orderlab.backends import corpus
from orderlab.backends.corpustext import read_corpus
from orderlab.backends.measure import measure_pair, measure_sentence
from orderlab.backends.pretrained import PretrainedBackend, import_transformers, model_folder
from orderlab.backends.specs import CorpusInputs
from orderlab.experiment import Outcome, check_device
from orderlab.metric_registry import ATTENTION_FAMILY
from orderlab.results import build_manifest, write_results
from orderlab.runner import COLUMNS, KEY_COLUMNS, Progress, summarize
from orderlab.spec import LoadedSpec, Spec
from orderlab.verdicts import NON_FINITE, twin_dtype


def write_backend_experiment(
    loaded: LoadedSpec, device: str, folder: Path, progress: Progress | None = None, width: int = 80
) -> Outcome:
    """Run a pretrained-model spec and write its results folder atomically (see experiment.write_experiment)."""
    spec = loaded.spec
    check_device(device)
    started = time.perf_counter()
    model_files = model_folder(spec.model, loaded.path)
    wants_attention = ATTENTION_FAMILY in spec.metrics and not isinstance(spec.inputs, CorpusInputs)
    backend = PretrainedBackend(model_files, spec.model.dtype, device, attention=wants_attention)
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    advance = progress or (lambda done, total: None)
    if isinstance(spec.inputs, CorpusInputs):
        tables, renderables = run_corpus(spec, loaded.path, backend, advance, title)
    else:
        tables, renderables = run_sentences(spec, backend, advance, title, width)
    manifest = build_manifest(
        spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
        dtype=spec.model.dtype, device=device, rows=len(tables["metrics"]),
    )  # fmt: skip
    manifest["model"] = spec.model.model_dump()
    manifest["versions"]["transformers"] = import_transformers().__version__
    if isinstance(spec.inputs, CorpusInputs):
        corpus_file = loaded.path.parent / spec.inputs.file
        manifest["corpus"] = {"file": spec.inputs.file, "sha256": hashlib.sha256(corpus_file.read_bytes()).hexdigest()}
    write_results(folder, tables, manifest)
    files = [f"{name}.csv" for name in tables] + ["manifest.json"]
    non_finite = int((tables["metrics"].get("verdict", pd.Series(dtype=str)) == NON_FINITE).sum())
    return Outcome(folder, len(tables["metrics"]), files, renderables, non_finite, time.perf_counter() - started)


def run_sentences(spec: Spec, backend: PretrainedBackend, advance: Progress, title: str, width: int):
    """Each input's permutations and each probe, under every position ablation."""
    ablations = spec.model.position_embeddings
    assert isinstance(spec.inputs, list)
    total, done, frames = len(ablations) * (len(spec.inputs) + len(spec.probes)), 0, []
    twin = backend.twin(twin_dtype(spec.model.dtype))
    for ablation in ablations:
        backend.set_positions(ablation, spec.seed)
        twin.set_positions(ablation, spec.seed)
        with torch.inference_mode():
            for item in spec.inputs:
                frames += measure_sentence(spec, backend, twin, item.sentence, item.permutations, ablation)
                done += 1
                advance(done, total)
            for a, b in spec.probes:
                frames.append(measure_pair(spec, backend, twin, a, b, ablation))
                done += 1
                advance(done, total)
    metrics = pd.concat(frames, ignore_index=True)
    metrics = metrics.sort_values(KEY_COLUMNS, kind="mergesort", na_position="first", ignore_index=True)[COLUMNS]
    summary = summarize(metrics, list(ablations))
    tables = report.summary_tables(summary, list(ablations), title, spec.model.dtype, width)
    return {"metrics": metrics, "summary": summary}, tables


def run_corpus(spec: Spec, spec_path: Path, backend: PretrainedBackend, advance: Progress, title: str):
    """Every corpus sentence against its shuffles, under every position ablation, in batched passes."""
    inputs = spec.inputs
    assert isinstance(inputs, CorpusInputs)
    ablations = spec.model.position_embeddings
    work = corpus.plan(read_corpus(spec_path.parent / inputs.file), inputs, backend)
    total, done, frames = len(ablations) * len(work.sequences), 0, []

    def step(count: int) -> None:
        nonlocal done
        done += count
        advance(done, total)

    for ablation in ablations:
        backend.set_positions(ablation, spec.seed)
        with torch.inference_mode():
            pooled = corpus.encode(backend, work.sequences, inputs.batch_size, step)
        frames.append(corpus.shuffle_rows(work, corpus.similarities(work, pooled), ablation))
    metrics = pd.concat(frames, ignore_index=True)
    metrics = metrics.sort_values(["sentence_id", "encoding", "shuffle", "metric"], kind="mergesort", ignore_index=True)
    sentences = corpus.sentence_rows(metrics, work, inputs.threshold)
    summary = corpus.summary_rows(metrics, list(ablations), inputs.threshold)
    table = report.corpus_table(summary, list(ablations), title, inputs.threshold)
    return {"metrics": metrics, "sentences": sentences, "summary": summary}, [table]
