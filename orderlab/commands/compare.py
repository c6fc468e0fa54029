"""`orderlab compare`: run specs once per chosen encoding and line the results up side by side.

`compare_specs` is the command (the CLI's and orderlab.api's): it claims OUT/compare/, runs, writes compare.csv and
the HTML report if asked, and returns the table; `compare` computes the table alone.

Each spec keeps its sentences, probes, model and seed; only its encodings (and, with --metric,
its metrics) are replaced. A cell is the worst (largest) value over permutations and heads for
one spec x input x metric x layer under one encoding, with that value's verdict; over a seed sweep,
the mean over seeds of that worst value with its t interval (orderlab/measure/intervals.py). Never prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from orderlab.core.progress import SILENT, Note, Phases
from orderlab.core.registry import did_you_mean
from orderlab.encodings import ENCODINGS
from orderlab.errors import OrderlabError
from orderlab.measure.intervals import over_seeds
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.measure.sweep_measure import axes, run_sweep
from orderlab.metrics import default_families, family_names, metrics_of
from orderlab.plan.limits import validate_limits
from orderlab.results.folder import staged_folder, write_csv, write_manifest
from orderlab.results.ownership import Writer, claim
from orderlab.results.paths import child
from orderlab.results.versions import versions
from orderlab.spec.load import LoadedSpec, load_spec, with_changes
from orderlab.spec.model_specs import HFModelSpec, ModelObject
from orderlab.spec.schema import (
    CheckpointModelSpec,
    EncodingChoice,
    Spec,
    encoding_context,
    longest_sentence,
    spec_kinds,
    uses_backend,
)
from orderlab.spec.sweep import SEED, describe, plan, swept_fields

# The default spec metric families (the per-permutation core) and the stack's table rows each one produces.
ROWS_OF_FAMILY = {family: [m.name for m in metrics_of(family, "stack")] for family in default_families()}
# A model object's (compare(..., model=)): the rows a transformers model writes for the same families.
ROWS_OF_MODEL = {family: [m.name for m in metrics_of(family, "pretrained")] for family in default_families()}
GROUP_COLUMNS = ["spec", "case", "input", "metric", "layer"]


@dataclass(frozen=True)
class EncodingComparison:
    """The specs' rows measured once per encoding, one value and verdict column per encoding, side by side."""

    table: pd.DataFrame  # GROUP_COLUMNS, then one value column per encoding, then '<encoding> verdict' columns
    encodings: list[str]
    specs: list[LoadedSpec]
    dtypes: list[str]
    wall_seconds: float


@dataclass(frozen=True)
class CompareResult:
    """What `orderlab compare` did: the comparison, where it was written, the default specs it left out."""

    comparison: EncodingComparison
    folder: Path  # OUT/compare/: compare.csv and manifest.json
    skipped: list[Skipped]
    report: Path | None  # the HTML report, if asked for


def compare_specs(
    specs: list[Path] | None,
    encodings: str = "all",
    metrics: list[str] | None = None,
    out: Path = Path("results"),
    options: RunOptions = DEFAULTS,
    *,
    html: Path | None = None,
    phases: Phases = SILENT,
) -> CompareResult:
    """Every spec (none: the attention-stack specs of experiments/) under every encoding ('a,b' or 'all'), the rows
    of `metrics` (None: all); written to OUT/compare/ (claimed first; options.force replaces another command's).
    With a model object (options.model: orderlab.api.compare(..., model=)), each spec describes it and is run on it,
    its conditions (model.position_embeddings) side by side: no encoding is swapped in, none is built."""
    if options.model is None:
        names, rows = parse_encodings(encodings), parse_metrics(metrics)
    else:
        names, rows = on_object(encodings, specs), parse_metrics(metrics, ROWS_OF_MODEL)
    paths, skipped = (specs, []) if specs else default_specs()
    folder = child(out, "compare")
    if html is not None:
        from orderlab.report import html as html_report  # lazy: matplotlib and jinja2

        html_report.check_destination(html, inputs=[*paths, folder])
    bar = phases.phase("measuring", "comparing encodings", unit="spec")
    with claim(folder, Writer("compare"), options.force), bar as advance:
        result = compare(paths, names, rows, options.reporting(advance, advance.note))
        write_comparison(result, folder, options.device)
    if html is None:
        return CompareResult(result, folder, skipped, None)
    with phases.phase("report", f"writing {html}"):
        written = html_report.write_report([folder], html, "--html", "compare: " + ", ".join(names))
    return CompareResult(result, folder, skipped, written)


def parse_encodings(text: str | None) -> list[str]:
    """'a,b' -> ['a', 'b'], each resolved now (did-you-mean on a typo); None or 'all' -> every built-in."""
    if text is None or text.strip() == "all":
        return ENCODINGS.names()
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise OrderlabError("--encodings is empty; expected names like sinusoidal,rope")
    if len(set(names)) != len(names):
        raise OrderlabError(f"--encodings {text!r} names an encoding twice; expected each once")
    for name in names:
        ENCODINGS.resolve(name)
    return names


def parse_metrics(metrics: list[str] | None, families: dict[str, list[str]] = ROWS_OF_FAMILY) -> list[str]:
    """Row metrics to show: each --metric is a row name (pair_l2) or a spec family (invariance); `families`: the rows
    of each family for the model compared (the stack's, or a model object's)."""
    every = [row for rows in families.values() for row in rows]
    if not metrics:
        return every
    chosen: list[str] = []
    for metric in metrics:
        if metric in families:
            chosen += families[metric]
        elif metric in every:
            chosen.append(metric)
        else:
            raise OrderlabError(f"Unknown metric {metric!r}. {did_you_mean(metric, [*family_names(), *every])}")
    return list(dict.fromkeys(chosen))


def on_object(encodings: str | None, specs: list[Path] | None) -> list[str]:
    """A model object's comparison: its conditions are each spec's own (model.position_embeddings), so only 'all'
    names them; and the specs are the user's, describing the object (experiments/ holds none)."""
    if encodings not in (None, "all"):
        raise OrderlabError(f"encodings: {encodings!r} with model=; expected 'all': a model object is compared under "
                            "its spec's conditions (model.position_embeddings), no encoding swapped in")  # fmt: skip
    if not specs:
        raise OrderlabError("specs: none given with model=; expected the spec files that describe the model object")
    return []  # the conditions' labels, known once the specs are loaded (compare)


# Why compare cannot swap a spec's encodings, by its model kind: compare swaps the attention stack's.
PRETRAINED_POSITIONS = "a pretrained model brings its own positions"
TRAINED_ENCODING = "a checkpoint is measured under the encoding it was trained with"
NOT_SWAPPABLE = {"pretrained": PRETRAINED_POSITIONS, "hf": PRETRAINED_POSITIONS, "checkpoint": TRAINED_ENCODING}


@dataclass(frozen=True)
class Skipped:
    """A spec of the default set that compare leaves out, and why."""

    path: Path
    why: str


def default_specs(root: Path = Path("experiments")) -> tuple[list[Path], list[Skipped]]:
    """Every attention-stack spec in `root`, and every other spec there with why compare skips it."""
    found, skipped = [], []
    for path in sorted(root.glob("*.yaml")):
        why = skip_reason(path)
        if why is None:
            found.append(path)
        else:
            skipped.append(Skipped(path, why))
    if not found:
        raise OrderlabError(f"no specs given and no attention-stack spec in {root}/*.yaml; expected SPEC paths")
    return found, skipped


def skip_reason(path: Path) -> str | None:
    """Why compare cannot run the spec at `path` (read from its raw YAML), or None: a model kind it cannot swap
    encodings of, or corpus inputs. An unknown model kind is not skipped: loading it says what is wrong."""
    model, inputs = spec_kinds(path)
    if model in NOT_SWAPPABLE:
        return NOT_SWAPPABLE[model]
    return "corpus inputs have no permutations to line up" if inputs != "sentences" else None


def prepare(path: Path, encodings: list[str], rows: list[str]) -> LoadedSpec:
    """The spec at `path` with its encodings replaced, checked against each encoding's constraints and,
    like any spec, against what this machine can run."""
    loaded = validate_limits(load_spec(path))
    spec = loaded.spec
    if uses_backend(spec):
        raise OrderlabError(
            f"{path}: {PRETRAINED_POSITIONS}, so compare cannot swap its encodings; "
            "expected an attention-stack spec (ablate a pretrained model with model.position_embeddings)"
        )
    if isinstance(spec.model, CheckpointModelSpec):
        raise OrderlabError(
            f"{path}: {TRAINED_ENCODING}, so compare cannot swap its encodings; expected an attention-stack spec"
        )
    for configuration in plan(spec):  # every combination of a sweep must suit every encoding
        context = encoding_context(configuration.spec, longest_sentence(spec))
        for name in encodings:
            try:
                ENCODINGS.validate(name, context, {})
            except ValueError as error:
                where = f" (in the sweep combination {configuration.label})" if configuration.columns else ""
                raise OrderlabError(f"{path}: encoding {name!r} cannot run on this spec{where}: {error}") from None
    families = [family for family, produced in ROWS_OF_FAMILY.items() if set(produced) & set(rows)]
    update = {"encodings": [EncodingChoice(name=name) for name in encodings], "metrics": families}
    return validate_limits(with_changes(loaded, update))  # other encodings may not fit where its own do


def prepare_on_object(path: Path, rows: list[str], given: ModelObject) -> LoadedSpec:
    """The spec at `path`, describing the model object (its family from the object's config), with the metric
    families of `rows`; a spec of another model is refused: the object is what is compared."""
    loaded = validate_limits(load_spec(path, given))
    if not isinstance(loaded.spec.model, HFModelSpec):
        raise OrderlabError(f"{path}: model.kind {loaded.spec.model.kind} is not the model object; expected a spec "
                            "with model: {kind: hf} that describes it")  # fmt: skip
    families = [family for family, produced in ROWS_OF_MODEL.items() if set(produced) & set(rows)]
    return validate_limits(with_changes(loaded, {"metrics": families}))


def conditions_of(prepared: list[LoadedSpec]) -> list[str]:
    """The columns of a model object's comparison: its conditions' labels, the same in every spec."""
    labels = [loaded.spec.pretrained.labels for loaded in prepared]
    if any(other != labels[0] for other in labels):
        raise OrderlabError(f"specs: their conditions differ ({' vs '.join(', '.join(each) for each in labels)}); "
                            "expected the same model.position_embeddings in every spec on one object")  # fmt: skip
    return labels[0]


def worst_cells(metrics: pd.DataFrame, spec: Spec, rows: list[str]) -> pd.DataFrame:
    """Tidy runner rows -> one row per (input, metric, layer, seed, encoding): the largest value and its verdict.

    In a sweep the input is followed by its combination, e.g. "dog bites man [n_layers=2 causal=true]" (a
    trained spec's too: "[weights=trained]"); the seed is a column of its own, the spec's seed unless swept.
    """
    chosen = metrics[metrics["metric"].isin(rows)]
    subject = np.where(chosen["case"] == "probe", chosen["input"] + " vs " + chosen["permuted"], chosen["input"])
    named = [name for name in axes(spec) if name != SEED]
    if named:
        combination = chosen[named].apply(lambda row: describe(row.to_dict()), axis=1)
        subject = subject + " [" + combination + "]"
    keys = [*GROUP_COLUMNS, SEED, "encoding"]
    seeds = chosen[SEED] if SEED in chosen.columns else spec.seed
    ordered = chosen.assign(spec=spec.name, input=subject, seed=seeds)
    ordered = ordered.sort_values("value", kind="mergesort", na_position="last")
    # tail(1), not last(): last() skips NaN column by column and would pair a finite value with a NaN row's verdict.
    return ordered.groupby(keys, sort=False).tail(1)[[*keys, "value", "verdict"]].reset_index(drop=True)


def side_by_side(
    cells: pd.DataFrame, encodings: list[str], spec_order: list[str], rows: list[str], seeds: bool = False
) -> pd.DataFrame:
    """Pivot worst cells to one column per encoding (values) plus one per encoding (verdicts), in a fixed order;
    with `seeds` (some spec sweeps them), each spec's cells as means over its seeds with their intervals (a spec
    of one seed: no interval, its bounds missing)."""
    wide = cells.pivot(index=[*GROUP_COLUMNS, SEED], columns="encoding", values=["value", "verdict"])
    columns = {name: wide[("value", name)].astype(float) for name in encodings}
    columns |= {f"{name} verdict": wide[("verdict", name)] for name in encodings}
    table = pd.DataFrame(columns).reset_index()
    if seeds:
        table = pd.concat([over_seeds(part, SEED, encodings) for _, part in table.groupby("spec", sort=False)])
    else:
        table = table.drop(columns=SEED)
    rank = {"spec": {n: i for i, n in enumerate(spec_order)}, "metric": {m: i for i, m in enumerate(rows)}}
    # A layer is a whole number in the terminal and in compare.csv alike (a pivot or a concat of frames made it float:
    # '0.0' on screen, '0.000000e+00' in the CSV).
    table = table.astype({"layer": "int64"})
    return table.sort_values(
        GROUP_COLUMNS, key=lambda c: c.map(rank[c.name]) if c.name in rank else c, kind="mergesort", ignore_index=True
    )


def compare(
    paths: list[Path],
    encodings: list[str],
    rows: list[str],
    options: RunOptions = DEFAULTS,
) -> EncodingComparison:
    """Run every spec under every encoding; return the side-by-side table (rows: spec x input x metric x layer).
    options.progress: (specs done, specs); options.notes: the spec being run, and what its run is doing."""
    started = time.perf_counter()
    progress, notes = options.progress, options.notes
    given = options.model
    if given is None:
        prepared = [prepare(path, encodings, rows) for path in paths]  # every spec checked before any runs
    else:
        prepared = [prepare_on_object(path, rows, given.record) for path in paths]
        encodings = conditions_of(prepared)
    names = [loaded.spec.name for loaded in prepared]
    if len(set(names)) != len(names):
        raise OrderlabError(f"two specs share the name {_first_repeat(names)!r}; expected distinct spec names")
    cells = []
    for done, loaded in enumerate(prepared):
        if progress:
            progress(done, len(prepared))
        name = loaded.spec.name
        if notes:
            notes(name)
        result = run_sweep(loaded.spec, options.reporting(None, None if notes is None else _of_spec(notes, name)))
        cells.append(worst_cells(result.metrics, loaded.spec, rows))
    if progress:
        progress(len(prepared), len(prepared))
    found = pd.concat(cells, ignore_index=True)
    if found.empty:
        raise OrderlabError(f"these specs produce no rows for the metrics {', '.join(rows)}; expected another --metric")
    seeds = any(SEED in swept_fields(loaded.spec) for loaded in prepared)
    table = side_by_side(found, encodings, names, rows, seeds)
    dtypes: list[str] = [loaded.spec.model.dtype for loaded in prepared]
    return EncodingComparison(table, encodings, prepared, dtypes, time.perf_counter() - started)


def _of_spec(notes: Note, name: str) -> Note:
    """A spec's run's notes, each after the spec's name ('zoo_causal: measuring')."""
    return lambda text: notes(f"{name}: {text}")


def _first_repeat(names: list[str]) -> str:
    return next(name for index, name in enumerate(names) if name in names[:index])


def write_comparison(comparison: EncodingComparison, destination: Path, device: torch.device) -> None:
    """compare.csv (the side-by-side table) and manifest.json into `destination` (claimed by the caller), whole."""

    manifest = {
        "encodings": comparison.encodings,
        "specs": [{"name": s.spec.name, "path": str(s.path), "sha256": s.sha256} for s in comparison.specs],
        "dtypes": comparison.dtypes,
        "device": str(device),
        "versions": versions(),
        "wall_seconds": round(comparison.wall_seconds, 3),
        "rows": len(comparison.table),
    }

    with staged_folder(destination) as folder:
        write_csv(comparison.table, folder / "compare.csv")
        write_manifest(folder, manifest)
