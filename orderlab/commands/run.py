"""One experiment end to end: stream its rows into the results folder and return what the console shows, as data.

The glue between spec, sweep and results, so that each CLI command stays a few lines; drawing is report/terminal.py's.
`write_experiment` is shared by `orderlab run` and `orderlab check`, so a baseline and a fresh
run can never come from two different code paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from orderlab.commands.corpus_run import describe_model, write_corpus_experiment
from orderlab.measure.adapters import prefix_sharing
from orderlab.measure.attention_maps import shown_maps
from orderlab.measure.loop import tune_allocator
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.measure.sweep_measure import SweepMeasurement, summarize_sweep
from orderlab.measure.task_accuracy import TRAINED, UNTRAINED, WEIGHTS
from orderlab.metrics import ATTENTION_FAMILY
from orderlab.plan.load import LoadedSpec
from orderlab.plan.shards import Unit, condition_labels, partition, require_shardable
from orderlab.plan.sweep import swept_fields
from orderlab.results.folder import Manifest, build_manifest, staged_folder, write_csv, write_csv_chunks, write_manifest
from orderlab.results.manifest import file_hashes
from orderlab.results.outcome import Outcome, RunView, run_title
from orderlab.results.ownership import Writer, claim
from orderlab.results.partials import SHARD_FILES, RunFacts, write_partials
from orderlab.results.spec_source import refuse_other_spec_file
from orderlab.results.versions import versions
from orderlab.spec.families import CorpusInputs
from orderlab.spec.schema import uses_backend
from orderlab.train.checkpoint import CHECKPOINTS, write_checkpoints


def write_experiment(loaded: LoadedSpec, folder: Path, options: RunOptions = DEFAULTS) -> Outcome:
    """Run the spec and write its results folder atomically: metrics.csv streamed chunk by chunk
    (memory stays flat however many permutations), then summary.csv, attention.csv, manifest.json.

    The folder is claimed before anything is computed, so a folder that is not this spec's (without
    `force`: another spec's or command's, or results written from another spec file of the same name) or that
    another run is writing is refused at once."""
    with claim(folder, Writer("run", loaded.spec.name), options.force):
        refuse_other_spec_file(folder, loaded.path, options.force)
        return _write_experiment(loaded, folder, options)


def _write_experiment(loaded: LoadedSpec, folder: Path, options: RunOptions) -> Outcome:
    spec = loaded.spec
    if isinstance(spec.inputs, CorpusInputs):  # corpus mode: shuffles of many sentences, in batched passes
        return write_corpus_experiment(loaded, folder, options)
    tune_allocator()
    run = SweepMeasurement(spec, options, loaded.path)
    labels = condition_labels(spec)
    with staged_folder(folder) as staging:  # metrics.csv streamed chunk by chunk, then the small files
        rows, digest = write_csv_chunks(run.frames(), staging / "metrics.csv")
        if run.trained:  # git-ignored: a baseline keeps only the CSVs, and `check` trains anew
            write_checkpoints(staging / CHECKPOINTS, run.trained)
        worst = digest.worst_table()
        tables = {"summary": summarize_sweep(worst, labels, run.axes)}
        maps = digest.attention_table()  # between words, for the stack and the zoo alike
        if maps is not None:
            tables["attention"] = maps
        if run.token_logprobs:
            tables["token_logprobs"] = pd.concat(run.token_logprobs, ignore_index=True)
        manifest = run_manifest(loaded, run, options.device, rows, maps is not None)
        for name, frame in tables.items():
            write_csv(frame, staging / f"{name}.csv")
        write_manifest(staging, manifest)
    view = RunView(run_title(spec), spec.model.dtype, labels, run.axes, tables["summary"], digest=worst)
    files = [
        "metrics.csv",
        *(f"{name}.csv" for name in tables),
        "manifest.json",
        *([CHECKPOINTS] if run.trained else []),
    ]
    return Outcome(folder, rows, files, view, digest.non_finite)


def run_manifest(loaded: LoadedSpec, run: SweepMeasurement, device: torch.device, rows: int, maps: bool) -> Manifest:
    """A run's manifest.json (before ownership is recorded); maps: whether it writes attention.csv."""
    spec = loaded.spec
    manifest = build_manifest(
        spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
        dtype=spec.model.dtype, device=device, rows=rows, libraries=versions(spec),
    )  # fmt: skip
    manifest["sweep"] = swept_fields(spec)  # model fields and seed, each with its values
    if spec.train:  # the `weights` column: plot and compare tell trained from untrained rows by it
        manifest["sweep"][WEIGHTS] = [TRAINED, UNTRAINED]
    if uses_backend(spec):
        describe_model(spec, manifest, run.model_files)
    if sharing := prefix_sharing(spec, loaded.path, device):
        manifest["prefix_sharing"] = sharing  # how each condition's causal passes ran: shared prefixes or dense
    if run.compiled:  # ORDERLAB_COMPILE: each compiled stack's compilation time, or why it fell back to eager
        manifest["torch_compile"] = run.compiled
    if maps:  # attention.csv's input and reorderings, written once rather than on every row
        # (a seed sweep with a `random:` rule draws the default reordering per seed: the manifest names the first's)
        manifest["attention"] = shown_maps(run.configurations[0].spec).manifest()
    return manifest


@dataclass(frozen=True)
class ShardOutcome:
    folder: Path
    rows: int  # rows of the shard's metrics.csv
    units: list[Unit]
    non_finite: int  # of the rows written whole; the merge counts those of the summaries it finishes


def write_shard(
    loaded: LoadedSpec, folder: Path, shard: tuple[int, int], options: RunOptions = DEFAULTS
) -> ShardOutcome:
    """Shard K of N (shards.partition) through the same loop as a whole run, into its own folder: metrics.csv
    (its stretch of the whole run's rows), partials.json (what `orderlab merge` finishes), manifest.json (the
    run's, plus `shard`: K, N and the units with their ranges)."""
    spec, (index, count) = loaded.spec, shard
    require_shardable(spec, loaded.path)
    with claim(folder, Writer("run", spec.name), options.force):
        tune_allocator()
        units = partition(spec, count)[index - 1]
        run = SweepMeasurement(spec, options, loaded.path, units=units)
        with staged_folder(folder) as staging:
            rows, digest = write_csv_chunks(run.frames(), staging / "metrics.csv")
            maps = ATTENTION_FAMILY in spec.metrics
            manifest = run_manifest(loaded, run, options.device, rows, maps)
            manifest["shard"] = {"index": index, "count": count, "units": [unit.record() for unit in units]}
            facts = RunFacts(run_title(spec), spec.model.dtype, condition_labels(spec), run.axes, run.per_permutation)
            write_partials(staging, facts, digest)
            manifest["shard"]["sha256"] = file_hashes(staging, SHARD_FILES)  # merge verifies them
            write_manifest(staging, manifest)
    return ShardOutcome(folder, rows, units, digest.non_finite)
