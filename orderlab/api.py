"""orderlab from Python: every command of the CLI as a function that returns data (pandas frames, figures, dicts).

Each function checks its arguments (one OrderlabError line for a wrong type or value, as the CLI's parser would
refuse it) and calls the same function in commands/ that the CLI calls, so a number seen here is the number the
CLI writes. Nothing here prints; a progress bar is drawn in a notebook or on a terminal (progress=False: none);
errors are raised as OrderlabError (the CLI's one-line messages), never swallowed. docs/python.md has the table
of commands and functions.

    >>> import orderlab.api as ol
    >>> result = ol.run("experiments/dog_bites_man.yaml")
    >>> result.summary                     # summary.csv as a DataFrame
"""

from __future__ import annotations

import html as _html
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from orderlab import api_arguments as check_argument
from orderlab.core.progress import SILENT, Phases, Progress
from orderlab.errors import OrderlabError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from orderlab.commands.check import CheckResult
    from orderlab.core.permutations import Rule
    from orderlab.measure.activations import Activations
    from orderlab.measure.run_options import RunOptions
    from orderlab.results.outcome import ShardOutcome
    from orderlab.spec.load import LoadedSpec
    from orderlab.spec.model_specs import ModelObject
    from orderlab.spec.schema import Spec

__all__ = [
    "Result",
    "activations",
    "check",
    "compare",
    "encodings",
    "hooks",
    "load",
    "merge",
    "models",
    "patch",
    "plan",
    "plot",
    "properties",
    "report",
    "run",
    "schema",
    "trace",
    "validate",
]

SpecSource = str | Path | Mapping[str, Any]  # a spec file's path, or the spec itself as a dict
ProgressChoice = bool | Progress | None  # True: a bar (notebook or terminal); False or None: none; a function: it


def __dir__() -> list[str]:
    """The API only: what a notebook's completion and dir(orderlab.api) offer."""
    return sorted(__all__)


@dataclass(frozen=True)
class Result:
    """One run's results folder as data: the frames of its CSVs, its manifest, and verdict counts."""

    name: str  # the spec's name
    folder: Path | None  # where the files are; None when `run` was given no `out` (they lived in a temp folder)
    metrics: pd.DataFrame  # metrics.csv: one tidy row per input x encoding x permutation x layer x metric
    summary: pd.DataFrame  # summary.csv: the wide view a person reads
    attention: pd.DataFrame | None  # attention.csv (attention maps of the shown reordering), if the run wrote it
    manifest: dict[str, Any]  # manifest.json: spec hash, versions, seed, device
    verdicts: dict[str, int]  # how many summary cells read each verdict ("equivariant", "order-sensitive", ...)
    token_logprobs: pd.DataFrame | None = None  # token_logprobs.csv (a causal LM's, token_logprobs: true), if written
    patching: pd.DataFrame | None = None  # patching.csv (a spec's patching: block, as `patch` measures it), if any

    def _repr_html_(self) -> str:
        """A notebook shows the run by its summary table and verdict counts, not the whole metrics frame; the table's
        cells read as the terminal's and the HTML report's do (verdict marks, rates with their counts)."""
        from orderlab.report.html import frame_html

        counts = ", ".join(f"{verdict}: {count}" for verdict, count in sorted(self.verdicts.items())) or "none"
        where = "kept in memory only" if self.folder is None else f"written to {self.folder}"
        return (
            f"<div><strong>{_html.escape(self.name)}</strong>: {len(self.metrics):,} metric rows, "
            f"{_html.escape(where)}<br>verdicts: {_html.escape(counts)}</div>{frame_html(self.summary)}"
        )

    def __repr__(self) -> str:
        return f"Result(name={self.name!r}, folder={self.folder!r}, rows={len(self.metrics)}, verdicts={self.verdicts})"


@dataclass(frozen=True)
class Patched:
    """What `patch` measured: one row per condition x input x pair of orders x point x layer x slot group."""

    name: str  # the spec's name
    shares: pd.DataFrame  # the share recovered, its round-off line and verdict (measure/patching.COLUMNS)

    def figure(self) -> Figure:
        """Per condition, layers x slot groups, each cell the mean share recovered (report/patching_figure.py)."""
        from orderlab.report.patching_figure import patching_heat_map

        return patching_heat_map(self.shares, self.name)

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict counts and the first rows."""
        counts = self.shares["verdict"].value_counts() if len(self.shares) else None
        found = {} if counts is None else {str(verdict): int(count) for verdict, count in counts.items()}
        shown = ", ".join(f"{verdict}: {count}" for verdict, count in sorted(found.items())) or "none"
        return (f"<div><strong>{_html.escape(self.name)}</strong>: {len(self.shares):,} patches; verdicts: "
                f"{_html.escape(shown)}</div>{self.shares.head(PATCHES_SHOWN).to_html(index=False)}")  # fmt: skip

    def __repr__(self) -> str:
        return f"Patched(name={self.name!r}, patches={len(self.shares)})"


PATCHES_SHOWN = 20  # rows of a Patched's frame a notebook shows


def validate(spec: SpecSource, *, base: str | Path | None = None, model: Any = None) -> Spec:
    """The validated spec (every sweep combination checked, the cost estimated); OrderlabError if it is not.

    A dict spec's relative paths (a model folder, a corpus file) resolve against `base`, by default the working
    folder when it is given; its errors name the dict's field path ('spec dict: model.n_heads: ...'). model: a
    transformers model object the spec is run on (its family from config.model_type), as `run` takes it."""
    return _load(spec, base, None if model is None else _model_record(model)).spec


def plan(spec: SpecSource, device: str = "cpu") -> list[str]:
    """What the run will cost on `device` (cpu, cuda or auto), line by line (memory, sequences, time, CSV sizes):
    `orderlab validate --plan --device`."""
    from orderlab.commands.validate import priced
    from orderlab.report.plan_table import plan_lines

    named = check_argument.device(device)
    loaded = _load(spec, None)
    return plan_lines(priced(loaded.spec, loaded.path, named))


def schema() -> dict[str, Any]:
    """The JSON Schema of a spec: `orderlab schema`."""
    from orderlab.spec.schema import Spec

    return Spec.model_json_schema()


@overload
def run(
    spec: SpecSource,
    out: str | Path | None = None,
    *,
    device: str = ...,
    chunk_size: int | None = ...,
    force: bool = ...,
    shard: None = None,
    workers: int | None = ...,
    scheduler: str | None = ...,
    plot: bool = ...,
    html: bool = ...,
    progress: ProgressChoice = ...,
    base: str | Path | None = ...,
    model: Any = ...,
    tokenizer: Any = ...,
    hooks: Mapping[str, Callable[[Any], Any]] | None = ...,
) -> Result: ...


@overload
def run(
    spec: SpecSource,
    out: str | Path | None = None,
    *,
    device: str = ...,
    chunk_size: int | None = ...,
    force: bool = ...,
    shard: str,
    workers: int | None = ...,
    scheduler: str | None = ...,
    plot: bool = ...,
    html: bool = ...,
    progress: ProgressChoice = ...,
    base: str | Path | None = ...,
    model: Any = ...,
    tokenizer: Any = ...,
    hooks: Mapping[str, Callable[[Any], Any]] | None = ...,
) -> ShardOutcome: ...


def run(
    spec: SpecSource,
    out: str | Path | None = None,
    *,
    device: str = "cpu",
    chunk_size: int | None = None,
    force: bool = False,
    shard: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    plot: bool = False,
    html: bool = False,
    progress: ProgressChoice = True,
    base: str | Path | None = None,
    model: Any = None,
    tokenizer: Any = None,
    hooks: Mapping[str, Callable[[Any], Any]] | None = None,
) -> Result | ShardOutcome:
    """Run a spec as `orderlab run` does, into OUT/<spec name>/ (a temporary folder, removed, when out is None).

    shard='K/N': only shard K of N, into OUT/<spec name>.shard-K-of-N/ (join them with `merge`); workers / scheduler:
    the shards on a Dask cluster, merged; plot / html: the figures and report.html into the results folder (these
    need `out`).

    model, tokenizer: a loaded transformers model and its tokenizer, measured in place of the spec's model (a spec's
    model block may then give only kind: hf, family, position_embeddings and dtype); its weights are never written,
    and manifest.json records its class, config and a hash of its weights (manifest["model"]["given"]).
    hooks: your functions at hook points of the attention stack or a transformers model, {"2.attn_out": fn} (the
    points `orderlab hooks FAMILY` lists as writable: a tensor to one of the same shape), around every pass of every
    condition and its round-off twin; the rows' labels end in '+user_hook' and manifest["model"]["user_hooks"]
    names each function."""
    root = check_argument.optional_path("out", out)
    if root is None and (shard is not None or plot is True or html is True):
        raise OrderlabError("shard, plot, html: they write files that last; expected out= a results root")
    options = _options(device, chunk_size, force, progress)
    shard = None if shard is None else check_argument.text("shard", shard)
    workers = check_argument.optional_integer("workers", workers, 1)
    scheduler = None if scheduler is None else check_argument.text("scheduler", scheduler)
    plot, html = check_argument.flag("plot", plot), check_argument.flag("html", html)
    from orderlab.commands.run import run as run_spec
    from orderlab.models.hf.given import evaluating, given_model

    hooks = check_argument.hooks(hooks)
    given = given_model(model, tokenizer)
    options = replace(options, model=given, hooks=hooks)
    loaded = _load(spec, base, None if given is None else given.record, hooks)
    with _results_root(root) as results, evaluating(model) if given else nullcontext():
        done = run_spec(loaded, results, options, shard=shard, workers=workers, scheduler=scheduler, plot=plot,
                        html=html, phases=_phases(progress))  # fmt: skip
        if done.shard is not None:
            return done.shard
        result = load(done.folder)
    return result if root is not None else replace(result, folder=None)  # the temporary folder is gone


def activations(
    spec: SpecSource,
    points: list[str],
    orders: Rule | None = None,
    *,
    device: str = "cpu",
    model: Any = None,
    tokenizer: Any = None,
    hooks: Mapping[str, Callable[[Any], Any]] | None = None,
    progress: Progress | None = None,
) -> Activations:
    """Hook points per reordering and condition, in memory (TransformerLens's run_with_cache): `result.index` has one
    row per combination x condition x input x order, `result["2.output"]` the point's tensor, row for row (NaN past a
    row's own slots). orders: the spec's permutations (None), or a rule applied to every input ("all", "reverse",
    {"random": 10}, [[2, 1, 0]]). Tensors that would not fit beside the run's own estimate are refused in one line.
    model, tokenizer, hooks: a transformers model object and your functions at its hook points, as `run` takes them."""
    from orderlab.measure.activations import collect_activations
    from orderlab.models.hf.given import evaluating

    points = [points] if isinstance(points, str) else points
    if not isinstance(points, list | tuple) or not all(isinstance(point, str) for point in points):
        raise OrderlabError(f"points: got {check_argument.shown(points)}; expected hook point names, e.g. ['2.output']")
    orders = None if orders is None else check_argument.permutation_rule("orders", orders)
    loaded, options = _on_model(spec, device, model, tokenizer, hooks, progress)
    with evaluating(model) if options.model else nullcontext():
        return collect_activations(loaded.spec, loaded.path, points, orders, options)


def patch(
    spec: SpecSource,
    *,
    device: str = "cpu",
    model: Any = None,
    tokenizer: Any = None,
    hooks: Mapping[str, Callable[[Any], Any]] | None = None,
    progress: Progress | None = None,
) -> Patched:
    """Activation patching between orders, as the spec's `patching:` block asks: for each source and target order
    of each input, each hook point at each layer and slot group copied from the source's run into the target's,
    one row each (`.shares`) with the share of the output's difference it recovers (0: none, 1: all), its round-off
    line and its verdict ('recovers none', 'recovers part', 'recovers all'); `.figure()` draws them, layers x slots
    per condition. docs/spec.md defines slots and shares.
    model, tokenizer, hooks: a transformers model object and your functions at its hook points, as `run` takes them
    (patched points must be others than yours)."""
    from orderlab.measure.patching import measure_patching
    from orderlab.models.hf.given import evaluating

    loaded, options = _on_model(spec, device, model, tokenizer, hooks, progress)
    with evaluating(model) if options.model else nullcontext():
        return Patched(loaded.spec.name, measure_patching(loaded.spec, loaded.path, options))


def _on_model(
    spec: SpecSource,
    device: str,
    model: Any,
    tokenizer: Any,
    hooks: Mapping[str, Callable[[Any], Any]] | None,
    progress: Progress | None,
) -> tuple[LoadedSpec, RunOptions]:
    """The spec loaded for the model object (if any) and the user's hooks, with the run options that carry them: what
    `activations` and `patch` measure on, checked alike."""
    from orderlab.measure.run_options import RunOptions
    from orderlab.models.devices import resolve_device
    from orderlab.models.hf.given import given_model

    hooks, device = check_argument.hooks(hooks), check_argument.device(device)
    shown = check_argument.progress(progress)
    given = given_model(model, tokenizer)
    options = RunOptions(resolve_device(device), progress=shown if callable(shown) else None, model=given, hooks=hooks)
    return _load(spec, None, None if given is None else given.record, hooks), options


def load(results_dir: str | Path) -> Result:
    """A results folder that `orderlab run` (or `check --update`, or `merge`) wrote, read and checked."""
    from orderlab.results.run_folder import read_run_folder

    folder = check_argument.path("results_dir", results_dir)
    read = read_run_folder(folder)
    return Result(read.name, folder, read.metrics, read.summary, read.attention, read.manifest,
                  _verdicts(read.summary), read.token_logprobs, read.patching)  # fmt: skip


def merge(shards: list[str | Path], out: str | Path = "results", *, force: bool = False) -> Result:
    """The shards of `run(..., shard='K/N')` joined into OUT/<spec name>/, read back: `orderlab merge`."""
    from orderlab.commands.merge import merge as merge_shards

    folders, root = check_argument.paths("shards", shards), check_argument.path("out", out)
    return load(merge_shards(folders, root, check_argument.flag("force", force)).folder)


def compare(
    specs: list[str | Path] | str | Path | None = None,
    encodings: str | list[str] = "all",
    metrics: str | list[str] | None = None,
    *,
    out: str | Path | None = None,
    device: str = "cpu",
    force: bool = False,
    html: str | Path | None = None,
    progress: ProgressChoice = True,
    model: Any = None,
    tokenizer: Any = None,
) -> pd.DataFrame:
    """`orderlab compare` as a frame: every spec (None: experiments/) under every encoding, worst value per input x
    metric x layer; written to OUT/compare/ when out is given. model, tokenizer: a transformers model object and its
    tokenizer (as `run` takes them): each spec then describes the object and is run on it, its conditions
    (model.position_embeddings) side by side in place of encodings (encodings='all'); no seeded model is built."""
    from orderlab.commands.compare import compare_specs
    from orderlab.models.hf.given import evaluating, given_model

    paths = None if specs is None else check_argument.paths("specs", specs)
    names = ",".join(check_argument.names("encodings", encodings))
    rows = None if metrics is None else check_argument.names("metrics", metrics)
    report_file, root = check_argument.optional_path("html", html), check_argument.optional_path("out", out)
    given = given_model(model, tokenizer)
    options = replace(_options(device, None, force, progress), model=given)
    with _results_root(root) as results, evaluating(model) if given else nullcontext():
        done = compare_specs(paths, names, rows, results, options, html=report_file, phases=_phases(progress))
    return done.comparison.table


def properties(
    encodings: str | list[str] = "all",
    max_len: int = 256,
    d_model: int = 64,
    n_heads: int = 4,
    seed: int = 0,
    *,
    out: str | Path | None = None,
    force: bool = False,
    progress: ProgressChoice = True,
) -> pd.DataFrame:
    """`orderlab properties` as a frame: six properties of each encoding at N = max_len (written to
    OUT/properties/ when out is given)."""
    from orderlab.commands.properties import properties as measure

    names = ",".join(check_argument.names("encodings", encodings))
    max_len, d_model = check_argument.integer("max_len", max_len, 1), check_argument.integer("d_model", d_model, 1)
    n_heads, seed = check_argument.integer("n_heads", n_heads, 1), check_argument.integer("seed", seed, 0)
    root, force = check_argument.optional_path("out", out), check_argument.flag("force", force)
    shown = _phases(check_argument.progress(progress))
    with _results_root(root) as results:
        return measure(names, max_len, d_model, n_heads, seed, results, force, phases=shown).table


def trace(
    spec: SpecSource,
    input_index: int = 0,
    layer: int = 1,
    encoding: str = "",
    *,
    family: str = "",
    out: str | Path | None = None,
    force: bool = False,
    progress: ProgressChoice = True,
    model: Any = None,
    tokenizer: Any = None,
) -> pd.DataFrame:
    """`orderlab trace` as a tidy frame (quantity, head, slot, word, index, value): one layer step by step.
    model, tokenizer: a transformers model object and its tokenizer, traced in place of the spec's model (as `run`
    takes them; a spec {"kind": "hf"} then takes its family from the object, never a seeded default)."""
    from orderlab.commands.trace import trace_and_write
    from orderlab.measure.trace import trace_frame
    from orderlab.models.hf.given import evaluating, given_model

    index, layer = check_argument.integer("input_index", input_index, 0), check_argument.integer("layer", layer, 1)
    encoding, force = check_argument.text("encoding", encoding, empty=True), check_argument.flag("force", force)
    family = check_argument.text("family", family, empty=True)
    root, shown = check_argument.optional_path("out", out), _phases(check_argument.progress(progress))
    given = given_model(model, tokenizer)
    with _spec_file(spec) as path, _results_root(root) as results, evaluating(model) if given else nullcontext():
        traced = trace_and_write(path, index, layer, encoding, results, force, family, phases=shown, given=given)
        return trace_frame(traced.trace)


def plot(results_dir: str | Path, formats: str | list[str] | None = None) -> dict[str, Figure]:
    """The figures of a results folder as matplotlib figures, by file stem (a notebook shows them inline); with
    formats ('png', ['png', 'pdf']), also written into RESULTS_DIR/figures/ as `orderlab plot --format` does."""
    from orderlab.commands.plot import plot as draw

    folder = check_argument.path("results_dir", results_dir)
    chosen = None if formats is None else ",".join(check_argument.names("formats", formats))
    return {drawing.stem: drawing.figure for drawing in draw(folder, chosen, keep_figures=True).drawings}


def report(results_dirs: list[str | Path] | str | Path, out: str | Path = "report.html") -> Path:
    """One self-contained HTML report over results folders, written to `out`: `orderlab report`."""
    from orderlab.commands.report import report as write

    return write(check_argument.paths("results_dirs", results_dirs), check_argument.path("out", out))


def check(
    targets: list[str | Path] | str | Path | None = None,
    *,
    out: str | Path = "results",
    rtol: float | None = None,
    atol: float | None = None,
    update: bool = False,
    junit: str | Path | None = None,
    html: str | Path | None = None,
    device: str = "cpu",
    progress: ProgressChoice = True,
    model: Any = None,
    tokenizer: Any = None,
) -> CheckResult:
    """`orderlab check`: re-run specs (None: experiments/) on `device` against their baselines under
    OUT/<spec name>/; the result holds each spec's SpecCheck (status, summary, drift) and the CLI's exit_code.
    model, tokenizer: a transformers model object the specs describe, re-run in place of their own model (as `run`
    takes them): how a baseline made by run(spec, model=...) is checked."""
    from orderlab.commands.check import check as check_specs
    from orderlab.models.hf.given import evaluating, given_model

    found = [] if targets is None else check_argument.paths("targets", targets)
    root, update = check_argument.path("out", out), check_argument.flag("update", update)
    rtol, atol = check_argument.tolerance("rtol", rtol), check_argument.tolerance("atol", atol)
    junit_file, html_file = check_argument.optional_path("junit", junit), check_argument.optional_path("html", html)
    given = given_model(model, tokenizer)
    if given is not None and not found:
        raise OrderlabError("targets: none given with model=; expected the spec files that describe the model object")
    options = replace(_options(device, None, False, progress), model=given)
    with evaluating(model) if given else nullcontext():
        return check_specs(
            found, root, rtol, atol, update, junit_file, html_file, options=options, phases=_phases(progress)
        )


def encodings() -> pd.DataFrame:
    """Every built-in positional encoding, one row each: `orderlab encodings`."""
    import pandas as pd

    from orderlab.commands.catalog import encodings as listed

    return pd.DataFrame([vars(entry) for entry in listed()])


def models() -> pd.DataFrame:
    """The model zoo's families, one row each, with the real weights found locally: `orderlab models`. A plug-in
    that cannot be used is left out (`orderlab models` lists it with why)."""
    import pandas as pd

    from orderlab.commands.catalog import models as listed

    return pd.DataFrame([vars(entry) for entry in listed().entries])


def hooks(family: str) -> pd.DataFrame:
    """A model family's hook points (or the attention stack's: 'stack'), one row each at layer 1, with its shape on a
    small seeded model, whether hooks= may write it, and its TransformerLens and nnsight names: `orderlab hooks`."""
    import pandas as pd

    from orderlab.commands.hooks import hook_points

    if not isinstance(family, str):
        raise OrderlabError(f"family={check_argument.shown(family)}; expected a model family's name, or 'stack'")
    return pd.DataFrame([vars(point) for point in hook_points(family).points])


def _load(
    spec: object,
    base: object,
    given: ModelObject | None = None,
    hooks: Mapping[str, Callable[[Any], Any]] | None = None,
) -> LoadedSpec:
    """A spec file through the one loader; a dict through the same checks, its paths against base or the cwd; the
    user's hooks recorded by their functions' names."""
    from orderlab.plan.limits import validate_limits
    from orderlab.spec.load import load_spec, load_spec_data

    names = {point: f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
             for point, fn in (hooks or {}).items()}  # fmt: skip
    source, root = check_argument.spec_source(spec), check_argument.optional_path("base", base)
    if isinstance(source, Path):
        if root is not None:
            raise OrderlabError("base: a spec file's paths are relative to its folder; expected base only with a dict")
        return validate_limits(load_spec(source, given, names))
    return validate_limits(load_spec_data(source, Path.cwd() if root is None else root.absolute(), given, names))


def _options(device: object, chunk_size: object, force: object, progress: object) -> RunOptions:
    """A run's options from checked arguments (the device is checked against this machine by RunOptions)."""
    from orderlab.measure.run_options import RunOptions
    from orderlab.models.devices import resolve_device

    named = check_argument.device(device)
    size = check_argument.optional_integer("chunk_size", chunk_size, 1)
    check_argument.progress(progress)
    return RunOptions(resolve_device(named), size, check_argument.flag("force", force))


def _phases(progress: ProgressChoice) -> Phases:
    """Where a command's phases are reported: a bar in a notebook or on a terminal, a user's function, or nowhere."""
    if progress is False or progress is None:
        return SILENT
    if progress is True:
        from orderlab.report.terminal import PhaseBars

        return PhaseBars(quiet=False)
    return _ToFunction(progress)


class _ToFunction:
    """Phases that hand each (done, total) to a user's function."""

    def __init__(self, function: Progress):
        self.function = function

    @contextmanager
    def phase(self, name: str, description: str, unit: str | None = None) -> Iterator[_Reporter]:
        yield _Reporter(self.function)


@dataclass(frozen=True)
class _Reporter:
    function: Progress

    def __call__(self, done: int, total: int) -> None:
        self.function(done, total)

    def note(self, text: str) -> None:
        pass


def _model_record(model: Any) -> ModelObject:
    from orderlab.models.hf.given import model_record

    return model_record(model)


def _verdicts(summary: pd.DataFrame) -> dict[str, int]:
    columns = [column for column in summary.columns if str(column).endswith("verdict")]
    counts = summary[columns].stack().value_counts() if columns else None
    return {} if counts is None else {str(verdict): int(count) for verdict, count in counts.items()}


@contextmanager
def _results_root(out: Path | None) -> Iterator[Path]:
    """`out` as given, or a temporary folder removed afterwards (a command that keeps nothing on disk)."""
    if out is not None:
        yield out
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="orderlab-") as scratch:
        yield Path(scratch)


@contextmanager
def _spec_file(spec: object) -> Iterator[Path]:
    """A spec given as a path is used as it is; one given as a dict is written to a temporary spec.yaml, so that both
    go through the one loader (whose messages then name that file)."""
    source = check_argument.spec_source(spec)
    if isinstance(source, Path):
        yield source
        return
    import tempfile

    import yaml

    with tempfile.TemporaryDirectory(prefix="orderlab-spec-") as scratch:
        path = Path(scratch) / "spec.yaml"
        path.write_text(yaml.safe_dump(source, sort_keys=False))
        yield path
