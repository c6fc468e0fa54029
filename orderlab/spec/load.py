"""`load_spec`, the one loader: YAML file -> validated, size-checked Spec. Torch-free, so `validate` is fast.

Every problem surfaces as one SpecError `file:line: field.path: what, expected what`: structure from
pydantic (messages.py), relations between fields (relations.py) for every sweep combination
(sweep.py), and what the run would cost on this machine (estimate.py).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from orderlab.errors import OrderlabError
from orderlab.spec.checkpoint_meta import read_metadata
from orderlab.spec.estimate import validate_limits
from orderlab.spec.messages import first_error
from orderlab.spec.relations import validate_relations
from orderlab.spec.schema import CheckpointModelSpec, EncodingChoice, Spec, relative_to_spec
from orderlab.spec.sweep import validate_sweep
from orderlab.spec.userfiles import folder_name_problem
from orderlab.spec.yamlsource import LocatedDocument, read_yaml


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
    if isinstance(spec.model, CheckpointModelSpec):
        spec = from_checkpoint(spec, spec.model, document)
    validate_sweep(spec, document, validate_relations)
    validate_limits(spec, document)
    return LoadedSpec(spec=spec, path=path, sha256=document.sha256)


def from_checkpoint(spec: Spec, model: CheckpointModelSpec, doc: LocatedDocument) -> Spec:
    """The spec with the checkpoint's stack fields, encoding and seed filled in; a field that would contradict the
    checkpoint (the stack's shape, encodings, seed or a train: block) is refused."""
    for name in model.model_fields_set - {"kind", "path"}:
        raise doc.error(("model", name), "a checkpoint sets the stack's fields; expected only kind and path")
    try:
        metadata = read_metadata(relative_to_spec(doc.file, model.path))
    except OrderlabError as error:
        raise doc.error(("model", "path"), str(error)) from None
    for name in ("encodings", "train"):
        if name in spec.model_fields_set:
            raise doc.error((name,), f"a checkpoint is measured as it was trained; expected no {name}: with it")
    if "seed" in spec.model_fields_set and spec.seed != metadata["seed"]:
        message = f"{spec.seed} differs from the checkpoint's seed {metadata['seed']}, which its word vectors need"
        raise doc.error(("seed",), f"{message}; expected {metadata['seed']} or no seed")
    filled = CheckpointModelSpec(kind="checkpoint", path=model.path, **metadata["model"])
    encoding = EncodingChoice(**metadata["encoding"])
    return spec.model_copy(update={"model": filled, "encodings": [encoding], "seed": metadata["seed"]})


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
