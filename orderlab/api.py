"""orderlab from Python: the CLI's commands as functions that return plain data (pandas frames, dicts).

For notebooks, the TransformerLens habit: `validate`, `run`, `load` and `compare` go through the same code
as `orderlab validate`, `run`, `check` and `compare` (spec loading, the one measuring loop, the staged
results folder), so a number seen here is the number the CLI writes. Nothing here prints or draws; errors
are raised as OrderlabError (the CLI's one-line messages), never swallowed.

    >>> import orderlab.api as ol
    >>> result = ol.run("experiments/dog_bites_man.yaml")
    >>> result.summary                     # summary.csv as a DataFrame
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orderlab.core.progress import Progress
from orderlab.errors import OrderlabError

if TYPE_CHECKING:
    import pandas as pd

    from orderlab.core.permutations import Rule
    from orderlab.measure.activations import Activations
    from orderlab.plan.load import LoadedSpec
    from orderlab.spec.families import ModelObject
    from orderlab.spec.schema import Spec

SpecSource = str | Path | Mapping[str, Any]  # a spec file's path, or the spec itself as a dict


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


def validate(spec: SpecSource, *, base: str | Path | None = None, model: Any = None) -> Spec:
    """The validated spec (every sweep combination checked, the cost estimated); OrderlabError if it is not.

    A dict spec's relative paths (a model folder, a corpus file) resolve against `base`, by default the working
    folder when it is given; its errors name the dict's field path ('spec dict: model.n_heads: ...'). model: a
    transformers model object the spec is run on (its family from config.model_type), as `run` takes it."""
    return _load(spec, base, None if model is None else _model_record(model)).spec


def run(
    spec: SpecSource,
    out: str | Path | None = None,
    *,
    device: str = "cpu",
    chunk_size: int | None = None,
    force: bool = False,
    progress: Progress | None = None,
    base: str | Path | None = None,
    model: Any = None,
    tokenizer: Any = None,
    hooks: Mapping[str, Callable[[Any], Any]] | None = None,
) -> Result:
    """Run a spec as `orderlab run` does, into OUT/<spec name>/ (a temporary folder, removed, when out is None);
    a dict spec's relative paths resolve against `base` (validate); device: cpu, cuda or auto (a CUDA GPU where
    there is one).

    model, tokenizer: a loaded transformers model and its tokenizer, measured in place of the spec's model (a spec's
    model block may then give only kind: hf, family, position_embeddings and dtype); its weights are never written,
    and manifest.json records its class, config and a hash of its weights (manifest["model"]["given"]).
    hooks: your functions at a transformers model's hook points, {"2.output": fn} (L.input or L.output: a tensor
    (B, T, d) to one of the same shape), around every pass of every condition and its round-off twin; the rows'
    labels end in '+user_hook' and manifest["model"]["user_hooks"] names each function."""
    from orderlab.commands.run import write_experiment
    from orderlab.measure.run_options import RunOptions
    from orderlab.models.devices import resolve_device
    from orderlab.models.hf.given import evaluating, user_model

    given = None if model is None else user_model(model, tokenizer)
    options = RunOptions(resolve_device(device), chunk_size, force, progress, model=given, hooks=dict(hooks or {}))
    loaded = _load(spec, base, None if given is None else given.record, hooks)
    with _results_root(out) as root:
        folder = root / loaded.spec.name
        with evaluating(model) if given else nullcontext():
            write_experiment(loaded, folder, options)
        result = load(folder)
    return result if out is not None else replace(result, folder=None)  # the temporary folder is gone


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
    from orderlab.measure.run_options import RunOptions
    from orderlab.models.devices import resolve_device
    from orderlab.models.hf.given import evaluating, user_model

    given = None if model is None else user_model(model, tokenizer)
    options = RunOptions(resolve_device(device), progress=progress, model=given, hooks=dict(hooks or {}))
    loaded = _load(spec, None, None if given is None else given.record, hooks)
    with evaluating(model) if given else nullcontext():
        return collect_activations(loaded.spec, loaded.path, points, orders, options)


def load(results_dir: str | Path) -> Result:
    """A results folder that `orderlab run` (or `check --update`, or `merge`) wrote, read and checked."""
    from orderlab.results.run_folder import read_run_folder

    folder = Path(results_dir)
    read = read_run_folder(folder)
    return Result(read.name, folder, read.metrics, read.summary, read.attention, read.manifest,
                  _verdicts(read.summary), read.token_logprobs)  # fmt: skip


def compare(
    specs: list[str | Path],
    encodings: str | list[str] = "all",
    metrics: list[str] | None = None,
    *,
    device: str = "cpu",
    progress: Progress | None = None,
) -> pd.DataFrame:
    """`orderlab compare` as a frame: every spec under every encoding, worst value per input x metric x layer;
    device: cpu, cuda or auto."""
    from orderlab.commands import compare as comparing
    from orderlab.measure.run_options import RunOptions
    from orderlab.models.devices import resolve_device

    options = RunOptions(resolve_device(device), progress=progress)
    names = comparing.parse_encodings(encodings if isinstance(encodings, str) else ",".join(encodings))
    rows = comparing.parse_metrics(metrics)
    return comparing.compare([Path(spec) for spec in specs], names, rows, options).table


def _load(
    spec: SpecSource,
    base: str | Path | None,
    given: ModelObject | None = None,
    hooks: Mapping[str, Callable[[Any], Any]] | None = None,
) -> LoadedSpec:
    """A spec file through the one loader; a dict through the same checks, its paths against base or the cwd; the
    user's hooks recorded by their functions' names."""
    from orderlab.plan.load import load_spec, load_spec_data

    names = {point: f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
             for point, fn in (hooks or {}).items()}  # fmt: skip
    if isinstance(spec, str | Path):
        if base is not None:
            raise OrderlabError("base: a spec file's paths are relative to its folder; expected base only with a dict")
        return load_spec(spec, given, names)
    if not isinstance(spec, Mapping):
        raise OrderlabError(f"spec: got {type(spec).__name__}; expected a spec file's path or the spec as a dict")
    return load_spec_data(spec, Path.cwd() if base is None else Path(base).absolute(), given, names)


def _model_record(model: Any) -> ModelObject:
    from orderlab.models.hf.given import model_record

    return model_record(model)


def _verdicts(summary: pd.DataFrame) -> dict[str, int]:
    columns = [column for column in summary.columns if str(column).endswith("verdict")]
    counts = summary[columns].stack().value_counts() if columns else None
    return {} if counts is None else {str(verdict): int(count) for verdict, count in counts.items()}


@contextmanager
def _results_root(out: str | Path | None) -> Iterator[Path]:
    """`out` as given, or a temporary folder removed afterwards (a run that keeps nothing on disk)."""
    if out is not None:
        yield Path(out)
        return
    with tempfile.TemporaryDirectory(prefix="orderlab-") as scratch:
        yield Path(scratch)
