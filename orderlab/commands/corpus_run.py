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
from orderlab.measure import corpus, corpus_lm
from orderlab.measure.chunking import device_batching
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.metrics import INVARIANCE_FAMILY, LM_LOGPROB_FAMILY
from orderlab.models.precision import require_dtype, use_matmul_precision
from orderlab.models.pretrained import PretrainedAdapter, pretrained_adapters
from orderlab.plan.load import LoadedSpec
from orderlab.results.agreeing import KeepAgreeing
from orderlab.results.baseline_diff import tolerances_for
from orderlab.results.folder import Manifest, build_manifest, write_results
from orderlab.results.outcome import Outcome, RunView, run_title
from orderlab.results.versions import versions
from orderlab.spec.model_specs import CorpusInputs, HFModelSpec
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
    view = RunView(run_title(spec), spec.model.dtype, ablations, [], tables.get("summary", pd.DataFrame()),
                   corpus_threshold=inputs.threshold, corpus_lm=tables.get(corpus_lm.LM_SUMMARY))  # fmt: skip
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
                lm_sentences.append(corpus_lm.sentence_rows(work, scores, tokens, adapter.label))
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
