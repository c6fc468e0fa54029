"""`orderlab run`: one experiment end to end, streamed into its results folder, returned as data (never printed).

`run` is the command (a shard, a Dask cluster or this process; figures and the HTML report after), called by the
CLI and orderlab.api alike; `write_experiment` is shared with `orderlab check`, so a baseline and a fresh run can
never come from two different code paths. Drawing on a terminal is report/terminal.py's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from orderlab.core.progress import SILENT, Phases
from orderlab.errors import OrderlabError
from orderlab.measure.adapters import prefix_sharing
from orderlab.measure.attention_maps import shown_maps
from orderlab.measure.corpus_lm import LM_SUMMARY
from orderlab.measure.corpus_measure import CorpusMeasurement
from orderlab.measure.escalation import reach_note, resolution_record
from orderlab.measure.loop import tune_allocator
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.measure.sweep_measure import SweepMeasurement
from orderlab.measure.task_measure import TaskMeasurement
from orderlab.metrics import ATTENTION_FAMILY
from orderlab.plan.limits import validate_limits
from orderlab.plan.shards import condition_labels, parse_shard, partition, require_shardable, shard_folder_name
from orderlab.results.agreeing import KeepAgreeing
from orderlab.results.baseline_diff import tolerances_for
from orderlab.results.folder import Manifest, build_manifest
from orderlab.results.outcome import Outcome, RunView, ShardOutcome, run_title
from orderlab.results.ownership import Writer, claim
from orderlab.results.partials import RunFacts
from orderlab.results.paths import child
from orderlab.results.run_writer import ShardOf, write_run
from orderlab.results.spec_source import refuse_other_spec_file
from orderlab.results.versions import versions
from orderlab.spec.load import LoadedSpec, load_spec
from orderlab.spec.model_specs import HEAD_FIELDS, CorpusInputs, HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import DatasetInputs, Spec, input_parses, uses_backend
from orderlab.spec.sweep import swept_fields
from orderlab.vocabulary.columns import TRAINED, UNTRAINED, WEIGHTS
from orderlab.vocabulary.digest import Digest


@dataclass(frozen=True)
class RunResult:
    """What `orderlab run` did: the whole run's outcome, or the shard's; the figures and report it wrote."""

    outcome: Outcome | None  # None for a shard, whose summary exists once the shards are merged
    shard: ShardOutcome | None = None
    figures: list[Path] = field(default_factory=list)
    report: Path | None = None

    @property
    def folder(self) -> Path:
        written = self.outcome or self.shard
        assert written is not None
        return written.folder


def run(
    spec: Path | LoadedSpec,
    out: Path,
    options: RunOptions = DEFAULTS,
    *,
    shard: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    plot: bool = False,
    html: bool = False,
    phases: Phases = SILENT,
) -> RunResult:
    """Run the spec into OUT/<spec name>/ (shard K/N: OUT/<spec name>.shard-K-of-N/; workers or scheduler: as shards on
    a Dask cluster, merged here), then draw its figures and write its HTML report if asked; each phase reported to
    `phases`, and the run's progress too."""
    if sum(option is not None for option in (shard, workers, scheduler)) > 1:
        raise OrderlabError("--shard, --workers and --scheduler: expected at most one of them")
    loaded = spec if isinstance(spec, LoadedSpec) else validate_limits(load_spec(spec))
    if shard is not None:
        if plot or html:
            raise OrderlabError(
                "--plot, --html: a shard has no figures or report of its own; expected `orderlab plot` or "
                "`orderlab report` on the merged folder"
            )
        return RunResult(None, run_shard(loaded, shard, out, options, phases))
    with phases.phase("measuring", f"running {loaded.spec.name}", unit="seq") as advance:
        reporting = options.reporting(advance, advance.note)
        if workers is not None or scheduler is not None:
            from orderlab.cluster.workers import run_on_dask  # lazy: Dask is an optional extra

            cluster = workers if workers is not None else scheduler
            assert cluster is not None
            advance.note(f"shards on {cluster} Dask worker(s)" if workers else f"shards on the Dask cluster {cluster}")
            outcome = run_on_dask(loaded, out, cluster, write_shard, reporting)
        else:
            outcome = write_experiment(loaded, child(out, loaded.spec.name), reporting)
    return RunResult(outcome, None, *after_run(outcome.folder, plot, html, phases))


def after_run(folder: Path, plot: bool, html: bool, phases: Phases) -> tuple[list[Path], Path | None]:
    """`--plot` and `--html` over a run's folder: the figure files and the report written. Each imports its drawing
    code (matplotlib: ~1 s of a run's start) only when asked."""
    drawn, written = [], None
    if plot:
        from orderlab.report import figures

        with phases.phase("figures", f"drawing the figures into {folder}/figures/"):
            drawn = figures.plot_results(folder)
    if html:
        from orderlab.report import html as html_report

        report = folder / html_report.REPORT_FILE
        with phases.phase("report", f"writing {report}"):
            written = html_report.write_report([folder], report, "--html")
    return drawn, written


def run_shard(loaded: LoadedSpec, shard: str, out: Path, options: RunOptions, phases: Phases) -> ShardOutcome:
    """`run --shard K/N`: one shard's folder, OUT/<spec name>.shard-K-of-N/."""
    index, count = parse_shard(shard)
    folder = child(out, shard_folder_name(loaded.spec.name, index, count))
    with phases.phase("measuring", f"running {loaded.spec.name} shard {index}/{count}", unit="seq") as advance:
        return write_shard(loaded, folder, (index, count), options.reporting(advance))


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
    agreeing = KeepAgreeing(folder, tolerances_for(spec))
    if isinstance(spec.inputs, CorpusInputs):  # corpus mode: shuffles of many sentences, in batched passes
        corpus = CorpusMeasurement(spec, loaded.path, options)

        def corpus_facts(rows: int, _tables: dict[str, pd.DataFrame], _digest: Digest) -> Manifest:
            return corpus_manifest(loaded, corpus, options.device, rows)

        written = write_run(folder, corpus, corpus_facts, settle=agreeing)
        summary, threshold = written.tables.get("summary", pd.DataFrame()), spec.inputs.threshold
        view = RunView(run_title(spec), spec.model.dtype, spec.pretrained.labels, [], summary,
                       corpus_threshold=threshold, corpus_lm=written.tables.get(LM_SUMMARY))  # fmt: skip
        return Outcome(folder, written.rows, written.files, view, 0, agreeing.kept)
    if isinstance(spec.inputs, DatasetInputs):  # a classifier's predictions on labelled examples
        return _write_task(loaded, folder, options, agreeing)
    tune_allocator()
    run = SweepMeasurement(spec, options, loaded.path)

    def facts(rows: int, tables: dict[str, pd.DataFrame], digest: Digest) -> Manifest:
        manifest = run_manifest(loaded, run, options.device, rows, "attention" in tables)
        if resolution := resolution_record(spec.resolution, digest.reach):
            manifest["resolution"] = resolution
        return manifest

    written = write_run(folder, run, facts, settle=agreeing, parses=input_parses(spec))
    worst = written.digest.worst_table()
    labels = condition_labels(spec)
    view = RunView(run_title(spec), spec.model.dtype, labels, run.axes, written.tables["summary"], digest=worst,
                   precision_note=reach_note(spec.model.dtype, spec.resolution, written.digest.reach))  # fmt: skip
    return Outcome(folder, written.rows, written.files, view, written.digest.non_finite, agreeing.kept)


def _write_task(loaded: LoadedSpec, folder: Path, options: RunOptions, agreeing: KeepAgreeing) -> Outcome:
    """Dataset inputs: a classifier's predictions per example and order, and the published metrics over them."""
    spec = loaded.spec
    task = TaskMeasurement(spec, loaded.path, options)

    def task_facts(rows: int, _tables: dict[str, pd.DataFrame], _digest: Digest) -> Manifest:
        manifest = build_manifest(
            spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
            dtype=spec.model.dtype, device=options.device, rows=rows, libraries=versions(spec),
        )  # fmt: skip
        describe_model(spec, manifest, None)
        manifest["labels"] = task.id2label  # the head's id2label: predicted_label's values name these
        assert isinstance(spec.inputs, DatasetInputs)
        if spec.inputs.dataset is not None:
            manifest["dataset"] = {"file": spec.inputs.dataset, "sha256": task.dataset_sha256}
        if isinstance(spec.model, PretrainedModelSpec) and spec.model.train_head is not None:
            manifest["train_head"] = {"file": spec.model.train_head.dataset, "sha256": task.train_head_sha256}
        return manifest

    written = write_run(folder, task, task_facts, settle=agreeing)
    view = RunView(run_title(spec), spec.model.dtype, spec.pretrained.labels, [], written.tables["summary"],
                   task_summary=written.tables["summary"])  # fmt: skip
    return Outcome(folder, written.rows, written.files, view, written.digest.non_finite, agreeing.kept)


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
    elif spec.stack.user_hooks:  # point -> the user's function, as a transformers model's are recorded
        manifest["model"] = {"kind": "stack", "user_hooks": spec.stack.user_hooks}
    if sharing := prefix_sharing(spec, run.decisions):
        manifest["prefix_sharing"] = sharing  # how each condition's causal passes ran: shared prefixes or dense
    if run.compiled:  # ORDERLAB_COMPILE, ORDERLAB_CAPTURE: each compiled stack or walk, its compile time or fallback
        manifest["torch_compile"] = run.compiled
    if maps:  # attention.csv's input and reorderings, written once rather than on every row
        # (a seed sweep with a `random:` rule draws the default reordering per seed: the manifest names the first's)
        manifest["attention"] = shown_maps(run.configurations[0].spec).manifest()
    return manifest


def write_shard(
    loaded: LoadedSpec, folder: Path, shard: tuple[int, int], options: RunOptions = DEFAULTS
) -> ShardOutcome:
    """Shard K of N (shards.partition) through the same loop and the same writer as a whole run, into its own folder:
    metrics.csv (its stretch of the whole run's rows), partials.json (what `orderlab merge` finishes), manifest.json
    (the run's, plus `shard`: K, N and the units with their ranges)."""
    spec, (index, count) = loaded.spec, shard
    require_shardable(spec, loaded.path)
    with claim(folder, Writer("run", spec.name), options.force):
        tune_allocator()
        units = partition(spec, count)[index - 1]
        run = SweepMeasurement(spec, options, loaded.path, units=units)
        facts = RunFacts(run_title(spec), spec.model.dtype, condition_labels(spec), run.axes, run.per_permutation,
                         spec.resolution, input_parses(spec))  # fmt: skip
        maps = ATTENTION_FAMILY in spec.metrics

        def shard_facts(rows: int, _tables: dict[str, pd.DataFrame], _digest: Digest) -> Manifest:
            return run_manifest(loaded, run, options.device, rows, maps)

        written = write_run(folder, run, shard_facts, shard=ShardOf(index, count, units, facts))
    return ShardOutcome(folder, written.rows, units, written.digest.non_finite, shard)


def corpus_manifest(loaded: LoadedSpec, corpus: CorpusMeasurement, device: torch.device, rows: int) -> Manifest:
    """A corpus run's manifest.json: the model, and the corpus file by its sha256."""
    spec = loaded.spec
    assert isinstance(spec.inputs, CorpusInputs)
    manifest = build_manifest(
        spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
        dtype=spec.model.dtype, device=device, rows=rows, libraries=versions(spec),
    )  # fmt: skip
    describe_model(spec, manifest, corpus.model_files)
    corpus_file = loaded.path.parent / spec.inputs.file
    manifest["corpus"] = {"file": spec.inputs.file, "sha256": hashlib.sha256(corpus_file.read_bytes()).hexdigest()}
    return manifest


def describe_model(spec: Spec, manifest: Manifest, model_files: dict[str, list[str]] | None) -> None:
    """The pretrained model's spec, its folder's tensors outside the parts measured (`model_files`, when it has a
    folder), added to a run's manifest."""
    manifest["model"] = spec.model.model_dump()
    if manifest["model"].get("head", "none") == "none":  # a base model: no task head's fields
        manifest["model"] = {name: value for name, value in manifest["model"].items() if name not in HEAD_FIELDS}
    if isinstance(spec.model, HFModelSpec) and spec.model.given is not None:
        manifest["model"]["given"] = spec.model.given.model_dump()  # class, config, weights hash: the object run
    if isinstance(spec.model, HFModelSpec) and spec.model.user_hooks:
        manifest["model"]["user_hooks"] = spec.model.user_hooks  # point -> the user's function: no built-in ablation
    if model_files is not None:
        manifest["model_files"] = model_files
