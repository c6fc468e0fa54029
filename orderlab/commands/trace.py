"""`orderlab trace`: check the choices against the spec, trace the layer (measure/trace.py), write the tidy CSV;
returned as data."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from orderlab.core.corpustext import read_corpus
from orderlab.core.progress import SILENT, Phases
from orderlab.core.text import tokenize
from orderlab.errors import OrderlabError
from orderlab.measure.trace import LayerTrace, conditions, trace_frame, trace_pass, traced_adapter
from orderlab.models.hf.given import UserModel
from orderlab.plan.limits import validate_limits
from orderlab.results.folder import staged_folder, write_csv
from orderlab.results.ownership import Claim, Writer, claim
from orderlab.spec.load import load_spec
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import Spec, relative_to_spec, uses_backend
from orderlab.spec.sweep import Configuration, plan


@dataclass(frozen=True)
class TraceOutcome:
    trace: LayerTrace
    path: Path  # the CSV written
    note: str  # e.g. which sweep combination was traced; empty if nothing to say


def trace_and_write(
    spec_path: Path,
    input_index: int = 0,
    layer: int = 1,
    encoding: str = "",
    out_root: Path = Path("results"),
    force: bool = False,
    family: str = "",
    *,
    phases: Phases = SILENT,
    given: UserModel | None = None,
) -> TraceOutcome:
    """Check the choices, trace the layer of the spec's first combination (of `family`'s, when given), write the CSV
    (atomically) into OUT/<spec name>_trace/, keeping the earlier traces there. given: a model object the spec
    describes (orderlab.api.trace(spec, model=...)), traced in place of the model the spec alone would build."""
    with phases.phase("tracing", f"tracing layer {layer} of {spec_path}"):
        return _trace_and_write(spec_path, input_index, layer, encoding, out_root, force, family, given)


def _trace_and_write(
    spec_path: Path, input_index: int, layer: int, encoding: str, out_root: Path, force: bool, family: str,
    given: UserModel | None,
) -> TraceOutcome:  # fmt: skip
    spec = validate_limits(load_spec(spec_path, None if given is None else given.record)).spec
    configuration = chosen_configuration(plan(spec), family)
    concrete, note = configuration.spec, ""
    if configuration.columns:
        note = f"the spec sweeps {', '.join(configuration.columns)}; tracing {configuration.label}"
    sentences, what = traced_sentences(spec, spec_path)
    if not 0 <= input_index < len(sentences):
        raise OrderlabError(
            f"--input {input_index}: the spec has {len(sentences)} {what}; expected 0..{len(sentences) - 1}"
        )
    labels, names = zip(*conditions(concrete), strict=True)
    if encoding and encoding not in labels + names:
        raise OrderlabError(f"--encoding {encoding!r} is not in the spec; expected one of {', '.join(labels)}")
    label = labels[labels.index(encoding) if encoding in labels else names.index(encoding) if encoding else 0]
    adapter, model = traced_adapter(concrete, label, spec_path, given), "model" if uses_backend(spec) else "stack"
    if not 1 <= layer <= adapter.n_layers:
        raise OrderlabError(
            f"--layer {layer}: the {model} has {adapter.n_layers} layer(s); expected 1..{adapter.n_layers}"
        )
    swept = f"-{configuration.label}" if configuration.columns else ""  # each combination's trace a file of its own
    file_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"input{input_index}-layer{layer}{swept}-{label}") + ".csv"
    with claim(out_root / f"{spec.name}_trace", Writer("trace", spec.name), force) as held:
        words = tokenize(sentences[input_index], concrete.embeddings.lowercase)
        traced = trace_pass(adapter, words, layer)
        write_trace(held, file_name, trace_frame(traced))
    return TraceOutcome(traced, held.folder / file_name, note)


def traced_sentences(spec: Spec, spec_path: Path) -> tuple[list[str], str]:
    """The sentences `--input` picks from, and what they are called: the inputs, or a corpus spec's lines."""
    if isinstance(spec.inputs, CorpusInputs):
        lines = read_corpus(relative_to_spec(spec_path, spec.inputs.file))
        return [line.sentence for line in lines], "corpus sentence(s)"
    return [given.sentence for given in spec.sentences], "input(s)"


def chosen_configuration(configurations: list[Configuration], family: str) -> Configuration:
    """The first combination, or the first of the model family `family` (--family), refused in one line naming the
    families the spec has when it has no such one."""
    if not family:
        return configurations[0]
    families = [getattr(c.spec.model, "family", None) for c in configurations]
    if family not in families:
        named = ", ".join(dict.fromkeys(str(f) for f in families if f is not None))
        expected = f"one of {named}" if named else "no --family: the spec's model is not of the zoo (model.kind hf)"
        raise OrderlabError(f"--family {family!r} is not a family of the spec; expected {expected}")
    return configurations[families.index(family)]


def write_trace(held: Claim, file_name: str, frame: pd.DataFrame) -> None:
    """Rewrite the trace folder whole: the earlier traces of this spec kept, `file_name` written anew."""
    earlier = [path for path in held.own_files() if path.name != file_name]

    with staged_folder(held.folder) as staging:
        for path in earlier:
            shutil.copy2(path, staging / path.name)
        write_csv(frame, staging / file_name)
