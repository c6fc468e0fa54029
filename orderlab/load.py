"""`load_spec`, the one loader: YAML file -> validated, size-checked Spec. Torch-free, so `validate` is fast.

Every problem surfaces as one SpecError `file:line: field.path: what, expected what`: structure from
pydantic (messages.py), relations between fields (relations.py) for every sweep combination
(sweep.py), and what the run would cost on this machine (estimate.py).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from orderlab.estimate import validate_limits
from orderlab.messages import first_error
from orderlab.relations import validate_relations
from orderlab.spec import Spec, folder_name_problem
from orderlab.sweep import validate_sweep
from orderlab.yamlsource import read_yaml


def load_spec(path: str | Path) -> LoadedSpec:
    """Read, parse and validate a spec file; raise SpecError (one line) on any problem."""
    path = Path(path)
    document = read_yaml(path)
    if not isinstance(document.data, dict):
        raise document.error((), "expected a YAML mapping with keys like name, model, inputs")
    try:
        spec = Spec.model_validate(document.data)
    except ValidationError as error:
        raise first_error(error, document) from None
    if not spec.name:
        problem = folder_name_problem(path.stem)
        if problem:
            message = f"file name {path.stem!r} cannot name the results folder: {problem}; set name: in the spec"
            raise document.error((), message)
        spec = spec.model_copy(update={"name": path.stem})
    validate_sweep(spec, document, validate_relations)
    validate_limits(spec, document)
    return LoadedSpec(spec=spec, path=path, sha256=document.sha256)


class LoadedSpec(BaseModel):
    """A validated spec with where it came from (for manifests and baselines)."""

    model_config = ConfigDict(frozen=True)
    spec: Spec
    path: Path
    sha256: str


def with_changes(loaded: LoadedSpec, update: dict[str, object]) -> LoadedSpec:
    """The loaded spec with fields replaced (compare swaps its encodings in), its cost estimated anew: a spec
    that fits with its own encodings may not with others. Errors still name the spec's file and fields."""
    spec = loaded.spec.model_copy(update=update)
    validate_limits(spec, read_yaml(loaded.path))
    return loaded.model_copy(update={"spec": spec})
